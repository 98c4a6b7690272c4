"""Helicone request exports (the request query API, ``POST /v1/request/query``, and exports built
from it).

Field names: ``request_id``, ``request_created_at``, ``request_body``, ``response_body``,
``model``, ``provider``, ``prompt_tokens``, ``completion_tokens``, ``prompt_cache_write_tokens``,
``prompt_cache_read_tokens``, ``cost``, ``user_id``, ``properties`` (or ``request_properties``),
``latency``, ``time_to_first_token``, ``status``
(https://docs.helicone.ai/gateway/concepts/prompt-caching, checked 2026-11-29; summarised in
``landscape.md`` §3.7). Sessions are the ``Helicone-Session-Id`` property
(https://docs.helicone.ai/features/sessions).

``request_body`` is the provider's own body (OpenAI, Anthropic, Gemini), parsed by the same
readers as a bare body; without one the row is a usage-only request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dataclasses import replace

from ..errors import BadRecord
from ..model import Part, Request, Response, Source
from .bodies import BODY_APIS, affinity_of, body_format, default_id, parse_body, response_of, Chains, chain_fields
from .common import MAPPING, as_mapping, loads_if_json, logged_provider
from .fields import find_session, parse_time
from .reader import Reader
from .usage import find_usage, helicone_usage

#: Helicone columns only its exports have (detection keys, with ``request_body``).
HELICONE_KEYS = ("request_created_at", "prompt_cache_read_tokens", "prompt_cache_write_tokens")
SESSION_PROPERTY = "Helicone-Session-Id"


def looks_helicone(rec: Mapping[str, Any]) -> bool:
    """A request export row: ``request_created_at``, or ``request_body`` with a Helicone cache
    column."""
    return "request_created_at" in rec or ("request_body" in rec and any(k in rec for k in HELICONE_KEYS))


def parse_helicone(rec: Any, src: Source, opts: Any) -> Request:
    """One Helicone export row → a Request (``format="helicone"``).

    ``id``: ``request_id``; ``arrival``: ``request_created_at``; ``session``: the
    ``Helicone-Session-Id`` property, else ``user_id`` and the body's usual fields; ``model``:
    ``model``, else the body's or the response's; ``provider``: ``provider`` as
    logged, else from the model; ``usage``: the row's token columns
    (:func:`~promptcache.ingest.usage.helicone_usage`), else ``response_body``'s usage.

    Raises:
        BadRecord: for a malformed body, time or usage count.
    """
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    raw = rec.get("request_body")
    body = None if raw in (None, "", {}) else as_mapping(raw, "request_body")
    resp = loads_if_json(rec.get("response_body"))
    fmt: str | None = None
    parts: tuple[Part, ...] = ()
    params: dict[str, Any] = {}
    cache_key = retention = None
    if body is not None:
        fmt = body_format(body, str(rec.get("request_path") or rec.get("target_url") or ""))
        if fmt is None:
            raise BadRecord("'request_body' is no chat, responses, messages or generateContent body")
        b = parse_body(body, fmt)
        parts, params, cache_key, retention = b.parts, b.params, b.cache_key, b.retention
    r = resp if isinstance(resp, MAPPING) else {}
    model = rec.get("model") or (body or {}).get("model") or r.get("model") or getattr(opts, "model", None)
    model = str(model) if model else None
    provider = logged_provider(rec.get("provider"), model)
    if provider is None and fmt is not None:
        provider = BODY_APIS[fmt][1]
    props = loads_if_json(rec.get("properties") or rec.get("request_properties"))
    props = props if isinstance(props, MAPPING) else {}
    session = props.get(SESSION_PROPERTY) or find_session(rec, body)
    created = rec.get("request_created_at")
    usage = helicone_usage(rec)
    if usage is None:
        usage = find_usage(resp)
    response = response_of(fmt, body or {}, resp) if fmt is not None and r else None
    up = rec.get("provider")
    if isinstance(up, str) and up and (response is None or not response.upstream):
        # the row's provider is Helicone's route (OPENROUTER); a router's response names who served it
        response = replace(response, upstream=up) if response is not None else Response(upstream=up)
    return Request(
        id=str(rec["request_id"]) if rec.get("request_id") else default_id(src), source=src, format="helicone",
        api=BODY_APIS[fmt][0] if fmt else "chat", provider=provider, model=model,
        arrival=parse_time(created) if created not in (None, "") else None, parts=parts, cache_key=cache_key,
        session=str(session) if session else None, params=params, usage=usage, cache_retention=retention,
        response=response, affinity=affinity_of(body) if body is not None else {}, **chain_fields(fmt, body),
    )


class HeliconeReader(Reader):
    """Helicone request exports (see the module docstring)."""

    name = "helicone"
    producer = "Helicone"
    shapes = "request exports (npx @helicone/export JSONL/JSON, the request query API), with or without bodies"
    looks_for = "request_created_at, or request_body with prompt_cache_read_tokens/prompt_cache_write_tokens"
    owns = ("request_created_at", "prompt_cache_read_tokens", "prompt_cache_write_tokens")
    stateful = True  # Responses API chains (previous_response_id) are rebuilt per file

    def __init__(self) -> None:
        self.chains = Chains()

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and looks_helicone(rec):
            return "request_created_at / Helicone cache columns"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Request:
        req = parse_helicone(rec, src, opts)
        if req.api != "responses":
            return req
        resp = loads_if_json(rec.get("response_body"))
        return self.chains.link(req, resp.get("output") if isinstance(resp, MAPPING) else None)
