"""Helpers every source parser shares: offsets to line:col, directive comments, doc building."""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from typing import Callable, Sequence

from ..model import Directive, Edit, Issue, Span

#: A directive in a comment: the word ``promptcache``, a colon, an action and codes in brackets.
DIRECTIVE = re.compile(r"promptcache\s*:\s*(?P<action>[A-Za-z_-]*)\s*(?P<codes>\[[^\]\n]*\]?)?")
ACTIONS = ("ignore", "disable", "enable", "file-ignore")

#: ``locate(start, end, raw)``: the source span of characters ``start:end`` of a string value
#: whose raw source text is ``raw``.
Locator = Callable[[int, int, str], Span]


#: Line breaks as Python's tokenizer, Jinja, PyYAML and editors count them: CRLF, LF, and a
#: lone CR (old Mac files).
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of a text without their breaks (:data:`LINE_BREAK`; unlike ``str.splitlines``,
    form feeds and Unicode separators are not breaks, as in Python source)."""
    return LINE_BREAK.split(text)


class ByteColumns:
    """UTF-8 byte columns (Python's ``col_offset``, tree-sitter's points) → character columns,
    line by line; a line's table is built once, so a file with one 2 MB line is not re-encoded
    for every node on it."""

    def __init__(self, lines: Sequence[str]):
        self.lines = lines
        self._tables: dict[int, list[int]] = {}

    def col(self, row: int, byte_col: int) -> int:
        """0-based character column of a 0-based row's byte column."""
        line = self.lines[row] if row < len(self.lines) else ""
        if line.isascii():
            return byte_col
        ends = self._tables.get(row)
        if ends is None:
            ends = list(accumulate(len(c.encode("utf-8", "surrogatepass")) for c in line))
            self._tables[row] = ends
        return bisect_right(ends, byte_col)


class LineIndex:
    """Character offsets → 1-based (line, column); lines end at CRLF, LF or a lone CR.

    >>> LineIndex("ab\\ncd").pos(4), LineIndex("ab\\rcd\\r\\nef").pos(6)
    ((2, 2), (3, 1))
    """

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in LINE_BREAK.finditer(text)]

    def pos(self, offset: int) -> tuple[int, int]:
        """(line, column) of a character offset."""
        i = bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1

    def offset(self, line: int, col: int) -> int:
        """Character offset of a 1-based (line, column)."""
        return self.starts[min(line, len(self.starts)) - 1] + col - 1

    def span(self, path: str, start: int, end: int) -> Span:
        """The span of characters ``start:end``."""
        l1, c1 = self.pos(start)
        l2, c2 = self.pos(max(start, end))
        return Span(path, l1, c1, l2, c2)

    def locator(self, path: str, base: int = 0) -> Locator:
        """A :data:`Locator` for text that sits verbatim at ``base`` in the file."""
        return lambda s, e, raw: self.span(path, base + s, base + e)

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its line break."""
        a = self.starts[line - 1]
        b = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[a:b].rstrip("\r\n") if line < len(self.starts) else self.text[a:b]


class Occurrences:
    """Where each repeated substring of *src* occurs, in order: the k-th ``find(raw)`` returns the
    offset of the k-th occurrence of *raw* (``-1`` once there are no more).

    Places a template's pieces back in the source text they were parsed from, when the parser
    gives the pieces but not their offsets (``string.Formatter``, YAML scalars).
    """

    def __init__(self, src: str) -> None:
        self.src = src
        self._seen: dict[str, int] = {}

    def find(self, raw: str) -> int:
        """Offset in *src* of the next not-yet-returned occurrence of *raw*, or ``-1``."""
        k = self._seen.get(raw, 0)
        self._seen[raw] = k + 1
        i = -1
        for _ in range(k + 1):
            i = self.src.find(raw, i + 1)
            if i < 0:
                break
        return i


def parse_directive(comment: str, span: Span, *, alone: bool, next_line: int,
                    removal: Edit | None) -> Directive | Issue | None:
    """Read one comment's directive.

    Args:
        comment: the comment's text (without its delimiters).
        span: where the comment is.
        alone: the comment stands alone on its line (then ``ignore`` covers ``next_line``).
        next_line: the next line with content after the comment.
        removal: the edit that deletes the comment (for ``--fix`` of unused ones).

    Returns:
        A :class:`Directive`, an ``invalid-suppression`` :class:`Issue` for a malformed one, or
        ``None`` when the comment holds no directive.
    """
    m = DIRECTIVE.search(comment)
    if m is None:
        return None
    action, codes = m.group("action"), m.group("codes")
    raw = m.group(0).strip()
    if action not in ACTIONS:
        return Issue("invalid-suppression", span, raw,
                     {"reason": f"unknown action `{action or '(none)'}`; use one of {', '.join(ACTIONS)}"})
    if not codes or not codes.endswith("]"):
        return Issue("invalid-suppression", span, raw,
                     {"reason": f"`{action}` needs the codes in brackets, e.g. `{action}[PC101]`"})
    names = tuple(c.strip() for c in codes[1:-1].split(",") if c.strip())
    if not names:
        return Issue("invalid-suppression", span, raw, {"reason": "the bracket lists no code"})
    line = next_line if alone else span.line
    return Directive(action, names, span, line, removal)


def refuse_directives(text: str, index: LineIndex, path: str, why: str) -> list[Issue]:
    """``invalid-suppression`` for every directive-like text in a language without comments
    that stay out of the prompt (plain text, Markdown, JSON)."""
    out = []
    for m in DIRECTIVE.finditer(text):
        out.append(Issue("invalid-suppression", index.span(path, m.start(), m.end()), m.group(0).strip(),
                         {"reason": why}))
    return out


def next_content_line(index: LineIndex, after_line: int) -> int:
    """The first line after ``after_line`` that is not blank (or ``after_line + 1``)."""
    n = len(index.starts)
    for ln in range(after_line + 1, n + 1):
        if index.line_text(ln).strip():
            return ln
    return after_line + 1


def line_removal(index: LineIndex, path: str, start: int, end: int) -> Edit:
    """The edit that deletes characters ``start:end``, with their whole line when nothing else
    is on it."""
    l1, _ = index.pos(start)
    l2, _ = index.pos(end)
    a = index.starts[l1 - 1]
    b = index.starts[l2] if l2 < len(index.starts) else len(index.text)
    if not index.text[a:start].strip() and not index.text[end:b].strip():
        return Edit(index.span(path, a, b), "")
    # keep the line; drop the comment and the spaces before it
    s = start
    while s > a and index.text[s - 1] in " \t":
        s -= 1
    return Edit(index.span(path, s, end), "")
