"""The exact stretch of text a proposal moves: a volatile value with the label that introduces it,
never more.

A template slot (:mod:`.templates`) locates a volatile value in one request's text. What moves is
that value's *span*:

- a value inside one line moves with the sentence holding it, cut at that line's ends: ``Current
  date: 2026-11-02 10:15 UTC``, ``Writes are allowed ... except these paths: /tmp/x-<uuid>.json.``
  (a sentence ends at ``.``, ``!`` or ``?`` before a space; a period inside a heading such as
  ``## 7.`` on the next line is never reached, because a span never crosses a line break);
- a value that spans lines (an inserted block) moves as the whole lines holding it;
- an empty value (a request that does not render the conditional line) moves nothing: the
  request is left as it is.

Removing a span also removes one separator next to it (the line break of a whole-line span, one
space of a mid-line sentence), so the text left reads as if the span had never been rendered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"[.!?](?=[ \t]|$)")
#: A line that heads the lines under it (``[Saved Notes]``, ``## Memories``, ``Context:``).
_HEAD = re.compile(r"^[ \t]*(\[[^\]\n]*\]|#+[ \t].*|[^\n]*:)[ \t]*$")


@dataclass(frozen=True)
class Cut:
    """One span taken out of a text.

    Attributes:
        start, end: the removed characters ``text[start:end]`` (the span and its separator).
        moved: the span itself, as it is placed elsewhere (no surrounding whitespace).
    """

    start: int
    end: int
    moved: str


def _line(text: str, at: int) -> tuple[int, int]:
    """``(start, end)`` of the line holding character ``at`` (``end`` at its line break)."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return start, len(text) if end < 0 else end


def span_of(text: str, a: int, b: int) -> tuple[int, int] | None:
    """The span to move for a value at ``text[a:b]``, or ``None`` when the value is blank.

    >>> t = "Be brief.\\nCurrent date: 2026-11-02.\\n## 7. Escalation"
    >>> s = span_of(t, t.index("2026"), t.index("2026") + 10); t[s[0]:s[1]]
    'Current date: 2026-11-02.'
    """
    value = text[a:b]
    if not value.strip():
        return None
    # the value's own characters, without the line breaks around it
    lead = len(value) - len(value.lstrip())
    a2, b2 = a + lead, a + len(value.rstrip())
    line_a, _ = _line(text, a2)
    _, line_b = _line(text, b2 - 1)
    if "\n" in text[a2:b2]:
        return line_a, line_b
    start = line_a
    for m in _SENTENCE_END.finditer(text, line_a, a2):
        start = m.end()
    while start < a2 and text[start] in " \t":
        start += 1
    m = _SENTENCE_END.search(text, b2, line_b)
    end = m.end() if m is not None else line_b
    return start, end


def cut(text: str, span: tuple[int, int]) -> Cut:
    """Remove ``span`` (from :func:`span_of`) with one separator next to it.

    >>> c = cut("A.\\nDate: 9.\\nB.", (3, 11)); (c.start, c.end, c.moved)
    (3, 12, 'Date: 9.')
    >>> c = cut("Be kind. Time: 09:00. Answer.", (9, 21)); (c.start, c.end, c.moved)
    (9, 22, 'Time: 09:00.')
    """
    s, e = span
    moved = text[s:e].strip()
    line_start = s == 0 or text[s - 1] == "\n"
    line_end = e == len(text) or text[e] == "\n"
    if line_start and line_end:  # whole lines: take the line break after them (or before, at the end)
        if e < len(text):
            e += 1
        elif s > 0:
            s -= 1
    elif e < len(text) and text[e] in " \t":
        e += 1
    elif s > 0 and text[s - 1] in " \t":
        s -= 1
    return Cut(s, e, moved)


def take(text: str, spans: list[tuple[int, int]], blocks: list[tuple[int, int]] = ()) -> tuple[str, list[str]]:
    """Take several value spans (``[a, b)`` of each value) out of ``text``.

    Args:
        text: the part's text.
        spans: values that move with their span (:func:`span_of`).
        blocks: values that move exactly as they are, their line breaks included: a
            conditional block (a slot that other requests of the template render as nothing,
            whose value holds a line break), so the text left is exactly the text those
            requests carry.

    Returns:
        ``(text left, [moved span, ...])`` in text order; blank values move nothing, and spans
        that overlap (two values in one sentence) move once.

    >>> take("Be kind.\\nUser: Ana (id 7).\\nAnswer.", [(15, 18), (23, 24)])
    ('Be kind.\\nAnswer.', ['User: Ana (id 7).'])
    >>> take("Run it.\\n\\n[NOTE failed twice.]", [], [(7, 29)])
    ('Run it.', ['[NOTE failed twice.]'])
    """
    found = sorted(s for s in (span_of(text, a, b) for a, b in spans) if s is not None)
    exact = sorted((a, b) for a, b in blocks if text[a:b].strip())
    merged: list[list[int]] = []
    for a, b in sorted(found + exact):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    whole = set(exact)
    cuts = [Cut(a, b, text[a:b].strip()) if (a, b) in whole else cut(text, (a, b)) for a, b in merged]
    joined: list[Cut] = []
    for c in cuts:  # whole lines one after another move as one block, in their own line breaks
        if joined and c.start <= joined[-1].end and text[joined[-1].end - 1:joined[-1].end] == "\n":
            prev = joined.pop()
            c = Cut(prev.start, max(prev.end, c.end), text[prev.start:max(prev.end, c.end)].strip())
        joined.append(c)
    cuts = [c if (c.start, c.end) in whole else _with_head(text, c) for c in joined]
    out, pos = [], 0
    for c in cuts:
        start = max(c.start, pos)
        out.append(text[pos:start])
        pos = max(pos, c.end)
    out.append(text[pos:])
    return "".join(out), [c.moved for c in cuts]


def _with_head(text: str, c: Cut) -> Cut:
    """A block of whole lines that empties the group under a heading line takes the heading
    along (``[Saved Notes]`` with its notes), so no heading is left over nothing."""
    if c.start == 0 or text[c.start - 1] != "\n":
        return c
    head_start = text.rfind("\n", 0, c.start - 1) + 1
    head = text[head_start:c.start - 1]
    if not _HEAD.match(head):
        return c
    after = text[c.end:text.find("\n", c.end) if "\n" in text[c.end:] else len(text)]
    if after.strip() and not _HEAD.match(after):
        return c  # the group keeps other lines: the heading stays with them
    return Cut(head_start, c.end, text[head_start:c.end].strip())
