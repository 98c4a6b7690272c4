"""Where each character of a YAML or JSON string value sits in the file.

A prompt held in a data file is a string *value*: escapes decoded (``\\n``, ``\\"``,
``\\u00e9``, ``\\U0001F4D6``), lines folded, a block's indentation removed. A value found in
it (``{{ $now }}`` in an n8n ``systemMessage``) is reported at the place in the file where its
characters are. :func:`source_offsets` walks the scalar's source as the YAML and JSON readers
decode it and returns, for each character of the value, its offset in the file; the walk is
checked against the value the reader decoded, and a scalar it does not reproduce exactly gives
``None`` (the caller then finds placeholders by their text).

| style | read |
|---|---|
| double-quoted (JSON strings; YAML ``"..."``) | escapes (``\\uXXXX`` pairs too), YAML line folding and escaped line breaks |
| literal block (``|``, ``|-``, ``|+``) | each line less the block's indentation |
| single-quoted, plain, folded (``>``) | not mapped (``None``) |
"""

from __future__ import annotations

import re

from yaml.nodes import ScalarNode

_SIMPLE = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
           "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
           "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}


def source_offsets(text: str, node: ScalarNode) -> list[int] | None:
    """For each character of ``node.value``, its offset in ``text`` (the file), and one more
    entry: the offset just after the last; ``None`` when the scalar's style is not mapped or the
    walk does not reproduce the value."""
    a, b = node.start_mark.index, node.end_mark.index
    style = getattr(node, "style", None)
    if style == '"':
        got = _double_quoted(text, a, b)
    elif style == "|":
        got = _literal(text, a, b)
    else:
        return None
    if got is None:
        return None
    chars, offs = got
    if "".join(chars) != node.value:
        return None
    return offs + [b - 1 if style == '"' else b]


def _double_quoted(text: str, a: int, b: int) -> tuple[list[str], list[int]] | None:
    if text[a:a + 1] != '"' or text[b - 1:b] != '"':
        return None
    chars: list[str] = []
    offs: list[int] = []
    i, end = a + 1, b - 1
    while i < end:
        c = text[i]
        if c == "\\":
            e = text[i + 1:i + 2]
            if e in _HEX:
                n = _HEX[e]
                try:
                    cp = int(text[i + 2:i + 2 + n], 16)
                except ValueError:
                    return None
                step = 2 + n
                if e == "u" and 0xD800 <= cp < 0xDC00 and text[i + 6:i + 8] == "\\u":
                    try:
                        lo = int(text[i + 8:i + 12], 16)
                    except ValueError:
                        lo = 0
                    if 0xDC00 <= lo < 0xE000:
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
                        step = 12
                chars.append(chr(cp) if not 0xD800 <= cp < 0xE000 else "\ufffd")
                offs.append(i)
                i += step
                continue
            if e in ("\n", "\r"):  # an escaped line break: nothing, and the next line's indentation
                i += 2 + (1 if text[i + 1:i + 3] == "\r\n" else 0)
                while i < end and text[i] in " \t":
                    i += 1
                continue
            if e in _SIMPLE:
                chars.append(_SIMPLE[e])
                offs.append(i)
                i += 2
                continue
            return None
        if c in "\r\n":  # YAML folding: trailing blanks dropped, one break a space, n+1 breaks n newlines
            while chars and chars[-1] in " \t" and offs[-1] >= a + 1 and text[offs[-1]] in " \t":
                chars.pop()
                offs.pop()
            breaks = 0
            j = i
            while j < end and text[j] in " \t\r\n":
                if text[j] == "\n" or (text[j] == "\r" and text[j + 1:j + 2] != "\n"):
                    breaks += 1
                j += 1
            if breaks == 1:
                chars.append(" ")
                offs.append(i)
            else:
                for _ in range(breaks - 1):
                    chars.append("\n")
                    offs.append(i)
            i = j
            continue
        chars.append(c)
        offs.append(i)
        i += 1
    return chars, offs


_HEADER = re.compile(r"\|([1-9])?([+-])?([1-9])?[ \t]*(?:#[^\n]*)?\r?\n")


def _literal(text: str, a: int, b: int) -> tuple[list[str], list[int]] | None:
    m = _HEADER.match(text, a)
    if m is None:
        return None
    i = m.end()
    body = text[i:b]
    lines = body.split("\n")
    indent = None
    for ln in lines:
        if ln.strip():
            indent = len(ln) - len(ln.lstrip(" "))
            break
    if indent is None:
        return None
    chars: list[str] = []
    offs: list[int] = []
    pos = i
    for k, ln in enumerate(lines):
        content = ln[indent:] if len(ln) >= indent else ""
        start = pos + min(indent, len(ln))
        for j, c in enumerate(content):
            chars.append(c)
            offs.append(start + j)
        pos += len(ln)
        if k < len(lines) - 1:
            chars.append("\n")
            offs.append(pos)
            pos += 1
    chomp = m.group(2)
    if chomp == "+":
        return chars, offs
    while chars and chars[-1] == "\n":  # clip and strip: trailing breaks go ...
        chars.pop()
        offs.pop()
    if chomp != "-" and chars:  # ... clip keeps one
        chars.append("\n")
        offs.append(offs[-1] + 1)
    return chars, offs
