"""Text-structure helpers shared by diagnosis and proposals: retrieved-document units,
whitespace normalisation, canonical JSON. Pure functions, no I/O."""

from __future__ import annotations

import json
import re
import unicodedata

_DOC_START = r"<doc\b|<document\b|\n\n(?:\[\d+\]|Document \d+|Source:|#+ )"
_DOC_SPLIT = re.compile(f"(?={_DOC_START})", re.IGNORECASE)
_DOC_HEAD = re.compile(_DOC_START, re.IGNORECASE)


def documents(text: str) -> tuple[str, list[str]]:
    """``(preamble, documents)``: the retrieved-document units of a context block (``<doc>`` /
    ``<document>`` tags, ``[1]`` / ``Document 1`` / ``Source:`` headings, markdown sections).

    >>> documents("Context:\\n<doc>a</doc>\\n<doc>b</doc>")
    ('Context:\\n', ['<doc>a</doc>\\n', '<doc>b</doc>'])
    """
    pieces = [d for d in _DOC_SPLIT.split(text) if d]
    if pieces and not _DOC_HEAD.match(pieces[0]):
        return pieces[0], pieces[1:]
    return "", pieces


def stable_documents(text: str) -> str:
    """The same documents in a stable order (sorted by their text), preamble first."""
    pre, docs = documents(text)
    return pre + "".join(sorted(docs))


def normalize_whitespace(text: str) -> str:
    """NFC, LF line ends, single spaces, no spaces around line breaks, stripped."""
    t = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    t = re.sub(r"[ \t\u00a0]+", " ", t)
    return re.sub(r" *\n *", "\n", t).strip()


def canonical_json(text: str) -> str:
    """JSON text with sorted keys and compact separators; other text unchanged."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (json.JSONDecodeError, TypeError):
        return text


_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def sentence_span(text: str, a: int, b: int) -> tuple[int, int]:
    """The sentence (or line) of ``text`` around the span ``[a, b)``: from after the previous
    sentence end or line break to the next one (inclusive of its punctuation)."""
    start = text.rfind("\n", 0, a) + 1
    for m in _SENTENCE_END.finditer(text, start, a):
        start = m.end()
    while start < a and text[start] in " \t":
        start += 1
    nl = text.find("\n", b)
    m = _SENTENCE_END.search(text, b)
    end = len(text)
    if m is not None:
        end = m.end()
    if nl != -1 and nl < end:
        end = nl
    return start, end
