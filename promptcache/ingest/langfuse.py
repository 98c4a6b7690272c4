"""Langfuse observations: batch exports (one observation per JSONL line), pages of the public
API (``GET /api/public/observations`` → ``{"data": [...], "meta": {page ...}}``, and v2
``GET /api/public/v2/observations`` → ``{"data": [...], "meta": {cursor}}`` with
``providedModelName`` and ``input``/``output`` as raw strings), and the UI's trace download
(``{"trace": {...}, "observations": [...]}``).

Field names: ``id``, ``traceId``, ``parentObservationId``, ``type`` (``GENERATION``, ``SPAN``,
``EVENT``, ``AGENT``, ``TOOL`` ...), ``name``, ``startTime``, ``model`` / ``providedModelName``,
``modelParameters``, ``input``, ``output``, ``usageDetails``, ``metadata``; trace: ``sessionId``,
``userId`` (https://langfuse.com/docs/observability/data-model,
https://langfuse.com/docs/model-usage-and-cost; langfuse/langfuse
``fern/apis/server/definition/observations.yml`` and ``legacy/observations-v1.yml``; real
downloads in ``worker/src/__tests__/chatml/framework-traces/*.trace.json``; checked 2026-12-01).

Only ``GENERATION`` observations are LLM calls; the others are skipped and counted. A
GENERATION whose child is also a GENERATION is a wrapper of the same call (the Vercel AI SDK's
``ai.generateText`` over ``ai.generateText.doGenerate``; the parent's usage is not even the
call's): the leaf is the request, the wrapper a duplicate, in whichever order they come.

``input`` is what the integration logged, read by its shape: a prompt string; a message list in
the Chat Completions form (role/content, also LangChain's, LangGraph's, LlamaIndex's and
Pydantic AI's event-style messages), the OpenTelemetry GenAI ``parts`` form (Pydantic AI,
Microsoft Agent Framework, Claude Agent SDK via OTel), Responses API input items (OpenAI Agents
SDK, with ``modelParameters.instructions``), or Anthropic content blocks; a request body
(``{messages}``, ``{system, messages}``, ``{input}``, google-genai ``{contents, config}``); or
``{"prompt": ...}``, or a completion call's ``{"args": [prompt]}`` (LlamaIndex through
OpenInference). Tools come from the body, else ``metadata.tools`` (Vercel AI SDK), else
``toolDefinitions``. ``None`` makes a usage-only request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Response, Source
from . import openai as _openai
from .bodies import BODY_APIS, body_format, cache_key_of, default_id, parse_body, reprefix
from .common import MAPPING, loads_if_json, provider_for_model, stable_json
from .fields import parse_time
from .outcomes import Keyed, Skipped
from .reader import Reader
from .usage import langfuse_usage

#: Observation types Langfuse defines (GENERATION is the only LLM call among them).
OBSERVATION_TYPES = ("GENERATION", "SPAN", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EVALUATOR",
                     "EMBEDDING", "GUARDRAIL")
#: Responses API input item types (an input list holding them is Responses input).
_RESPONSES_ITEMS = ("function_call", "function_call_output", "reasoning", "item_reference", "computer_call",
                    "computer_call_output", "web_search_call", "file_search_call", "message")


def _is_observation(rec: Mapping[str, Any]) -> bool:
    if "spanId" in rec or "traceId" not in rec:
        return False
    return "usageDetails" in rec or "costDetails" in rec or str(rec.get("type", "")).upper() in OBSERVATION_TYPES


def looks_langfuse(rec: Mapping[str, Any]) -> bool:
    """An observation (``traceId`` with ``usageDetails``, ``costDetails`` or a Langfuse
    ``type``, and no OpenTelemetry ``spanId``), an API page whose first item is one, or a UI
    trace download (``trace`` + ``observations``)."""
    if _is_observation(rec):
        return True
    data = rec.get("data")
    if isinstance(data, list) and data and isinstance(data[0], MAPPING) and _is_observation(data[0]):
        return True
    return isinstance(rec.get("trace"), MAPPING) and isinstance(rec.get("observations"), list)


def _semconv_messages(msgs: list[Any], base: str) -> list[Part]:
    from .otel import semconv_parts

    return semconv_parts(msgs, base)


#: LangChain message types (``BaseMessage.type``) → chat roles.
_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool",
                    "chat": "user", "AIMessageChunk": "assistant"}


def _langchain(inp: list[Any], base: str) -> tuple[list[Any], list[Part]]:
    """Messages as Langfuse's LangChain and LangGraph integrations log them, made Chat
    Completions messages: a LangChain ``type`` for a missing ``role``, ``additional_kwargs``'
    ``tool_calls`` moved up, and the tool *definitions* the integration appends as ``role:
    tool`` messages whose content is a ``{type: function, function}`` object taken out as tool
    parts (in the worker's framework traces, ``langgraph-python-2025-08-22.trace.json``)."""
    msgs: list[Any] = []
    tools: list[Part] = []
    for i, m in enumerate(inp):
        if not isinstance(m, MAPPING):
            msgs.append(m)
            continue
        c = m.get("content")
        if m.get("role") == "tool" and isinstance(c, MAPPING) and c.get("type") == "function":
            tools.append(Part("tool", f"{base}[{i}].content", stable_json(c)))
            continue
        if "role" not in m and m.get("type") in _LANGCHAIN_ROLES:
            m = {**m, "role": _LANGCHAIN_ROLES[m["type"]]}
        ak = m.get("additional_kwargs")
        if isinstance(ak, MAPPING) and ak.get("tool_calls") and not m.get("tool_calls"):
            m = {**m, "tool_calls": ak["tool_calls"]}
        if isinstance(c, MAPPING):  # a structured content logged as an object
            m = {**m, "content": stable_json(c)}
        msgs.append(m)
    return msgs, tools


def _message_list(inp: list[Any], base: str) -> tuple[str, tuple[Part, ...], dict[str, Any]]:
    """(format, parts, params) of a logged message list, by the shape of its items."""
    items = [m for m in inp if isinstance(m, MAPPING)]
    if items and all(isinstance(m.get("parts"), list) and "role" in m for m in items):
        return "openai-chat", tuple(_semconv_messages(inp, base)), {}
    if any(m.get("type") in _RESPONSES_ITEMS and "role" not in m for m in items) or any(
            isinstance(m.get("content"), list) and any(isinstance(b, MAPPING) and b.get("type") == "input_text"
                                                       for b in m["content"]) for m in items):
        b = parse_body({"input": inp}, "openai-responses")
        return "openai-responses", reprefix(b.parts, "input", base), b.params
    msgs, tools = _langchain(inp, base)
    body: Mapping[str, Any] = {"messages": msgs}
    fmt = body_format(body) or "openai-chat"
    b = parse_body(body, fmt)
    parts = reprefix(b.parts, "messages", base)
    if tools:  # the paths of the messages after a removed tool definition keep their own index
        kept = [i for i, m in enumerate(inp) if not (isinstance(m, MAPPING) and m.get("role") == "tool"
                                                     and isinstance(m.get("content"), MAPPING)
                                                     and m["content"].get("type") == "function")]
        parts = tuple(_reindexed(p, base, kept) for p in parts)
    return fmt, tuple(tools) + tuple(parts), b.params


def _reindexed(p: Part, base: str, kept: list[int]) -> Part:
    """A part of message ``k`` of the kept messages, named by its index in the logged list."""
    import re

    m = re.match(rf"^{re.escape(base)}\[(\d+)\]", p.path)
    if not m:
        return p
    k = int(m.group(1))
    i = kept[k] if k < len(kept) else k
    return Part(p.kind, f"{base}[{i}]" + p.path[m.end():], p.text, p.role, p.message, p.breakpoint)


def _parts(inp: Any) -> tuple[str | None, tuple[Part, ...], dict[str, Any], str | None, bool]:
    """(body format, parts, params, cache key, has tools) of an observation's ``input``.

    Raises:
        BadRecord: for an input that is no prompt, or a malformed body.
    """
    inp = loads_if_json(inp)
    if inp is None or inp == "" or inp == [] or inp == {}:
        return None, (), {}, None, False
    if isinstance(inp, str):
        return "openai-chat", (Part("user", "input", inp, "user", 0),), {}, None, False
    if isinstance(inp, list):
        fmt, parts, params = _message_list(inp, "input")
        return fmt, parts, params, None, False
    if isinstance(inp, MAPPING):
        if isinstance(inp.get("prompt"), str) and not any(k in inp for k in ("messages", "input", "contents")):
            head = (Part("system", "input.system", inp["system"], "system"),) if isinstance(inp.get("system"), str) else ()
            return "openai-chat", head + (Part("user", "input.prompt", inp["prompt"], "user", 0),), {}, None, False
        if isinstance(inp.get("role"), str) and "content" in inp:  # one message (the Claude Agent SDK via OTel)
            fmt, parts, params = _message_list([inp], "input")
            return fmt, parts, params, None, False
        args = inp.get("args")
        if isinstance(args, list) and args and all(isinstance(a, str) for a in args) and not body_format(inp):
            # LlamaIndex through OpenInference: the call's arguments, a completion prompt
            return "openai-chat", tuple(Part("user", f"input.args[{k}]", a, "user", k) for k, a in enumerate(args)), \
                {}, None, False
        if set(inp) <= {"content", "type"} and not isinstance(inp.get("content"), list):
            return None, (), {}, None, False  # a content without a role: the integration logged no prompt
        fmt = body_format(inp)
        if fmt is None:
            raise BadRecord("'input' is an object but no messages, input or contents body")
        if fmt == "openai-chat" and isinstance(inp.get("messages"), list) and inp["messages"] and all(
                isinstance(m, MAPPING) and isinstance(m.get("parts"), list) for m in inp["messages"]):
            return "openai-chat", tuple(_semconv_messages(inp["messages"], "input.messages")), {}, None, False
        b = parse_body(inp, fmt)
        return fmt, reprefix(b.parts, "", "input."), b.params, b.cache_key, bool(inp.get("tools"))
    raise BadRecord("'input' is neither a prompt string, a message list nor a request body")


def _tools(obs: Mapping[str, Any], md: Mapping[str, Any]) -> tuple[Part, ...]:
    """Tool definitions logged beside the input: ``metadata.tools`` (a list, often of JSON
    strings: the Vercel AI SDK's ``ai.prompt.tools``), else ``toolDefinitions``."""
    tools = loads_if_json(md.get("tools"))
    if isinstance(tools, list) and tools:
        return tuple(Part("tool", f"metadata.tools[{i}]", stable_json(loads_if_json(t))) for i, t in enumerate(tools))
    td = loads_if_json(obs.get("toolDefinitions"))
    if isinstance(td, MAPPING) and td:
        return tuple(Part("tool", f"toolDefinitions[{k!r}]", stable_json(v)) for k, v in td.items())
    if isinstance(td, list) and td:
        return tuple(Part("tool", f"toolDefinitions[{i}]", stable_json(v)) for i, v in enumerate(td))
    return ()


def _response(obs: Mapping[str, Any], n: int) -> Response | None:
    out = loads_if_json(obs.get("output"))
    if isinstance(out, MAPPING) and isinstance(out.get("message"), MAPPING):
        out = out["message"]
    if isinstance(out, list) and len(out) == 1 and isinstance(out[0], MAPPING) and "role" in out[0]:
        out = out[0]
    if isinstance(out, MAPPING) and out.get("role") == "assistant" and "parts" not in out:
        msgs, _ = _langchain([out], "input")
        try:
            return Response(parts=reprefix(_openai._chat_message(n, msgs[0]), "messages", "input"))
        except BadRecord:
            return None
    return None


def _observation(obs: Any, src: Source, opts: Any, trace: Mapping[str, Any] | None = None) -> Keyed | Skipped:
    if not isinstance(obs, MAPPING):
        raise BadRecord("observation is not a JSON object")
    typ = obs.get("type")
    if typ is not None and str(typ).upper() != "GENERATION":
        return Skipped(f"Langfuse {str(typ).upper()[:20]} observation (not an LLM call)")
    fmt, parts, params, cache_key, has_tools = _parts(obs.get("input"))
    mp = loads_if_json(obs.get("modelParameters"))
    mp = mp if isinstance(mp, MAPPING) else {}
    md = loads_if_json(obs.get("metadata"))
    md = md if isinstance(md, MAPPING) else {}
    if parts and not has_tools and not any(p.kind == "tool" for p in parts):
        parts = _tools(obs, md) + parts
    instr = mp.get("instructions")
    if parts and isinstance(instr, str) and instr and not any(p.kind == "system" for p in parts):
        tools = tuple(p for p in parts if p.kind == "tool")
        rest = tuple(p for p in parts if p.kind != "tool")
        parts = tools + (Part("system", "modelParameters.instructions", instr, "developer", None),) + rest
    params = {**_openai.params_of({k: loads_if_json(v) for k, v in mp.items()}), **params}
    cache_key = cache_key or cache_key_of(mp) or cache_key_of(md)
    model = obs.get("model") or obs.get("providedModelName") or getattr(opts, "model", None)
    model = str(model) if model else None
    tr = trace if trace is not None else (obs.get("trace") if isinstance(obs.get("trace"), MAPPING) else {})
    session = obs.get("sessionId") or tr.get("sessionId") or obs.get("traceId")
    details = obs.get("usageDetails") or obs.get("usage")
    start = obs.get("startTime")
    oid = obs.get("id")
    n = 1 + max((p.message for p in parts if p.message is not None), default=-1)
    req = Request(
        id=str(oid) if isinstance(oid, (str, int)) and oid != "" else default_id(src), source=src, format="langfuse",
        api=BODY_APIS[fmt][0] if fmt else "chat",
        provider=provider_for_model(model) or (BODY_APIS[fmt][1] if fmt else None), model=model,
        arrival=parse_time(start) if start not in (None, "") else None, parts=parts, cache_key=cache_key,
        session=str(session) if session else None, params=params, usage=langfuse_usage(details),
        response=_response(obs, n) if parts else None,
    )
    parent = obs.get("parentObservationId")
    return Keyed(req, keys=(f"langfuse:{oid}",) if oid else (),
                 supersedes=(f"langfuse:{parent}",) if isinstance(parent, str) and parent else ())


def parse_langfuse(rec: Any, src: Source, opts: Any) -> list[Keyed | Skipped | BadRecord]:
    """One observation, every observation of an API page, or every observation of a UI trace
    download → outcomes (``format="langfuse"``).

    ``id``: ``id``; ``arrival``: ``startTime``; ``session``: ``sessionId`` (on the observation,
    its nested ``trace``, or the download's trace), else ``traceId``; ``model``: ``model``, else
    ``providedModelName``; ``params``: cache-relevant request parameters of the body and
    ``modelParameters``; ``cache_key``: a ``prompt_cache_key`` in the body, ``modelParameters``
    or ``metadata``; ``usage``: ``usageDetails`` (:func:`~promptcache.ingest.usage.langfuse_usage`).
    Non-``GENERATION`` observations are :class:`~promptcache.ingest.outcomes.Skipped`; a
    malformed observation of a page is a :class:`~promptcache.errors.BadRecord` item.

    Raises:
        BadRecord: when the record is not an object, or a lone observation is malformed.
    """
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    trace = None
    items = None
    if "traceId" not in rec and isinstance(rec.get("data"), list):
        items = rec["data"]
    elif isinstance(rec.get("trace"), MAPPING) and isinstance(rec.get("observations"), list):
        trace = rec["trace"]
        items = rec["observations"]  # the download's top-level list carries input and output
    if items is None:
        return [_observation(rec, src, opts)]
    out: list[Keyed | Skipped | BadRecord] = []
    for k, obs in enumerate(items):
        try:
            out.append(_observation(obs, src, opts, trace))
        except BadRecord as e:
            out.append(BadRecord(f"observation {k}: {e}"))
    return out


class LangfuseReader(Reader):
    """Langfuse observations (see the module docstring)."""

    name = "langfuse"
    producer = "Langfuse"
    shapes = ("observation exports (JSONL), public API pages (v1, v2 with providedModelName), "
              "the UI's trace download ({trace, observations})")
    looks_for = "traceId with usageDetails/costDetails/type, a data page of those, or trace + observations"
    owns = ("traceId", "usageDetails", "costDetails", "observations", "parentObservationId")

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or not self.alone(rec):
            return None
        if _is_observation(rec):
            return "an observation (traceId with usageDetails/costDetails/type)"
        if looks_langfuse(rec):
            return "a page of observations (data)" if "data" in rec else "a trace download (trace, observations)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> list[Keyed | Skipped | BadRecord]:
        return parse_langfuse(rec, src, opts)
