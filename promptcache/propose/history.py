"""History kept append-only between cuts, instead of rewritten on every turn.

Three client habits rewrite a conversation's history on every request, so the part of the
prompt after the template differs from its predecessor early and is never read from the cache:

- a sliding window (the newest ``N`` messages) drops its oldest message each turn (omi's fixed
  10-message window, openclaw's ``historyLimit``: tests/data/cases/C15);
- a compaction summary replaces the oldest exchanges each turn, and the window behind it starts
  one exchange later (Continue's summaries: C27);
- old tool results are cleared in place, one more per request (opencode's pruning: C26).

The field's fix (``rules/lint/history-truncated.yaml``, ``history-rewritten.yaml``; the cases'
expected fixes) is the same for all three: keep the history append-only and cut it back in
batches when it crosses a trigger ("grow the window to 2N messages, then drop N at once"). Each
request here sends its predecessor's proposed conversation with its own new messages after it,
while that stays within :data:`GROWTH` times the conversation the log sent for the request
(in characters); past that, the request sends the log's own conversation (the window, summary
or clearing as the client made it): a cut, after which the history grows again.

Nothing is invented: every message is the conversation's own, from the log. The model sees more
of the history between cuts than the log sent (up to :data:`GROWTH` times as much): older
messages in full where the log had summarised, dropped or cleared them.

A request's predecessor is the earlier request of the template whose two newest messages the
request holds, in order, before its own newest (a history that grows, rewritten in place or
behind a summary); else the one that holds the request's first two messages in a row later than
its own first (a window whose front moved), the request's new messages being those after the
run they share. Both are found by hash: one lookup per message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import orjson

from ..model import Part
from .conversations import LIMIT

#: A window whose front moves by up to this many messages in one turn is found (the first
#: message pairs of each request are remembered, no more).
WINDOW_STEP = 16
#: The proposed conversation may grow to this many times the characters of the conversation the
#: log sent for the request before it is cut back to the log's own ("grow the window to 2N
#: messages, then drop N at once").
GROWTH = 2.0


def message_hash(parts: Sequence[Part]) -> int:
    """Hash of one message: its parts' role, kind and text, in order."""
    return hash(tuple((p.role, p.kind, p.text) for p in parts))


@dataclass
class Tip:
    """The newest proposed request of a conversation.

    Attributes:
        messages: its proposed conversation (message objects as written), or ``None`` where only
            the log's history is followed (the first pass).
        hashes: the logged message hashes of its conversation.
        added: how many of ``messages``, at their end, are the request's own logged messages.
        key: where :class:`Histories` keeps it.
        conv: an id shared by every request of the conversation (within a run).
    """

    messages: list[Any] | None
    hashes: list[int]
    added: int = 0
    key: int = 0
    conv: int = -1


@dataclass(frozen=True)
class Found:
    """A request's place after its predecessor.

    Attributes:
        tip: the predecessor's :class:`Tip`.
        new: index of the request's first message after those it shares with the predecessor's
            newest (its own new messages start there).
        extends: whether the request's messages before ``new`` are exactly the predecessor's
            (an append-only history); False: the history was rewritten.
        trim: the predecessor's newest messages the request does not re-send (a window whose
            front moved shares a run that may end before the predecessor's end).
    """

    tip: Tip
    new: int
    extends: bool
    trim: int = 0


class Histories:
    """Per template, the conversations' tips in arrival order (bounded: the older half is
    forgotten when full)."""

    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self.tips: dict[int, Tip] = {}
        self.pairs: dict[int, tuple[Tip, int]] = {}  # two consecutive messages → (tip, position)
        self._next = 0

    @staticmethod
    def _key(seed: object, hashes: Sequence[int], k: int) -> int:
        return hash((seed, hashes[k - 1] if k > 0 else None, hashes[k]))

    def find(self, hashes: Sequence[int], seed: object) -> Found | None:
        """The predecessor of a request whose conversation messages hash to ``hashes``, or
        ``None``."""
        for k in range(len(hashes) - 2, -1, -1):
            tip = self.tips.get(self._key(seed, hashes, k))
            if tip is not None:
                return Found(tip, k + 1, list(hashes[:k + 1]) == tip.hashes)
        if len(hashes) >= 2:
            got = self.pairs.get(hash((seed, hashes[0], hashes[1])))
            if got is not None and self.tips.get(got[0].key) is got[0] and got[1] > 0:
                tip, p = got
                m = 0
                while m < len(hashes) - 1 and p + m < len(tip.hashes) and hashes[m] == tip.hashes[p + m]:
                    m += 1
                return Found(tip, m, False, len(tip.hashes) - (p + m))
        return None

    def remember(self, hashes: Sequence[int], seed: object, tip: Tip, found: Found | None) -> None:
        """Make ``tip`` its conversation's newest (its ``conv`` the predecessor's, else a new
        one). The predecessor's is dropped (a conversation keeps one proposed history in memory;
        a retry of the predecessor starts from the log's)."""
        if not hashes:
            tip.conv, self._next = self._next, self._next + 1
            return
        if found is not None and self.tips.get(found.tip.key) is found.tip:
            del self.tips[found.tip.key]
        if len(self.tips) >= self.limit:
            for k in list(self.tips)[: self.limit // 2]:
                del self.tips[k]
        if len(self.pairs) + len(hashes) > self.limit:
            self.pairs.clear()  # bounded: a window found again after this starts a new chain
        tip.key = self._key(seed, hashes, len(hashes) - 1)
        if found is not None:
            tip.conv = found.tip.conv
        else:
            tip.conv, self._next = self._next, self._next + 1
        self.tips[tip.key] = tip
        for i in range(min(len(hashes) - 1, WINDOW_STEP)):
            self.pairs[hash((seed, hashes[i], hashes[i + 1]))] = (tip, i)


def size(messages: Sequence[Any]) -> int:
    """Characters of a conversation's message objects as JSON."""
    try:
        return len(orjson.dumps(list(messages)))
    except TypeError:
        return len(repr(messages))
