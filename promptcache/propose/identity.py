"""Cache routing from the session identity the log shows: a stable ``prompt_cache_key`` per
conversation, and one upstream per conversation where a router spread it over several.

OpenAI routes a request by a hash of its first tokens combined with ``prompt_cache_key``, and a
cache lives on the machine that served it (https://developers.openai.com/api/docs/guides/prompt-caching,
checked 2026-11-29): a key made per request (``uuid4()``, tests/data/cases/C18) sends every turn
to another machine; a key per device or user (C19) puts unrelated conversations on one. The key
proposed here is derived from what identifies a conversation in the log, in this order:

1. the session the record names (``session_id``, ``conversation_id``, ``thread_id`` ... fields, or
   a session-affinity header in ``Request.affinity``);
2. else the conversation's first message after the template (every turn of a conversation
   re-sends it, so all turns get one key; two conversations that open with the same words
   share a key, which costs nothing: they share a prefix too).

The key is a fingerprint (``pc-`` and 16 hex digits of BLAKE2b over the template id and the
identity), so no user data reaches the provider in it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Iterable

from ..model import Request
from .conversations import conversation
from .observe import identity


def conversation_identity(req: Request) -> tuple[str, str] | None:
    """``(source, identity)`` of a request's conversation: ``("session", ...)`` for what the log
    names, ``("first message", ...)`` for the conversation's opening message, or ``None`` when
    the request holds no conversation at all."""
    named = identity(req)
    if named is not None:
        return "session", named
    conv = conversation(req)
    if not conv:
        return None
    first = conv[0].message
    text = "\x1f".join(f"{p.role}\x1e{p.text}" for p in conv if p.message == first)
    return "first message", text


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
