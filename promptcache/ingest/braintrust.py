"""Braintrust logs: span rows as the SDK logs them and BTQL / ``braintrust`` exports return them.

Row fields (braintrustdata/braintrust-sdk: the wrappers' tests and the SDK spec "Token
Caching"; checked 2026-12-01): ``id``, ``span_id``, ``root_span_id``, ``span_parents``,
``span_attributes: {name, type}``, ``input``, ``output``, ``metadata`` (``model``, ``provider``,
``tools`` ...), ``metrics`` (``start``/``end`` epoch seconds, ``prompt_tokens``,
``completion_tokens``, ``prompt_cached_tokens``, ``prompt_cache_creation_tokens``), ``created``.

Only ``type: "llm"`` spans are calls. ``wrap_anthropic`` logs the messages with the system prompt
appended last; they are read as the Messages body they were (system first). ``metrics.prompt_tokens`` is the provider's own input
count: Anthropic's uncached remainder (the ``wrap_anthropic`` test asserts
``metrics["prompt_tokens"] == usage.input_tokens``), OpenAI's total; the cache counts are added
to the former.
"""

from __future__ import annotations

from typing import Any

from ..model import Part, Request, Response, Source
from . import openai as _openai
from .bodies import BODY_APIS, body_format, default_id, parse_body, reprefix
from .common import MAPPING, loads_if_json, logged_provider, provider_alias, provider_for_model, stable_json
from .fields import parse_time
from .outcomes import Keyed, Skipped
from .reader import Reader
from .usage import total_with, uncached_plus


def _anthropic_call(md: Any, rec: Any) -> bool:
    """Whether a span logs an Anthropic Messages call (``wrap_anthropic``: ``metadata.provider``
    ``anthropic``, span ``anthropic.messages.create`` / ``.stream``)."""
    sa = rec.get("span_attributes")
    name = sa.get("name") if isinstance(sa, MAPPING) else None
    return md.get("provider") == "anthropic" or (isinstance(name, str) and name.startswith("anthropic.messages"))


def _anthropic_input(inp: list[Any], md: Any) -> tuple[tuple[Part, ...], dict[str, Any]]:
    """(parts, params) of ``wrap_anthropic``'s ``input``: the call's ``messages`` with its
    ``system`` appended last as ``{"role": "system", "content": system}``, and its ``tools``,
    ``tool_choice`` and ``thinking`` in ``metadata`` (braintrust-sdk ``integrations/anthropic``
    ``_get_input_from_kwargs``, ``METADATA_PARAMS``). Read as the Messages body it was, in
    Anthropic's prefix order (tools, system, messages) with its ``cache_control`` breakpoints,
    each part named where the row holds it (``metadata.tools[i]``; the system prompt, always the
    list's last item, ``input[-1].content``: a path that stays the same as the conversation
    grows, as the comparison of consecutive requests needs).

    Raises:
        BadRecord: for a malformed message.
    """
    at = [i for i, m in enumerate(inp) if isinstance(m, MAPPING) and m.get("role") == "system"]
    body: dict[str, Any] = {"messages": [m for i, m in enumerate(inp) if i not in at]}
    if at:
        body["system"] = inp[at[-1]].get("content")
    for k in ("tools", "tool_choice", "thinking"):
        v = loads_if_json(md.get(k))
        if v is not None:
            body[k] = v
    b = parse_body(body, "anthropic")
    here = "input[-1].content" if at else ""
    parts = tuple(Part(p.kind, here + p.path[len("system"):], p.text, p.role, p.message, p.breakpoint)
                  if at and p.path.startswith("system") else p
                  for p in reprefix(reprefix(b.parts, "messages", "input"), "tools", "metadata.tools"))
    return parts, b.params


class BraintrustReader(Reader):
    """Braintrust span rows (see the module docstring). ``id``: ``span_id``; ``session``:
    ``metadata.session_id``, else ``root_span_id``; ``arrival``: ``metrics.start``, else
    ``created``."""

    name = "braintrust"
    producer = "Braintrust"
    shapes = "log rows {span_attributes: {type: llm}, input, metadata.model, metrics}"
    looks_for = "span_attributes with root_span_id or span_id"
    owns = ("span_attributes", "root_span_id", "_xact_id")

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and isinstance(rec.get("span_attributes"), MAPPING) \
                and ("root_span_id" in rec or "span_id" in rec):
            return "span_attributes with a span id (a Braintrust log row)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        sa = rec["span_attributes"]
        if str(sa.get("type", "")).lower() != "llm":
            return Skipped(f"Braintrust '{str(sa.get('type'))[:20]}' span (not an LLM call)")
        md = loads_if_json(rec.get("metadata"))
        md = md if isinstance(md, MAPPING) else {}
        inp = loads_if_json(rec.get("input"))
        fmt = "openai-chat"
        parts: tuple[Part, ...] = ()
        params: dict[str, Any] = {}
        if isinstance(inp, list) and _anthropic_call(md, rec):
            fmt, parts, params = "anthropic", *_anthropic_input(inp, md)
        elif isinstance(inp, list):
            fmt = body_format({"messages": inp}) or "openai-chat"
            b = parse_body({"messages": inp}, fmt)
            parts, params = reprefix(b.parts, "messages", "input"), b.params
        elif isinstance(inp, MAPPING) and body_format(inp):
            fmt = body_format(inp) or "openai-chat"
            b = parse_body(inp, fmt)
            parts, params = reprefix(b.parts, "", "input."), b.params
        elif isinstance(inp, str) and inp:
            parts = (Part("user", "input", inp, "user", 0),)
        tools = loads_if_json(md.get("tools"))
        if parts and isinstance(tools, list) and tools and not any(p.kind == "tool" for p in parts):
            parts = tuple(Part("tool", f"metadata.tools[{i}]", stable_json(t)) for i, t in enumerate(tools)) + parts
        params = {**_openai.params_of(md), **params}
        model = md.get("model") or getattr(opts, "model", None)
        model = str(model) if model else None
        provider = logged_provider(md.get("provider"), model)
        family = provider_for_model(model) or provider_alias(md.get("provider"))
        m = rec.get("metrics") if isinstance(rec.get("metrics"), MAPPING) else {}
        how = uncached_plus if family == "anthropic" else total_with
        usage = how(m.get("prompt_tokens"), m.get("prompt_cached_tokens"), m.get("prompt_cache_creation_tokens"),
                    m.get("completion_tokens"), "metrics")
        t = m.get("start") if m.get("start") is not None else rec.get("created")
        sid = rec.get("span_id") or rec.get("id")
        session = md.get("session_id") or rec.get("root_span_id")
        parents = rec.get("span_parents")
        out = loads_if_json(rec.get("output"))
        response = None
        if isinstance(out, MAPPING) and out.get("role") == "assistant":
            n = 1 + max((p.message for p in parts if p.message is not None), default=-1)
            response = Response(parts=tuple(_openai.chat_response_parts({"choices": [{"message": out}]}, n)))
        req = Request(id=str(sid) if sid else default_id(src), source=src, format=self.name,
                      api=BODY_APIS[fmt][0], provider=provider or BODY_APIS[fmt][1], model=model,
                      arrival=parse_time(t) if t not in (None, "") else None, parts=parts, params=params,
                      session=str(session) if session else None, usage=usage, response=response)
        return Keyed(req, keys=(f"braintrust:{sid}",) if sid else (),
                     supersedes=tuple(f"braintrust:{p}" for p in parents if isinstance(p, str)) if isinstance(parents, list) else ())
