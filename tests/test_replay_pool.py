"""The replay engine's block pool (no torch): hand-worked vLLM cases, and exact agreement with the
simulator's block-granular LRU tree on random workloads."""

from __future__ import annotations

import random

import numpy as np
import pytest

from promptcache.prefix.blocks import NONE_HASH, block_hashes, hash_block_tokens
from promptcache.replay.pool import BlockPool, PrefixCache
from promptcache.simulate import Prompt, PrefixSim
from promptcache.simulate.rules import load_providers


def u(ids: list[int]) -> bytes:
    return np.asarray(ids, dtype="<u4").tobytes()


def run(cache: PrefixCache, ids: list[int], ns: str = "") -> int:
    lease = cache.begin(u(ids), ns)
    got = lease.cached_tokens
    cache.commit(lease, lambda j: ("kv", j))
    return got


# ------------------------------------------------------------------ block hashes

def test_block_hashes_chain_and_ignore_partial_block():
    ids = list(range(40))
    hs = block_hashes(u(ids), 16)
    assert len(hs) == 2  # 40 tokens: two full blocks, the 8-token tail is never hashed
    h0 = hash_block_tokens(None, u(ids[:16]))
    assert hs[0] == h0
    assert hs[1] == hash_block_tokens(h0, u(ids[16:32]))
    assert hash_block_tokens(None, u(ids[:16])) == hash_block_tokens(NONE_HASH, u(ids[:16]))


def test_block_hash_depends_on_whole_prefix_and_salt():
    a = block_hashes(u(list(range(32))), 16)
    b = block_hashes(u([99] + list(range(1, 32))), 16)  # first block differs
    assert a[0] != b[0] and a[1] != b[1]  # equal second-block tokens, different parents
    salted = block_hashes(u(list(range(32))), 16, salt="tenant-a")
    assert salted[0] != a[0] and salted[1] != a[1]
    assert block_hashes(u(list(range(32))), 16, salt="tenant-a") == salted
    with pytest.raises(ValueError):
        block_hashes(b"\x00\x00\x00", 16)


# ------------------------------------------------------------------ hand-worked pool cases

def test_hit_is_capped_one_token_short_of_the_prompt():
    c = PrefixCache(16, None)
    p = list(range(48))  # exactly 3 blocks
    assert run(c, p) == 0
    # the same prompt again: (48 - 1) // 16 = 2 blocks, the last token (and its block) recomputed
    assert run(c, p) == 32
    # one more token: all 3 blocks can be served
    assert run(c, p + [7]) == 48
    # the duplicate last block is not cached twice
    assert c.pool("").cached_blocks == 3


def test_free_queue_order_and_lru_eviction_by_hand():
    # capacity 4 blocks of 4 tokens
    c = PrefixCache(4, 4)
    A = [1] * 4 + [2] * 4 + [3] * 4 + [9]       # blocks a1 a2 a3 (+1 token)
    B = [1] * 4 + [2] * 4 + [5] * 4 + [9]       # shares a1 a2, then b3
    assert run(c, A) == 0
    assert run(c, B) == 8
    pool = c.pool("")
    # pool holds a1 a2 a3 b3; free queue: A freed [a3, a2, a1]; B touched a1 a2 and freed [b3, a2, a1]
    order = [blk.payload[1] for blk in pool.free]
    assert order == [2, 2, 1, 0]  # a3 (index 2), b3 (index 2), a2, a1
    C = [7] * 4 + [7] * 4 + [0]                  # two new blocks: evict a3 then b3
    assert run(c, C) == 0
    assert run(c, B) == 8   # b3 was evicted: a1 a2 still hit
    assert run(c, A) == 8   # a3 gone too
    assert pool.evicted_blocks >= 2


def test_prompt_larger_than_the_pool_keeps_its_first_blocks():
    c = PrefixCache(4, 2)
    p = list(range(100, 120)) + [1]  # 5 full blocks, pool of 2
    assert run(c, p) == 0
    assert run(c, p) == 8  # only the first two blocks stayed


def test_namespaces_are_isolated():
    c = PrefixCache(4, None)
    p = list(range(13))
    assert run(c, p, "a") == 0
    assert run(c, p, "b") == 0
    assert run(c, p, "a") == 12


def test_release_without_commit_returns_references():
    c = PrefixCache(4, 1)
    p = list(range(9))
    run(c, p)
    lease = c.begin(u(p), "")
    assert lease.cached_tokens == 4
    c.release(lease)
    assert len(c.pool("").free) == 1


def test_bad_arguments():
    with pytest.raises(ValueError):
        PrefixCache(0, None)
    with pytest.raises(ValueError):
        BlockPool(-1)


# ------------------------------------------------------------------ agreement with the simulator

def _workload(rng: random.Random, n: int, B: int) -> list[list[int]]:
    """Prompts built from a few shared stems, conversations that grow, and exact repeats, with
    lengths on and off block boundaries."""
    stems = [[rng.randrange(50) for _ in range(rng.randrange(1, 5 * B))] for _ in range(4)]
    convs: list[list[int]] = []
    out: list[list[int]] = []
    for _ in range(n):
        r = rng.random()
        if convs and r < 0.35:
            k = rng.randrange(len(convs))
            convs[k] = convs[k] + [rng.randrange(50) for _ in range(rng.randrange(1, 2 * B))]
            p = convs[k]
        elif out and r < 0.5:
            p = list(rng.choice(out))
            if rng.random() < 0.5:
                p = p[:max(1, (len(p) // B) * B)]  # a whole number of blocks
        else:
            p = list(rng.choice(stems)) + [rng.randrange(50) for _ in range(rng.randrange(0, 3 * B))]
            if rng.random() < 0.4:
                convs.append(p)
        out.append(p)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_pool_agrees_with_simulator_under_lru(seed):
    rng = random.Random(seed)
    B = rng.choice([1, 2, 4, 16])
    cap_blocks = rng.choice([None, 1, 2, 3, 5, 8, 20])
    prompts = _workload(rng, 120, B)
    rules = load_providers()["vllm"].rules_for(None, block_size=B,
                                               capacity_tokens=cap_blocks * B if cap_blocks else None)
    sim = PrefixSim(rules, 4, 1)
    cache = PrefixCache(B, cap_blocks)
    hits = 0
    for i, p in enumerate(prompts):
        expect = sim.step(Prompt(u(p), 4, 1, len(p)), None)[0]
        got = run(cache, p)
        assert got == expect, f"request {i}: pool {got} != simulator {expect} (B={B}, cap={cap_blocks})"
        hits += got > 0
    assert hits > 10  # the workload does exercise the cache
