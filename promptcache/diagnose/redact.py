"""Redaction of quoted prompt text: reports quote only the values around a break, with secrets,
e-mail addresses and keys masked unless ``--show-text`` is given."""

from __future__ import annotations

import re
from typing import Any

from ..model import record

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


@record
class Excerpt:
    """Quoted prompt text, kept as its few characters and formatted when a report shows it.

    Every request a cause breaks keeps its quotes, but a finding shows only one request's:
    formatting and redacting them all cost more than finding the causes.

    Attributes:
        text: the quoted characters.
        cut_before, cut_after: whether the text went on before / after them (shown as ``…``).
        oneline: whether newlines are shown as ``⏎``.
        context: the text around ``text`` (which starts at ``at`` in it), or ``None``. A value
            quoted alone escapes redaction where what marks it as a secret sits next to it
            (``Bearer``, ``sk-proj-``, ``password=``): with a context, the value is shown as
            ``<secret>`` when a redaction rule matches the context across any of its characters.
        at: where ``text`` starts in ``context``.
    """

    text: str
    cut_before: bool = False
    cut_after: bool = False
    oneline: bool = True
    context: str | None = None
    at: int = 0

    @classmethod
    def around(cls, text: str, start: int, end: int, width: int = 24) -> Excerpt:
        """``text[start:end]`` with up to ``width`` characters of context each side."""
        a = max(0, start - width)
        b = min(len(text), end + width)
        return cls(text[a:b], a > 0, b < len(text))

    @classmethod
    def value(cls, text: str, start: int, end: int, width: int = 24) -> Excerpt:
        """The value ``text[start:end]``, as it is (no ellipses, newlines kept), with up to
        ``width`` characters each side as its context."""
        a = max(0, start - width)
        return cls(text[start:end], oneline=False, context=text[a:min(len(text), end + width)], at=start - a)

    def render(self, show: bool = False) -> str:
        """The quote as reports print it; redacted unless ``show``."""
        s = ("…" if self.cut_before else "") + self.text + ("…" if self.cut_after else "")
        if self.oneline:
            s = s.replace("\r", "").replace("\n", "⏎")
        if show:
            return s
        if self.context is not None and masks(self.context, self.at, self.at + len(self.text)):
            return "<secret>"
        return redact(s)


@record
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


def masks(text: str, start: int, end: int) -> bool:
    """Whether redacting ``text`` masks any character of ``text[start:end]``.

    >>> masks("Authorization: Bearer abcdefghijklmnop0123", 22, 42), masks("turn 12 of 40", 5, 7)
    (True, False)
    """
    if _ANY.search(text) is None:
        return False
    return any(m.start() < end and start < m.end() for pat, _ in _RULES for m in pat.finditer(text))


def excerpt(text: str, start: int, end: int, *, width: int = 24, show: bool = False) -> str:
    """``text[start:end]`` with up to ``width`` characters of context each side, ellipses where
    cut, newlines shown as ``⏎``; redacted unless ``show``.

    >>> excerpt("0123456789" * 5 + "\\nend", 50, 51, width=2)
    '…89⏎en…'
    """
    return Excerpt.around(text, start, end, width).render(show)
