"""Single-slot engines: the llama.cpp server and Ollama keep one cached prompt per slot.

llama.cpp's server (``tools/server``, checked 2026-12-01): ``cache_prompt`` (default ``true``)
"Re-use[s] KV cache from a previous request if possible. This way the common prefix does not
have to be re-processed, only the suffix that differs"; a request goes to the idle slot whose
cached tokens share the most with it (``--slot-prompt-similarity``, default 0.1), else to the
least recently used one; at least one prompt token is always evaluated (``n_past--`` when the
whole prompt matches). Ollama's runner (``runner/llamarunner/cache.go``) does the same with its
``InputCache``: ``findLongestCacheSlot`` over ``OLLAMA_NUM_PARALLEL`` slots, "Leave one input to
sample so we can get a response". With one slot, two conversations that alternate evict each
other on every request.

A slot is modelled as the prompt it last held (the tokens it generated are not in the log's
prompt, so a reply replayed byte for byte is counted as computed again: a lower bound on hits).
"""

from __future__ import annotations

from ..prefix.lcp import common_prefix
from .rules import CacheRules


class SlotSim:
    """``rules.slots`` slots, each holding the last prompt it served (unit bytes)."""

    def __init__(self, rules: CacheRules, width: int, unit_tokens: int):
        self.rules = rules
        self.width = width
        self.unit_tokens = unit_tokens
        self.slots: list[bytes] = []
        self.used: list[int] = []
        self._clock = 0

    def step(self, p, now: float | None) -> tuple[int, int, int, int, bool]:  # p: Prompt
        """Serve one prompt → ``(cached, write, write_1h, slot_lcp_tokens, evicted)``:
        ``evicted`` says the prompt went to a slot that held another conversation."""
        self._clock += 1
        best, best_k = -1, -1
        for k, held in enumerate(self.slots):
            n = common_prefix(p.units, held, self.width) if held else 0
            if n > best:
                best, best_k = n, k
        n_units = len(p.units) // self.width
        sim = float(self.rules.slot_similarity)
        if best_k < 0 or (best < sim * n_units and len(self.slots) < max(1, self.rules.slots)):
            if len(self.slots) < max(1, self.rules.slots):
                self.slots.append(b"")
                self.used.append(0)
                best_k, best = len(self.slots) - 1, 0
        elif best < sim * n_units:
            best_k = min(range(len(self.slots)), key=lambda k: self.used[k])  # least recently used
            best = common_prefix(p.units, self.slots[best_k], self.width)
        live = p.tokens_of(best)
        hit = min(live, max(0, p.n_tokens - self.rules.max_hit_offset))
        evicted = bool(self.slots[best_k]) and best < n_units and live < p.n_tokens
        self.slots[best_k] = p.units
        self.used[best_k] = self._clock
        return hit, 0, 0, live, evicted
