"""DeepSeek V4's cache prefix units: a read must match a whole persisted unit.

DeepSeek (https://api-docs.deepseek.com/guides/kv_cache.md and the Chinese page
https://api-docs.deepseek.com/zh-cn/guides/kv_cache.md, current, undated; checked 2026-12-01):
"Each cached prefix is an independent, complete unit. A subsequent request can only hit the cache
if it fully matches a cache prefix unit." Units are persisted

1. at request boundaries: "the end position of the user input and the end position of the model
   output" of each request;
2. at common prefixes: "When the system detects a common prefix across multiple requests, it
   will persist that common prefix as an independent cache prefix unit": first A+B, then A+C
   misses ("A + C does not fully match the first round's cache prefix unit"), but A is
   persisted, and a third request A+D hits A;
3. at fixed token intervals in long inputs and outputs (the interval is not published).

Modelled here:

- (1) input: a unit at the end of each request's whole prompt (its input ends where the model's
  output starts, after the generation prompt): the next turn, which starts with that prompt,
  reads all of it (the guide's first example);
- (1) output: the model's output is not in the log's prompts, so the unit at the end of a
  request's output is persisted when the next request of the conversation shows it (at the end
  of its last assistant message); that request itself does not read it, later branches do (a
  lower bound by one assistant message per turn: the ideal cache holds prompts only);
- (2) the common prefix of a request with the earlier requests of its namespace (the ideal
  cache's longest common prefix, which the simulator computes anyway) is persisted after the
  request, when the earlier request's own input unit is still live: the request itself does not
  read it;
- (3) is not modelled: where the interval matters (a long prompt that a later request leaves
  mid-way), the simulated reads are a lower bound.

A unit is an entry of an :class:`~.boundaries.EntryStore` keyed by a digest of the prompt up to
its end: the chained segment key of the last segment boundary before it (``anchor``), extended by
the unit bytes from there (``blake2b(anchor + units[start:end])``, the chaining
:func:`promptcache.prepare.chained_keys` uses, so a unit that ends on a segment boundary has that
segment's key). ``cuts`` maps each anchor to the offsets of the units after it, so a read checks
only the offsets some earlier unit ends at, one dict lookup per segment boundary, one pass of
hashing over each segment that has any, and at most one offset per token of the segment (the
offsets are kept sorted): proportional to the prompt.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, insort
from typing import Sequence

from .boundaries import EntryStore
from .rules import CacheRules

#: The miss reason of a request whose shared prefix ends where no unit was persisted yet (DeepSeek
#: persists it now, from the common prefix; a later request can read it).
NO_UNIT = "no_unit"


class UnitSim:
    """DeepSeek's cache prefix units (``mode: units``) for one namespace.

    Args:
        rules: the namespace's rules (``min_tokens``: the shortest unit; ``ttl_seconds``: idle
            lifetime of a unit, restarted by a read when ``refresh_on_hit``).
    """

    def __init__(self, rules: CacheRules):
        self.rules = rules
        self.store = EntryStore()
        #: anchor key → (the offsets after the anchor that units end at, ascending, in tokens;
        #: offset → unit key)
        self.cuts: dict[bytes, tuple[list[int], dict[int, bytes]]] = {}
        #: request index → its input unit's key (whose liveness lets a later request detect a
        #: common prefix with it)
        self.members: dict[int, bytes] = {}
        self._steps = 0
        self._last_input: bytes | None = None
        self._last_hit = 0
        self._last_expired = 0

    # ------------------------------------------------------------------ units

    def _write(self, p, keys: Sequence[bytes], end: int, now: float | None) -> bytes | None:  # p: Prompt
        """Persist the unit of ``p``'s first ``end`` tokens; returns its key (``None`` below the
        minimum)."""
        r = self.rules
        if end < max(1, r.min_tokens) or end > p.n_tokens:
            return None
        ends = p.seg_ends
        a = bisect_left(ends, end) - 1  # the last segment boundary before the unit's end
        start = ends[a] if a >= 0 else 0
        anchor = keys[a] if a >= 0 else b""
        if ends[a + 1] == end:
            key = keys[a + 1]
        else:
            w = p.width
            key = hashlib.blake2b(anchor + p.units[start * w:end * w], digest_size=16).digest()
        self.store.write(key, now, float("inf") if r.ttl_seconds is None else float(r.ttl_seconds))
        cut = self.cuts.get(anchor)
        if cut is None:
            cut = self.cuts[anchor] = ([], {})
        off = end - start
        if off not in cut[1]:
            insort(cut[0], off)
        cut[1][off] = key
        return key

    def _read(self, p, keys: Sequence[bytes], now: float | None) -> tuple[int, bytes | None, int]:
        """The longest live unit that ``p`` starts with → ``(tokens, key, expired_end)``;
        ``expired_end``: the end of the longest unit it starts with that has expired."""
        ends, units, w = p.seg_ends, p.units, p.width
        store, cuts = self.store, self.cuts
        best, best_key, expired = 0, None, 0
        for j in range(len(ends) - 1, -1, -1):
            stop = ends[j]
            if stop <= best:
                break  # a unit after an earlier boundary ends within that boundary's segment
            start = ends[j - 1] if j else 0
            cut = cuts.get(keys[j - 1] if j else b"")
            if cut is None:
                continue
            h = None
            pos = start
            for off in cut[0]:  # ascending: at most one per token of this segment
                end = start + off
                if end > stop:
                    break
                if end == stop:
                    key = keys[j]
                else:
                    if h is None:
                        h = hashlib.blake2b(keys[j - 1] if j else b"", digest_size=16)
                    h.update(units[pos * w:end * w])
                    pos = end
                    key = h.copy().digest()
                if end <= best:
                    continue
                state = store.live(key, now)
                if state:
                    best, best_key = end, key
                elif state is False:
                    expired = max(expired, end)
        return best, best_key, expired

    # ------------------------------------------------------------------ the simulator's calls

    def step(self, p, now: float | None, rules: CacheRules | None = None  # p: Prompt
             ) -> tuple[int, int, int, str | None, tuple[str, ...]]:
        """Simulate one prompt → ``(cached, write, write_1h, reason, flags)`` (tokens; writes are
        billed as input on DeepSeek, so 0), then persist its input unit and its previous
        output's unit. :meth:`detect` follows with the common prefix.

        Raises:
            ConfigError: for a hashed trace (units need the rendered segments).
        """
        if not p.segments:
            from ..errors import ConfigError

            raise ConfigError(f"cache model {self.rules.provider} needs request bodies; hashed traces work with "
                              "prefix caches (openai before GPT-5.6, gemini, xai, mistral, groq, fireworks, together, "
                              "vllm, sglang)")
        keys = p.keys()
        hit, hit_key, expired = self._read(p, keys, now)
        if hit_key is not None and self.rules.refresh_on_hit:
            self.store.refresh(hit_key, now)
        segs = p.segments
        for i in range(len(segs) - 1, -1, -1):  # the previous output: the last assistant message's end
            s = segs[i]
            if s.role == "assistant" and (i + 1 == len(segs) or segs[i + 1].message != s.message
                                          or segs[i + 1].role != "assistant"):
                self._write(p, keys, p.seg_ends[i], now)
                break
        self._last_input = self._write(p, keys, p.n_tokens, now)
        self._last_hit, self._last_expired = hit, expired
        self._steps += 1
        if now is not None and self._steps % 4096 == 0:
            self.sweep(now)
        return hit, 0, 0, None, ()

    def detect(self, p, index: int, shared: int, other: int | None, now: float | None,
               keyed: bool = False) -> str | None:  # p: Prompt
        """After the ideal cache's lookup: persist the common prefix of ``p`` with the earlier
        request it diverged from, and say why the read fell short of it.

        Args:
            p: the prompt just simulated by :meth:`step`.
            index: its arrival index.
            shared: its longest common prefix with any earlier request of the ideal cache (tokens).
            other: arrival index of the earlier request that prefix is shared with, or ``None``;
                the prefix is detected only when that request is one of this namespace's and
                its own input unit is still live (the system compares with what it holds).
            now: arrival time.
            keyed: ``other`` was served in another namespace (a cache key, a route or an upstream
                apart): the shared prefix is in that namespace's cache.

        Returns:
            The miss reason (``expired``, ``below_min``, ``namespace``: the prefix is shared with a
            request of another namespace, :data:`NO_UNIT`), or ``None`` when the read covers the
            shared prefix.
        """
        hit = self._last_hit
        if self._last_input is not None:
            self.members[index] = self._last_input
        if shared > hit and other is not None:
            theirs = self.members.get(other)
            if theirs is not None and self.store.live(theirs, now):
                self._write(p, p.keys(), shared, now)
        if hit >= shared:
            return None
        if self._last_expired > hit:
            return "expired"
        if shared < self.rules.min_tokens:
            return "below_min"
        if keyed and other is not None:
            return "namespace"
        return NO_UNIT

    def sweep(self, now: float) -> None:
        """Forget expired units, their offsets and the members whose input unit expired."""
        store = self.store
        store.sweep(now)
        live = store.entries
        cuts = {}
        for a, (_, offs) in self.cuts.items():
            kept = {o: k for o, k in offs.items() if k in live}
            if kept:
                cuts[a] = (sorted(kept), kept)
        self.cuts = cuts
        self.members = {i: k for i, k in self.members.items() if k in live}
