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


_DOC_HINT = ("<doc", "<Doc", "<DOC", "Document ", "Source:", "\n\n[", "\n\n#")


def looks_like_documents(text: str) -> bool:
    """Cheap test: could ``text`` hold retrieved-document units (before splitting it)?"""
    return any(h in text for h in _DOC_HINT)


def stable_documents(text: str) -> str:
    """The same documents in a stable order (sorted by their text), preamble first; the
    separators between documents stay where they were.

    >>> stable_documents("Docs:\\n<doc>b</doc>\\n\\n<doc>a</doc>")
    'Docs:\\n<doc>a</doc>\\n\\n<doc>b</doc>'
    """
    pre, docs = documents(text)
    bodies = [d.rstrip() for d in docs]
    seps = [d[len(b):] for d, b in zip(docs, bodies)]
    return pre + "".join(b + s for b, s in zip(sorted(bodies), seps))


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


def extract_sentences(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[str]]:
    """Take the sentences holding the given spans out of ``text``.

    Returns:
        ``(remaining text, [moved sentence, ...])``; the moved sentences and the remaining text
        together hold exactly the original characters but one separating space per cut.

    >>> extract_sentences("Be kind. Time: 09:00. Answer briefly.", [(15, 20)])
    ('Be kind. Answer briefly.', ['Time: 09:00.'])
    """
    cuts: list[list[int]] = []
    for a, b in sorted(sentence_span(text, a, b) for a, b in spans):
        if cuts and a <= cuts[-1][1]:
            cuts[-1][1] = max(cuts[-1][1], b)
        else:
            cuts.append([a, b])
    rest, moved, pos = [], [], 0
    for a, b in cuts:
        moved.append(text[a:b].strip())
        rest.append(text[pos:a])
        pos = b
        if pos < len(text) and text[pos] == " " and (not rest[-1] or rest[-1][-1] in " \n"):
            pos += 1
        elif pos < len(text) and text[pos] == "\n" and rest[-1].endswith(" "):
            rest[-1] = rest[-1].rstrip(" ")
    rest.append(text[pos:])
    return "".join(rest), moved
