"""Redaction of quoted prompt text: reports quote only the values around a break, with secrets,
e-mail addresses and keys masked unless ``--show-text`` is given."""

from __future__ import annotations

import re

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


def excerpt(text: str, start: int, end: int, *, width: int = 24, show: bool = False) -> str:
    """``text[start:end]`` with up to ``width`` characters of context each side, ellipses where
    cut, newlines shown as ``⏎``; redacted unless ``show``."""
    a = max(0, start - width)
    b = min(len(text), end + width)
    s = ("…" if a else "") + text[a:b] + ("…" if b < len(text) else "")
    s = s.replace("\r", "").replace("\n", "⏎")
    return s if show else redact(s)
