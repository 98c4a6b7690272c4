"""The simulator against vLLM's and SGLang's own cache code, request by request (slow).

vLLM 0.33.0's ``KVCacheManager`` (v1, prefix caching on) and SGLang 0.5.23's ``RadixCache`` run on
CPU in a subprocess (tests/engine_ref.py; ``scripts/test`` installs them with ``--no-deps``); the audit pipeline
runs the same requests with ``--cache-model vllm|sglang --capacity-tokens N``. Cached tokens must
be equal on every request: the Mooncake conversation trace (12,031 requests, 512-token blocks) at
0.1M, 1M and 10M tokens, and a tokenized chat log at a few thousand tokens. Skipped where the
engines are not installed, unless ``PROMPTCACHE_REQUIRE_ENGINES=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import engine_ref
from promptcache.pipeline import AuditOptions, Pipeline, audit

pytestmark = pytest.mark.slow

TRACE = Path(__file__).parent / "data" / "mooncake_conversation_trace.jsonl.gz"
CHAT = Path(__file__).resolve().parents[1] / "samples" / "support_bot.jsonl"


@pytest.fixture(scope="module", autouse=True)
def engines():
    why = engine_ref.check()
    if why is not None:
        if os.environ.get("PROMPTCACHE_REQUIRE_ENGINES") == "1":
            pytest.fail(f"vLLM/SGLang cache code not importable: {why}")
        pytest.skip(f"vLLM/SGLang cache code not importable ({why}); scripts/test installs them")
    return True


def _prompts(path: Path, opts: AuditOptions):
    """(namespace, prompt, simulated cached tokens) per request, in arrival order."""
    return [(s.outcome.namespace, s.prompt, s.outcome.cached_tokens) for s in Pipeline([path], opts).steps()]


def _engine(kind: str, prompts, cap: int, block: int):
    return engine_ref.run(kind, prompts, cap, block)


def _compare(path: Path, kind: str, cap: int, block: int, **kw) -> tuple[int, int, int]:
    opts = AuditOptions(cache_model=kind, capacity_tokens=cap, block_size=block, diagnose=False, **kw)
    rows = _prompts(path, opts)
    by_ns: dict[str, list[int]] = {}
    for i, (ns, _, _) in enumerate(rows):
        by_ns.setdefault(ns, []).append(i)
    engine = [0] * len(rows)
    for idx in by_ns.values():
        got = _engine(kind, [rows[i][1] for i in idx], cap, block)
        for i, g in zip(idx, got):
            engine[i] = g or 0  # refused: nothing served from the cache
    sim = [c for _, _, c in rows]
    diff = [i for i in range(len(rows)) if sim[i] != engine[i]]
    assert not diff, f"{kind} at {cap:,}: {len(diff)} requests differ, first #{diff[0]}: engine {engine[diff[0]]}, simulated {sim[diff[0]]}"
    return len(rows), sum(engine), sum(sim)


@pytest.mark.parametrize("cap", [100_000, 1_000_000, 10_000_000])
@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_mooncake_equal_on_every_request(kind, cap):
    n, eng, sim = _compare(TRACE, kind, cap, 512 if kind == "vllm" else 1, read=_hashed())
    assert n == 12_031 and eng == sim


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_mooncake_synthetic_trace(kind):
    """The other Mooncake trace (3,993 requests), at 1M tokens, where ../shared has it."""
    from conftest import TRACES

    path = TRACES / "synthetic_trace.jsonl"
    if not path.exists():
        pytest.skip("the shared Mooncake traces are not present")
    n, eng, sim = _compare(path, kind, 1_000_000, 512 if kind == "vllm" else 1, read=_hashed())
    assert n == 3_993 and eng == sim


@pytest.mark.parametrize("cap", [4_000, 16_000])
@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_chat_log_equal_on_every_request(kind, cap):
    n, eng, sim = _compare(CHAT, kind, cap, 16 if kind == "vllm" else 1, tokenizer="o200k_base")
    assert n == 160 and eng == sim and eng > 0


def test_the_audit_reports_the_engine_totals():
    """The audit's simulated scenario is the engines' sum (SGLang, Mooncake at 1M tokens)."""
    res = audit([TRACE], AuditOptions(cache_model="sglang", capacity_tokens=1_000_000, read=_hashed()))
    rows = _prompts(TRACE, AuditOptions(cache_model="sglang", capacity_tokens=1_000_000, read=_hashed(), diagnose=False))
    got = engine_ref.run("sglang", [p for _, p, _ in rows], 1_000_000)
    assert res.scenarios["simulated"].cached_tokens == sum(g or 0 for g in got)


def _hashed():
    from promptcache.ingest import ReadOptions

    return ReadOptions(hash_block_tokens=512)
