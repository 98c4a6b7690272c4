"""OpenAI request bodies: Chat Completions and the Responses API (alone, in gateway records,
or as Batch input lines).

Field names: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/responses/create (checked 2026-11-29).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Breakpoint, Part
from .common import HISTORY, MAPPING, PARTS, blob_digest, require_list, sdk_cache_control, stable_json, without_sdk_options

ROLE_KIND = {
    "system": "system", "developer": "system", "user": "user", "assistant": "assistant",
    "tool": "tool_result", "function": "tool_result",
}
#: Request parameters kept for diagnosis (what changes the prefix, or what the cache keys on);
#: the provider rules decide which are rendered into the prefix. ``service_tier`` is one: the
#: diagnostics guide lists ``service_tier_changed`` as a miss reason
#: (https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics, checked 2026-12-01);
#: ``chat_template_kwargs`` (vLLM, SGLang: ``enable_thinking`` ...) changes the rendered template.
PARAM_KEYS = (
    "tool_choice", "parallel_tool_calls", "response_format", "reasoning_effort", "reasoning",
    "text", "verbosity", "modalities", "prompt_cache_options", "service_tier", "chat_template_kwargs",
    "thinking", "include",
)
#: Body fields that identify who is asking, which providers and gateways may route by.
AFFINITY_KEYS = ("user", "safety_identifier", "session_id")


def _breakpoint(block: Mapping[str, Any]) -> Breakpoint | None:
    """GPT-5.6+ ``prompt_cache_breakpoint``, an Anthropic-style ``cache_control`` (OpenRouter),
    or the AI SDK's ``providerOptions.anthropic.cacheControl`` (:func:`sdk_cache_control`)."""
    bp = block.get("prompt_cache_breakpoint") or block.get("cache_control") or sdk_cache_control(block)
    if not bp:
        return None
    ttl = bp.get("ttl") if isinstance(bp, MAPPING) else None
    return Breakpoint(ttl_seconds=_ttl_seconds(ttl))


def _ttl_seconds(ttl: Any) -> int | None:
    if ttl is None:
        return None
    if isinstance(ttl, (int, float)):
        return int(ttl)
    s = str(ttl).strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        return int(float(s[:-1]) * units[s[-1]]) if s[-1] in units else int(float(s))
    except (ValueError, IndexError):
        raise BadRecord(f"unknown cache TTL {ttl!r}") from None


def content_block_part(block: Any, path: str, kind: str, role: str | None, msg: int | None) -> Part:
    """One content block of a message as a Part (text, image, audio, file)."""
    if isinstance(block, str):
        return Part(kind, path, block, role, msg)
    if not isinstance(block, MAPPING):
        raise BadRecord(f"{path} is not a content block")
    t = block.get("type")
    bp = _breakpoint(block)
    if t in ("text", "input_text", "output_text", "refusal") or (t is None and "text" in block):
        text = block.get("text", block.get("refusal", ""))
        if not isinstance(text, str):
            raise BadRecord(f"{path}.text is not a string")
        return Part(kind, path, text, role, msg, bp)
    if t in ("image_url", "input_image", "image"):
        src = block.get("image_url") or block.get("source") or block
        detail = src.get("detail", "") if isinstance(src, MAPPING) else ""
        ref = src.get("url") if isinstance(src, MAPPING) else src
        tag = f"<image {blob_digest(ref or stable_json(block))}{' ' + detail if detail else ''}>"
        return Part("image", path, tag, role, msg, bp)
    if t in ("input_audio", "file", "input_file", "document"):
        return Part("document", path, f"<{t} {blob_digest(stable_json(without_sdk_options(block)))}>", role, msg, bp)
    return Part(kind, path, stable_json(without_sdk_options(block)), role, msg, bp)


def parse_chat(body: Mapping[str, Any]) -> list[Part]:
    """Parts of a Chat Completions body in the log's order: tools, then messages.

    Raises:
        BadRecord: when ``messages`` is missing or malformed.
    """
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        raise BadRecord("'messages' is missing or not a list")
    parts: list[Part] = []
    tools = require_list(body.get("tools") or body.get("functions"), "tools")
    if tools:
        parts.extend(PARTS.get("tools", 0, tools, lambda: [Part("tool", f"tools[{i}]", stable_json(t)) for i, t in enumerate(tools)]))
    parts.extend(HISTORY.parts("chat", msgs, _chat_message))
    return parts


def _chat_message(i: int, m: Any) -> list[Part]:
    """The parts of one Chat Completions message."""
    if type(m) is not dict and not isinstance(m, MAPPING):  # (the ABC check is slow: dicts first)
        raise BadRecord(f"messages[{i}] is not an object")
    role = m.get("role")
    if not isinstance(role, str):
        raise BadRecord(f"messages[{i}].role is missing")
    kind = ROLE_KIND.get(role, "user")
    content = m.get("content")
    parts: list[Part] = []
    if isinstance(content, str):
        parts.append(Part(kind, f"messages[{i}].content", content, role, i))
    elif isinstance(content, list):
        for j, block in enumerate(content):
            parts.append(content_block_part(block, f"messages[{i}].content[{j}]", kind, role, i))
    elif content is not None:
        raise BadRecord(f"messages[{i}].content is neither a string nor a list")
    for k, tc in enumerate(require_list(m.get("tool_calls"), f"messages[{i}].tool_calls")):
        fn = tc.get("function", tc) if type(tc) is dict or isinstance(tc, MAPPING) else {}
        parts.append(Part("tool_call", f"messages[{i}].tool_calls[{k}]",
                          stable_json({"name": fn.get("name"), "arguments": fn.get("arguments")}), role, i))
    fc = m.get("function_call")
    if fc is not None and isinstance(fc, MAPPING):
        parts.append(Part("tool_call", f"messages[{i}].function_call", stable_json(fc), role, i))
    if not parts:  # empty message: still framed
        parts.append(Part(kind, f"messages[{i}].content", "", role, i))
    cc = sdk_cache_control(m)
    if cc is not None and parts[-1].breakpoint is None:  # the AI SDK marks the message's last part
        last = parts[-1]
        parts[-1] = Part(last.kind, last.path, last.text, last.role, last.message, _breakpoint({"cache_control": cc}))
    return parts


def parse_responses(body: Mapping[str, Any]) -> list[Part]:
    """Parts of a Responses API body: tools, ``instructions``, then ``input`` items.

    Raises:
        BadRecord: when ``input`` is malformed.
    """
    parts: list[Part] = []
    for i, tool in enumerate(require_list(body.get("tools"), "tools")):
        parts.append(Part("tool", f"tools[{i}]", stable_json(tool)))
    instr = body.get("instructions")
    if isinstance(instr, str) and instr:
        parts.append(Part("system", "instructions", instr, "developer", None))
    elif isinstance(instr, list):  # instructions given as input items
        for j, item in enumerate(instr):
            for p in input_item_parts(item, j, "instructions"):
                parts.append(Part("system", p.path, p.text, p.role or "developer", None, p.breakpoint))
    inp = body.get("input")
    if isinstance(inp, str):
        parts.append(Part("user", "input", inp, "user", 0))
        return parts
    for i, item in enumerate(require_list(inp, "input")):
        parts.extend(input_item_parts(item, i))
    return parts


def input_item_parts(item: Any, i: int, base: str = "input") -> list[Part]:
    """The parts of one Responses ``input`` (or ``output``) item at index ``i``: a message, a
    function call or its output, or another item kept as its JSON (reasoning, references ...).

    Raises:
        BadRecord: when the item is malformed.
    """
    path = f"{base}[{i}]"
    if isinstance(item, str):
        return [Part("user", path, item, "user", i)]
    if not isinstance(item, MAPPING):
        raise BadRecord(f"{path} is not an object")
    t = item.get("type", "message")
    if t == "message" or "role" in item:
        role = item.get("role", "user")
        if not isinstance(role, str):
            raise BadRecord(f"{path}.role is not a string")
        kind = ROLE_KIND.get(role, "user")
        content = item.get("content")
        if isinstance(content, str):
            return [Part(kind, f"{path}.content", content, role, i)]
        blocks = require_list(content, f"{path}.content")
        out = [content_block_part(block, f"{path}.content[{j}]", kind, role, i) for j, block in enumerate(blocks)]
        return out or [Part(kind, f"{path}.content", "", role, i)]
    if t == "function_call":
        return [Part("tool_call", path, stable_json({"name": item.get("name"), "arguments": item.get("arguments")}), "assistant", i)]
    if t == "function_call_output":
        out = item.get("output")
        return [Part("tool_result", path, out if isinstance(out, str) else stable_json(out), "tool", i)]
    # reasoning items, item references, computer calls...: opaque but stable
    return [Part("assistant", path, stable_json(item), "assistant", i)]


def chat_response_parts(resp: Mapping[str, Any], n: int) -> tuple[Part, ...]:
    """The assistant turn of a Chat Completions response (``choices[0].message``) read as the
    next request's ``messages[n]``; empty when the response holds none."""
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], MAPPING):
        return ()
    msg = choices[0].get("message")
    if not isinstance(msg, MAPPING):
        return ()
    if not isinstance(msg.get("role"), str):
        msg = {**msg, "role": "assistant"}
    try:
        return tuple(_chat_message(n, msg))
    except BadRecord:
        return ()


def responses_output_parts(resp: Mapping[str, Any], n: int) -> tuple[Part, ...]:
    """The ``output`` items of a Responses API response read as the next request's
    ``input[n]``, ``input[n+1]`` ... (what a client re-sends, or what ``previous_response_id``
    carries over); empty when the response holds none."""
    out = resp.get("output")
    if not isinstance(out, list):
        return ()
    parts: list[Part] = []
    try:
        for k, item in enumerate(out):
            parts.extend(input_item_parts(item, n + k))
    except BadRecord:
        return ()
    return tuple(parts)


def verdict_of(resp: Any, body: Mapping[str, Any]) -> Any:
    """OpenAI's own prompt-cache verdict from a Responses response's ``prompt_cache_diagnostics``
    (``type`` cache_hit / cache_miss / comparison_response_not_found / unavailable; ``reason``,
    ``cache_missed_tokens``, ``comparison_reusable_tokens``), compared with the request's
    ``prompt_cache_options.comparison_response_id``; ``None`` when absent.
    https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics (checked 2026-12-01).
    """
    from ..model import CacheVerdict

    d = resp.get("prompt_cache_diagnostics") if isinstance(resp, MAPPING) else None
    if not isinstance(d, MAPPING) or not isinstance(d.get("type"), str):
        return None
    opts = body.get("prompt_cache_options")
    cmp_id = opts.get("comparison_response_id") if isinstance(opts, MAPPING) else None
    return CacheVerdict("openai", d["type"], str(d["reason"]) if isinstance(d.get("reason"), str) else None,
                        _tokens(d.get("cache_missed_tokens")), _tokens(d.get("comparison_reusable_tokens")),
                        str(cmp_id) if cmp_id else None)


def _tokens(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e12 else None


def params_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """The cache-relevant request parameters present in an OpenAI body."""
    return {k: body[k] for k in PARAM_KEYS if body.get(k) is not None}
