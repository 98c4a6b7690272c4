"""The radix tree against straightforward reference caches, on random workloads."""

from __future__ import annotations

import random
from collections import OrderedDict

import pytest
from hypothesis import given, settings, strategies as st

from promptcache.prefix.tree import PrefixTree

from conftest import units


class BlockLRU:
    """vLLM's block pool, literally: chained block hashes, a free queue where a finished
    request's blocks are appended in reverse order, eviction from the head."""

    def __init__(self, block: int, capacity_blocks: int | None):
        self.B, self.cap, self.q = block, capacity_blocks, OrderedDict()

    def access(self, ids: list[int]) -> int:
        B, n = self.B, len(ids)
        hashes, h = [], None
        for i in range(n // B):
            h = hash((h, tuple(ids[i * B:(i + 1) * B])))
            hashes.append(h)
        hit = 0
        for h in hashes[:(n - 1) // B]:
            if h not in self.q:
                break
            hit += 1
        for h in hashes:
            self.q.pop(h, None)
        for h in reversed(hashes):
            self.q[h] = 1
        while self.cap is not None and len(self.q) > self.cap:
            self.q.popitem(last=False)
        return hit * B


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_block_tree_matches_vllm_block_pool(data):
    B = data.draw(st.sampled_from([1, 2, 4, 16]))
    cap = data.draw(st.sampled_from([None, 2, 3, 5, 9]))
    ref = BlockLRU(B, cap)
    tree = PrefixTree(capacity_units=cap * B if cap else None, evict_block=B)
    base = data.draw(st.lists(st.integers(0, 3), min_size=40, max_size=40))
    for _ in range(data.draw(st.integers(1, 25))):
        n = data.draw(st.integers(1, 40))
        ids = [t if data.draw(st.integers(0, 9)) else data.draw(st.integers(0, 3)) for t in base[:n]]
        lcp, _, _ = tree.access(units(ids), (n // B) * B, None)
        assert min(lcp, n - 1) // B * B == ref.access(ids)
    if cap:
        assert tree.size <= cap * B


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=30), min_size=1, max_size=30))
def test_unbounded_lcp_is_longest_prefix_of_any_earlier_prompt(prompts):
    tree = PrefixTree()
    seen: list[list[int]] = []
    for p in prompts:
        expected = max((next((i for i, (a, b) in enumerate(zip(p, q)) if a != b), min(len(p), len(q))) for q in seen), default=0)
        lcp, _, _ = tree.access(units(p), len(p), None)
        assert lcp == expected
        seen.append(p)


def test_ttl_walk_stops_at_expired_and_refresh_keeps_alive():
    tree = PrefixTree(ttl=10)
    a = units(list(range(100)))
    tree.access(a, 100, 0.0)
    assert tree.access(a, 100, 9.0)[0] == 100
    assert tree.access(a, 100, 19.0)[0] == 100       # refreshed at 9
    assert tree.access(a, 100, 30.0)[0] == 0         # idle 11 s
    assert tree.expired_units == 100


def test_sweep_bounds_memory_under_ttl():
    tree = PrefixTree(ttl=5)
    rng = random.Random(0)
    for t in range(200):
        tree.access(units([rng.randrange(1000) for _ in range(50)]), 50, float(t))
        if t % 20 == 0:
            tree.sweep(float(t))
    tree.sweep(200.0)
    assert tree.nodes <= 1 + 6 and tree.size <= 6 * 50


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 300), st.integers(0, 2)), min_size=2, max_size=40))
def test_spilled_tree_answers_exactly_like_the_in_memory_one(specs):
    # prompts of up to 700 tokens drawn from four long bases: long shared edges that spill
    bases = [[(b * 7 + i * 13) % 97 for i in range(700)] for b in range(4)]
    prompts = [bases[b][:n] + [1000 + tail] * tail for b, n, tail in specs]
    plain, spilling = PrefixTree(), PrefixTree(spill_after=1)
    for rounds in range(2):  # the second round reads every prompt back through spilled edges
        for i, p in enumerate(prompts):
            a = plain.access(units(p), len(p), None, i)
            b = spilling.access(units(p), len(p), None, i)
            assert a[0] == b[0] and a[2] == b[2]
            spilling._spill_cold(spilling._tick + 2)  # everything not touched right now is cold
    assert [spilling.units_of(n) for n in spilling.iter_nodes()] == [plain.units_of(n) for n in plain.iter_nodes()]
    if any(plain.units_of(n) >= 64 for n in plain.iter_nodes()):  # an edge of 256+ bytes ended cold
        assert spilling.spilled_bytes > 0


def test_cold_edges_leave_memory():
    tree = PrefixTree(spill_after=10)
    for i in range(3000):
        tree.access(units([i % 7] + list(range(1000 + i * 100, 1000 + i * 100 + 100))), 101, None, i)
    tree._spill_cold(tree._tick)
    # request i (tick i+1) leaves a 100-unit edge under its residue's 1-unit node; every edge
    # created before tick 3000 - 10 is cold: 2,989 edges of 400 bytes leave memory, keeping
    # their first unit (4 bytes) to name them
    assert tree.spilled_bytes == 2989 * 400
    assert sum(len(n.key) for n in tree.iter_nodes()) == 2989 * 4 + 11 * 400 + 7 * 4
    # an old prompt is still found exactly
    old = [5] + list(range(1000 + 5 * 100, 1000 + 5 * 100 + 100)) + [99, 98]
    assert tree.access(units(old), len(old), None, -1)[0] == 101


def _edges(tree):
    """(start, length, uses, hits) of every edge, in start order."""
    return sorted((n.start, n.nbytes // tree.width, n.uses, n.hits) for n in tree.iter_nodes())


def test_hits_split_edges_where_the_other_simulation_stopped():
    """A 12-token prompt seen three times; the provider served 5 tokens to the 2nd request and
    8 to the 3rd. Edges split at 5 and 8: tokens [0,5) were served twice, [5,8) once, [8,12)
    never, and all were read (used) twice."""
    tree = PrefixTree()
    seq = units(list(range(100, 112)))
    tree.access(seq, 12, None, "r1")
    tree.access(seq, 12, None, "r2", hit_units=5)
    tree.access(seq, 12, None, "r3", hit_units=8)
    assert _edges(tree) == [(0, 5, 2, 2), (5, 3, 2, 1), (8, 4, 2, 0)]


def test_hits_split_the_edge_a_prompt_leaves_part_way():
    """The 2nd prompt shares 10 of 12 tokens, was served 6: [0,6) served once, [6,10) read
    but not served, then the two continuations."""
    tree = PrefixTree()
    tree.access(units(list(range(12))), 12, None, "r1")
    tree.access(units(list(range(10)) + [90, 91]), 12, None, "r2", hit_units=6)
    assert _edges(tree) == [(0, 6, 1, 1), (6, 4, 1, 0), (10, 2, 0, 0), (10, 2, 0, 0)]


def test_common_prefix_matches_a_plain_loop():
    """Against the definition, at every length around the window edges, with an offset."""
    import random

    import numpy as np

    from promptcache.prefix.lcp import common_prefix

    rng = random.Random(7)
    for n in (0, 1, 16, 17, 255, 256, 257, 2303, 2304, 2305, 20000):
        base = [rng.randrange(50) for _ in range(n)]
        for cut in sorted({0, n // 2, n - 1, n, 255, 256, 2303, 2304} & set(range(n + 1))):
            b = list(base)
            if cut < n:
                b[cut] += 1
            off = rng.randrange(3)
            a = np.array([9] * off + base, "<u4").tobytes()
            want = next((i for i, (x, y) in enumerate(zip(base, b)) if x != y), min(len(base), len(b)))
            assert common_prefix(a, np.array(b, "<u4").tobytes(), 4, off * 4) == want
            assert common_prefix(np.array(base, "<u8").tobytes(), np.array(b[:cut + 5], "<u8").tobytes(), 8) == \
                next((i for i, (x, y) in enumerate(zip(base, b[:cut + 5])) if x != y), min(n, cut + 5))


@pytest.mark.parametrize("direct", [True, False])
def test_spilled_edges_read_back_exactly(monkeypatch, direct):
    """Spilled edges come back byte for byte, whether the spill file is written with O_DIRECT
    (through a small aligned buffer here, so that edges cross its end; page-padded batches) or
    buffered (where the platform has no O_DIRECT)."""
    import os

    from promptcache.prefix.tree import _SpillFile

    monkeypatch.setattr(_SpillFile, "BUFFER", 8192)
    if not direct:
        monkeypatch.delattr(os, "O_DIRECT", raising=False)
    elif not hasattr(os, "O_DIRECT") or not _SpillFile().direct:
        pytest.skip("no O_DIRECT spill file here")
    f = _SpillFile()
    assert f.direct == direct
    rng = __import__("random").Random(3)
    batches = [[rng.randbytes(rng.randrange(1, 9000)) for _ in range(rng.randrange(1, 6))] for _ in range(12)]
    where = []
    for keys in batches:
        at = f.write(keys)
        for k in keys:
            where.append((at, k))
            at += len(k)
    assert all(f.read(at, len(k)) == k for at, k in where)
    if direct:
        assert f.end % _SpillFile.ALIGN == 0
