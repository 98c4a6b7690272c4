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

Also read: OTLP **log** records (``resourceLogs``), where the opt-in
``gen_ai.client.inference.operation.details`` event and the per-message events of conventions
≤ 1.36 land (gen-ai-events.md: events are log records), joined to their span by trace and span
id; OpenLLMetry/Traceloop tools (``llm.request.functions.<i>.*``), sessions
(``traceloop.association.properties.session_id``) and content given as a JSON list of blocks;
OpenInference multimodal messages (``llm.input_messages.<i>.message.contents.<j>.message_content.text``),
tools (``llm.tools.<i>.tool.json_schema``) and Phoenix's span JSON, whose ``llm.input_messages``
is an unflattened list (Arize-ai/openinference ``spec/semantic_conventions.md``,
``spec/llm_spans.md``); the Vercel AI SDK's telemetry (``ai.prompt.messages``, ``ai.prompt``,
``ai.prompt.tools``, ``ai.usage.*``; https://ai-sdk.dev/docs/ai-sdk-core/telemetry), whose
``ai.generateText`` span wraps the ``ai.generateText.doGenerate`` call.

Spans with no content are usage-only requests (no parts): ``read_requests`` counts them and
their reported usage in :class:`~promptcache.ingest.InputStats` and keeps them out of the
simulation. Spans that are no inference (``invoke_agent``, ``execute_tool``, ``embeddings``,
HTTP spans...) are skipped and counted; agent spans would otherwise count their calls' tokens
twice. An inference span inside another (the AI SDK's wrapper, an instrumented client inside an
instrumented framework) is the call; its parent is counted as a duplicate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Source
from . import openai as _openai
from .bodies import default_id, reprefix
from .common import MAPPING, blob_digest, loads_if_json, logged_provider, stable_json
from .fields import parse_time
from .outcomes import Keyed, Skipped
from .reader import BODY_KEYS, Reader
from .usage import otel_usage

#: ``gen_ai.operation.name`` values that are a model inference.
INFERENCE_OPERATIONS = ("chat", "text_completion", "generate_content")
#: First components of the semantic conventions' dotted ``gen_ai.provider.name`` values
#: (``aws.bedrock``, ``azure.ai.inference``, ``azure.ai.openai``, ``gcp.gemini``, ``gcp.gen_ai``,
#: ``gcp.vertex_ai``, ``ibm.watsonx.ai``): such a name is kept whole.
OTEL_NAMESPACES = ("aws", "azure", "gcp", "ibm")
#: The event that may carry the content attributes instead of the span.
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
#: Per-message events of conventions ≤ 1.36.
MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
#: Vercel AI SDK operations that are a model call (``.do*``) or wrap one (the others).
VERCEL_CALLS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
_INDEXED = re.compile(r"^(gen_ai\.prompt|llm\.input_messages)\.(\d+)\.(?:message\.)?(role|content)$")
_OI_CONTENTS = re.compile(r"^llm\.input_messages\.(\d+)\.message\.contents\.(\d+)\.message_content\.(type|text|image\.image\.url)$")
_OI_TOOL = re.compile(r"^llm\.tools\.(\d+)\.tool\.json_schema$")
_OLLM_FN = re.compile(r"^llm\.request\.functions\.(\d+)\.(name|description|parameters)$")
SESSION_ATTRS = ("gen_ai.conversation.id", "session.id", "traceloop.association.properties.session_id",
                 "ai.telemetry.metadata.sessionId", "ai.telemetry.metadata.session_id", "langfuse.session.id")


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
    """Attributes as a flat dict, from OTLP's ``[{"key", "value": AnyValue}]``, a plain object,
    or a nested object (Phoenix's span JSON: ``{"llm": {"model_name": ...}}`` is
    ``llm.model_name``).

    Raises:
        BadRecord: when they are neither.
    """
    if obj is None:
        return {}
    if isinstance(obj, MAPPING):
        out: dict[str, Any] = {}
        stack = [("", obj)]
        while stack:
            prefix, m = stack.pop()
            for k, v in m.items():
                key = f"{prefix}{k}"
                if isinstance(v, MAPPING) and prefix.count(".") < 8 and key not in _JSON_VALUED:
                    stack.append((key + ".", v))
                else:
                    out[key] = v
        return out
    if isinstance(obj, list):
        out = {}
        for kv in obj:
            if not isinstance(kv, MAPPING) or not isinstance(kv.get("key"), str):
                raise BadRecord(f"{what} holds an entry without a key")
            out[kv["key"]] = any_value(kv.get("value"))
        return out
    raise BadRecord(f"{what} is neither a list of key/value pairs nor an object")


#: Attributes whose value is one JSON object (not a level of nesting).
_JSON_VALUED = frozenset(("gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions",
                          "gen_ai.prompt", "ai.prompt", "ai.prompt.messages", "input.value", "output.value",
                          "llm.invocation_parameters", "metadata"))


def looks_otel(rec: Mapping[str, Any]) -> bool:
    """An OTLP JSON export (``resourceSpans`` or ``resourceLogs``) or one span with
    ``attributes`` and a span id or start time."""
    if isinstance(rec.get("resourceSpans"), list) or isinstance(rec.get("resourceLogs"), list):
        return True
    if "attributes" not in rec:
        return False
    ctx = rec.get("context")
    return "spanId" in rec or "startTimeUnixNano" in rec or (isinstance(ctx, MAPPING) and "span_id" in ctx)


def semconv_parts(msgs: Any, base: str) -> list[Part]:
    """Parts of GenAI semantic-convention messages (``[{"role", "parts": [...]}]``; a message
    with ``content`` instead of ``parts`` is read as a chat message).

    Raises:
        BadRecord: when a message or part is malformed.
    """
    if not isinstance(msgs, list):
        raise BadRecord(f"{base} is not a list of messages")
    out: list[Part] = []
    for i, m in enumerate(msgs):
        if not isinstance(m, MAPPING) or not isinstance(m.get("role"), str):
            raise BadRecord(f"{base}[{i}] has no role")
        role = m["role"]
        kind = _openai.ROLE_KIND.get(role, "user")
        mparts = m.get("parts")
        if mparts is None and "content" in m:
            out += reprefix(_openai._chat_message(i, m), f"messages[{i}]", f"{base}[{i}]")
            continue
        if not isinstance(mparts, list):
            raise BadRecord(f"{base}[{i}].parts is not a list")
        for j, p in enumerate(mparts):
            path = f"{base}[{i}].parts[{j}]"
            if not isinstance(p, MAPPING):
                raise BadRecord(f"{path} is not a part object")
            t = p.get("type")
            if t in ("text", "reasoning", "thinking"):
                text = p.get("content", p.get("text"))
                if not isinstance(text, str):
                    raise BadRecord(f"{path}.content is not a string")
                out.append(Part("assistant" if t != "text" else kind, path, text, role, i))
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


_semconv_parts = semconv_parts


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


def _content_text(content: Any, path: str, kind: str, role: str, i: int) -> list[Part]:
    """One message's content: text; a JSON list of content blocks (OpenLLMetry stores
    Anthropic content so) read block by block; else its JSON."""
    c = loads_if_json(content) if isinstance(content, str) and content[:1] == "[" else content
    if isinstance(c, list) and c and all(isinstance(b, MAPPING) and "type" in b for b in c):
        return [_openai.content_block_part(b, f"{path}[{j}]", kind, role, i) for j, b in enumerate(c)]
    text = content if isinstance(content, str) else ("" if content is None else stable_json(content))
    return [Part(kind, path, text, role, i)]


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[Part]:
    """OpenLLMetry ``gen_ai.prompt.<i>.*`` / OpenInference ``llm.input_messages.<i>.message.*``
    (with OpenInference's multimodal ``message.contents.<j>.message_content.*``)."""
    msgs: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        m = _INDEXED.match(k)
        if m and m.group(1) == prefix:
            msgs.setdefault(int(m.group(2)), {})[m.group(3)] = v
        elif prefix == "llm.input_messages":
            c = _OI_CONTENTS.match(k)
            if c:
                msgs.setdefault(int(c.group(1)), {}).setdefault("contents", {}).setdefault(int(c.group(2)), {})[c.group(3)] = v
    out: list[Part] = []
    mid = ".message" if prefix == "llm.input_messages" else ""
    for i in sorted(msgs):
        role = str(msgs[i].get("role") or "user")
        kind = _openai.ROLE_KIND.get(role, "user")
        contents = msgs[i].get("contents")
        if contents and "content" not in msgs[i]:
            for j in sorted(contents):
                c = contents[j]
                path = f"{prefix}.{i}.message.contents.{j}.message_content"
                if c.get("type") == "image" or "image.image.url" in c:
                    out.append(Part("image", path, f"<image {blob_digest(str(c.get('image.image.url', '')))}>", role, i))
                else:
                    t = c.get("text")
                    out.append(Part(kind, f"{path}.text", t if isinstance(t, str) else stable_json(t), role, i))
            continue
        out += _content_text(msgs[i].get("content"), f"{prefix}.{i}{mid}.content", kind, role, i)
    return out


def _oi_list(msgs: list[Any]) -> list[Part]:
    """Phoenix's unflattened ``llm.input_messages``: ``[{"message.role", "message.content"}]``
    (or ``[{"message": {"role", "content"}}]``)."""
    out: list[Part] = []
    for i, m in enumerate(msgs):
        if not isinstance(m, MAPPING):
            raise BadRecord(f"llm.input_messages[{i}] is not an object")
        flat = attributes(m)
        role = str(flat.get("message.role") or flat.get("role") or "user")
        content = flat.get("message.content", flat.get("content"))
        out += _content_text(content, f"llm.input_messages[{i}].message.content", _openai.ROLE_KIND.get(role, "user"), role, i)
    return out


def _tools(attrs: Mapping[str, Any]) -> list[Part]:
    """Tool definitions, from the first convention that has them."""
    tools = loads_if_json(attrs.get("gen_ai.tool.definitions"))
    if isinstance(tools, list) and tools:
        return [Part("tool", f"gen_ai.tool.definitions[{k}]", stable_json(t)) for k, t in enumerate(tools)]
    vt = attrs.get("ai.prompt.tools")
    if isinstance(vt, list) and vt:  # the AI SDK: a list of JSON strings
        return [Part("tool", f"ai.prompt.tools[{k}]", stable_json(loads_if_json(t))) for k, t in enumerate(vt)]
    oi = sorted((int(m.group(1)), v) for k, v in attrs.items() if (m := _OI_TOOL.match(k)))
    if oi:
        return [Part("tool", f"llm.tools.{i}.tool.json_schema", v if isinstance(v, str) else stable_json(v)) for i, v in oi]
    fns: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        m = _OLLM_FN.match(k)
        if m:
            fns.setdefault(int(m.group(1)), {})[m.group(2)] = loads_if_json(v) if m.group(2) == "parameters" else v
    return [Part("tool", f"llm.request.functions.{i}", stable_json(fns[i])) for i in sorted(fns)]


def _content(attrs: Mapping[str, Any], events: list[tuple[str, dict[str, Any]]]) -> list[Part]:
    """The prompt parts a span (or a log record) records, from the first content convention it
    uses, after its tool definitions."""
    parts: list[Part] = _tools(attrs)
    msgs = loads_if_json(attrs.get("gen_ai.input.messages"))
    si = loads_if_json(attrs.get("gen_ai.system_instructions"))
    if msgs is not None or si is not None:
        if si is not None:
            parts += _system_parts(si)
        if msgs is not None:
            parts += semconv_parts(msgs, "gen_ai.input.messages")
        return parts
    legacy = attrs.get("gen_ai.prompt")
    if legacy is None:
        legacy = next((ea.get("gen_ai.prompt") for name, ea in events if name == "gen_ai.content.prompt"), None)
    if legacy is not None:
        legacy = loads_if_json(legacy)
        if isinstance(legacy, str):
            return parts + [Part("user", "gen_ai.prompt", legacy, "user", 0)]
        return parts + list(reprefix(_openai.parse_chat({"messages": legacy}), "messages", "gen_ai.prompt"))
    vm = loads_if_json(attrs.get("ai.prompt.messages"))
    if isinstance(vm, list):  # the AI SDK's language-model prompt: chat messages with content parts
        return parts + list(reprefix(_openai.parse_chat({"messages": vm}), "messages", "ai.prompt.messages"))
    vp = loads_if_json(attrs.get("ai.prompt"))
    if isinstance(vp, MAPPING):  # the AI SDK's wrapper span: {system?, prompt | messages}
        out: list[Part] = []
        if isinstance(vp.get("system"), str):
            out.append(Part("system", "ai.prompt.system", vp["system"], "system"))
        if isinstance(vp.get("messages"), list):
            out += reprefix(_openai.parse_chat({"messages": vp["messages"]}), "messages", "ai.prompt.messages")
        elif isinstance(vp.get("prompt"), str):
            out.append(Part("user", "ai.prompt.prompt", vp["prompt"], "user", 0))
        return parts + out
    oil = attrs.get("llm.input_messages")
    if isinstance(oil, list):
        return parts + _oi_list(oil)
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
        parts += _content_text(content, f"events[{e}]", _openai.ROLE_KIND.get(role, "user"), role, k)
        k += 1
    return parts


def _arrival(span: Mapping[str, Any]) -> float | None:
    for key in ("startTimeUnixNano", "start_time_unix_nano", "timeUnixNano"):
        ns = span.get(key)
        if ns not in (None, "", 0, "0"):
            try:
                return parse_time(int(ns) / 1e9)
            except (TypeError, ValueError, OverflowError):
                raise BadRecord(f"{key} {ns!r} is not an integer") from None
    t = span.get("start_time", span.get("startTime"))
    return parse_time(t) if t not in (None, "") else None


def _norm_id(v: Any) -> str | None:
    if not isinstance(v, (str, int)) or isinstance(v, bool) or v == "":
        return None
    s = str(v).lower()
    return s[2:] if s.startswith("0x") else s


def span_keys(trace: Any, span: Any) -> tuple[str, ...]:
    """The join key of a span (``otel:<trace id>:<span id>``, ids normalised), or none."""
    sid = _norm_id(span)
    return (f"otel:{_norm_id(trace) or '-'}:{sid}",) if sid else ()


def classify(attrs: Mapping[str, Any], kind: Any = None) -> str | None:
    """``None`` when a span is a model inference, else why it is skipped."""
    op = attrs.get("gen_ai.operation.name")
    if op is not None:
        return None if op in INFERENCE_OPERATIONS else f"OpenTelemetry '{str(op)[:40]}' span (not an inference)"
    oi = attrs.get("openinference.span.kind", kind)
    if oi is not None:
        return None if str(oi).upper() == "LLM" else f"OpenInference {str(oi)[:20]} span (not an LLM call)"
    vop = attrs.get("ai.operationId") or attrs.get("operation.name")
    if isinstance(vop, str) and vop.startswith("ai."):
        base = vop.split(".do", 1)[0]
        return None if base in VERCEL_CALLS else f"Vercel AI SDK '{vop[:40]}' span (not a model call)"
    if not any(k.startswith(("gen_ai.", "llm.")) for k in attrs):
        return "span without GenAI attributes"
    return None


def span_request(attrs: Mapping[str, Any], events: list[tuple[str, dict[str, Any]]], src: Source, opts: Any,
                 rid: Any, arrival: float | None, fmt: str = "otel") -> Request:
    """A request from a span's (or a log record's) flat attributes: content, model, provider,
    session and usage in every convention this module reads."""
    parts = _content(attrs, events)
    model = (attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model") or attrs.get("llm.model_name")
             or attrs.get("ai.model.id") or getattr(opts, "model", None))
    model = str(model) if model else None
    pname = (attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system") or attrs.get("llm.provider")
             or attrs.get("llm.system") or attrs.get("ai.model.provider"))
    if isinstance(pname, str) and "." in pname and pname.split(".", 1)[0].lower() not in OTEL_NAMESPACES:
        # the AI SDK's "<provider>.<api>" ("openai.chat", "google.vertex.chat"), not a semantic-convention
        # name ("aws.bedrock", "gcp.vertex_ai", "azure.ai.openai"): the provider, Vertex named as such
        pname = "vertex" if ".vertex" in pname.lower() else pname.split(".", 1)[0]
    session = next((attrs[k] for k in SESSION_ATTRS if attrs.get(k) not in (None, "")), None)
    return Request(
        id=str(rid) if rid else default_id(src), source=src, format=fmt, api="chat",
        provider=logged_provider(pname, model), model=model, arrival=arrival,
        parts=tuple(parts), session=str(session) if session is not None else None, usage=otel_usage(attrs),
    )


def _span(span: Any, src: Source, opts: Any, trace: Any = None) -> Keyed | Skipped:
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
    why = classify(attrs, span.get("span_kind"))
    if why is not None:
        return Skipped(why)
    ctx = span.get("context") if isinstance(span.get("context"), MAPPING) else {}
    sid = span.get("spanId") or ctx.get("span_id") or attrs.get("gen_ai.response.id")
    tid = span.get("traceId") or ctx.get("trace_id") or trace
    parent = span.get("parentSpanId") or span.get("parent_id") or ctx.get("parent_id")
    req = span_request(attrs, events, src, opts, sid, _arrival(span))
    return Keyed(req, keys=span_keys(tid, sid), supersedes=span_keys(tid, parent) if _norm_id(parent) else ())


def _logs(rec: Mapping[str, Any], src: Source, opts: Any) -> list[Keyed | Skipped | BadRecord]:
    """Every log record of an OTLP logs export: GenAI content events become content-only
    requests keyed by their span (joined to it), the per-message events of one span one request
    (the others of that span join it), anything else is skipped."""
    out: list[Any] = []
    groups: dict[tuple[str, ...], list[tuple[str, dict[str, Any], Any]]] = {}
    for r, rl in enumerate(rec["resourceLogs"]):
        scopes = rl.get("scopeLogs", rl.get("instrumentationLibraryLogs")) if isinstance(rl, MAPPING) else None
        if not isinstance(scopes, list):
            out.append(BadRecord(f"resourceLogs[{r}].scopeLogs is not a list"))
            continue
        for ss in scopes:
            recs = ss.get("logRecords") if isinstance(ss, MAPPING) else None
            if not isinstance(recs, list):
                out.append(BadRecord(f"resourceLogs[{r}]: logRecords is not a list"))
                continue
            for lr in recs:
                try:
                    if not isinstance(lr, MAPPING):
                        raise BadRecord("log record is not an object")
                    attrs = attributes(lr.get("attributes"), "log record attributes")
                    name = lr.get("eventName") or attrs.get("event.name")
                    keys = span_keys(lr.get("traceId"), lr.get("spanId"))
                    if name == DETAILS_EVENT or "gen_ai.input.messages" in attrs:
                        req = span_request(attrs, [], src, opts, _norm_id(lr.get("spanId")), _arrival(lr))
                        out.append(Keyed(req, keys=keys))
                    elif name in MESSAGE_EVENTS:
                        body = any_value(lr.get("body"))
                        if not keys:
                            keys = (f"otel:log:{src.line}",)
                        content = body if isinstance(body, MAPPING) else {"content": body}
                        if keys not in groups:
                            groups[keys] = []
                            out.append(("first", keys))
                        else:
                            out.append(("joins", keys))  # this message joins its span's request
                        groups[keys].append((str(name), {**attrs, **content}, lr))
                    else:
                        out.append(Skipped("OpenTelemetry log record that is no GenAI event"))
                except BadRecord as e:
                    out.append(BadRecord(f"log record: {e}"))
    result: list[Any] = []
    for item in out:
        if isinstance(item, tuple):
            what, keys = item
            if what == "joins":
                result.append(Keyed(Request(id=default_id(src), source=src, format="otel", api="chat", provider=None,
                                            model=None, arrival=None), keys=keys))
                continue
            evs = groups[keys]
            first = evs[0][2]
            attrs = {k: v for k, v in evs[0][1].items() if k != "content"}
            req = span_request(attrs, [(n, a) for n, a, _ in evs], src, opts, _norm_id(first.get("spanId")), _arrival(first))
            result.append(Keyed(req, keys=keys))
        else:
            result.append(item)
    return result


def parse_otel(rec: Any, src: Source, opts: Any) -> list[Keyed | Skipped | BadRecord]:
    """Every span of an OTLP JSON traces export, every log record of a logs export (a record may
    hold both), or one span → outcomes (``format="otel"``), each with the record's line.

    ``id``: ``spanId``; ``arrival``: ``startTimeUnixNano`` (ns) or ``start_time``; ``model``:
    ``gen_ai.request.model``, else ``gen_ai.response.model``, ``llm.model_name``, ``ai.model.id``;
    ``provider``: from the model, else ``gen_ai.provider.name``/``gen_ai.system``; ``session``:
    :data:`SESSION_ATTRS`; ``usage``: ``gen_ai.usage.*`` in current and legacy names
    (:func:`~promptcache.ingest.usage.otel_usage`); ``parts``: the recorded content (see the
    module docstring), empty when content capture was off. Spans that are no inference are
    :class:`~promptcache.ingest.outcomes.Skipped`; a malformed span is a
    :class:`~promptcache.errors.BadRecord` item naming it, so the other spans are kept.

    Raises:
        BadRecord: when the record is not an object, or its structure is not OTLP.
    """
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    if "resourceSpans" not in rec and "resourceLogs" not in rec:
        return [_span(rec, src, opts)]
    out: list[Keyed | Skipped | BadRecord] = []
    rss = rec.get("resourceSpans", [])
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
    if "resourceLogs" in rec:
        if not isinstance(rec["resourceLogs"], list):
            raise BadRecord("'resourceLogs' is not a list")
        out += _logs(rec, src, opts)
    return out


class OTelReader(Reader):
    """OpenTelemetry GenAI telemetry (see the module docstring)."""

    name = "otel"
    producer = ("OpenTelemetry GenAI instrumentations, OpenLLMetry/Traceloop, OpenInference/Arize Phoenix, "
                "Vercel AI SDK telemetry")
    shapes = ("OTLP JSON exports of spans and of log-record events (Collector file exporter), the SDK console "
              "exporter's span objects, Phoenix span JSON")
    looks_for = "resourceSpans or resourceLogs, or one span: attributes with spanId, startTimeUnixNano or context.span_id"
    owns = ("resourceSpans", "resourceLogs", "spanId", "startTimeUnixNano")

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or not self.alone(rec):
            return None
        if isinstance(rec.get("resourceSpans"), list) or isinstance(rec.get("resourceLogs"), list):
            return "an OTLP JSON export (resourceSpans/resourceLogs)"
        if looks_otel(rec) and ("spanId" in rec or "startTimeUnixNano" in rec or not (
                "custom_id" in rec or any(k in rec for k in BODY_KEYS))):
            return "one span (attributes with a span id or start time)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> list[Keyed | Skipped | BadRecord]:
        return parse_otel(rec, src, opts)

    def merge(self, first: Request, later: Request) -> Request:
        """A span and the log record(s) with its content: the content, the span's usage, and
        the earlier of the two times (the span's start; log records are written at its end)."""
        got = super().merge(first, later)
        times = [t for t in (first.arrival, later.arrival) if t is not None]
        if times and got.arrival != min(times):
            from dataclasses import replace

            got = replace(got, arrival=min(times))
        return got
