"""LiteLLM spend logs (``LiteLLM_SpendLogs`` rows, ``/spend/logs`` exports) and logging
payloads (``StandardLoggingPayload``, ``kwargs["standard_logging_object"]``).

Field names: ``LiteLLM_SpendLogs`` in litellm ``schema.prisma`` (``request_id``, ``call_type``,
``prompt_tokens``, ``completion_tokens``, ``startTime``, ``model``, ``custom_llm_provider``,
``metadata``, ``cache_hit``, ``messages``, ``response``, ``session_id``,
``proxy_server_request``) and https://docs.litellm.ai/docs/proxy/logging_spec
(``id``, ``trace_id``, ``call_type``, ``prompt_tokens``, ``startTime`` as epoch seconds,
``metadata``, ``messages``, ``response``, ``model_parameters``), checked 2026-11-29.

``model_parameters`` is the call's ``optional_params`` kept to the keys of OpenAI's create
parameters (litellm ``litellm_core_utils/model_param_helper.py``,
``ModelParamHelper.get_standard_logging_model_parameters``; filled in
``litellm_logging.py``, ``get_standard_logging_object_payload``), flat: ``tools``,
``temperature``, and the routing fields ``prompt_cache_key``, ``prompt_cache_retention``,
``user``, ``safety_identifier``. A payload's ``messages`` holds no parameters, so the cache key
and the routing identifiers of a payload are read there (checked 2026-12-02).

The prompt is ``proxy_server_request`` (the body the proxy received) when it holds one, else
``messages`` (stored only with ``store_prompts_in_spend_logs``); a row with neither is a
usage-only request. Cache token counts live in ``metadata.usage_object`` (spend logs) or
``response.usage``; see :func:`promptcache.ingest.usage.litellm_usage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dataclasses import replace

from ..errors import BadRecord
from ..model import Part, Request, Response, Source
from . import openai as _openai
from .bodies import BODY_APIS, affinity_of, body_format, cache_key_of, default_id, parse_body, response_of, Chains, \
    chain_fields
from .common import MAPPING, loads_if_json, logged_provider, require_list, stable_json
from .fields import find_session, parse_time
from .reader import Reader
from .usage import litellm_usage


def looks_litellm(rec: Mapping[str, Any]) -> bool:
    """A spend-log row or logging payload: ``call_type`` with ``startTime``, ``spend`` or
    ``response_cost``."""
    return "call_type" in rec and any(k in rec for k in ("startTime", "spend", "response_cost"))


def _request_body(rec: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str]:
    """(body, url) from ``proxy_server_request`` (a body, or ``{url, headers, body}``), else
    from ``messages``; ``(None, "")`` when the row stores no prompt.

    Raises:
        BadRecord: when ``messages`` holds something that is no prompt.
    """
    psr = loads_if_json(rec.get("proxy_server_request"))
    if isinstance(psr, MAPPING) and isinstance(loads_if_json(psr.get("body")), Mapping) and "messages" not in psr:
        url = str(psr.get("url", ""))
        psr = loads_if_json(psr["body"])
    else:
        url = ""
    if isinstance(psr, MAPPING) and any(k in psr for k in ("messages", "input", "contents", "prompt")):
        return psr, url
    msgs = loads_if_json(rec.get("messages"))
    if msgs in (None, "", {}, []):
        return None, ""
    if isinstance(msgs, list):
        return {"messages": msgs}, ""
    if isinstance(msgs, MAPPING) and any(k in msgs for k in ("messages", "input", "contents")):
        return msgs, ""
    if isinstance(msgs, str):
        return {"prompt": msgs}, ""
    raise BadRecord("'messages' is neither a message list nor a request body")


def parse_litellm(rec: Any, src: Source, opts: Any) -> Request:
    """One LiteLLM spend-log row or logging payload → a Request (``format="litellm"``).

    ``id``: ``request_id`` (spend logs) or ``id`` (payloads); ``arrival``: ``startTime``
    (ISO 8601 or epoch seconds); ``session``: ``session_id``, else the usual session fields of
    the row and its ``metadata``; ``model``: ``model``, else the body's; ``provider``:
    ``custom_llm_provider`` as logged, else from the model; ``cache_key``, ``cache_retention`` and
    ``affinity`` (``user``, ``safety_identifier``): the body's, else ``model_parameters``' (a
    logging payload keeps them there).
    ``cache_hit`` (LiteLLM's own response cache) is not interpreted.

    Raises:
        BadRecord: for a malformed body, time or usage count.
    """
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    body, url = _request_body(rec)
    md = loads_if_json(rec.get("metadata"))
    md = md if isinstance(md, MAPPING) else {}
    resp = loads_if_json(rec.get("response"))
    usage_object = md.get("usage_object")
    if not isinstance(usage_object, MAPPING) and isinstance(resp, MAPPING):
        usage_object = resp.get("usage")
    fmt: str | None = None
    parts: tuple[Part, ...] = ()
    params: dict[str, Any] = {}
    cache_key = retention = None
    if body is not None:
        if isinstance(body.get("prompt"), str) and "messages" not in body:
            fmt, parts = "openai-chat", (Part("user", "messages", body["prompt"], "user", 0),)
        else:
            fmt = body_format(body, url)
            if fmt is None:
                raise BadRecord("the stored request body is no chat, responses, messages or generateContent body")
            b = parse_body(body, fmt)
            parts, params, cache_key, retention = b.parts, b.params, b.cache_key, b.retention
    model = rec.get("model") or (body or {}).get("model") or getattr(opts, "model", None)
    model = str(model) if model else None
    provider = logged_provider(rec.get("custom_llm_provider"), model)
    if provider is None and fmt is not None:
        provider = BODY_APIS[fmt][1]
    mp = loads_if_json(rec.get("model_parameters"))
    mp = mp if isinstance(mp, MAPPING) else {}
    if fmt is not None and not any(p.kind == "tool" for p in parts):
        tools = require_list(mp.get("tools"), "model_parameters.tools")  # StandardLoggingPayload keeps tools here
        if tools:
            parts = tuple(Part("tool", f"model_parameters.tools[{i}]", stable_json(t)) for i, t in enumerate(tools)) + parts
    params = {**_openai.params_of(mp), **params}
    if cache_key is None:
        cache_key = cache_key_of(mp)
    if retention is None and isinstance(mp.get("prompt_cache_retention"), str):
        retention = mp["prompt_cache_retention"]
    rid = rec.get("request_id") or rec.get("id")
    start = rec.get("startTime", rec.get("start_time"))
    slm = md.get("spend_logs_metadata")
    session = rec.get("session_id") or (slm.get("session_id") if isinstance(slm, MAPPING) else None) \
        or find_session(rec, body, md)
    response = response_of(fmt, body or {}, resp) if fmt is not None and isinstance(resp, MAPPING) and resp else None
    up = rec.get("custom_llm_provider")
    if isinstance(up, str) and up and (response is None or not response.upstream):
        # the route (openrouter); a router's response names who served it
        response = replace(response, upstream=up) if response is not None else Response(upstream=up)
    dep = _deployment(rec)
    if dep is not None:
        response = replace(response, deployment=dep) if response is not None else Response(deployment=dep)
    # model_parameters' identifiers, under the body's own and the headers the row logged
    affinity = {**affinity_of(mp), **(affinity_of(body, {"headers": _headers(rec, mp)}) if body is not None else {})}
    return Request(
        id=str(rid) if isinstance(rid, (str, int)) and rid != "" else default_id(src), source=src, format="litellm",
        api=BODY_APIS[fmt][0] if fmt else "chat", provider=provider, model=model,
        arrival=parse_time(start) if start not in (None, "") else None, parts=parts,
        cache_key=cache_key, session=str(session) if session else None, params=params,
        usage=litellm_usage(rec, usage_object), cache_retention=retention, response=response,
        affinity=affinity, **chain_fields(fmt, body),
    )


def _headers(rec: Mapping[str, Any], mp: Mapping[str, Any]) -> dict[str, Any]:
    """The request headers a row logs: ``proxy_server_request.headers`` (what the proxy
    received) and the ``extra_headers`` the caller set (``model_parameters`` in a
    StandardLoggingPayload, ``x-grok-conv-id`` for xAI's per-server cache routing)."""
    out: dict[str, Any] = {}
    psr = loads_if_json(rec.get("proxy_server_request"))
    for h in ((psr.get("headers") if isinstance(psr, MAPPING) else None), mp.get("extra_headers")):
        h = loads_if_json(h)
        if isinstance(h, MAPPING):
            out.update(h)
    return out


def _deployment(rec: Mapping[str, Any]) -> str | None:
    """The LiteLLM deployment that served the row: ``model_id`` (the deployment's id in the
    router's model list, also ``hidden_params.model_id``) with its ``api_base``, or ``None``
    when the row names neither. One deployment per upstream account or endpoint: their caches
    are apart (https://docs.litellm.ai/docs/proxy/logging_spec)."""
    hp = loads_if_json(rec.get("hidden_params"))
    hp = hp if isinstance(hp, MAPPING) else {}
    mid = rec.get("model_id") or hp.get("model_id")
    base = rec.get("api_base") or hp.get("api_base")
    mid = str(mid) if isinstance(mid, (str, int)) and mid != "" else None
    base = str(base) if isinstance(base, str) and base else None
    if mid and base:
        return f"{mid} ({base})"
    return mid or base


class LiteLLMReader(Reader):
    """LiteLLM spend logs and logging payloads (see the module docstring)."""

    name = "litellm"
    producer = "LiteLLM proxy"
    shapes = "LiteLLM_SpendLogs rows (DB exports, GET /spend/logs) and StandardLoggingPayload (s3/gcs/custom loggers)"
    looks_for = "call_type with startTime, spend or response_cost"
    owns = ("call_type",)
    stateful = True  # Responses API chains (previous_response_id) are rebuilt per file

    def __init__(self) -> None:
        self.chains = Chains()

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and looks_litellm(rec):
            return "call_type with startTime/spend/response_cost"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Request:
        req = parse_litellm(rec, src, opts)
        if req.api != "responses":
            return req
        resp = loads_if_json(rec.get("response"))
        return self.chains.link(req, resp.get("output") if isinstance(resp, MAPPING) else None)
