"""Which earlier request a request continues, as the log shows it: conversations followed by the
content they re-send, and windows that drop their oldest messages.

Both work on hashes of the parts after the template region (Python's ``hash`` of a ``str`` is
computed once per string object, and the readers share one object per repeated part), so each
request costs one dictionary lookup per part it holds. Memory is bounded: the oldest entries are
forgotten first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..model import Part, Request
from .templates import region

#: Conversation tips (or message positions) remembered; the older half is dropped when full.
LIMIT = 200_000


def conversation(req: Request) -> list[Part]:
    """The parts after the template region (what one conversation adds to its template)."""
    return list(req.parts[len(region(req)):])


@dataclass(frozen=True)
class Link:
    """Where a request stands in its conversation.

    Attributes:
        conversation: an id shared by every request of one conversation (within a run).
        previous_arrival: arrival of the request it continues, or ``None`` (a new conversation,
            or an untimed predecessor).
        continues: whether it re-sends an earlier request's whole conversation and adds to it
            (or re-sends it as it was: a retry).
    """

    conversation: int
    previous_arrival: float | None
    continues: bool


class Conversations:
    """Links every request to the earlier request whose conversation it extends.

    A request continues request ``q`` when its conversation parts (role, kind and text, in order)
    start with all of ``q``'s, or with all of ``q``'s messages but its newest (the turn a
    proposal may have appended a moved span to); the deepest such ``q`` wins, so a session's
    turns chain up.
    """

    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self.tips: dict[int, tuple[int, float | None]] = {}
        self._next = 0

    def link(self, req: Request, seed: object) -> Link:
        """Link ``req`` (in arrival order) and remember it as its conversation's tip.

        Args:
            req: the request.
            seed: what keeps templates apart (the template's key or id): two templates'
                conversations never link.
        """
        h = hash(seed)
        chain = []
        conv_parts = conversation(req)
        for p in conv_parts:
            h = hash((h, p.role, p.kind, p.text))
            chain.append(h)
        newest = conv_parts[-1].message if conv_parts else None
        before_newest = next((k for k in range(len(conv_parts) - 1, -1, -1)
                              if conv_parts[k].message != newest or newest is None), None)
        found = None
        for k in range(len(chain) - 1, -1, -1):
            got = self.tips.get(chain[k])
            if got is not None:
                found = got
                break
        if found is None:
            conv, prev = self._next, None
            self._next += 1
        else:
            conv, prev = found
        if chain:
            if len(self.tips) >= self.limit:
                for key in list(self.tips)[: self.limit // 2]:
                    del self.tips[key]
            self.tips[chain[-1]] = (conv, req.arrival)
            if before_newest is not None and before_newest < len(chain) - 1:
                self.tips.setdefault(chain[before_newest], (conv, req.arrival))
        return Link(conv, prev, found is not None)


def messages(parts: Sequence[Part]) -> list[tuple[int | None, list[Part]]]:
    """Parts grouped by message, in order: ``[(message index, parts), ...]``."""
    out: list[tuple[int | None, list[Part]]] = []
    for p in parts:
        if out and p.message is not None and out[-1][0] == p.message:
            out[-1][1].append(p)
        else:
            out.append((p.message, [p]))
    return out


def _message_hash(parts: Sequence[Part]) -> int:
    return hash(tuple((p.role, p.kind, p.text) for p in parts))


@dataclass(frozen=True)
class Window:
    """Where a request's conversation starts within its chain of re-sent windows.

    Attributes:
        chain: an id shared by the requests of one window chain.
        start: absolute position (in messages, from the chain's first request) of the request's
            first conversation message.
        dropped: messages dropped from the front since the previous request of the chain (0 for
            an append-only conversation or a chain's first request).
        size: conversation messages the request holds.
    """

    chain: int
    start: int
    dropped: int
    size: int


class Windows:
    """Finds conversations that are re-sent with their oldest messages dropped: a request whose
    first two conversation messages sit at positions ``p, p + 1`` of an earlier request of the
    same template, ``p > 0``, dropped ``p`` messages from the front (a sliding history window)."""

    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self.pos: dict[int, tuple[int, int]] = {}  # message hash → (chain, absolute position)
        self.starts: dict[int, int] = {}  # chain → start of its latest request
        self._next = 0

    def observe(self, req: Request, seed: object,
                msgs: Sequence[tuple[int | None, list[Part]]] | None = None) -> Window:
        """Place ``req`` (in arrival order) in its chain and remember its messages (``msgs``: its
        conversation's messages, default all of them; without an inserted message, say)."""
        if msgs is None:
            msgs = messages(conversation(req))
        hs = [hash((seed, _message_hash(ps))) for _, ps in msgs]
        chain, start = -1, 0
        if hs:
            got = self.pos.get(hs[0])
            if got is not None and (len(hs) < 2 or self.pos.get(hs[1]) == (got[0], got[1] + 1)):
                chain, start = got
        if chain < 0:
            chain, start = self._next, 0
            self._next += 1
        last = self.starts.get(chain, start)
        dropped = max(0, start - last)
        self.starts[chain] = max(start, last)
        if len(self.pos) + len(hs) > self.limit:
            for key in list(self.pos)[: self.limit // 2]:
                del self.pos[key]
        for k, h in enumerate(hs):
            self.pos[h] = (chain, start + k)
        return Window(chain, start, dropped, len(hs))


def message_chains(msgs: Sequence[tuple[int | None, list[Part]]], seed: object,
                   skip: int | None = None) -> list[int]:
    """Per message of ``msgs`` (:func:`messages`), the hash of the conversation up to its end
    (role, kind and text of every part, chained from ``seed``); the message at position ``skip``
    is left out of the chain (its own entry repeats the one before it)."""
    h = hash(seed)
    out = []
    for k, (_, ps) in enumerate(msgs):
        if k != skip:
            for p in ps:
                h = hash((h, p.role, p.kind, p.text))
        out.append(h)
    return out


#: Leading conversation messages that may be an inserted one (a reminder, lessons, a status
#: line put before the history): :class:`Insertions` tries leaving out each.
INSERT_POSITIONS = 4


class Insertions:
    """Finds a message inserted before a conversation's stable history: a request whose
    conversation continues no earlier one, but does (for at least two messages) once one of its
    first :data:`INSERT_POSITIONS` user (or system) messages is left out (tests/data/cases/C28: a
    ``<lessons>`` message put before the conversation on some turns and not others).

    Every message end of every request's conversation, without its inserted message, is
    remembered (bounded: the older half is dropped when full), so a request that drops the
    inserted message again continues the one that had it.
    """

    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self.ends: set[int] = set()

    def find(self, req: Request, seed: object) -> tuple[int | None, list[tuple[int | None, list[Part]]], list[int]]:
        """``(position of the inserted message in the conversation's messages or None,
        messages, chains without it)`` of ``req`` (in arrival order), remembering its ends."""
        msgs = messages(conversation(req))
        chains = message_chains(msgs, seed)
        inserted = None
        if msgs and not any(c in self.ends for c in chains[:-1] or chains):
            for k in range(min(INSERT_POSITIONS, len(msgs) - 1)):
                if not all(p.role in ("user", "system", "developer") and p.kind != "tool_result" for p in msgs[k][1]):
                    continue
                alt = message_chains(msgs, seed, skip=k)
                # at least two messages after it continue an earlier request (one shared
                # opening line is no evidence)
                if any(c in self.ends for c in alt[k + 2:-1] or alt[k + 2:]):
                    inserted, chains = k, alt
                    break
        if len(self.ends) + len(chains) > self.limit:
            self.ends.clear()  # forget the oldest (all): a bounded memory; insertions are local in time
        self.ends.update(chains if inserted is None else chains[:inserted] + chains[inserted + 1:])
        return inserted, msgs, chains
