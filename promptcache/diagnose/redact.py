"""Redaction of quoted prompt text: reports quote only the values around a break, and by default
no secret and no personal value in them.

Unless ``--show-text`` is given, a secret (an API key, a token, a password) is shown as
``<secret>``, and a personal value (a name, an account id, an e-mail address, a phone number) as
its kind and a salted fingerprint: ``<name #3fa2c1d0>``. The same value has the same fingerprint
throughout a report and across reports made with the same key, so a report can be shared and
still say "the same customer" or "two customers" without naming them; without the key, a
fingerprint does not give the value back (not even by trying every name).

The key is ``PROMPTCACHE_FINGERPRINT_KEY`` (hex, 16 bytes or more: a team that compares reports
shares it), else the one in ``$XDG_CONFIG_HOME/promptcache/fingerprint.key`` (``~/.config``;
created, mode 0600, on first use), else, where that cannot be written, a fresh one per run.

Personal values are found as the ``user-data-before-shared`` rule (PC108) finds them: a name
after the words that introduce one (``speaking with``, ``customer:``, ``Dear``), an id after
``customer id``, ``account no.`` and the like, an e-mail address, the value of an identity line
(``member: ...``, ``thread: ...``, ``workspace: ...``); and account ids of the shapes payment
systems give them (``cus_``, ``acct_``), phone numbers in international form or after
``phone``/``tel``/``mobile``, and what environment snapshots (PC107) quote of a person: the user
of a home directory (``/home/<user>``, ``/Users/<user>``) and a commit's author. A quote's surroundings (its context) are searched too, so a value
cut off from the words that mark it is masked all the same.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..model import record

#: Characters beyond a quote's own that redaction looks at each side (a name or an e-mail
#: address shorter than this is fingerprinted whole, however little of it the quote shows).
CONTEXT = 80

#: Secrets: each pattern's ``v`` group is what is masked (as ``<secret>``).
_SECRETS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?P<v>\b(?:sk|pk|rk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,})"),
    re.compile(r"(?P<v>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"),
    re.compile(r"(?P<v>\b(?:ghp|gho|ghs|github_pat|glpat|xox[abprs])[-_][A-Za-z0-9_-]{16,})"),
    re.compile(r"(?P<v>\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"),
    re.compile(r"(?i:bearer\s+)(?P<v>[A-Za-z0-9._~+/-]{16,}=*)"),
    re.compile(r"(?i:\b(?:api[_-]?key|secret|token|password|passwd|pwd)\s*[:=]\s*)(?P<v>\S{6,})"),
)
#: Personal values, with their kind: each pattern's ``v`` group is the value, and where two
#: overlap the earlier pattern wins (``customer id C-6350`` is an account id, not the name
#: ``id C``; ``member: Ana Silva`` an identity line's name, not the name after ``user``). The
#: e-mail, account id and identity-line patterns are the ``user-data-before-shared`` rule's own
#: (``rules/lint/user-data-before-shared.yaml``); its name pattern takes any word after
#: ``user``, ``name`` or ``hi`` (``user note``, ``hi there``), so in quoted text a name is
#: capitalised words after those cues, or a handle after ``user:``.
_PERSONAL: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?P<v>[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})"), "email"),
    (re.compile(r"(?i)\b(?:customer|user|account|member|client|patient|tenant|org(?:anization)?)[ _-]?"
                r"(?:id|no\.?|number|#)\s*[:#=]?\s*(?P<v>[A-Za-z0-9][A-Za-z0-9_-]{2,})"), "account id"),
    (re.compile(r"\b(?P<v>(?:cus|acct|usr|user|org|cust)_[A-Za-z0-9]{8,})\b"), "account id"),
    (re.compile(r"(?<![\w+])(?P<v>\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){2,5}\d)(?![\d])"), "phone number"),
    (re.compile(r"(?i)\b(?:phone|tel|telephone|mobile|cell)(?:\s*(?:no\.?|number|#))?\s*[:#=]?\s*"
                r"(?P<v>\+?\d[\d ().-]{5,18}\d)"), "phone number"),
    # identity lines, as the rule's own pattern takes them ("member: Ana Silva", "thread: cv_a91"),
    # and a commit's author in a git snapshot
    (re.compile(r"(?i)(?:^|(?<=\n))[ \t]*(?:member|user|customer|contact|sender|requester|name|full name|"
                r"author|committer)(?:[ _-]?name)?\s*[:=]\s*(?P<v>[^\s<][^\n<]{0,80}?)[ \t]*(?=<|\n|$)"), "name"),
    (re.compile(r"(?i)(?:^|(?<=\n))[ \t]*(?:thread|conversation|conv|session|chat)(?:[ _-]?id)?\s*[:=]\s*"
                r"(?P<v>\S[^\n]{0,80}?)[ \t]*(?=\n|$)"), "conversation id"),
    (re.compile(r"(?i)(?:^|(?<=\n))[ \t]*(?:account|tenant|org(?:anization)?|workspace)(?:[ _-]?(?:id|name))?\s*[:=]\s*"
                r"(?P<v>\S[^\n]{0,80}?)[ \t]*(?=\n|$)"), "account id"),
    (re.compile(r"(?i:speaking with|talking to|chatting with|assisting|helping|serving|user(?:name)?|"
                r"customer(?: name)?|name|hello,?|hi,?|dear)\s*:?\s+(?P<v>[A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+){0,3})"),
     "name"),
    (re.compile(r"(?i:\b(?:user(?:\s*name)?|login|handle))\s*[:=]\s*(?P<v>[A-Za-z0-9][\w.-]{1,40})"), "name"),
    # a home directory names its user (a working directory, a path in a git snapshot)
    (re.compile(r"(?P<v>(?:/home|/Users|[A-Za-z]:\\Users)[/\\][^/\\\s]+)"), "home directory"),
)
#: The rule's own name pattern, for the value a finding quotes alone (:meth:`Excerpt.value`):
#: whatever the rule took for a per-user value is masked (tests/test_redact.py checks it), and
#: then so is the same place in the quotes around the break (:meth:`Evidence.resolve`).
_RULE_NAME = re.compile(r"(?i)(?:speaking with|talking to|chatting with|assisting|helping|serving|user(?:name)?|"
                        r"customer(?: name)?|name|hello,?|hi,?|dear)\s*:?\s+"
                        r"(?P<v>[A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+){0,3})")
#: Any of them: most quoted text holds nothing to mask, and one search says so.
_ANY = re.compile("|".join(f"(?:{p.pattern.replace('(?P<v>', '(?:').replace('(?i)', '')})"
                           for p in (*_SECRETS, *(p for p, _ in _PERSONAL), _RULE_NAME)), re.IGNORECASE)

#: The environment variable that holds the fingerprint key (hex).
KEY_ENV = "PROMPTCACHE_FINGERPRINT_KEY"


def key_file() -> Path:
    """Where the fingerprint key is kept: ``$XDG_CONFIG_HOME/promptcache/fingerprint.key``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "promptcache" / "fingerprint.key"


@lru_cache(maxsize=None)
def _key() -> bytes:
    """The fingerprint key (see the module docstring); read or made once per process."""
    env = os.environ.get(KEY_ENV, "").strip()
    if env:
        try:
            key = bytes.fromhex(env)
        except ValueError:
            key = b""
        if len(key) >= 16:
            return key[:64]
        from ..errors import ConfigError

        raise ConfigError(f"{KEY_ENV}: expected at least 16 bytes of hex (32 hex digits)")
    path = key_file()
    for _ in range(2):
        try:
            key = bytes.fromhex(path.read_text(encoding="ascii").strip())
            if len(key) >= 16:
                return key[:64]
            break  # unreadable as a key: not replaced (it may be someone's), one per run instead
        except FileNotFoundError:
            pass
        except (OSError, ValueError):
            break
        try:
            from ..errors import PromptcacheError
            from ..fileio import create_atomic

            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            create_atomic(path, secrets.token_bytes(32).hex() + "\n", 0o600)
        except (OSError, PromptcacheError):
            break
    return secrets.token_bytes(32)


def fingerprint(value: str) -> str:
    """A value's salted fingerprint: 8 hex digits of its keyed BLAKE2b hash (see the module
    docstring for the key). The same value, the same fingerprint."""
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), key=_key(), digest_size=4).hexdigest()


def _spans(text: str, value: bool = False) -> list[tuple[int, int, str | None]]:
    """The ``(start, end, kind)`` of what to mask in ``text``, in order, not overlapping: secrets
    (``kind`` ``None``) first, then each personal pattern in turn where nothing taken before
    overlaps it (with ``value``, the rule's own name pattern last)."""
    if _ANY.search(text) is None:
        return []
    taken: list[tuple[int, int, str | None]] = []
    pats = (*((p, None) for p in _SECRETS), *_PERSONAL, *(((_RULE_NAME, "name"),) if value else ()))
    for pat, kind in pats:
        for m in pat.finditer(text):
            a, b = m.span("v")
            if a < b and not any(a < tb and ta < b for ta, tb, _ in taken):
                taken.append((a, b, kind))
    return sorted(taken)


def _placeholder(kind: str | None, value: str) -> str:
    return "<secret>" if kind is None else f"<{kind} #{fingerprint(value)}>"


def _masked(window: str, start: int, end: int, spans: list[tuple[int, int, str | None]]) -> str:
    """``window[start:end]`` with ``spans`` (in ``window``) masked; a value only partly inside
    is masked whole (its fingerprint is the whole value's)."""
    out: list[str] = []
    pos = start
    for a, b, kind in spans:
        if b <= start or a >= end:
            continue
        out.append(window[pos:max(a, pos)])
        out.append(_placeholder(kind, window[a:b]))
        pos = max(pos, b)
        if pos >= end:
            break
    if pos < end:
        out.append(window[pos:end])
    return "".join(out)


def redact(text: str) -> str:
    """Mask secrets (``<secret>``) and personal values (their kind and fingerprint).

    >>> redact("key sk-ant-abcdefghijklmnop1234 ok")
    'key <secret> ok'
    >>> redact("You are speaking with Ana Silva.").startswith("You are speaking with <name #")
    True
    """
    if _ANY.search(text) is None:
        return text
    return _masked(text, 0, len(text), _spans(text))


@record
class Excerpt:
    """Quoted prompt text, kept as its few characters and formatted when a report shows it.

    Every request a cause breaks keeps its quotes, but a finding shows only one request's:
    formatting and redacting them all cost more than finding the causes.

    Attributes:
        text: the quoted characters.
        cut_before, cut_after: whether the text went on before / after them (shown as ``…``).
        oneline: whether newlines are shown as ``⏎``.
        context: the text around ``text`` (which starts at ``at`` in it), or ``None``. What marks
            a value as a secret or a personal value may sit next to it, outside the quote
            (``Bearer``, ``password=``, ``speaking with``, ``customer id``): redaction looks at the
            context, and masks each value it finds there that the quote shows any of, whole
            (the value ``<secret>``, or ``<name #3fa2c1d0>`` for the whole name).
        at: where ``text`` starts in ``context``.
        focus: where in ``text`` the value the quote is about lies (``(start, end)``), or
            ``None``: the span that differs between the two requests a finding compares.
    """

    text: str
    cut_before: bool = False
    cut_after: bool = False
    oneline: bool = True
    context: str | None = None
    at: int = 0
    focus: tuple[int, int] | None = None

    @classmethod
    def around(cls, text: str, start: int, end: int, width: int = 24) -> Excerpt:
        """``text[start:end]`` (the focus) with up to ``width`` characters each side (and, as
        its context for redaction, :data:`CONTEXT` more)."""
        a = max(0, start - width)
        b = min(len(text), end + width)
        ca = max(0, a - CONTEXT)
        return cls(text[a:b], a > 0, b < len(text), context=text[ca:min(len(text), b + CONTEXT)], at=a - ca,
                   focus=(start - a, min(end, b) - a))

    @classmethod
    def value(cls, text: str, start: int, end: int, width: int = 24) -> Excerpt:
        """The value ``text[start:end]``, as it is (no ellipses, newlines kept), with up to
        ``width`` (at least :data:`CONTEXT`) characters each side as its context."""
        width = max(width, CONTEXT)
        a = max(0, start - width)
        return cls(text[start:end], oneline=False, context=text[a:min(len(text), end + width)], at=start - a)

    def _window(self) -> tuple[str, int]:
        return (self.context, self.at) if self.context is not None else (self.text, 0)

    def personal(self) -> str | None:
        """The kind of personal value a value quote (:meth:`value`) is, the way the
        ``user-data-before-shared`` rule sees one (``name``, ``account id``, ``email``, ...), or
        ``None`` (not personal, a secret, or not a value quote)."""
        if self.oneline or self.context is None:
            return None
        w, at = self._window()
        for a, b, kind in _spans(w, value=True):
            if a < at + len(self.text) and at < b:
                return kind
        return None

    def render(self, show: bool = False, focus_kind: str | None = None) -> str:
        """The quote as reports print it; secrets and personal values masked unless ``show``
        (found in the context too). A value quote masks what the rule takes for a personal
        value; with ``focus_kind`` (the kind of the value the finding is about), the focus is
        masked as that kind too."""
        s = self.text
        w, at = self._window()
        if not show and (focus_kind is not None or _ANY.search(w) is not None):
            spans = _spans(w, value=not self.oneline)
            if focus_kind is not None and self.focus is not None and self.focus[0] < self.focus[1]:
                fa, fb = at + self.focus[0], at + self.focus[1]
                fa = min([fa, *(a for a, b, _ in spans if a < fb and fa < b)])  # whole values
                fb = max([fb, *(b for a, b, _ in spans if a < fb and fa < b)])
                spans = sorted([x for x in spans if x[1] <= fa or x[0] >= fb] + [(fa, fb, focus_kind)])
            s = _masked(w, at, at + len(self.text), spans)
        s = ("…" if self.cut_before else "") + s + ("…" if self.cut_after else "")
        if self.oneline:
            s = s.replace("\r", "").replace("\n", "⏎")
        return s


@record
class Personal:
    """A per-user value quoted whole, outside the prompt text: a routing identifier (OpenAI
    ``user``, ``safety_identifier``, a session header) or a cache key, which clients derive
    from a user or a conversation. Shown as its kind and salted fingerprint (``<user id
    #3fa2c1d0>``: the same value, the same fingerprint) unless ``--show-text``.

    Attributes:
        kind: what the value is (``user id``, ``session id``, ``cache key``).
        value: the value.
    """

    kind: str
    value: str

    def render(self, show: bool = False) -> str:
        """The value (``show``), else its kind and fingerprint."""
        return self.value if show else _placeholder(self.kind, self.value)


#: The kind of each routing identifier a request carries (``Request.affinity`` names, and
#: ``cache_key``), as :class:`Personal` shows it.
IDENTIFIER_KINDS = {"user": "user id", "safety_identifier": "user id", "metadata.user_id": "user id",
                    "portkey._user": "user id", "cache_key": "cache key"}


def identifier(name: str, value: str | None) -> Personal | None:
    """A routing identifier's value as :class:`Personal` (session headers: ``session id``)."""
    if value is None:
        return None
    return Personal(IDENTIFIER_KINDS.get(name, "session id"), str(value))


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
        """The evidence as reports print it (``{name: value}``, quotes formatted). Where the
        value a finding quotes is personal (:meth:`Excerpt.personal`), the quotes around the
        break mask it at their focus too: on both sides, whatever its shape there."""
        kind = None
        if not self.show:
            kind = next((k for v in self.items.values() if isinstance(v, Excerpt) and (k := v.personal())), None)
        return {k: v.render(self.show, focus_kind=kind) if isinstance(v, Excerpt) else
                v.render(self.show) if isinstance(v, Personal) else v for k, v in self.items.items()}


def masks(text: str, start: int, end: int) -> bool:
    """Whether redacting ``text`` masks any character of ``text[start:end]``.

    >>> masks("Authorization: Bearer abcdefghijklmnop0123", 22, 42), masks("turn 12 of 40", 5, 7)
    (True, False)
    """
    return any(a < end and start < b for a, b, _ in _spans(text))


def excerpt(text: str, start: int, end: int, *, width: int = 24, show: bool = False) -> str:
    """``text[start:end]`` with up to ``width`` characters of context each side, ellipses where
    cut, newlines shown as ``⏎``; redacted unless ``show``.

    >>> excerpt("0123456789" * 5 + "\\nend", 50, 51, width=2)
    '…89⏎en…'
    """
    return Excerpt.around(text, start, end, width).render(show)
