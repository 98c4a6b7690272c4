"""OpenTelemetry GenAI spans: OTLP JSON (``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``,
one export request per line or per file, as the Collector's file exporter writes them) and
single spans as the SDK console exporter prints them (``context.span_id``, ``attributes`` as an
object).

Conventions (status Development; https://github.com/open-telemetry/semantic-conventions-genai
``docs/gen-ai/gen-ai-spans.md`` and ``docs/registry/attributes/gen-ai.md``, checked
2026-11-29): inference spans carry ``gen_ai.operation.name`` (``chat``, ``text_completion``,
``generate_content``), ``gen_ai.provider.name`` (older: ``gen_ai.system``),
``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.conversation.id``,
``gen_ai.usage.*`` counts, and, only when content capture is opted in,
``gen_ai.system_instructions``, ``gen_ai.input.messages`` (``[{"role", "parts": [{"type":
"text", "content"} | {"type": "tool_call", ...} | {"type": "tool_call_response", ...} | ...]}]``)
and ``gen_ai.tool.definitions``, on the span or on a
``gen_ai.client.inference.operation.details`` event. Legacy content read too: ``gen_ai.prompt``
(a JSON message list, on the span or a ``gen_ai.content.prompt`` event), OpenLLMetry's
``gen_ai.prompt.<i>.role``/``.content``, OpenInference's
``llm.input_messages.<i>.message.role``/``.content``, and ``gen_ai.{system,user,assistant,tool}.message``
events with a ``content`` attribute.

Spans with no content are usage-only requests (no parts): ``read_requests`` counts them and
their reported usage in :class:`~promptcache.ingest.InputStats` and keeps them out of the
simulation. Spans that are no inference (``invoke_agent``, ``execute_tool``, ``embeddings``,
HTTP spans...) are skipped and counted; agent spans would otherwise count their calls' tokens
twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Source
from . import openai as _openai
from .bodies import default_id, reprefix
from .common import MAPPING, Skipped, blob_digest, loads_if_json, provider_alias, provider_for_model, stable_json
from .fields import parse_time
from .usage import otel_usage

#: ``gen_ai.operation.name`` values that are a model inference.
INFERENCE_OPERATIONS = ("chat", "text_completion", "generate_content")
#: The event that may carry the content attributes instead of the span.
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
#: Per-message events of conventions ≤ 1.36.
MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
_INDEXED = re.compile(r"^(gen_ai\.prompt|llm\.input_messages)\.(\d+)\.(?:message\.)?(role|content)$")


def any_value(v: Any) -> Any:
    """An OTLP JSON ``AnyValue`` as a plain value (``intValue`` arrives as a string).

    Raises:
        BadRecord: for an ``intValue`` that is not an integer.
    """
    if not isinstance(v, MAPPING):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            raise BadRecord(f"intValue {v['intValue']!r} is not an integer") from None
    if "doubleValue" in v:
        return v["doubleValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in v:
        return {kv.get("key"): any_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values") or []
                if isinstance(kv, MAPPING)}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(obj: Any, what: str = "attributes") -> dict[str, Any]:
    """Attributes as a dict, from OTLP's ``[{"key", "value": AnyValue}]`` or a plain object.

    Raises:
        BadRecord: when they are neither.
    """
    if obj is None:
        return {}
    if isinstance(obj, MAPPING):
        return dict(obj)
    if isinstance(obj, list):
        out: dict[str, Any] = {}
        for kv in obj:
            if not isinstance(kv, MAPPING) or not isinstance(kv.get("key"), str):
                raise BadRecord(f"{what} holds an entry without a key")
            out[kv["key"]] = any_value(kv.get("value"))
        return out
    raise BadRecord(f"{what} is neither a list of key/value pairs nor an object")


def looks_otel(rec: Mapping[str, Any]) -> bool:
    """An OTLP JSON export (``resourceSpans``) or one span with ``attributes`` and a span id or
    start time."""
    if isinstance(rec.get("resourceSpans"), list):
        return True
    if "attributes" not in rec:
        return False
    ctx = rec.get("context")
    return "spanId" in rec or "startTimeUnixNano" in rec or (isinstance(ctx, MAPPING) and "span_id" in ctx)


def _semconv_parts(msgs: Any, base: str) -> list[Part]:
    if not isinstance(msgs, list):
        raise BadRecord(f"{base} is not a list of messages")
    out: list[Part] = []
    for i, m in enumerate(msgs):
        if not isinstance(m, MAPPING) or not isinstance(m.get("role"), str):
            raise BadRecord(f"{base}[{i}] has no role")
        role = m["role"]
        kind = _openai.ROLE_KIND.get(role, "user")
        mparts = m.get("parts")
        if not isinstance(mparts, list):
            raise BadRecord(f"{base}[{i}].parts is not a list")
        for j, p in enumerate(mparts):
            path = f"{base}[{i}].parts[{j}]"
            if not isinstance(p, MAPPING):
                raise BadRecord(f"{path} is not a part object")
            t = p.get("type")
            if t in ("text", "reasoning"):
                text = p.get("content")
                if not isinstance(text, str):
                    raise BadRecord(f"{path}.content is not a string")
                out.append(Part("assistant" if t == "reasoning" else kind, path, text, role, i))
            elif t == "tool_call":
                out.append(Part("tool_call", path, stable_json({"name": p.get("name"), "arguments": p.get("arguments")}), role, i))
            elif t == "tool_call_response":
                res = p.get("response", p.get("result"))
                out.append(Part("tool_result", path, res if isinstance(res, str) else stable_json(res), role, i))
            elif t in ("blob", "file", "uri"):
                media = "image" if p.get("modality") == "image" else "document"
                ref = p.get("content") or p.get("file_id") or p.get("uri") or stable_json(p)
                out.append(Part(media, path, f"<{t} {p.get('mime_type') or p.get('modality') or ''} {blob_digest(ref)}>", role, i))
            else:
                out.append(Part(kind, path, stable_json(p), role, i))
        if not mparts:
            out.append(Part(kind, f"{base}[{i}].parts", "", role, i))
    return out


def _system_parts(si: Any) -> list[Part]:
    if isinstance(si, str):
        return [Part("system", "gen_ai.system_instructions", si, "system")]
    if not isinstance(si, list):
        raise BadRecord("gen_ai.system_instructions is not a list of parts")
    out = []
    for j, p in enumerate(si):
        path = f"gen_ai.system_instructions[{j}]"
        if isinstance(p, MAPPING) and isinstance(p.get("content"), str):
            out.append(Part("system", path, p["content"], "system"))
        else:
            out.append(Part("system", path, stable_json(p), "system"))
    return out


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[Part]:
    """OpenLLMetry ``gen_ai.prompt.<i>.*`` / OpenInference ``llm.input_messages.<i>.message.*``."""
    msgs: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        m = _INDEXED.match(k)
        if m and m.group(1) == prefix:
            msgs.setdefault(int(m.group(2)), {})[m.group(3)] = v
    out = []
    mid = ".message" if prefix == "llm.input_messages" else ""
    for i in sorted(msgs):
        role = str(msgs[i].get("role") or "user")
        content = msgs[i].get("content")
        text = content if isinstance(content, str) else ("" if content is None else stable_json(content))
        out.append(Part(_openai.ROLE_KIND.get(role, "user"), f"{prefix}.{i}{mid}.content", text, role, i))
    return out


def _content(attrs: Mapping[str, Any], events: list[tuple[str, dict[str, Any]]]) -> list[Part]:
    """The prompt parts a span records, from the first content convention it uses."""
    parts: list[Part] = []
    tools = loads_if_json(attrs.get("gen_ai.tool.definitions"))
    if isinstance(tools, list):
        parts += [Part("tool", f"gen_ai.tool.definitions[{k}]", stable_json(t)) for k, t in enumerate(tools)]
    msgs = loads_if_json(attrs.get("gen_ai.input.messages"))
    si = loads_if_json(attrs.get("gen_ai.system_instructions"))
    if msgs is not None or si is not None:
        if si is not None:
            parts += _system_parts(si)
        if msgs is not None:
            parts += _semconv_parts(msgs, "gen_ai.input.messages")
        return parts
    legacy = attrs.get("gen_ai.prompt")
    if legacy is None:
        legacy = next((ea.get("gen_ai.prompt") for name, ea in events if name == "gen_ai.content.prompt"), None)
    if legacy is not None:
        legacy = loads_if_json(legacy)
        if isinstance(legacy, str):
            return parts + [Part("user", "gen_ai.prompt", legacy, "user", 0)]
        return parts + list(reprefix(_openai.parse_chat({"messages": legacy}), "messages", "gen_ai.prompt"))
    for prefix in ("gen_ai.prompt", "llm.input_messages"):
        got = _indexed(attrs, prefix)
        if got:
            return parts + got
    k = 0
    for e, (name, ea) in enumerate(events):
        role = MESSAGE_EVENTS.get(name)
        if role is None:
            continue
        body = loads_if_json(ea.get("gen_ai.event.content"))
        content = ea.get("content", body.get("content") if isinstance(body, MAPPING) else None)
        text = content if isinstance(content, str) else ("" if content is None else stable_json(content))
        parts.append(Part(_openai.ROLE_KIND.get(role, "user"), f"events[{e}]", text, role, k))
        k += 1
    return parts


def _arrival(span: Mapping[str, Any]) -> float | None:
    ns = span.get("startTimeUnixNano")
    if ns not in (None, "", 0, "0"):
        try:
            return int(ns) / 1e9
        except (TypeError, ValueError):
            raise BadRecord(f"startTimeUnixNano {ns!r} is not an integer") from None
    t = span.get("start_time", span.get("startTime"))
    return parse_time(t) if t not in (None, "") else None


def _span(span: Any, src: Source, opts: Any) -> Request | Skipped:
    if not isinstance(span, MAPPING):
        raise BadRecord("span is not a JSON object")
    attrs = attributes(span.get("attributes"))
    events: list[tuple[str, dict[str, Any]]] = []
    for e in span.get("events") or []:
        if isinstance(e, MAPPING):
            events.append((str(e.get("name", "")), attributes(e.get("attributes"), "event attributes")))
    for name, ea in events:
        if name == DETAILS_EVENT:
            for k, v in ea.items():
                attrs.setdefault(k, v)
    op = attrs.get("gen_ai.operation.name")
    oi_kind = attrs.get("openinference.span.kind")
    if op is not None:
        if op not in INFERENCE_OPERATIONS:
            return Skipped(f"OpenTelemetry '{op}' span (not an inference)")
    elif oi_kind is not None:
        if str(oi_kind).upper() != "LLM":
            return Skipped(f"OpenInference {oi_kind} span (not an LLM call)")
    elif not any(k.startswith(("gen_ai.", "llm.")) for k in attrs):
        return Skipped("span without GenAI attributes")
    parts = _content(attrs, events)
    model = (attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model") or attrs.get("llm.model_name")
             or getattr(opts, "model", None))
    model = str(model) if model else None
    pname = (attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system") or attrs.get("llm.provider")
             or attrs.get("llm.system"))
    ctx = span.get("context") if isinstance(span.get("context"), MAPPING) else {}
    sid = span.get("spanId") or ctx.get("span_id") or attrs.get("gen_ai.response.id")
    session = attrs.get("gen_ai.conversation.id") or attrs.get("session.id")
    return Request(
        id=str(sid) if sid else default_id(src), source=src, format="otel", api="chat",
        provider=provider_for_model(model) or provider_alias(pname), model=model, arrival=_arrival(span),
        parts=tuple(parts), session=str(session) if session else None, usage=otel_usage(attrs),
    )


def parse_otel(rec: Any, src: Source, opts: Any) -> list[Request | Skipped | BadRecord]:
    """Every span of an OTLP JSON export, or one span → Requests (``format="otel"``), each
    with the record's line.

    ``id``: ``spanId``; ``arrival``: ``startTimeUnixNano`` (ns) or ``start_time``; ``model``:
    ``gen_ai.request.model``, else ``gen_ai.response.model``, ``llm.model_name``; ``provider``:
    from the model, else ``gen_ai.provider.name``/``gen_ai.system``; ``session``:
    ``gen_ai.conversation.id``, else ``session.id``; ``usage``: ``gen_ai.usage.*`` in current
    and legacy names (:func:`~promptcache.ingest.usage.otel_usage`); ``parts``: the recorded
    content (see the module docstring), empty when content capture was off. Spans that are no
    inference are :class:`~promptcache.ingest.common.Skipped`; a malformed span is a
    :class:`~promptcache.errors.BadRecord` item naming it, so the other spans are kept.

    Raises:
        BadRecord: when the record is not an object, or its structure is not OTLP.
    """
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    if "resourceSpans" not in rec:
        return [_span(rec, src, opts)]
    out: list[Request | Skipped | BadRecord] = []
    rss = rec["resourceSpans"]
    if not isinstance(rss, list):
        raise BadRecord("'resourceSpans' is not a list")
    for r, rs in enumerate(rss):
        if not isinstance(rs, MAPPING):
            raise BadRecord(f"resourceSpans[{r}] is not an object")
        scopes = rs.get("scopeSpans", rs.get("instrumentationLibrarySpans")) or []
        if not isinstance(scopes, list):
            raise BadRecord(f"resourceSpans[{r}].scopeSpans is not a list")
        for s, ss in enumerate(scopes):
            spans = ss.get("spans") if isinstance(ss, MAPPING) else None
            if not isinstance(spans, list):
                raise BadRecord(f"resourceSpans[{r}].scopeSpans[{s}].spans is not a list")
            for k, span in enumerate(spans):
                try:
                    out.append(_span(span, src, opts))
                except BadRecord as e:
                    name = span.get("spanId") if isinstance(span, MAPPING) else None
                    out.append(BadRecord(f"span {name or f'resourceSpans[{r}].scopeSpans[{s}].spans[{k}]'}: {e}"))
    return out
