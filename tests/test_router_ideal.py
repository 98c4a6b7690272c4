"""One ideal cache per model behind a router: requests of ``openrouter/openai/gpt-4.1`` served by
OpenAI and by Azure go to two rules files (``openrouter>openai``, ``openrouter>azure``), each with
its own simulated cache, but the structural upper bound of the model's traffic is one cache. What
the upstream switch costs is the gap between them, claimed by the routing cause
(``upstream-changed``) with its tokens, in a single process and on Dask partitions alike.

The records are OpenRouter-shaped: gateway records of OpenRouter chat completions (``gen-`` ids)
joined to the generations' stats (the shape of tests/data/formats/openrouter_generation_stats.jsonl,
``provider_name`` naming who served each), built by ``test_reported_causes.openrouter_logs``; and
tests/data/cases/C31's gateway records (``response.provider``) under an ``openrouter/`` slug. The
expected tokens are worked out with tests/data/handcount.py (tiktoken on an independent
serialization) and OpenAI's documented 128-token steps.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from promptcache.distributed import audit_partition, merge
from promptcache.pipeline import AuditOptions, assemble, audit
from promptcache.pricing import PriceBook
from promptcache.report.audit_records import audit_record
from promptcache.simulate import Prompt, RequestRef, Simulator
from promptcache.simulate.rules import load_providers

from conftest import units
from test_reported_causes import O, by_rule, openrouter_logs

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))

C31 = Path(__file__).parent / "data" / "cases" / "C31-openrouter-upstream-hosts.jsonl"


def _routed(tmp_path: Path, upstreams: list[str]) -> tuple[Path, Path, list[dict]]:
    """The OpenRouter gateway records and stats, the model named by its OpenRouter slug."""
    gateway, stats, bodies = openrouter_logs(tmp_path, upstreams)
    recs = [json.loads(x) for x in gateway.read_text().splitlines()]
    for r in recs:
        r["request"]["model"] = "openrouter/openai/gpt-4.1"
    gateway.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return gateway, stats, bodies


def steps(n: int) -> int:
    """What OpenAI serves of a live prefix of ``n`` tokens: whole 128-token steps from 1,024."""
    hit = n // 128 * 128
    return hit if hit >= 1024 else 0


def test_the_switch_between_upstreams_is_lost_to_routing(tmp_path):
    """OpenAI, Azure, OpenAI, Azure: each upstream's cache holds only its own turns, the model's
    ideal cache all of them. By hand (S(a, b): the tokens requests a and b share):

    - request 1 (Azure) shares S(1, 0) with request 0 and Azure holds nothing: all lost;
    - request 2 (OpenAI) shares S(2, 1) with request 1 (on Azure); OpenAI holds request 0, so it
      reads the 128-token steps of S(2, 0);
    - request 3 (Azure) shares S(3, 2) with request 2; Azure holds request 1: steps of S(3, 1).

    The routing cause claims each request's whole gap, and nothing is unexplained."""
    gateway, stats, bodies = _routed(tmp_path, ["OpenAI", "Azure", "OpenAI", "Azure"])
    res = audit([gateway, stats], AuditOptions())
    assert [o.provider for o in res.outcomes] == ["openai", "azure", "openai", "azure"]
    assert len({o.namespace for o in res.outcomes}) == 2
    S = lambda a, b: O.shared(bodies[a], bodies[b])  # noqa: E731
    hand_shared = [0, S(1, 0), S(2, 1), S(3, 2)]
    hand_cached = [0, 0, steps(S(2, 0)), steps(S(3, 1))]
    for o, sh, c in zip(res.outcomes, hand_shared, hand_cached):
        assert abs(o.shared_prefix_tokens - sh) <= max(8, 0.02 * sh), (o.shared_prefix_tokens, sh)
        assert o.cached_tokens == c or abs(o.cached_tokens - c) <= 128, (o.cached_tokens, c)
    assert [o.miss_reason for o in res.outcomes] == [None, "namespace", "namespace", "namespace"]
    f = by_rule(res, "upstream-changed")
    assert f.requests == 3 and (f.evidence["before"], f.evidence["after"]) == ("OpenAI", "Azure")
    assert "(OpenAI → Azure)" in f.message and "openrouter/openai/gpt-4.1" in f.message
    hand = sum(s - c for s, c in zip(hand_shared, hand_cached))
    assert abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)
    # the rules gap is the routing cause's, exactly; no unexplained row
    gap = sum(o.shared_prefix_tokens - o.cached_tokens for o in res.outcomes)
    assert f.tokens_lost == res.accounting.gaps["rules"] == gap
    assert not [r for r in res.accounting.rows if r.rule == "unexplained"]
    assert f.cost_usd_lost > 0
    # the ideal is the model's: as if one upstream had served everything
    (tmp_path / "pinned").mkdir()
    pinned, pstats, _ = _routed(tmp_path / "pinned", ["OpenAI"] * 4)
    one = audit([pinned, pstats], AuditOptions())
    assert [o.shared_prefix_tokens for o in one.outcomes] == [o.shared_prefix_tokens for o in res.outcomes]
    assert not [f for f in one.findings if f.rule.id == "upstream-changed"]


@pytest.mark.parametrize("count", [1, 2, 5])
def test_dask_partitions_keep_the_model_in_one_ideal(tmp_path, count):
    """Partitioned by model, every upstream of the model lands in one partition: the merged
    partitions give the single run's record, routing cause included."""
    gateway, stats, _ = _routed(tmp_path, ["OpenAI", "Azure", "OpenAI", "Azure"])
    opts = AuditOptions()
    local = audit([gateway, stats], opts)
    parts = [audit_partition([str(gateway), str(stats)], opts, k, count) for k in range(count)]
    merged = assemble(merge(parts, opts.top), opts, PriceBook())
    assert audit_record(merged) == audit_record(local)
    assert any(f.rule.id == "upstream-changed" for f in merged.findings)


def test_c31_behind_openrouter_names_the_hosts(tmp_path):
    """C31 (jeffdafoe/llm-memory-api PR #269) named as OpenRouter's: hosts DeepInfra, DeepInfra,
    GMICloud, GMICloud, Baidu under DeepSeek's rules, one namespace per host. The two requests
    that land on a new host read nothing of what the model's traffic holds: routing, not a
    cache key and not unexplained."""
    recs = [json.loads(x) for x in C31.read_text().splitlines()]
    for r in recs:
        r["request"]["model"] = "openrouter/deepseek/deepseek-v4-flash"
    log = tmp_path / "c31.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = audit([log], AuditOptions())
    assert len({o.namespace for o in res.outcomes}) == 3
    assert [o.miss_reason for o in res.outcomes][2] == "namespace" and res.outcomes[4].miss_reason == "namespace"
    f = by_rule(res, "upstream-changed")
    assert f.requests == 2 and (f.evidence["before"], f.evidence["after"]) == ("DeepInfra", "GMICloud")
    # the two moves lose everything the model's ideal cache serves them
    assert f.tokens_lost == res.outcomes[2].shared_prefix_tokens + res.outcomes[4].shared_prefix_tokens
    assert not [r for r in res.accounting.rows if r.gap == "rules" and r.rule != "upstream-changed"]
    assert not [f for f in res.findings if f.rule.id.startswith("cache-key")]


def test_two_rules_files_share_the_models_ideal():
    """The simulator's ideal cache is keyed by model (and tokenizer), not by rules file: a
    prompt served under ``azure`` after the same prompt under ``openai`` shares all of it, and
    the miss is a namespace miss (the prefix is in the other namespace's cache)."""
    pf = load_providers()
    sim = Simulator()
    ids = list(range(1000, 3000))
    p = Prompt(units(ids), 4, 1, len(ids))
    got = []
    for i, (fid, ns) in enumerate((("openai", "openai/gpt-4.1"), ("azure", "azure/gpt-4.1"), ("azure", "azure/gpt-4.1"))):
        cached, _, _, shared, reason, other, _ = sim.step(ref=RequestRef(i, f"r{i}", i + 1, "log"), prompt=p,
                                                          rules=pf[fid].rules_for("gpt-4.1"), namespace=ns,
                                                          ideal_key=("gpt-4.1", "o200k_base"), now=float(i))
        got.append((cached, shared, reason, other.index if other is not None else None))
    assert got == [(0, 0, None, None), (0, 2000, "namespace", 0), (1920, 2000, "granularity", 0)]
    assert list(sim.ideal) == [("gpt-4.1", "o200k_base")]
