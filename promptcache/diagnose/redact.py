"""Redaction of quoted prompt text: reports quote only the values around a break, with secrets,
e-mail addresses and keys masked unless ``--show-text`` is given."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"), "<email>"),
    (re.compile(r"\b(?:sk|pk|rk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}"), "<secret>"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "<secret>"),
    (re.compile(r"\b(?:ghp|gho|ghs|github_pat|glpat|xox[abprs])[-_][A-Za-z0-9_-]{16,}"), "<secret>"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"), "<secret>"),
    (re.compile(r"(?i:(bearer\s+)[A-Za-z0-9._~+/-]{16,}=*)"), r"\1<secret>"),
    (re.compile(r"(?i:\b(api[_-]?key|secret|token|password|passwd|pwd)(\s*[:=]\s*)\S{6,})"), r"\1\2<secret>"),
)
#: Any of the rules: most quoted text holds nothing to mask, and one search says so.
_ANY = re.compile("|".join(f"(?:{pat.pattern})" for pat, _ in _RULES))


def redact(text: str) -> str:
    """Mask secrets, e-mail addresses and keys.

    >>> redact("mail ana.silva@example.com key sk-ant-abcdefghijklmnop1234 ok")
    'mail <email> key <secret> ok'
    """
    if _ANY.search(text) is None:
        return text
    for pat, repl in _RULES:
        text = pat.sub(repl, text)
    return text


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Quoted prompt text, kept as its few characters and formatted when a report shows it.

    Every request a cause breaks keeps its quotes, but a finding shows only one request's:
    formatting and redacting them all cost more than finding the causes.

    Attributes:
        text: the quoted characters.
        cut_before, cut_after: whether the text went on before / after them (shown as ``…``).
        oneline: whether newlines are shown as ``⏎``.
    """

    text: str
    cut_before: bool = False
    cut_after: bool = False
    oneline: bool = True

    @classmethod
    def around(cls, text: str, start: int, end: int, width: int = 24) -> Excerpt:
        """``text[start:end]`` with up to ``width`` characters of context each side."""
        a = max(0, start - width)
        b = min(len(text), end + width)
        return cls(text[a:b], a > 0, b < len(text))

    def render(self, show: bool = False) -> str:
        """The quote as reports print it; redacted unless ``show``."""
        s = ("…" if self.cut_before else "") + self.text + ("…" if self.cut_after else "")
        if self.oneline:
            s = s.replace("\r", "").replace("\n", "⏎")
        return s if show else redact(s)


@dataclass(frozen=True, slots=True)
class Evidence:
    """A cause instance's evidence whose :class:`Excerpt` values are formatted on demand.

    Attributes:
        items: the evidence, some values :class:`Excerpt` s.
        show: quote unredacted (``--show-text``).
    """

    items: dict[str, Any]
    show: bool = False

    def resolve(self) -> dict[str, Any]:
        """The evidence as reports print it (``{name: value}``, quotes formatted)."""
        return {k: v.render(self.show) if isinstance(v, Excerpt) else v for k, v in self.items.items()}


def excerpt(text: str, start: int, end: int, *, width: int = 24, show: bool = False) -> str:
    """``text[start:end]`` with up to ``width`` characters of context each side, ellipses where
    cut, newlines shown as ``⏎``; redacted unless ``show``.

    >>> excerpt("0123456789" * 5 + "\\nend", 50, 51, width=2)
    '…89⏎en…'
    """
    return Excerpt.around(text, start, end, width).render(show)
