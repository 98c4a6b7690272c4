"""Edits on logged request bodies, addressed by the part paths the readers assign
(``messages[3].content[1]``, ``system[0]``, ``input[0].content[0]``, ``tools[2]``,
``contents[1].parts[0]``). Proposals are applied here, to the record itself, and the edited
record is parsed again: the proposed log is written in the input's own format and simulated
from exactly what is written.
"""

from __future__ import annotations

import json
import re
from typing import Any, MutableMapping

from ..errors import BadRecord

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\.")


def _steps(path: str) -> list[str | int]:
    out: list[str | int] = []
    for m in _TOKEN.finditer(path):
        if m.group(1):
            out.append(m.group(1))
        elif m.group(2):
            out.append(int(m.group(2)))
    return out


def _parent(body: Any, path: str) -> tuple[Any, str | int]:
    steps = _steps(path)
    if not steps:
        raise BadRecord(f"empty path {path!r}")
    obj = body
    for s in steps[:-1]:
        try:
            obj = obj[s]
        except (KeyError, IndexError, TypeError):
            raise BadRecord(f"no {path!r} in the request body") from None
    return obj, steps[-1]


def get_text(body: Any, path: str) -> str:
    """The text at a part path (a string, or a block's ``text``).

    Raises:
        BadRecord: when the path does not lead to text.
    """
    parent, key = _parent(body, path)
    try:
        v = parent[key]
    except (KeyError, IndexError, TypeError):
        raise BadRecord(f"no {path!r} in the request body") from None
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
    v = parent[key]
    if isinstance(v, str):
        parent[key] = text
    elif isinstance(v, MutableMapping) and isinstance(v.get("text"), str):
        v["text"] = text
    else:
        raise BadRecord(f"{path!r} holds no text")


def sort_keys_deep(v: Any) -> Any:
    """A JSON value with every object's keys sorted (what ``json.dumps(sort_keys=True)`` sends)."""
    if isinstance(v, dict):
        return {k: sort_keys_deep(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [sort_keys_deep(x) for x in v]
    return v


def tool_name(tool: Any) -> str:
    """A tool definition's name (OpenAI ``function.name``, Anthropic/Responses ``name``)."""
    if isinstance(tool, dict):
        fn = tool.get("function")
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
