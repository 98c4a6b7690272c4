"""Bounded self-hosted engine caches, request by request exactly as the engines' own code
behaves: vLLM's block pool (``vllm/v1/core/block_pool.py``, ``kv_cache_manager.py``, v1, prefix
caching on) and SGLang's radix tree (``python/sglang/srt/mem_cache/radix_cache.py``).

Checked against vLLM 0.33.0's ``KVCacheManager`` and SGLang 0.5.23's ``RadixCache`` (both from
PyPI, run on CPU; ``tests/test_engines_exact.py``), 2026-12-01: cached tokens are equal on every
request of the Mooncake traces at 0.1M to 10M tokens and of a tokenized chat log at a few
thousand. An unbounded engine cache is the prefix tree's (:class:`~promptcache.simulate.PrefixSim`);
these models run when a capacity is set (``--capacity-tokens``) and no TTL.

Each request is served alone, start to end, before the next arrives: one lookup, one
allocation of everything the prompt needs, then the request finishes and its blocks return to
the cache. Left out (see ``docs/engines.md``): concurrency (requests running at the same time
pin their blocks, and hold more of the pool), output tokens (decode appends blocks that are
cached when the request finishes), chunked prefill and preemption (a request that does not fit
waits or is preempted; here a prompt larger than the whole pool is refused and one that fits is
always served), KV offloading and hierarchical caches.

Four behaviours an LRU over the prefix tree gets wrong, each modelled here:

1. vLLM's pool holds ``num_blocks`` blocks, one of them its null block, and the running request
   needs every block it writes, its partial last block included, before it frees them; so only
   ``num_blocks - 1`` blocks ever hold cache, and a request may evict one block more than the
   full blocks it caches.
2. SGLang stamps a node's access time before it checks how much of it matches, so when a lookup
   splits a node the unmatched lower half is refreshed too and outlives what an LRU by last use
   predicts.
3. On hashed traces (Mooncake: one id per 512-token block, the last block partial) SGLang at page
   size 1 holds the partial block's real tokens, not a whole block: prompts are expanded to one
   unit per token here.
4. A prompt larger than the whole pool is refused by both engines: nothing is evicted and
   nothing cached (the engines reject it, or it never gets its blocks).
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections import OrderedDict
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..prefix.lcp import common_prefix
from .rules import CacheRules

#: Flag on a request a bounded engine refused (its prompt is larger than the whole pool).
REFUSED = "refused_over_capacity"


def token_units(p: Any) -> tuple[bytes, int]:
    """A prompt as one unit per token: ``(bytes, width)``. Token prompts are returned as they
    are; a hashed prompt's block ids are repeated once per token they cover (the last block
    its real length), so that equal ids mean equal tokens and a partial block holds only its
    own tokens."""
    if p.unit_tokens == 1:
        return p.units, p.width
    ids = np.frombuffer(p.units, dtype="<u8")
    lens = np.full(len(ids), p.unit_tokens, dtype=np.int64)
    if len(ids):
        lens[-1] = p.n_tokens - p.unit_tokens * (len(ids) - 1)
    return np.repeat(ids, lens).tobytes(), 8


class VllmBlockPool:
    """vLLM v1's block pool with automatic prefix caching, one request at a time.

    ``num_blocks = capacity_tokens // block_size`` blocks; block 0 is the null block and never
    holds cache. Per request (``KVCacheManager.get_computed_blocks``, ``allocate_slots``,
    ``free``):

    - hit: the longest run of leading full blocks whose chained hash is cached, within the
      first ``n - 1`` tokens (``max_cache_hit_length = num_tokens - 1``);
    - the request needs ``ceil(n / block_size)`` blocks; when the hit blocks plus the new ones
      exceed the free queue, the request is refused (``allocate_slots`` returns ``None``);
    - hit blocks leave the free queue; new blocks are popped from its head (least recently
      freed), evicting what they cached; the request's new full blocks are cached (a hash may
      map to several blocks, the first inserted is served);
    - on finishing, the request's blocks return to the free queue in reverse order, so its
      deepest block is evicted first: cached blocks at its tail, blocks that cache nothing (the
      partial last block) at its head, reused first (vLLM 0.33: "LIFO reuse of non-cached
      blocks").

    Args:
        rules: engine rules with ``capacity_tokens`` and ``granularity`` (the block size).
        unit_tokens: tokens per unit of the prompts (a hashed trace's block size, or 1).

    Raises:
        ConfigError: when the block size is not a multiple of a hashed trace's block.
    """

    def __init__(self, rules: CacheRules, unit_tokens: int = 1):
        assert rules.capacity_tokens is not None
        self.block = max(1, rules.granularity)
        if self.block % unit_tokens:
            raise ConfigError(f"--block-size {self.block} must be a multiple of the trace's {unit_tokens}-token blocks")
        self.num_blocks = rules.capacity_tokens // self.block
        self.free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(1, self.num_blocks))
        self.hash_of: dict[int, bytes] = {}
        self.cached: dict[bytes, dict[int, None]] = {}
        self.evicted_blocks = 0

    def _keys(self, p: Any, count: int) -> list[bytes]:
        """The chained key of each of the prompt's first ``count`` full blocks: a digest of the
        parent's key and the block's units (as vLLM hashes the parent's hash and the block's
        tokens; a hashed trace's ids are chained too, but an id may recur at another depth)."""
        W, B = p.width, self.block
        keys, h, step = [], b"", (B // p.unit_tokens) * W
        for k in range(count):
            h = hashlib.blake2b(h + p.units[k * step:(k + 1) * step], digest_size=16).digest()
            keys.append(h)
        return keys

    def step(self, p: Any) -> tuple[int, bool]:
        """Serve one prompt → ``(cached_tokens, refused)``."""
        n, B = p.n_tokens, self.block
        full = n // B
        keys = self._keys(p, full)
        hits: list[int] = []
        for k in range(max(0, n - 1) // B):
            got = self.cached.get(keys[k])
            if not got:
                break
            hits.append(next(iter(got)))
        total = -(-n // B)
        new = total - len(hits)
        free = self.free
        if new + sum(1 for b in hits if b in free) > len(free):
            return 0, True
        for b in hits:
            free.pop(b, None)
        blocks = list(hits)
        for _ in range(new):
            b, _ = free.popitem(last=False)
            key = self.hash_of.pop(b, None)
            if key is not None:
                d = self.cached[key]
                del d[b]
                if not d:
                    del self.cached[key]
                self.evicted_blocks += 1
            blocks.append(b)
        for k in range(len(hits), full):
            b = blocks[k]
            self.hash_of[b] = keys[k]
            self.cached.setdefault(keys[k], {})[b] = None
        # free: in reverse order; blocks that cache nothing (the partial last block) go to the
        # front of the queue (reused first), cached ones to the back (BlockPool.free_blocks)
        first = []
        for b in reversed(blocks):
            if b in self.hash_of:
                free[b] = None
            else:
                first.append(b)
        for b in reversed(first):
            free[b] = None
            free.move_to_end(b, last=False)
        return len(hits) * B, False

    @property
    def cached_blocks(self) -> int:
        """Blocks holding a cached prefix (evictable)."""
        return len(self.hash_of)


class _Node:
    __slots__ = ("key", "children", "parent", "last", "lock")

    def __init__(self, key: bytes, parent: _Node | None, last: int):
        self.key = key
        self.children: dict[bytes, _Node] = {}
        self.parent = parent
        self.last = last
        self.lock = 0


class SglangRadix:
    """SGLang's ``RadixCache`` with LRU eviction over a pool of ``capacity_tokens`` token slots,
    one request at a time (page size ``granularity``, SGLang's default 1).

    Per request (the scheduler's calls on the cache):

    - ``match_prefix`` on the first ``n - 1`` tokens, page-aligned (one token is always computed
      for the logits): every node walked is stamped with one access time, the one the match
      stops inside included, and that node is split where the match stops (the new upper node
      gets a fresh stamp when it is made); the matched path is locked;
    - the request needs ``n - hit`` slots; when fewer are free, ``evict`` removes unlocked
      leaves, least recently stamped first, whole, until at least the shortfall is freed (a
      parent left without children becomes a candidate);
    - ``insert`` of the page-aligned prompt stamps its path, splits where it diverges, adds the
      rest as a new leaf (stamped when made), and the path is unlocked;
    - a prompt longer than the whole pool is refused: nothing evicted, nothing cached.

    Stamps are a counter advanced wherever SGLang reads ``time.monotonic()``, so ties resolve
    as they do there.

    Args:
        rules: engine rules with ``capacity_tokens`` and ``granularity`` (page size).
    """

    def __init__(self, rules: CacheRules):
        assert rules.capacity_tokens is not None
        self.capacity = rules.capacity_tokens
        self.page = max(1, rules.granularity)
        self._clock = itertools.count(1)
        self.root = _Node(b"", None, 0)
        self.root.lock = 1
        self.size = 0
        self._heap: list[tuple[int, int, _Node]] = []
        self._seq = itertools.count()
        self.evicted_tokens = 0

    def _tick(self) -> int:
        return next(self._clock)

    def _push(self, node: _Node) -> None:
        if not node.children and node is not self.root:
            heapq.heappush(self._heap, (node.last, next(self._seq), node))

    def _split(self, child: _Node, at: int, W: int) -> _Node:
        """Split ``child`` after ``at`` units; the new upper node is stamped when made."""
        parent = child.parent
        assert parent is not None
        upper = _Node(child.key[:at * W], parent, self._tick())
        upper.lock = child.lock
        parent.children[child.key[:self.page * W]] = upper
        child.key = child.key[at * W:]
        child.parent = upper
        upper.children[child.key[:self.page * W]] = child
        return upper

    def _walk(self, seq: bytes, length: int, W: int) -> tuple[int, _Node]:
        """``_match_prefix_helper`` / the walk of ``_insert_helper``: the matched length (units,
        page-aligned) within ``seq[:length]`` and the node it ends at."""
        P = self.page
        t = self._tick()
        node = self.root
        node.last = t
        pos = 0
        while pos < length:
            child = node.children.get(seq[pos * W:(pos + P) * W])
            if child is None:
                break
            child.last = t  # stamped before the match is measured: the lower half of a split keeps it
            self._push(child)
            k = len(child.key) // W
            m = (min(common_prefix(seq, child.key, W, pos * W), length - pos) // P) * P
            pos += m
            if m < k:
                node = self._split(child, m, W)
                break
            node = child
        return pos, node

    def _evict(self, tokens: int, W: int) -> None:
        """``RadixCache.evict``: unlocked leaves, least recently stamped first, until at least
        ``tokens`` are freed."""
        done = 0
        deferred = []
        heap = self._heap
        while done < tokens and heap:
            last, _, x = heapq.heappop(heap)
            if x.parent is None or x.children or x.last != last:
                continue  # stale
            if x.lock:
                deferred.append((last, next(self._seq), x))
                continue
            units = len(x.key) // W
            done += units
            self.size -= units
            self.evicted_tokens += units
            parent = x.parent
            del parent.children[x.key[:self.page * W]]
            x.parent = None
            if not parent.children and parent is not self.root:
                if parent.lock:
                    deferred.append((parent.last, next(self._seq), parent))
                else:
                    heapq.heappush(heap, (parent.last, next(self._seq), parent))
        for e in deferred:
            heapq.heappush(heap, e)

    def step(self, p: Any) -> tuple[int, bool]:
        """Serve one prompt → ``(cached_tokens, refused)``."""
        n = p.n_tokens
        if n > self.capacity:
            return 0, True
        seq, W = token_units(p)
        P = self.page
        hit, last = self._walk(seq, (max(0, n - 1) // P) * P, W)
        node = last
        while node is not self.root:
            node.lock += 1
            node = node.parent  # type: ignore[assignment]
        free = self.capacity - self.size
        if n - hit > free:
            self._evict(n - hit - free, W)
        length = (n // P) * P
        pos, node = self._walk(seq, length, W)
        if pos < length:
            leaf = _Node(seq[pos * W:length * W], node, self._tick())
            node.children[seq[pos * W:(pos + P) * W]] = leaf
            self.size += length - pos
            self._push(leaf)
        node = last
        while node is not self.root:
            node.lock -= 1
            node = node.parent  # type: ignore[assignment]
        return hit, False


class EngineSim:
    """A bounded engine cache (:class:`VllmBlockPool` or :class:`SglangRadix`) behind the
    simulator's per-namespace interface."""

    def __init__(self, rules: CacheRules, width: int, unit_tokens: int):
        self.rules = rules
        self.unit_tokens = unit_tokens
        self.model: VllmBlockPool | SglangRadix = (VllmBlockPool(rules, unit_tokens) if rules.eviction == "block"
                                                   else SglangRadix(rules))

    def step(self, p: Any, now: float | None) -> tuple[int, int, int, int, bool, tuple[str, ...]]:
        """Simulate one prompt → ``(cached, write, write_1h, live, expired, flags)``; ``live``
        is the hit (the engine serves all it finds)."""
        hit, refused = self.model.step(p)
        return hit, 0, 0, hit, False, ((REFUSED,) if refused else ())
