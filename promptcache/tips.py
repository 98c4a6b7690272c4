"""Tips: the sequences a stage handled last, found again as the longest one a new sequence
starts with.

An agent session re-sends its history on every turn, so the parts (and then the segments) of a
request are those of the session's previous request, as the very same objects, followed by a
few new ones. A stage that remembers what it built for the previous request (its "tip") builds
only for what was added. :class:`PrefixTips` is that memory, shared by the chat format
(:class:`~promptcache.render.FramedFormat`) and the front half (:mod:`promptcache.prepare`).
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Callable, Generic, Sequence, TypeVar

T = TypeVar("T")

#: Items a sequence may differ in from a tip (by identity) and still be built as that tip with
#: those items replaced (:meth:`PrefixTips.find_patched`): a session whose system prompt holds
#: the current time differs from its previous turn in one part and one segment.
PATCHES = 4


def changed(old: Sequence[Any], new: Sequence[Any]) -> list[int]:
    """Positions (ascending) where ``new`` holds another object than ``old``, over the length of
    the shorter (C speed)."""
    return list(itertools.compress(itertools.count(), map(operator.is_not, old, new)))


class PrefixTips(Generic[T]):
    """Sequences kept with a value each, found by their last item's identity and length and
    confirmed by an exact list comparison (C speed, identical items compare at once).

    Each entry keeps its sequence alive, so an ``id`` is never reused while the entry lives.

    Args:
        probes: how many items shorter than the sequence looked up a tip may be.
        limit: tips kept; when full, the oldest half is let go.
        dropped: called with the value of every tip let go (replaced, removed or evicted).
    """

    def __init__(self, probes: int, limit: int, dropped: Callable[[T], None] | None = None):
        self.probes = probes
        self.limit = limit
        self._dropped = dropped
        self._d: dict[tuple[int, int], tuple[Sequence[Any], T]] = {}

    def __len__(self) -> int:
        return len(self._d)

    def find(self, seq: Sequence[Any], longest: int | None = None,
             accept: Callable[[T], bool] | None = None) -> tuple[int, T] | None:
        """``(length, value)`` of the longest tip that ``seq`` starts with, no longer than
        ``longest`` (default ``len(seq)``) and whose value ``accept`` takes; ``None`` if none."""
        n = len(seq) if longest is None else longest
        d = self._d
        for j in range(n, max(0, n - self.probes), -1):
            got = d.get((id(seq[j - 1]), j))
            if got is not None and (accept is None or accept(got[1])) and got[0] == seq[:j]:
                return j, got[1]
        return None

    def find_patched(self, seq: Sequence[Any], longest: int, most: int) -> tuple[int, T, list[int]] | None:
        """``(length, value, positions)`` of the longest tip no longer than ``longest`` that
        ``seq`` starts with but for at most ``most`` items (compared by identity), and those
        items' positions (ascending); ``None`` if none.

        This finds the tip of a session whose first message changes on every turn (a system
        prompt that starts with the current time): its last items are the same objects.
        """
        d = self._d
        for j in range(longest, max(0, longest - self.probes), -1):
            got = d.get((id(seq[j - 1]), j))
            if got is not None:
                diff = changed(got[0], seq[:j])
                if len(diff) <= most:
                    return j, got[1], diff
        return None

    def remove(self, seq: Sequence[Any]) -> None:
        """Let go of the tip kept for exactly ``seq`` (the session moved on), if any."""
        if seq:
            self._let_go(self._d.pop((id(seq[-1]), len(seq)), None))

    def add(self, seq: Sequence[Any], value: T) -> None:
        """Keep ``seq`` (non-empty) as a tip, replacing one kept for an equal key."""
        d = self._d
        if len(d) >= self.limit:
            for k in list(itertools.islice(d, self.limit // 2)):
                self._let_go(d.pop(k))
        key = (id(seq[-1]), len(seq))
        self._let_go(d.pop(key, None))
        d[key] = (seq, value)

    def _let_go(self, entry: tuple[Sequence[Any], T] | None) -> None:
        if entry is not None and self._dropped is not None:
            self._dropped(entry[1])
