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
from .common import HISTORY, MAPPING, PARTS, blob_digest, require_list, stable_json

ROLE_KIND = {
    "system": "system", "developer": "system", "user": "user", "assistant": "assistant",
    "tool": "tool_result", "function": "tool_result",
}
#: Request parameters kept for diagnosis; the provider rules decide which are in the prefix.
PARAM_KEYS = (
    "tool_choice", "parallel_tool_calls", "response_format", "reasoning_effort", "reasoning",
    "text", "verbosity", "modalities", "previous_response_id", "prompt_cache_options", "service_tier",
)


def _breakpoint(block: Mapping[str, Any]) -> Breakpoint | None:
    """GPT-5.6+ ``prompt_cache_breakpoint``, or an Anthropic-style ``cache_control`` (OpenRouter)."""
    bp = block.get("prompt_cache_breakpoint") or block.get("cache_control")
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
        return Part("document", path, f"<{t} {blob_digest(stable_json(block))}>", role, msg, bp)
    return Part(kind, path, stable_json(block), role, msg, bp)


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
    inp = body.get("input")
    if isinstance(inp, str):
        parts.append(Part("user", "input", inp, "user", 0))
        return parts
    for i, item in enumerate(require_list(inp, "input")):
        path = f"input[{i}]"
        if isinstance(item, str):
            parts.append(Part("user", path, item, "user", i))
            continue
        if not isinstance(item, MAPPING):
            raise BadRecord(f"{path} is not an object")
        t = item.get("type", "message")
        if t == "message" or "role" in item:
            role = item.get("role", "user")
            kind = ROLE_KIND.get(role, "user")
            content = item.get("content")
            if isinstance(content, str):
                parts.append(Part(kind, f"{path}.content", content, role, i))
            else:
                blocks = require_list(content, f"{path}.content")
                for j, block in enumerate(blocks):
                    parts.append(content_block_part(block, f"{path}.content[{j}]", kind, role, i))
                if not blocks:
                    parts.append(Part(kind, f"{path}.content", "", role, i))
        elif t == "function_call":
            parts.append(Part("tool_call", path, stable_json({"name": item.get("name"), "arguments": item.get("arguments")}), "assistant", i))
        elif t == "function_call_output":
            out = item.get("output")
            parts.append(Part("tool_result", path, out if isinstance(out, str) else stable_json(out), "tool", i))
        else:  # reasoning items, item references, computer calls...: opaque but stable
            parts.append(Part("assistant", path, stable_json(item), "assistant", i))
    return parts


def params_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """The cache-relevant request parameters present in an OpenAI body."""
    return {k: body[k] for k in PARAM_KEYS if body.get(k) is not None}
