"""Edits on logged request bodies, addressed by the part paths the readers assign
(``messages[3].content[1]``, ``system[0]``, ``input[0].content[0]``, ``tools[2]``,
``contents[1].parts[0]``). Proposals are applied here, to the record itself, and the edited
record is read again: the proposed log is written in the input's own format and simulated
from exactly what is written.

Body shapes: Anthropic Messages (https://platform.claude.com/docs/en/api/messages), OpenAI Chat
Completions and Responses (https://platform.openai.com/docs/api-reference), Gemini
``generateContent`` (https://ai.google.dev/api/generate-content); checked 2026-11-29.
"""

from __future__ import annotations

import json
import re
from typing import Any, MutableMapping

from ..errors import BadRecord

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\.")


def steps(path: str) -> list[str | int]:
    """A part path as keys and indices: ``messages[3].content[1]`` → ``['messages', 3, 'content', 1]``."""
    out: list[str | int] = []
    for m in _TOKEN.finditer(path):
        if m.group(1):
            out.append(m.group(1))
        elif m.group(2):
            out.append(int(m.group(2)))
    return out


def _parent(body: Any, path: str) -> tuple[Any, str | int]:
    st = steps(path)
    if not st:
        raise BadRecord(f"empty path {path!r}")
    obj = body
    for s in st[:-1]:
        try:
            obj = obj[s]
        except (KeyError, IndexError, TypeError):
            raise BadRecord(f"no {path!r} in the request body") from None
    return obj, st[-1]


def get(body: Any, path: str) -> Any:
    """The value at a part path.

    Raises:
        BadRecord: when the path leads nowhere.
    """
    parent, key = _parent(body, path)
    try:
        return parent[key]
    except (KeyError, IndexError, TypeError):
        raise BadRecord(f"no {path!r} in the request body") from None


def get_text(body: Any, path: str) -> str:
    """The text at a part path (a string, or a block's ``text``).

    Raises:
        BadRecord: when the path does not lead to text.
    """
    v = get(body, path)
    if isinstance(v, str):
        return v
    if isinstance(v, MutableMapping) and isinstance(v.get("text"), str):
        return v["text"]
    raise BadRecord(f"{path!r} holds no text")


def set_text(body: Any, path: str, text: str) -> None:
    """Replace the text at a part path in place.

    Raises:
        BadRecord: when the path does not lead to text.
    """
    parent, key = _parent(body, path)
    v = get(body, path)
    if isinstance(v, str):
        parent[key] = text
    elif isinstance(v, MutableMapping) and isinstance(v.get("text"), str):
        v["text"] = text
    else:
        raise BadRecord(f"{path!r} holds no text")


def remove(body: Any, path: str) -> None:
    """Remove the list item or key at a part path (an emptied Anthropic text block).

    Raises:
        BadRecord: when the path leads nowhere.
    """
    parent, key = _parent(body, path)
    get(body, path)
    del parent[key]


def sort_keys_deep(v: Any) -> Any:
    """A JSON value with every object's keys sorted (what ``json.dumps(sort_keys=True)`` sends)."""
    if isinstance(v, dict):
        return {k: sort_keys_deep(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [sort_keys_deep(x) for x in v]
    return v


def canonical_json_text(text: str) -> str | None:
    """JSON text re-serialized with sorted keys in its own spacing (compact, or ``", "`` and
    ``": "`` as Python's and JavaScript's defaults write), or ``None`` when ``text`` is not a
    JSON object or array.

    >>> canonical_json_text('{"b": 1, "a": [2, {"d": 3, "c": 4}]}')
    '{"a": [2, {"c": 4, "d": 3}], "b": 1}'
    >>> canonical_json_text('{"b":1,"a":2}')
    '{"a":2,"b":1}'
    """
    s = text.strip()
    if not s or s[0] not in "{[":
        return None
    try:
        v = json.loads(s)
    except (ValueError, RecursionError):
        return None
    compact = not re.search(r'"\s*:\s+|,\s+"', s)
    seps = (",", ":") if compact else (", ", ": ")
    out = json.dumps(sort_keys_deep(v), ensure_ascii=False, separators=seps)
    return text[:len(text) - len(text.lstrip())] + out + text[len(text.rstrip()):]


def tool_name(tool: Any) -> str:
    """A tool definition's name (OpenAI ``function.name``, Bedrock Converse ``toolSpec.name``,
    Anthropic/Responses ``name``)."""
    if isinstance(tool, dict):
        fn = tool.get("function") or tool.get("toolSpec")
        if isinstance(fn, dict) and "name" in fn:
            return str(fn["name"])
        if "name" in tool:
            return str(tool["name"])
    return json.dumps(tool, sort_keys=True)


def set_ttl(body: MutableMapping[str, Any], ttl: str) -> int:
    """Set ``ttl`` on every Anthropic ``cache_control`` in a Messages body; returns how many."""
    n = 0

    def walk(v: Any) -> None:
        nonlocal n
        if isinstance(v, dict):
            cc = v.get("cache_control")
            if isinstance(cc, dict):
                cc["ttl"] = ttl
                n += 1
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(body)
    return n


def strip_breakpoints(body: MutableMapping[str, Any]) -> int:
    """Remove every Anthropic ``cache_control`` (top level, tools, system and message blocks);
    returns how many were removed."""
    n = 0

    def walk(v: Any) -> None:
        nonlocal n
        if isinstance(v, dict):
            if "cache_control" in v:
                del v["cache_control"]
                n += 1
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(body)
    return n


#: Anthropic blocks that cannot carry ``cache_control`` ("Thinking blocks cannot be directly
#: cached with cache_control", https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
#: checked 2026-11-29).
UNMARKABLE = ("thinking", "redacted_thinking")


def markable(body: Any, path: str) -> bool:
    """Whether the Anthropic part at ``path`` can carry a ``cache_control`` (not a thinking
    block, not empty text)."""
    try:
        v = get(body, path)
    except BadRecord:
        return False
    if isinstance(v, str):
        return bool(v)
    if isinstance(v, dict):
        if v.get("type") in UNMARKABLE:
            return False
        return not (v.get("type") == "text" and not v.get("text"))
    return False


def mark(body: MutableMapping[str, Any], path: str, ttl: str | None = None) -> None:
    """Put an Anthropic ``cache_control`` on the part at ``path``: a block carries it itself; a
    string ``system`` or message ``content`` becomes one text block that carries it (the same
    text, as the API reads it).

    Args:
        body: a Messages request body.
        path: the part's path as the Anthropic reader names it.
        ttl: ``"5m"`` or ``"1h"``, or ``None`` for the default (5 minutes).

    Raises:
        BadRecord: when the path leads to nothing that can carry a breakpoint.
    """
    cc: dict[str, Any] = {"type": "ephemeral"}
    if ttl is not None:
        cc["ttl"] = ttl
    parent, key = _parent(body, path)
    v = get(body, path)
    if isinstance(v, str):
        parent[key] = [{"type": "text", "text": v, "cache_control": cc}]
    elif isinstance(v, dict) and v.get("type") not in UNMARKABLE:
        v["cache_control"] = cc
    else:
        raise BadRecord(f"{path!r} cannot carry a cache breakpoint")


def message_of(path: str) -> tuple[str, int] | None:
    """``(list key, index)`` of the message a part path lies in (``messages[3].content`` →
    ``('messages', 3)``), or ``None`` for tools, system and instructions."""
    st = steps(path)
    if len(st) >= 2 and st[0] in ("messages", "input", "contents") and isinstance(st[1], int):
        return str(st[0]), st[1]
    return None


def append_text(body: MutableMapping[str, Any], api: str, where: tuple[str, int], text: str) -> None:
    """Append ``text`` at the end of a message: a new text block where the message holds a
    list of blocks (so the blocks before it stay exactly as they were), else after a blank line
    at the end of its string content; an Anthropic string content becomes two text blocks (the
    message's own text, then ``text``), so that its own text stays a block a breakpoint can end.

    Args:
        body: the request body.
        api: the request shape (``anthropic``, ``chat``, ``responses``, ``gemini``).
        where: ``(list key, index)`` from :func:`message_of`.
        text: what to append.

    Raises:
        BadRecord: when the message holds no content to append to.
    """
    key, i = where
    try:
        msg = body[key][i]
    except (KeyError, IndexError, TypeError):
        raise BadRecord(f"no {key}[{i}] in the request body") from None
    if key == "contents":  # Gemini: parts of text
        parts = msg.get("parts") if isinstance(msg, dict) else None
        if not isinstance(parts, list):
            raise BadRecord(f"{key}[{i}] holds no parts")
        parts.append({"text": text})
        return
    if isinstance(msg, str):  # a Responses input item given as a bare string
        body[key][i] = msg + "\n\n" + text
        return
    if not isinstance(msg, dict):
        raise BadRecord(f"{key}[{i}] is not a message")
    if msg.get("type") == "function_call_output":
        out = msg.get("output")
        if not isinstance(out, str):
            raise BadRecord(f"{key}[{i}].output is not text")
        msg["output"] = out + "\n\n" + text
        return
    content = msg.get("content")
    if api == "converse":  # Bedrock Converse: blocks without a type (``{"text": ...}``)
        if not isinstance(content, list):
            raise BadRecord(f"{key}[{i}] holds no content blocks")
        content.append({"text": text})
        return
    if isinstance(content, str) and api == "anthropic" and content:
        msg["content"] = [{"type": "text", "text": content}, {"type": "text", "text": text}]
    elif isinstance(content, str):
        msg["content"] = content + "\n\n" + text if content else text
    elif isinstance(content, list):
        kind = "input_text" if api == "responses" else "text"
        for b in content:
            if isinstance(b, dict) and b.get("type") in ("text", "input_text"):
                kind = b["type"]
        content.append({"type": kind, "text": text})
    else:
        raise BadRecord(f"{key}[{i}] holds no content to append to")


def canonicalize(body: Any, path: str, kind: str) -> bool:
    """Sort the keys of the JSON a tool call or tool result at ``path`` carries, in its own
    spacing (Anthropic ``tool_use.input`` and ``tool_result.content``; Chat Completions
    ``tool_calls[].function.arguments`` and tool messages; Responses ``function_call.arguments``
    and ``function_call_output.output``; Gemini ``functionCall.args`` and
    ``functionResponse.response``). Returns whether anything changed.

    Raises:
        BadRecord: when the path leads nowhere.
    """
    v = get(body, path)
    if isinstance(v, str):  # a tool message's string content
        got = canonical_json_text(v)
        if got is not None and got != v:
            parent, key = _parent(body, path)
            parent[key] = got
            return True
        return False
    if not isinstance(v, dict):
        return False
    changed = False
    for holder, key in ((v, "input"), (v, "args"), (v.get("functionCall"), "args"),
                        (v.get("functionResponse"), "response"), (v, "response")):
        if isinstance(holder, dict) and isinstance(holder.get(key), (dict, list)):
            new = sort_keys_deep(holder[key])
            if json.dumps(new) != json.dumps(holder[key]):
                holder[key] = new
                changed = True
    fn = v.get("function") if isinstance(v.get("function"), dict) else v
    for key in ("arguments", "output", "content"):
        val = fn.get(key) if isinstance(fn, dict) else None
        if isinstance(val, str):
            got = canonical_json_text(val)
            if got is not None and got != val:
                fn[key] = got
                changed = True
        elif isinstance(val, list) and key == "content":
            for b in val:
                if isinstance(b, dict) and isinstance(b.get("text"), str):
                    got = canonical_json_text(b["text"])
                    if got is not None and got != b["text"]:
                        b["text"] = got
                        changed = True
    return changed


def replay(body: Any, path: str, kind: str, returned: str) -> bool:
    """Set a re-sent assistant part at ``path`` to what the model returned (a logged response
    part: ``kind`` ``tool_call`` with the text ``{"name", "arguments"}`` as the readers give it,
    or plain text): a Chat Completions tool call's ``function.arguments`` string, or a text
    ``content``. Returns whether anything changed; a call of another name is left as it is.

    Raises:
        BadRecord: when the path leads nowhere.
    """
    v = get(body, path)
    if kind == "tool_call":
        try:
            got = json.loads(returned)
        except ValueError:
            return False
        fn = v.get("function") if isinstance(v, dict) else None
        args = got.get("arguments") if isinstance(got, dict) else None
        if isinstance(fn, dict) and isinstance(args, str) and fn.get("name") == got.get("name") \
                and isinstance(fn.get("arguments"), str) and fn["arguments"] != args:
            fn["arguments"] = args
            return True
        return False
    if isinstance(v, str) and v != returned and v.strip() == returned.strip():
        parent, key = _parent(body, path)
        parent[key] = returned
        return True
    return False


def string_leaves(v: Any) -> list[tuple[Any, Any]]:
    """``(container, key)`` of every string inside a JSON value, depth first."""
    out: list[tuple[Any, Any]] = []
    stack = [v]
    while stack:
        x = stack.pop()
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
        for k, y in items:
            if isinstance(y, str):
                out.append((x, k))
            elif isinstance(y, (dict, list)):
                stack.append(y)
    return out


# -- Amazon Bedrock Converse ------------------------------------------------------------------
# A Converse body marks a cache checkpoint with a block of its own, ``{"cachePoint": {"type":
# "default", "ttl": "5m" | "1h"}}``, after the block it closes, in ``system``, a message's
# ``content`` or ``toolConfig.tools``; at most 4 per request, TTLs not increasing from tools to
# system to messages (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html,
# rules/providers/bedrock.yaml; checked 2026-12-01). Part paths are the Bedrock reader's
# (``promptcache.ingest.bedrock.converse_parts``): ``toolConfig.tools[i]``, ``system[i]``,
# ``messages[i].content[j]``, counting the cachePoint blocks themselves.

#: Converse blocks a checkpoint cannot follow: reasoning (like Anthropic's thinking blocks).
CONVERSE_UNMARKABLE = ("reasoningContent",)


def _converse_lists(body: MutableMapping[str, Any]) -> list[list[Any]]:
    out = []
    tc = body.get("toolConfig")
    if isinstance(tc, dict) and isinstance(tc.get("tools"), list):
        out.append(tc["tools"])
    if isinstance(body.get("system"), list):
        out.append(body["system"])
    for m in body.get("messages") or ():
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            out.append(m["content"])
    return out


def converse_markable(body: Any, path: str, tools: bool = True) -> bool:
    """Whether a checkpoint can follow the Converse block at ``path`` (not reasoning, not empty
    text, not a checkpoint; a tool only when the model caches tools: ``tools``)."""
    try:
        v = get(body, path)
    except BadRecord:
        return False
    if not isinstance(v, dict) or "cachePoint" in v or any(k in v for k in CONVERSE_UNMARKABLE):
        return False
    if path.startswith("toolConfig"):
        return tools
    return not ("text" in v and not v.get("text"))


def converse_checkpoints(body: MutableMapping[str, Any], marks: list[tuple[str, str | None]]) -> int:
    """Replace every ``cachePoint`` block of a Converse body by one after each block of
    ``marks`` (``(path, ttl)``: ``ttl`` ``"1h"``, ``"5m"`` or ``None`` for the default). The
    paths are resolved before any block moves. Returns the checkpoints written.

    Raises:
        BadRecord: when a path leads to no block.
    """
    targets = []
    for path, ttl in marks:
        parent, _ = _parent(body, path)
        targets.append((parent, get(body, path), ttl))
    for lst in _converse_lists(body):
        lst[:] = [b for b in lst if not (isinstance(b, dict) and "cachePoint" in b)]
    n = 0
    for parent, block, ttl in targets:
        at = next((i for i, b in enumerate(parent) if b is block), None)
        if at is None:
            continue
        cp: dict[str, Any] = {"type": "default"}
        if ttl is not None:
            cp["ttl"] = ttl
        parent.insert(at + 1, {"cachePoint": cp})
        n += 1
    return n


def converse_set_ttl(body: MutableMapping[str, Any], section: str, ttl: str | None) -> int:
    """Set ``ttl`` (``None``: the default) on the checkpoints of one section of a Converse body
    (``tools``, ``system`` or ``messages``); returns how many changed."""
    if section == "tools":
        tc = body.get("toolConfig")
        lists = [tc["tools"]] if isinstance(tc, dict) and isinstance(tc.get("tools"), list) else []
    elif section == "system":
        lists = [body["system"]] if isinstance(body.get("system"), list) else []
    else:
        lists = [m["content"] for m in body.get("messages") or () if isinstance(m, dict) and isinstance(m.get("content"), list)]
    n = 0
    for lst in lists:
        for b in lst:
            cp = b.get("cachePoint") if isinstance(b, dict) else None
            if isinstance(cp, dict) and cp.get("ttl") != ttl:
                if ttl is None:
                    cp.pop("ttl", None)
                else:
                    cp["ttl"] = ttl
                n += 1
    return n
