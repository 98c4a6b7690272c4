"""Bounded engine caches as the engines' own code behaves (simulate/engines.py): one test per
behaviour an LRU over the prefix tree got wrong, with counts worked out by hand from vLLM's
block pool and SGLang's radix tree (the slow test_engines_exact.py runs the engines' code)."""

from __future__ import annotations

import numpy as np

from promptcache.simulate import Prompt, PrefixSim, RequestRef, Simulator
from promptcache.simulate.engines import REFUSED, SglangRadix, VllmBlockPool
from promptcache.simulate.rules import load_providers

from conftest import units

P = load_providers()


def tok(ids: list[int]) -> Prompt:
    return Prompt(units(ids), 4, 1, len(ids))


def hashed(ids: list[int], n: int, block: int = 512) -> Prompt:
    return Prompt(np.asarray(ids, dtype="<u8").tobytes(), 8, block, n)


def seq(n: int, base: int = 0) -> list[int]:
    return list(range(base, base + n))


def run(model, prompts: list[Prompt]) -> list[int | None]:
    out = []
    for p in prompts:
        hit, refused = model.step(p)
        out.append(None if refused else hit)
    return out


def test_vllm_null_block_and_partial_last_block():
    """48 tokens of 16-token blocks = 3 blocks, one the null block: 2 hold cache. A (32 tokens)
    caches a1 a2; B (20 tokens) needs 2 blocks, its partial last one included, so both of A's
    go (the tree's LRU counts 3 blocks and B's one full block: nothing evicted)."""
    rules = P["vllm"].rules_for(None, capacity_tokens=48)
    a, b = seq(32), seq(20, 1000)
    assert run(VllmBlockPool(rules), [tok(a), tok(b), tok(a)]) == [0, 0, 0]
    tree = PrefixSim(rules, 4, 1)
    assert [tree.step(p, None)[0] for p in (tok(a), tok(b), tok(a))] == [0, 0, 16]  # what the tree said
    # 64 tokens = 4 blocks, 3 usable: B's 2 blocks take the never-used block 3 and a2 (A's
    # deepest block, freed first); a1 survives: A hits 16 (of 31 it may hit)
    assert run(VllmBlockPool(P["vllm"].rules_for(None, capacity_tokens=64)), [tok(a), tok(b), tok(a)]) == [0, 0, 16]


def test_vllm_partial_block_is_reused_first():
    """A freed block that caches nothing (a partial last block) goes to the front of the free
    queue (vLLM 0.33: "LIFO reuse of non-cached blocks"), so the next allocation takes it before
    evicting anything. 80 tokens = 5 blocks, 4 usable: A (20) caches a1, its partial block goes to
    the front; B (20) takes that block and one more (the never-used 3), A's a1 survives."""
    rules = P["vllm"].rules_for(None, capacity_tokens=80)
    a, b = seq(20), seq(20, 1000)
    assert run(VllmBlockPool(rules), [tok(a), tok(b), tok(a + [5]), tok(b + [5])]) == [0, 0, 16, 16]


def test_sglang_stamp_before_split_keeps_the_lower_half():
    """Capacity 11. A = 1..6, B = 50..52, then C = 1,2,3,9,9 splits A's node after 3 tokens;
    SGLang stamps the node before splitting, so A's lower half (4..6) carries C's time, newer than
    B. D (3 new tokens, 0 free) evicts the least recently stamped leaf: B, not A's tail, which an
    LRU by last use (A's tail last read by A) would evict."""
    rules = P["sglang"].rules_for(None, capacity_tokens=11)
    A, B, C, D = [1, 2, 3, 4, 5, 6], [50, 51, 52], [1, 2, 3, 9, 9], [70, 71, 72]
    got = run(SglangRadix(rules), [tok(x) for x in (A, B, C, D, A + [0], B + [0])])
    assert got == [0, 0, 3, 0, 6, 0]  # A's 6 tokens still there; B's 3 were evicted
    tree = PrefixSim(rules, 4, 1)
    # the tree evicted A's tail at D (A+[0] hits 3), then B to make room for A's re-stored tail
    assert [tree.step(tok(x), None)[0] for x in (A, B, C, D, A + [0], B + [0])] == [0, 0, 3, 0, 3, 0]


def test_sglang_hashed_partial_block_counts_its_real_tokens():
    """Mooncake-style blocks of 512: R1 is one partial block of 100 tokens, R2 one full block.
    SGLang at page size 1 holds 612 tokens, within 1,000: R1's tokens stay and R3 (= R1) hits 99
    (one token is always computed). Counted as two whole blocks (1,024 > 1,000) R1 was evicted."""
    rules = P["sglang"].rules_for(None, capacity_tokens=1000)
    r1, r2 = hashed([1], 100), hashed([2], 512)
    assert run(SglangRadix(rules), [r1, r2, r1]) == [0, 0, 99]
    tree = PrefixSim(rules, 8, 512)
    assert [tree.step(p, None)[0] for p in (r1, r2, r1)] == [0, 0, 0]


def test_prompt_larger_than_the_pool_is_refused_both_engines():
    """vLLM: 48 tokens = 2 usable blocks; a 40-token prompt needs 3 → refused, nothing evicted:
    A (32 tokens) still hits 16. SGLang: 10 slots; an 11-token prompt is refused, A (6) still hits 5."""
    v = VllmBlockPool(P["vllm"].rules_for(None, capacity_tokens=48))
    assert run(v, [tok(seq(32)), tok(seq(40, 500)), tok(seq(32))]) == [0, None, 16]
    s = SglangRadix(P["sglang"].rules_for(None, capacity_tokens=10))
    assert run(s, [tok(seq(6)), tok(seq(11, 500)), tok(seq(6))]) == [0, None, 5]
    assert s.size == 6


def test_simulator_routes_bounded_engines_and_flags_refusals():
    sim = Simulator()
    rules = P["sglang"].rules_for(None, capacity_tokens=10)
    kw = dict(rules=rules, namespace="sglang/m", ideal_key=("sglang", "m"), now=None)
    sim.step(ref=RequestRef(0, "a", 1, "x"), prompt=tok(seq(6)), **kw)
    cached, _, _, shared, reason, _, flags = sim.step(ref=RequestRef(1, "b", 2, "x"), prompt=tok(seq(12)), **kw)
    assert (cached, shared, reason, flags) == (0, 6, "over_capacity", (REFUSED,))
    cached, *_ = sim.step(ref=RequestRef(2, "c", 3, "x"), prompt=tok(seq(6)), **kw)
    assert cached == 5
