"""Real input: the Mooncake conversation trace, pinned against independent computations."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from promptcache.pipeline import AuditOptions, audit

TRACE = Path(__file__).parent / "data" / "mooncake_conversation_trace.jsonl.gz"
B = 512


def records():
    with gzip.open(TRACE, "rt") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module")
def recs():
    return records()


def test_unbounded_hit_ratio_pinned(recs):
    """cached tokens = matched leading blocks × 512, capped at input_length (a set of seen
    block-id prefixes, nothing else)."""
    seen: set[tuple[int, ...]] = set()
    cached = total = 0
    for r in recs:
        ids, n = r["hash_ids"], r["input_length"]
        k = 0
        while k < len(ids) and tuple(ids[:k + 1]) in seen:
            k += 1
        cached += min(k * B, n)
        total += n
        seen.update(tuple(ids[:j]) for j in range(1, len(ids) + 1))
    assert (cached, total) == (54_098_411, 144_793_823)
    res = audit([TRACE], AuditOptions(cache_model="vllm", block_size=512))
    ideal = res.scenarios["ideal"]
    assert (ideal.cached_tokens, ideal.prompt_tokens) == (cached, total)
    assert round(ideal.hit_ratio, 6) == 0.373624


def _vllm_reference(recs, ttl: float | None) -> int:
    """vLLM rules by hand: full blocks only, the last token recomputed, a block prefix live while
    idle ≤ ttl (touched by every request that stores it)."""
    last: dict[tuple[int, ...], float] = {}
    cached = 0
    for r in recs:
        ids, n, now = r["hash_ids"], r["input_length"], r["timestamp"] / 1000
        full = n // B
        cap = (n - 1) // B
        k = 0
        while k < cap:
            t = last.get(tuple(ids[:k + 1]))
            if t is None or (ttl is not None and now - t > ttl):
                break
            k += 1
        cached += k * B
        for j in range(1, full + 1):
            last[tuple(ids[:j])] = now
    return cached


@pytest.mark.parametrize("ttl", [None, 300])
def test_vllm_block_512_unbounded_and_ttl(recs, ttl):
    res = audit([TRACE], AuditOptions(cache_model="vllm", block_size=512, ttl=ttl))
    assert res.scenarios["simulated"].cached_tokens == _vllm_reference(recs, ttl)
    assert res.inputs[0].format == "mooncake" and res.inputs[0].requests == 12_031


def test_shared_trace_is_the_same_file():
    shared = Path(__file__).resolve().parents[2] / "shared" / "traces" / "mooncake" / "conversation_trace.jsonl"
    if not shared.exists():
        pytest.skip("shared traces not present")
    with gzip.open(TRACE, "rb") as fh:
        assert fh.read() == shared.read_bytes()
