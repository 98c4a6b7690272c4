"""Portkey log exports (JSONL; docs-core ``product/observability/logs-export.mdx``, checked
2026-12-01): columns ``created_at``, ``request.body``, ``response.body``, ``ai_org``,
``ai_model``, ``req_units``, ``res_units``, ``cost``, ``cache_status``, ``trace_id``,
``metadata.key`` / ``metadata.value`` ..., written either as flat dotted keys (the column names)
or nested (``{"request": {"body": ...}}``).

``request.body`` is the provider body (read by the body readers' parsers); a ``cache_status`` of
``HIT`` (or ``SEMANTIC HIT``) was served from Portkey's own response cache, no LLM call: skipped.
"""

from __future__ import annotations

from typing import Any

from ..errors import BadRecord
from ..model import Request, Response, Source
from .bodies import BODY_APIS, affinity_of, body_format, default_id, parse_body, response_of, Chains, chain_fields
from .common import MAPPING, loads_if_json, logged_provider
from .fields import parse_time
from .outcomes import Skipped
from .reader import Reader
from .usage import count, find_usage, total_with


def _get(rec: Any, dotted: str) -> Any:
    if dotted in rec:
        return loads_if_json(rec[dotted])
    head, _, tail = dotted.partition(".")
    inner = loads_if_json(rec.get(head))
    return loads_if_json(inner.get(tail)) if isinstance(inner, MAPPING) else None


class PortkeyReader(Reader):
    """Portkey log exports (see the module docstring). ``arrival``: ``created_at``;
    ``session``: ``trace_id``; ``model``: ``ai_model``; ``upstream``: ``ai_org``; ``usage``: the
    response body's, else ``req_units``/``res_units``."""

    name = "portkey"
    producer = "Portkey AI gateway"
    shapes = "logs export JSONL (request.body, response.body, ai_org, ai_model, req_units)"
    looks_for = "request.body with ai_model / ai_org / req_units"
    owns = ("request.body", "ai_org", "req_units", "ai_model")
    stateful = True  # Responses API chains (previous_response_id) are rebuilt per file

    def __init__(self) -> None:
        self.chains = Chains()

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and ("ai_model" in rec or "ai_org" in rec or "req_units" in rec) \
                and ("request.body" in rec or "request" in rec):
            return "a Portkey log (request.body with ai_model/ai_org/req_units)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        if str(rec.get("cache_status", "")).upper() in ("HIT", "SEMANTIC HIT"):
            return Skipped("served from Portkey's own response cache (no LLM call)")
        body = _get(rec, "request.body")
        resp = _get(rec, "response.body")
        fmt = None
        parts: tuple = ()
        params: dict[str, Any] = {}
        cache_key = retention = None
        if isinstance(body, MAPPING) and body:
            fmt = body_format(body, str(rec.get("request_url") or ""))
            if fmt is None:
                raise BadRecord("request.body is no chat, responses, messages or generateContent body")
            b = parse_body(body, fmt)
            parts, params, cache_key, retention = b.parts, b.params, b.cache_key, b.retention
        model = rec.get("ai_model") or (body.get("model") if isinstance(body, MAPPING) else None) or getattr(opts, "model", None)
        model = str(model) if model else None
        org = rec.get("ai_org")
        usage = find_usage(resp) or total_with(rec.get("req_units"), None, None, rec.get("res_units"), "Portkey units")
        response = response_of(fmt, body, resp) if fmt else None
        if isinstance(org, str) and org and (response is None or not response.upstream):
            # the route (openrouter); a router's response names who served it
            from dataclasses import replace

            response = replace(response, upstream=org) if response is not None else Response(upstream=org)
        aff = affinity_of(body) if isinstance(body, MAPPING) else {}
        if rec.get("metadata.key") == "_user" and rec.get("metadata.value"):
            aff = {**aff, "portkey._user": str(rec["metadata.value"])}
        t = rec.get("created_at")
        session = rec.get("trace_id")
        count(rec.get("req_units"), "req_units")
        req = Request(id=str(rec["id"]) if isinstance(rec.get("id"), str) else default_id(src), source=src,
                      format=self.name, api=BODY_APIS[fmt][0] if fmt else "chat",
                      provider=logged_provider(org, model) or (BODY_APIS[fmt][1] if fmt else None),
                      model=model, arrival=parse_time(t) if t not in (None, "") else None, parts=parts, params=params,
                      cache_key=cache_key, cache_retention=retention, session=str(session) if session else None,
                      usage=usage, response=response, affinity=aff, **chain_fields(fmt, body))
        if req.api != "responses":
            return req
        return self.chains.link(req, resp.get("output") if isinstance(resp, MAPPING) else None)
