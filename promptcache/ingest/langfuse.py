"""Langfuse observation exports: one observation per record, or a page of the public API
(``GET /api/public/observations`` → ``{"data": [...], "meta": {...}}``).

Field names: ``id``, ``traceId``, ``type`` (``GENERATION``, ``SPAN``, ``EVENT``, ...), ``name``,
``startTime``, ``model``, ``modelParameters``, ``input``, ``output``, ``usageDetails``,
``costDetails``, ``metadata``; trace: ``sessionId``, ``userId``
(https://langfuse.com/docs/observability/data-model and
https://langfuse.com/docs/model-usage-and-cost, checked 2026-11-29; summarised in
``landscape.md`` §3.6).

Only ``GENERATION`` observations are LLM calls; the others are skipped and counted. ``input``
is what the integration logged: a message list, a request body (``{"messages": ...}``,
``{"contents": ...}``), or a prompt string; ``None`` makes a usage-only request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Source
from . import openai as _openai
from .bodies import BODY_APIS, body_format, cache_key_of, default_id, parse_body, reprefix
from .common import MAPPING, Skipped, loads_if_json, provider_for_model
from .fields import parse_time
from .usage import langfuse_usage

#: Observation types Langfuse defines (GENERATION is the only LLM call among them).
OBSERVATION_TYPES = ("GENERATION", "SPAN", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EVALUATOR",
                     "EMBEDDING", "GUARDRAIL")


def looks_langfuse(rec: Mapping[str, Any]) -> bool:
    """An observation (``traceId`` with ``usageDetails``, ``costDetails`` or a Langfuse
    ``type``, and no OpenTelemetry ``spanId``), or an API page whose first item is one."""
    if "spanId" in rec:
        return False
    if "traceId" in rec and ("usageDetails" in rec or "costDetails" in rec or str(rec.get("type", "")).upper() in OBSERVATION_TYPES):
        return True
    data = rec.get("data")
    return isinstance(data, list) and bool(data) and isinstance(data[0], MAPPING) and looks_langfuse(data[0])


def _parts(inp: Any) -> tuple[str | None, tuple[Part, ...], dict[str, Any], str | None]:
    """(body format, parts, params, cache key) of an observation's ``input``.

    Raises:
        BadRecord: for an input that is no prompt, or a malformed body.
    """
    inp = loads_if_json(inp)
    if inp is None or inp == "" or inp == [] or inp == {}:
        return None, (), {}, None
    if isinstance(inp, str):
        return "openai-chat", (Part("user", "input", inp, "user", 0),), {}, None
    if isinstance(inp, list):
        body: Mapping[str, Any] = {"messages": inp}
        fmt = body_format(body) or "openai-chat"
        b = parse_body(body, fmt)
        return fmt, reprefix(b.parts, "messages", "input"), b.params, None
    if isinstance(inp, MAPPING):
        fmt = body_format(inp)
        if fmt is None:
            raise BadRecord("'input' is an object but no messages, input or contents body")
        b = parse_body(inp, fmt)
        return fmt, reprefix(b.parts, "", "input."), b.params, b.cache_key
    raise BadRecord("'input' is neither a prompt string, a message list nor a request body")


def _observation(obs: Any, src: Source, opts: Any) -> Request | Skipped:
    if not isinstance(obs, MAPPING):
        raise BadRecord("observation is not a JSON object")
    typ = obs.get("type")
    if typ is not None and str(typ).upper() != "GENERATION":
        return Skipped(f"Langfuse {str(typ).upper()} observation (not an LLM call)")
    fmt, parts, params, cache_key = _parts(obs.get("input"))
    mp = loads_if_json(obs.get("modelParameters"))
    mp = mp if isinstance(mp, MAPPING) else {}
    md = loads_if_json(obs.get("metadata"))
    md = md if isinstance(md, MAPPING) else {}
    params = {**_openai.params_of(mp), **params}
    cache_key = cache_key or cache_key_of(mp) or cache_key_of(md)
    model = obs.get("model") or getattr(opts, "model", None)
    model = str(model) if model else None
    trace = obs.get("trace") if isinstance(obs.get("trace"), MAPPING) else {}
    session = obs.get("sessionId") or trace.get("sessionId") or obs.get("traceId")
    details = obs.get("usageDetails") or obs.get("usage")
    start = obs.get("startTime")
    return Request(
        id=str(obs["id"]) if obs.get("id") else default_id(src), source=src, format="langfuse",
        api=BODY_APIS[fmt][0] if fmt else "chat",
        provider=provider_for_model(model) or (BODY_APIS[fmt][1] if fmt else None), model=model,
        arrival=parse_time(start) if start not in (None, "") else None, parts=parts, cache_key=cache_key,
        session=str(session) if session else None, params=params, usage=langfuse_usage(details),
    )


def parse_langfuse(rec: Any, src: Source, opts: Any) -> list[Request | Skipped | BadRecord]:
    """One observation, or every observation of an API page, → Requests (``format="langfuse"``).

    ``id``: ``id``; ``arrival``: ``startTime``; ``session``: ``sessionId`` (on the observation
    or its nested ``trace``), else ``traceId``; ``model``: ``model``; ``params``: cache-relevant
    request parameters of the body and ``modelParameters``; ``cache_key``: a
    ``prompt_cache_key`` in the body, ``modelParameters`` or ``metadata``; ``usage``:
    ``usageDetails`` (:func:`~promptcache.ingest.usage.langfuse_usage`). Non-``GENERATION``
    observations become :class:`~promptcache.ingest.common.Skipped`; a malformed observation of
    a page becomes a :class:`~promptcache.errors.BadRecord` item so the others are kept.

    Raises:
        BadRecord: when the record is not an object, or a lone observation is malformed.
    """
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    if "traceId" not in rec and isinstance(rec.get("data"), list):
        out: list[Request | Skipped | BadRecord] = []
        for k, obs in enumerate(rec["data"]):
            try:
                out.append(_observation(obs, src, opts))
            except BadRecord as e:
                out.append(BadRecord(f"data[{k}]: {e}"))
        return out
    return [_observation(rec, src, opts)]
