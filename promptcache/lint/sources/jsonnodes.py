"""JSON read into the node tree PyYAML's composer builds (``MappingNode``, ``SequenceNode``,
``ScalarNode`` with start and end marks), so every reader of :mod:`.data` places values in a
JSON file exactly as in a YAML one, with JSON's own rules:

- iterative (no recursion): nesting has no depth limit;
- strings decoded as Python's ``json`` decodes them (``\\/``, ``\\uXXXX``; YAML 1.1 refuses
  ``\\/``); a lone surrogate escape (``"\\ud800"``) becomes U+FFFD, as the audit's JSON reader
  makes it;
- a duplicated key stays in the mapping's pairs in order; readers take the last, as JSON
  parsers do (:func:`.workflow._get`);
- ``NaN``, ``Infinity`` and ``-Infinity`` are read, as Python's ``json`` reads them.
"""

from __future__ import annotations

import json
import re

from yaml import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ...tokenize.base import without_lone_surrogates

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WORDS = {"true": ("tag:yaml.org,2002:bool", "true"), "false": ("tag:yaml.org,2002:bool", "false"),
          "null": ("tag:yaml.org,2002:null", "null"), "NaN": ("tag:yaml.org,2002:float", ".nan"),
          "Infinity": ("tag:yaml.org,2002:float", ".inf"), "-Infinity": ("tag:yaml.org,2002:float", "-.inf")}
_STR = "tag:yaml.org,2002:str"


class JSONError(ValueError):
    """Not JSON: ``msg`` at 1-based ``lineno``:``colno`` (character ``pos``)."""

    def __init__(self, msg: str, text: str, pos: int):
        self.msg = msg
        self.pos = pos
        self.lineno = text.count("\n", 0, pos) + 1
        self.colno = pos - (text.rfind("\n", 0, pos) + 1) + 1
        super().__init__(f"{msg}: line {self.lineno} column {self.colno}")


class _Marks:
    """Character offsets → PyYAML marks (0-based line and column)."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def __call__(self, pos: int) -> Mark:
        from bisect import bisect_right

        i = bisect_right(self.starts, pos) - 1
        return Mark("<json>", pos, i, pos - self.starts[i], None, None)


def compose_json(text: str) -> Node | None:
    """The node tree of a JSON text (``None`` for an empty one).

    Raises:
        JSONError: where the text stops being JSON.
    """
    mark = _Marks(text)
    n = len(text)
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if pos == n:
        return None
    # open containers: [node, start offset, the key awaiting its value (mappings), what comes next]
    stack: list[list] = []
    root: Node | None = None

    def scalar(pos: int) -> tuple[Node, int]:
        c = text[pos]
        if c == '"':
            m = _STRING.match(text, pos)
            if m is None:
                raise JSONError("unterminated string or bad escape", text, pos)
            raw = m.group(0)
            value = json.loads(raw) if "\\" in raw else raw[1:-1]
            if "\\u" in raw and re.search(r"[\ud800-\udfff]", value):
                value = without_lone_surrogates(value)
            return ScalarNode(_STR, value, mark(pos), mark(m.end()), style='"'), m.end()
        m = _NUMBER.match(text, pos)
        if m is not None and m.end() > pos:
            tag = "tag:yaml.org,2002:float" if any(ch in m.group(0) for ch in ".eE") else "tag:yaml.org,2002:int"
            return ScalarNode(tag, m.group(0), mark(pos), mark(m.end())), m.end()
        for word, (tag, val) in _WORDS.items():
            if text.startswith(word, pos):
                return ScalarNode(tag, val, mark(pos), mark(pos + len(word))), pos + len(word)
        raise JSONError("expecting a value", text, pos)

    def attach(node: Node) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        top = stack[-1]
        if isinstance(top[0], SequenceNode):
            top[0].value.append(node)
        else:
            top[0].value.append((top[2], node))
            top[2] = None
        top[3] = "sep"

    while True:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            if stack or root is None:
                raise JSONError("unexpected end of the text", text, n)
            break
        c = text[pos]
        top = stack[-1] if stack else None
        if top is not None and top[3] == "sep":
            close = "]" if isinstance(top[0], SequenceNode) else "}"
            if c == ",":
                top[3] = "key" if close == "}" else "value"  # no trailing comma: a value must follow
                pos += 1
                continue
            if c != close:
                raise JSONError(f"expecting ',' or '{close}'", text, pos)
        if top is not None and c in "]}" and top[3] in ("sep", "first", "firstkey"):
            want = "]" if isinstance(top[0], SequenceNode) else "}"
            if c != want:
                raise JSONError(f"expecting '{want}'", text, pos)
            node = top[0]
            node.end_mark = mark(pos + 1)
            stack.pop()
            pos += 1
            attach(node)
            continue
        if top is not None and top[3] in ("key", "firstkey"):
            if c != '"':
                raise JSONError("expecting a property name in double quotes", text, pos)
            key, pos = scalar(pos)
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= n or text[pos] != ":":
                raise JSONError("expecting ':'", text, pos)
            top[2] = key
            top[3] = "value"
            pos += 1
            continue
        if top is None and root is not None:
            raise JSONError("extra data after the JSON value", text, pos)
        if c == "[":
            stack.append([SequenceNode("tag:yaml.org,2002:seq", [], mark(pos), mark(pos), flow_style=True),
                          pos, None, "first"])
            pos += 1
            continue
        if c == "{":
            stack.append([MappingNode("tag:yaml.org,2002:map", [], mark(pos), mark(pos), flow_style=True),
                          pos, None, "firstkey"])
            pos += 1
            continue
        node, pos = scalar(pos)
        attach(node)
    return root
