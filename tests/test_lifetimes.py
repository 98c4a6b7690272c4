"""Which cache lifetimes a model offers (``CacheRules.lifetimes``, from ``lifetimes`` in
rules/providers/<id>.yaml) and the advice that follows from it: the ttl-expired finding names only
a lifetime the model has, the 1-hour what-if runs only where the model offers it, and the lifetime
optimiser weighs only the model's own options.

Facts: OpenAI's ``24h`` retention exists only on the extended-retention models (footnote
"extended-retention-models" of https://developers.openai.com/api/docs/guides/prompt-caching);
gpt-5.5 is "compatible only with 24h"; Bedrock's 1-hour TTL on Claude Opus / Haiku / Sonnet 4.5
(https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html), not on Nova; Qwen's
explicit cache has 5 minutes only.
"""

from __future__ import annotations

import json

import pytest

from promptcache.pipeline import AuditOptions, audit
from promptcache.propose.engine import propose
from promptcache.simulate.rules import load_providers

P = load_providers()
WORDS = " ".join(f"word{i % 400} clause{i % 37}" for i in range(900))  # ~3,000 tokens of static text


@pytest.mark.parametrize("pid,model,offered,longer", [
    ("openai", "gpt-4.1-mini", ["in_memory"], []),
    ("openai", "gpt-4o", ["in_memory"], []),
    ("openai", "gpt-4.1", ["in_memory", "24h"], []),                    # 24h is already its default
    ("openai", "gpt-5.5", ["24h"], []),
    ("openai", "gpt-5.6-sol", [], []),
    ("azure", "gpt-5.3-codex", ["in_memory", "24h"], []),
    ("anthropic", "claude-sonnet-4-5", ["5m", "1h"], ['cache_control {"ttl": "1h"}']),
    ("bedrock", "us.anthropic.claude-opus-4-5-20251101-v1:0", ["5m", "1h"], ['cachePoint {"ttl": "1h"}']),
    ("bedrock", "amazon.nova-pro-v1:0", ["5m"], []),
    ("bedrock", "anthropic.claude-3-7-sonnet-20250219-v1:0", ["5m"], []),
    ("kimi", "kimi-k3", ["5m", "1h"], ['prompt_cache_options.ttl "1h"']),
    ("qwen", "qwen3-max", ["5m"], []),
    ("deepseek", "deepseek-chat", [], []),
])
def test_what_each_model_offers(pid, model, offered, longer):
    r = P[pid].rules_for(model)
    assert [n for n, _ in r.lifetimes] == offered
    assert [how for _, _, how in r.longer_lifetimes()] == longer


def test_in_memory_retention_gives_way_to_24h_only_where_offered():
    assert P["openai"].rules_for("gpt-4.1", retention="in_memory").longer_lifetimes() == \
        [("24h", 1800.0, 'prompt_cache_retention "24h"')]
    assert P["openai"].rules_for("gpt-4.1-mini", retention="24h").ttl_seconds == 600  # not granted


def _gapped(path, model, *, anthropic=False, gap=700.0, n=3, extra=None):
    recs = []
    for k in range(n):
        body = ({"model": model, "max_tokens": 64, "system": [{"type": "text", "text": WORDS, "cache_control": {"type": "ephemeral"}}],
                 "messages": [{"role": "user", "content": f"question {k}"}]} if anthropic else
                {"model": model, "messages": [{"role": "system", "content": WORDS}, {"role": "user", "content": f"question {k}"}]})
        body.update(extra or {})
        recs.append({"timestamp": 1_790_000_000 + gap * k, "request": body})
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _finding(res, rule):
    (f,) = [f for f in res.findings if f.rule.id == rule]
    return f


def test_ttl_expired_on_gpt_41_mini_advises_no_24h(tmp_path):
    """The issue's case: 700-second gaps on gpt-4.1-mini (in_memory, about 600 s) expire every
    entry; the finding does not advise the 24h retention gpt-4.1-mini does not have."""
    f = _finding(audit([_gapped(tmp_path / "a.jsonl", "gpt-4.1-mini")], AuditOptions()), "ttl-expired")
    assert "`gpt-4.1-mini` offers no longer cache lifetime" in f.message
    assert "24h" not in f.message and "24h" not in f.to_record()["fix"]["description"]
    assert f.evidence["longer_lifetimes"] == []


def test_ttl_expired_names_what_the_model_offers(tmp_path):
    """gpt-4.1 asked for in_memory: its 24h retention; Claude with 5-minute breakpoints: the
    1-hour TTL, spelled as each API asks for it."""
    f = _finding(audit([_gapped(tmp_path / "b.jsonl", "gpt-4.1", extra={"prompt_cache_retention": "in_memory"})],
                       AuditOptions()), "ttl-expired")
    assert '`gpt-4.1` offers prompt_cache_retention "24h" (about 1,800 s)' in f.message
    f = _finding(audit([_gapped(tmp_path / "c.jsonl", "claude-sonnet-4-5", anthropic=True, gap=400.0)], AuditOptions()),
                 "ttl-expired")
    assert '`claude-sonnet-4-5` offers cache_control {"ttl": "1h"} (about 3,600 s)' in f.message


def test_one_hour_what_if_only_where_the_model_has_it(tmp_path):
    """ttl-choice replays the log with every breakpoint at 1 hour: Claude Sonnet 4.5 has that
    TTL (and 10-minute gaps make it pay); Claude 3.7 Sonnet on Bedrock has 5 minutes only, so the
    same traffic gets no such advice (it did before)."""
    log = _gapped(tmp_path / "d.jsonl", "claude-sonnet-4-5", anthropic=True, gap=600.0, n=5)
    assert [f for f in audit([log], AuditOptions()).findings if f.rule.id == "ttl-choice"]
    log = _gapped(tmp_path / "e.jsonl", "anthropic.claude-3-7-sonnet-20250219-v1:0", anthropic=True, gap=600.0, n=5)
    res = audit([log], AuditOptions())
    assert {r.mode for r in res.rules.values()} == {"breakpoints"} and res.scenarios["simulated"].cost
    assert [f.rule.id for f in res.findings] == ["ttl-expired"]
    assert "no longer cache lifetime" in res.findings[0].message


def test_optimiser_weighs_only_the_models_options(tmp_path):
    """Sessions with 12-minute pauses: on gpt-4o-mini (in_memory only) the optimiser has no 24h
    policy to weigh; on gpt-4.1 asked for in_memory it weighs 24h and picks it."""
    def sessions(model, extra=None):
        recs = []
        for s in range(3):
            hist = []
            for t in range(3):
                hist.append({"role": "user", "content": f"session {s} turn {t} question"})
                body = {"model": model, "messages": [{"role": "system", "content": WORDS}, *hist], **(extra or {})}
                recs.append({"timestamp": 1_790_000_000 + 40 * s + 720 * t, "request": body})
                hist.append({"role": "assistant", "content": f"answer {t}"})
        recs.sort(key=lambda r: r["timestamp"])
        path = tmp_path / f"{model}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        return path

    res = propose([sessions("gpt-4o-mini")], AuditOptions())
    names = {c.policy.name for ch in res.lifetimes.values() for c in ch.ranked}
    assert not any("24h" in n for n in names)
    res = propose([sessions("gpt-4.1", {"prompt_cache_retention": "in_memory"})], AuditOptions())
    ((_, choice),) = res.lifetimes.items()
    assert "24h" in {c.policy.name for c in choice.ranked} and choice.best.policy.name.startswith("24h")
