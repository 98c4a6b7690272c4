"""Cache routing from the session identity the log shows: a stable ``prompt_cache_key`` per
conversation, and one upstream per conversation where a router spread it over several.

OpenAI routes a request by a hash of its first tokens combined with ``prompt_cache_key``, and a
cache lives on the machine that served it (https://developers.openai.com/api/docs/guides/prompt-caching,
checked 2026-11-29): a key made per request (``uuid4()``, tests/data/cases/C18) sends every turn
to another machine; a key per device or user (C19) puts unrelated conversations on one. The key
proposed here is derived from what identifies a conversation in the log, in this order:

1. the session the record names: a session-affinity identifier in ``Request.affinity``
   (``session_id``, ``x-session-affinity``, ``x-grok-conv-id``, the session in Claude Code's
   ``metadata.user_id``), else ``Request.session`` (the reader's session, conversation or thread
   field); a person's identifier (``user``, ``safety_identifier``) is never one, and a session
   that the log shows spanning several conversations (a user or device id: C19) is combined
   with the first message;
2. else the conversation's first message after the template (every turn of a conversation
   re-sends it, so all turns get one key; two conversations that open with the same words
   share a key, which costs nothing: they share a prefix too).

The key is a fingerprint (``pc-`` and 16 hex digits of BLAKE2b over the template id and the
identity), so no user data reaches the provider in it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Iterable

from ..model import Request
from .conversations import conversation

#: Routing identifiers that name a person, a device or an account, not a conversation: a key
#: from one of them alone puts every conversation of that person on one cache machine (C19).
PERSON = ("user", "safety_identifier", "user_id", "userid", "portkey._user", "metadata.user_id", "x-user-id")
#: Claude Code's ``metadata.user_id``: JSON with a ``session_id`` (2.x), or
#: ``user_<hash>_account_<uuid>_session_<uuid>`` (1.x) (BerriAI/litellm PR #40342: key on the
#: session, not the device).
_CC_SESSION = re.compile(r"_session_([0-9a-fA-F-]{8,})")


def _session_in_user_id(v: str) -> str | None:
    """The session a Claude Code ``metadata.user_id`` carries, or ``None``."""
    s = v.strip()
    if s.startswith("{"):
        try:
            got = json.loads(s)
        except ValueError:
            return None
        sid = got.get("session_id") if isinstance(got, dict) else None
        return str(sid) if isinstance(sid, (str, int)) and sid != "" else None
    m = _CC_SESSION.search(s)
    return m.group(1) if m else None


def identity(req: Request) -> str | None:
    """The session or conversation the log names for a request, or ``None``: a session-affinity
    identifier (``session_id``, ``x-session-affinity``, ``x-grok-conv-id``, ``conversation_id``
    ...; the session inside Claude Code's ``metadata.user_id``), else the request's ``session``
    (the session, conversation, thread or user field the reader found). A person's identifier
    (``user``, ``safety_identifier``, a user id) is none of these; a ``session`` that turns out to
    span several conversations is combined with the first message (:func:`conversation_identity`)."""
    aff = req.affinity
    if aff:
        for k in sorted(aff):
            v = aff[k]
            if not v:
                continue
            if k.lower() == "metadata.user_id":
                sid = _session_in_user_id(v)
                if sid is not None:
                    return f"session:{sid}"
            elif k.lower() not in PERSON:
                return f"{k.lower()}:{v}"
    if req.session:
        return f"session:{req.session}"
    return None


def conversation_identity(req: Request, coarse: frozenset[str] | set[str] = frozenset()) -> tuple[str, str] | None:
    """``(source, identity)`` of a request's conversation: ``("session", ...)`` for what the log
    names, ``("first message", ...)`` for the conversation's opening message, or ``None`` when
    the request holds no conversation at all. A named identity in ``coarse`` (one that spans
    several conversations: a person or a device) is combined with the first message."""
    named = identity(req)
    if named is not None and named not in coarse:
        return "session", named
    conv = conversation(req)
    if not conv:
        return ("session", named) if named is not None else None
    first = conv[0].message
    text = "\x1f".join(f"{p.role}\x1e{p.text}" for p in conv if p.message == first)
    return ("session and first message", f"{named}\x1d{text}") if named is not None else ("first message", text)


def derived_key(template_id: str, ident: str) -> str:
    """The proposed ``prompt_cache_key``: ``pc-`` + 16 hex digits of BLAKE2b(template id, identity).

    >>> derived_key("T-1a2b3c4d", "session:abc")
    'pc-36ab4152a2131f1a'
    """
    h = hashlib.blake2b(f"{template_id}\x1f{ident}".encode("utf-8", "surrogatepass"), digest_size=8)
    return "pc-" + h.hexdigest()


def pinned_upstream(upstreams: Counter) -> str | None:
    """The upstream to pin a template's conversations to: the one that served most of them,
    or ``None`` when the log names at most one."""
    if len(upstreams) < 2:
        return None
    return upstreams.most_common(1)[0][0]


def spread_share(reqs: Iterable[Request]) -> float:
    """Share of consecutive requests of one conversation (as ``Request.session`` or the first
    message groups them) that another upstream served than the one before (0 when the log names
    no upstream): how often a router moved a conversation away from its warm cache."""
    last: dict[str, str] = {}
    moved = pairs = 0
    for r in reqs:
        up = r.response.upstream if r.response is not None else None
        ident = conversation_identity(r)
        if up is None or ident is None:
            continue
        k = ident[1]
        if k in last:
            pairs += 1
            moved += last[k] != up
        last[k] = up
    return moved / pairs if pairs else 0.0
