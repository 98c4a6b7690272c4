"""Anthropic Messages bodies: tools → system → messages, ``cache_control`` breakpoints.

https://platform.claude.com/docs/en/api/messages and
https://platform.claude.com/docs/en/build-with-claude/prompt-caching (checked 2026-11-29; the
archived copy read is dated 2026-08-21).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Breakpoint, Part
from .common import HISTORY, MAPPING, PARTS, blob_digest, require_list, sdk_cache_control, stable_json, without_sdk_options

#: Anthropic TTL strings → seconds; "5m" is the default.
TTL = {"5m": 300, "1h": 3600}
PARAM_KEYS = ("tool_choice", "thinking", "output_config", "output_format", "speed", "context_management",
              "service_tier")


def breakpoint_of(obj: Mapping[str, Any], path: str) -> Breakpoint | None:
    """The ``cache_control`` of a block or request as a Breakpoint.

    Raises:
        BadRecord: for a TTL Anthropic does not accept.
    """
    cc = obj.get("cache_control") or sdk_cache_control(obj)  # the AI SDK's providerOptions too
    if not cc:
        return None
    if not isinstance(cc, MAPPING):
        raise BadRecord(f"{path}.cache_control is not an object")
    ttl = cc.get("ttl", "5m")
    if ttl not in TTL:
        raise BadRecord(f"{path}.cache_control.ttl {ttl!r} is not '5m' or '1h'")
    return Breakpoint(ttl_seconds=TTL[ttl])


def _strip_cc(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in without_sdk_options(obj).items() if k != "cache_control"}


def _block_part(block: Any, path: str, role: str, msg: int) -> Part:
    kind = "assistant" if role == "assistant" else "user"
    if isinstance(block, str):
        return Part(kind, path, block, role, msg)
    if not isinstance(block, MAPPING):
        raise BadRecord(f"{path} is not a content block")
    bp = breakpoint_of(block, path)
    t = block.get("type")
    if t == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise BadRecord(f"{path}.text is not a string")
        return Part(kind, path, text, role, msg, bp)
    if t == "image":
        return Part("image", path, f"<image {blob_digest(stable_json(block.get('source')))}>", role, msg, bp)
    if t == "document":
        return Part("document", path, f"<document {blob_digest(stable_json(block.get('source')))}>", role, msg, bp)
    if t == "tool_use":
        return Part("tool_call", path, stable_json(_strip_cc(block)), role, msg, bp)
    if t == "tool_result":
        c = block.get("content")
        if isinstance(c, list):
            texts = [b.get("text", "") if isinstance(b, MAPPING) and b.get("type") == "text"
                     else f"<{b.get('type', 'block') if isinstance(b, MAPPING) else 'block'} {blob_digest(stable_json(b))}>"
                     for b in c]
            c = "\n".join(texts)
        elif c is None:
            c = ""
        elif not isinstance(c, str):
            c = stable_json(c)
        head = f"[tool_result {block.get('tool_use_id', '')}{' error' if block.get('is_error') else ''}]\n"
        return Part("tool_result", path, head + c, role, msg, bp)
    if t in ("thinking", "redacted_thinking"):
        text = block.get("thinking") or f"<redacted {blob_digest(block.get('data', ''))}>"
        return Part("assistant", path, text, role, msg, bp)
    return Part(kind, path, stable_json(_strip_cc(block)), role, msg, bp)


def parse_anthropic(body: Mapping[str, Any]) -> list[Part]:
    """Parts of a Messages body in the provider's prefix order: tools, system, messages.

    A top-level ``cache_control`` (automatic caching) becomes an ``automatic`` breakpoint on the
    last part, where the API places it.

    Raises:
        BadRecord: when ``messages`` is missing or a block is malformed.
    """
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        raise BadRecord("'messages' is missing or not a list")
    parts: list[Part] = []
    tools = require_list(body.get("tools"), "tools")
    if tools:
        parts.extend(PARTS.get("anthropic-tools", 0, tools, lambda: _tools(tools)))
    system = body.get("system")
    if system is not None:
        parts.extend(PARTS.get("anthropic-system", 0, system, lambda: _system(system)))
    parts.extend(HISTORY.parts("anthropic", msgs, _message))
    auto = breakpoint_of(body, "request")
    if auto and parts:
        last = parts[-1]
        if last.breakpoint is None:
            parts[-1] = Part(last.kind, last.path, last.text, last.role, last.message,
                             Breakpoint(auto.ttl_seconds, automatic=True))
    return parts


def _tools(tools: list[Any]) -> list[Part]:
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, MAPPING):
            raise BadRecord(f"tools[{i}] is not an object")
        out.append(Part("tool", f"tools[{i}]", stable_json(_strip_cc(tool)), None, None, breakpoint_of(tool, f"tools[{i}]")))
    return out


def _system(system: Any) -> list[Part]:
    if isinstance(system, str):
        return [Part("system", "system", system, "system")] if system else []
    if not isinstance(system, list):
        raise BadRecord("'system' is neither a string nor a list of blocks")
    out = []
    for i, b in enumerate(system):
        if not isinstance(b, MAPPING) or not isinstance(b.get("text"), str):
            raise BadRecord(f"system[{i}] is not a text block")
        out.append(Part("system", f"system[{i}]", b["text"], "system", None, breakpoint_of(b, f"system[{i}]")))
    return out


def _message(i: int, m: Any) -> list[Part]:
    if not isinstance(m, MAPPING) or not isinstance(m.get("role"), str):
        raise BadRecord(f"messages[{i}] has no role")
    role = m["role"]
    content = m.get("content")
    if isinstance(content, str):
        out = [Part("assistant" if role == "assistant" else "user", f"messages[{i}].content", content, role, i)]
    else:
        blocks = require_list(content, f"messages[{i}].content")
        out = [_block_part(block, f"messages[{i}].content[{j}]", role, i) for j, block in enumerate(blocks)]
    if out and out[-1].breakpoint is None and sdk_cache_control(m) is not None:
        # the AI SDK's message-level providerOptions mark the message's last block
        last = out[-1]
        out[-1] = Part(last.kind, last.path, last.text, last.role, last.message, breakpoint_of(m, f"messages[{i}]"))
    return out


def params_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """The cache-relevant request parameters present in a Messages body."""
    return {k: body[k] for k in PARAM_KEYS if body.get(k) is not None}


def response_parts(resp: Mapping[str, Any], n: int) -> tuple[Part, ...]:
    """The assistant turn of a Messages response (``content`` blocks) read as the next
    request's ``messages[n]``; empty when the response holds none."""
    content = resp.get("content")
    if not isinstance(content, list):
        return ()
    try:
        return tuple(_message(n, {"role": "assistant", "content": content}))
    except BadRecord:
        return ()


def verdict_of(resp: Any, body: Mapping[str, Any]) -> Any:
    """Anthropic's own cache verdict from a response's ``diagnostics.cache_miss_reason``
    (``type``: ``model_changed``, ``system_changed``, ``tools_changed``, ``messages_changed``:
    verdicts of kind ``cache_miss`` with that reason and ``cache_missed_input_tokens``;
    ``previous_message_not_found`` and ``unavailable``: verdicts of that kind), compared with
    the request's ``diagnostics.previous_message_id``. ``None`` when the response has none or
    ``cache_miss_reason`` is null (the comparison still pending: not a verdict). A response
    whose ``diagnostics`` is null where the request named a ``previous_message_id`` found no
    divergence: a verdict of kind ``no_divergence``.
    https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics
    (beta ``cache-diagnosis-2026-04-07``; checked 2026-12-01).
    """
    from ..model import CacheVerdict

    d = resp.get("diagnostics") if isinstance(resp, MAPPING) else None
    if not isinstance(d, MAPPING):
        asked = body.get("diagnostics")
        prev = asked.get("previous_message_id") if isinstance(asked, MAPPING) else None
        if d is None and isinstance(prev, str) and prev and "diagnostics" in resp:
            return CacheVerdict("anthropic", "no_divergence", None, None, None, prev)
        return None
    why = d.get("cache_miss_reason")
    if not isinstance(why, MAPPING) or not isinstance(why.get("type"), str):
        return None
    t = why["type"]
    asked = body.get("diagnostics")
    prev = asked.get("previous_message_id") if isinstance(asked, MAPPING) else None
    missed = why.get("cache_missed_input_tokens")
    missed = int(missed) if isinstance(missed, (int, float)) and not isinstance(missed, bool) and 0 <= missed < 1e12 else None
    if t.endswith("_changed"):
        return CacheVerdict("anthropic", "cache_miss", t, missed, None, str(prev) if prev else None)
    return CacheVerdict("anthropic", t, None, missed, None, str(prev) if prev else None)
