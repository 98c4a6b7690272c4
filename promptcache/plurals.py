"""Counts in words, for every message that counts something: ``1 request``, ``2 requests``.

:func:`counted` writes a count and its noun; :func:`fill` fills a message template (a rule's
``message``) so that a placeholder whose value is 1 takes the singular of the noun after it
(``over {requests} requests`` → ``over 1 request``, ``{n} shared tokens were`` → ``1 shared
token was``). Standard library only: every layer may use it.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

#: The plural nouns messages count, and their singulars.
NOUNS = {"requests": "request", "tokens": "token", "blocks": "block", "documents": "document",
         "breakpoints": "breakpoint", "keys": "key", "templates": "template", "prompts": "prompt",
         "entries": "entry", "calls": "call", "sessions": "session", "users": "user", "tools": "tool",
         "files": "file", "lines": "line", "messages": "message", "findings": "finding", "bytes": "byte",
         "seconds": "second", "contexts": "context", "GPUs": "GPU", "proposals": "proposal",
         "changes": "change", "records": "record", "namespaces": "namespace", "characters": "character"}
#: Verbs that agree with a counted noun, as its clause goes on (``tokens after it were``).
VERBS = {"were": "was", "are": "is", "have": "has", "share": "shares", "carry": "carries",
         "come": "comes", "need": "needs", "miss": "misses", "arrive": "arrives", "differ": "differs"}
#: The noun after a count: up to two lower-case words (``shared static``) before it.
_NOUN = re.compile(r"((?: [a-z][a-z-]*){0,2}? )(" + "|".join(NOUNS) + r")\b")
#: The clause's verb, or the punctuation that ends the clause first.
_VERB_OR_END = re.compile(r"\b(" + "|".join(VERBS) + r")\b|[;:,.()]")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``noun`` (singular), in the plural unless ``n`` is 1.

    >>> counted(1, "request"), counted(2048, "token"), counted(0, "entry", "entries")
    ('1 request', '2,048 tokens', '0 entries')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def _is_one(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool) and v == 1) or (isinstance(v, str) and v.strip() == "1")


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with its ``{name}`` (and ``{name:spec}``) placeholders filled from
    ``values`` (an unknown one stays visible as it is written); where a value is 1 and a noun of
    :data:`NOUNS` follows (after up to two lower-case words), the noun is singular, and so is
    the first verb of :data:`VERBS` in the rest of its clause.

    >>> fill("{n} requests share a prefix over {m} requests", {"n": 1, "m": "1,024"})
    '1 request shares a prefix over 1,024 requests'
    >>> fill("{t} shared tokens after it were lost in `{segment}`", {"t": "1"})
    '1 shared token after it was lost in `{segment}`'
    >>> fill("{n} documents in `{p}` arrive late; {k} tokens were lost", {"n": 1, "p": "x", "k": 2})
    '1 document in `x` arrives late; 2 tokens were lost'
    """
    out: list[str] = []
    one = agree = False  # the value just written is 1; a singular noun's verb is still to come
    for literal, field, spec, conversion in string.Formatter().parse(template):
        if one and literal:
            m = _NOUN.match(literal)
            if m:
                literal = f"{m.group(1)}{NOUNS[m.group(2)]}{literal[m.end():]}"
                agree = True
                start = len(m.group(1)) + len(NOUNS[m.group(2)])
            else:
                start = 0
        else:
            start = 0
        if agree and literal:
            v = _VERB_OR_END.search(literal, start)
            if v is not None:
                if v.group(1):
                    literal = literal[:v.start()] + VERBS[v.group(1)] + literal[v.end():]
                agree = False
        out.append(literal)
        one = False
        if field is None:
            continue
        if field not in values:
            out.append("{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
            continue
        v = values[field]
        if conversion:
            v = {"r": repr, "s": str, "a": ascii}[conversion](v)
        out.append(format(v, spec or ""))
        one = _is_one(v)
    return "".join(out)
