"""Every provider's rules file against numbers worked out by hand from its docs (the quotes are
in rules/providers/<id>.yaml), model-name routing, and what the audit says about each."""

from __future__ import annotations

import hashlib
import json

import pytest

from promptcache.model import Breakpoint, Request, Response, Segment, Source, Usage
from promptcache.pipeline import AuditOptions, Pipeline, audit, run
from promptcache.simulate import Prompt, PrefixSim
from promptcache.simulate.boundaries import BoundarySim
from promptcache.simulate.routing import router
from promptcache.simulate.rules import STALE_DAYS, load_providers, stale

from conftest import units

P = load_providers()


def prompt(n: int, base: int = 0) -> Prompt:
    return Prompt(units(list(range(base, base + n))), 4, 1, n)


def shared(n_shared: int, n: int, base: int) -> Prompt:
    return Prompt(units(list(range(n_shared)) + list(range(base, base + n - n_shared))), 4, 1, n)


def bp_prompt(spec, roles=None) -> Prompt:
    """Segments of the given token lengths; spec items (tokens, None | '5m' | '1h'); keys chain
    the segment identities like the pipeline does."""
    segs, ends, keys, total, h = [], [], [], 0, b""
    for i, (n, ttl) in enumerate(spec):
        bp = Breakpoint({"5m": 300, "1h": 3600}[ttl]) if ttl else None
        role = roles[i] if roles else "user"
        segs.append(Segment(f"s[{i}]", role, f"text{i}", breakpoint=bp, role=role, message=i))
        total += n
        ends.append(total)
        h = hashlib.blake2b(h + f"{i}:{n}".encode(), digest_size=16).digest()
        keys.append(h)
    return Prompt(b"", 4, 1, total, segs, ends, keys)


# ---------------------------------------------------------------- routing

@pytest.mark.parametrize("provider,model,upstream,want", [
    (None, "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", None, "bedrock"),
    ("anthropic", "us.anthropic.claude-opus-5-5-v1:0", None, "bedrock"),   # a Bedrock id, whatever the reader guessed
    (None, "amazon.nova-pro-v1:0", None, "bedrock"),
    (None, "vertex_ai/claude-sonnet-4-5@20250929", None, "vertex-claude"),
    (None, "vertex_ai/gemini-2.5-pro", None, "vertex-gemini"),
    ("vertex_ai", "claude-opus-4-1@20250805", None, "vertex-claude"),      # LiteLLM custom_llm_provider
    ("vertex_ai", "gemini-2.5-flash", None, "vertex-gemini"),
    (None, "azure/gpt-4o", None, "azure"),
    ("azure", "my-deployment", None, "azure"),
    (None, "xai/grok-4", None, "xai"),
    (None, "grok-4.6", None, "xai"),
    (None, "mistral-large-latest", None, "mistral"),
    (None, "qwen3-max", None, "qwen"),
    ("dashscope", "qwen-plus", None, "qwen"),
    (None, "kimi-k3", None, "kimi"),
    (None, "groq/openai/gpt-oss-120b", None, "groq"),
    (None, "accounts/fireworks/models/kimi-k3", None, "fireworks"),
    (None, "together_ai/moonshotai/Kimi-K3", None, "together"),
    (None, "openrouter/anthropic/claude-sonnet-4.5", None, "openrouter>anthropic"),
    (None, "openrouter/anthropic/claude-sonnet-4.5", "Amazon Bedrock", "openrouter>bedrock"),
    (None, "openrouter/anthropic/claude-sonnet-4.5", "Google Vertex", "openrouter>vertex-claude"),
    ("openrouter", "google/gemini-2.5-pro", None, "openrouter>gemini"),
    ("openrouter", "x-ai/grok-4.6", None, "openrouter>xai"),
    (None, "gpt-4o", None, "openai"),
    (None, "claude-sonnet-4-5", None, "anthropic"),
    (None, "deepseek-flash", None, "deepseek"),
])
def test_model_names_route_to_their_rules(provider, model, upstream, want):
    assert router().resolve(provider, model, upstream).label == want


def test_new_providers_get_no_openai_fallback(tmp_path):
    models = ["bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", "vertex_ai/gemini-2.5-pro", "azure/gpt-4o",
              "xai/grok-4", "mistral-large-latest", "qwen3-max", "kimi-k3", "groq/openai/gpt-oss-120b",
              "fireworks_ai/accounts/fireworks/models/kimi-k3", "together_ai/moonshotai/Kimi-K3",
              "openrouter/anthropic/claude-sonnet-4.5"]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"model": m, "messages": [{"role": "user", "content": "hello " * 50}]}) + "\n"
                           for m in models))
    res = audit([log], AuditOptions())
    assert not [w for w in res.warnings if "applying openai rules" in w]
    got = sorted({ns.split("/")[0] for ns in res.rules})
    assert got == sorted(["bedrock", "vertex-gemini", "azure", "xai", "mistral", "qwen", "kimi", "groq", "fireworks",
                          "together", "openrouter>anthropic"])


def test_openrouter_upstream_is_in_the_namespace():
    def req(i, upstream):
        return Request(id=f"r{i}", source=Source("x", i + 1), format="openai-chat", api="chat", provider="openrouter",
                       model="anthropic/claude-sonnet-4.5", arrival=1_764_547_200.0 + i,
                       parts=(), response=Response(upstream=upstream))
    pipe = Pipeline.from_requests([req(0, "Amazon Bedrock"), req(1, "Anthropic")], AuditOptions(diagnose=False))
    ns = [s.outcome.namespace for s in pipe.steps()]
    assert ns == ["openrouter>bedrock/anthropic/claude-sonnet-4.5/upstream=Amazon Bedrock",
                  "openrouter>anthropic/anthropic/claude-sonnet-4.5/upstream=Anthropic"]


def test_a_routing_prefix_is_not_repeated_in_the_namespace():
    """LiteLLM's ``xai/grok-4`` on xAI's rules was labelled ``xai/xai/grok-4``, apart from the
    same model logged as ``grok-4``; a router's upstream organisation stays in its model name."""
    def req(i, provider, model):
        return Request(id=f"r{i}", source=Source("x", i + 1), format="openai-chat", api="chat", provider=provider,
                       model=model, arrival=1_764_547_200.0 + i, parts=())
    pipe = Pipeline.from_requests([req(0, "xai", "xai/grok-4"), req(1, "xai", "grok-4"),
                                   req(2, None, "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0")],
                                  AuditOptions(diagnose=False))
    assert [s.outcome.namespace for s in pipe.steps()] == [
        "xai/grok-4", "xai/grok-4", "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"]



def test_one_model_under_two_spellings_shares_every_cache(tmp_path):
    """``xai/grok-4`` and ``grok-4`` reach xAI as one model: the ideal cache, the ranked shared
    prefixes and the Dask partition follow the simulated namespace, so the mixed log reads
    exactly as the one spelled ``grok-4`` throughout (the ideal once split them by spelling and
    came out below the simulation: 3,976 ideal against 5,760 simulated cached tokens)."""
    shared = "You answer questions about the Kestrel billing API. " * 150
    def log(name, models):
        path = tmp_path / name
        path.write_text("".join(json.dumps({"timestamp": 1_764_547_200 + 60 * i, "model": m, "messages": [
            {"role": "system", "content": shared}, {"role": "user", "content": f"Question {i}?"}]}) + "\n"
            for i, m in enumerate(models)))
        return path
    mixed = audit([log("mixed.jsonl", ["xai/grok-4", "grok-4", "XAI/grok-4", "grok-4"])], AuditOptions())
    plain = audit([log("plain.jsonl", ["grok-4"] * 4)], AuditOptions())
    for name in ("simulated", "ideal"):
        a, b = mixed.scenarios[name], plain.scenarios[name]
        assert (a.cached_tokens, a.cost_usd) == (b.cached_tokens, b.cost_usd) and a.cached_tokens > 0
    assert mixed.scenarios["ideal"].cached_tokens >= mixed.scenarios["simulated"].cached_tokens
    assert [(p.namespace, p.tokens, p.reused_by) for p in mixed.top_prefixes] == \
        [(p.namespace, p.tokens, p.reused_by) for p in plain.top_prefixes]
    assert mixed.top_prefixes[0].reused_by == 3
    pipe = Pipeline([str(tmp_path / "mixed.jsonl")], AuditOptions())
    def r(model):
        return Request(id="r", source=Source("x", 1), format="openai-chat", api="chat", provider=None,
                       model=model, arrival=None, parts=())
    for n in (2, 7, 13):  # every cache lives in one partition, however the model is spelled
        assert len({pipe.partition_of(r(m), n) for m in ("grok-4", "xai/grok-4", "XAI/grok-4")}) == 1


# ---------------------------------------------------------------- OpenAI and Azure

@pytest.mark.parametrize("model,ttl", [("gpt-4.1", 1800), ("gpt-4.1-2025-04-14", 1800), ("gpt-4.1-mini", 600),
                                       ("gpt-4.1-nano", 600), ("gpt-5", 1800), ("gpt-5-mini", 600), ("gpt-5-nano", 600),
                                       ("gpt-5.1-codex-mini", 1800), ("gpt-5.3-codex", 600), ("gpt-5.4", 1800),
                                       ("gpt-5.4-mini", 600), ("gpt-4o", 600)])
def test_openai_extended_retention_models(model, ttl):
    """24h retention (default for non-ZDR organisations, ~30 minutes typical) only on the listed
    models; the others are in_memory (5-10 minutes idle)."""
    assert P["openai"].rules_for(model).ttl_seconds == ttl


def test_azure_lists_gpt_5_3_codex_for_24h():
    assert P["azure"].rules_for("gpt-5.3-codex").ttl_seconds == 1800
    assert P["azure"].rules_for("gpt-5.6-sol").bills_writes is True
    assert P["azure"].rules_for("gpt-5.4").bills_writes is False


def test_openai_explicit_only_mode():
    """prompt_cache_options.mode "explicit": no implicit breakpoint; "When no explicit
    breakpoints are placed, the request does not use prompt caching or create cache writes"."""
    r = P["openai"].rules_for("gpt-5.6-sol", explicit_only=True)
    assert r.implicit is False
    segs = [(1200, None), (300, None)]
    p = bp_prompt(segs, roles=["system", "user"])
    sim = BoundarySim(r)
    assert sim.step(p, 0.0, r)[:3] == (0, 0, 0) and sim.step(p, 1.0, r)[:3] == (0, 0, 0)
    # with one explicit breakpoint after the system block: written at 1,200, read next time
    p2 = bp_prompt([(1200, "5m"), (300, None)], roles=["system", "user"])
    assert sim.step(p2, 2.0, r)[:3] == (0, 1200, 0)
    assert sim.step(p2, 3.0, r)[:2] == (1200, 0)
    # the default (implicit) mode writes at the latest user message: 1,500
    d = P["openai"].rules_for("gpt-5.6-sol")
    assert BoundarySim(d).step(p, 0.0, d)[:2] == (0, 1500)


def test_service_tier_is_part_of_the_namespace(tmp_path):
    """Reuse needs "compatible request settings, including the model, service tier, and tools"."""
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": "You are terse. " * 400},
                                            {"role": "user", "content": "hi"}]}
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps({**body, "service_tier": t}) for t in ("default", "flex", "flex")) + "\n")
    res = audit([log], AuditOptions())
    ns = [o.namespace for o in res.outcomes]
    assert ns == ["openai/gpt-4o", "openai/gpt-4o/tier=flex", "openai/gpt-4o/tier=flex"]
    assert res.outcomes[1].cached_tokens == 0 and res.outcomes[1].miss_reason == "namespace"
    assert res.outcomes[2].cached_tokens > 0
    assert res.outcomes[1].price_context == (("service_tier", "flex"),)


# ---------------------------------------------------------------- Anthropic, Bedrock, Vertex Claude

@pytest.mark.parametrize("pid,model,tokens", [
    ("anthropic", "claude-opus-5-5", 512), ("anthropic", "claude-fable-5-1", 512), ("anthropic", "claude-sonnet-5-5", 1024),
    ("anthropic", "claude-haiku-5-5", 1024), ("anthropic", "claude-opus-4-7", 2048), ("anthropic", "claude-haiku-4-5", 4096),
    ("bedrock", "anthropic.claude-3-7-sonnet-20250219-v1:0", 1024), ("bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0", 2048),
    ("bedrock", "us.anthropic.claude-opus-4-5-20251101-v1:0", 4096), ("bedrock", "global.anthropic.claude-opus-4-7-v1:0", 2048),
    ("bedrock", "us.anthropic.claude-fable-5-v1:0", 1024), ("bedrock", "amazon.nova-pro-v1:0", 1000),
    ("vertex-claude", "claude-sonnet-4-5@20250929", 1024), ("vertex-claude", "claude-opus-4-6", 4096),
])
def test_minimums(pid, model, tokens):
    assert P[pid].rules_for(model).min_tokens == tokens


def test_bedrock_claude_checkpoints_ttls_and_lookback():
    """cachePoint with ttl 1h on the system block, 5m on the user block: read A=0, 1-hour write
    up to B=2,000, 5-minute write up to C=2,100; next turn the moved checkpoint finds 2,100 within
    the 20-block lookback."""
    r = P["bedrock"].rules_for("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert (r.max_breakpoints, r.lookback, r.bills_writes) == (4, 20, True)
    sim = BoundarySim(r)
    assert sim.step(bp_prompt([(500, None), (1500, "1h"), (100, "5m")]), 0.0)[:3] == (0, 2100, 2000)
    got = sim.step(bp_prompt([(500, None), (1500, "1h"), (100, None), (100, None), (100, "5m")]), 60.0)
    assert got[:2] == (2100, 200)


def test_bedrock_nova_32k_cap_and_no_lookback():
    r = P["bedrock"].rules_for("us.amazon.nova-lite-v1:0")
    sim = BoundarySim(r)
    # checkpoints at 30,000 (written) and 40,000 (past the 32K cacheable: not written)
    assert sim.step(bp_prompt([(30_000, "5m"), (10_000, "5m")]), 0.0)[:2] == (0, 0)  # Nova bills no writes
    assert sim.step(bp_prompt([(30_000, "5m"), (10_000, "5m")]), 1.0)[0] == 30_000
    # the checkpoint moved one block on: Nova looks up only the checkpoint itself
    assert sim.step(bp_prompt([(30_000, None), (10_000, None), (5, "5m")]), 2.0)[0] == 0
    assert sim.step(bp_prompt([(500, "5m")]), 3.0)[3] == "below_min"       # under 1,000 tokens


# ---------------------------------------------------------------- Gemini on Vertex

def test_vertex_durable_tier_outlives_the_gemini_api():
    """Vertex: "cached prefixes expire within 24 hours of creation" (durable tier): a prefix
    read again after 3 hours still hits there (an upper bound), not on the Gemini API (300 s)."""
    p = prompt(3000)
    v = PrefixSim(P["vertex-gemini"].rules_for("gemini-2.5-pro"), 4, 1)
    g = PrefixSim(P["gemini"].rules_for("gemini-2.5-pro"), 4, 1)
    for sim in (v, g):
        sim.step(p, 0.0)
    assert v.step(p, 10_800.0)[0] == 3000 and g.step(p, 10_800.0)[0] == 0
    assert v.step(prompt(2000, 10**6), 0.0)[0] == 0 and P["vertex-gemini"].rules_for("gemini-2.5-pro").min_tokens == 2048


# ---------------------------------------------------------------- xAI, Mistral, Groq, Fireworks, Together

def test_xai_128_token_blocks():
    sim = PrefixSim(P["xai"].rules_for("grok-4.6"), 4, 1)
    sim.step(prompt(2000), 0.0)
    assert sim.step(shared(1300, 1500, 10**6), 1.0)[0] == 1280          # floor(1300/128)*128
    assert P["xai"].namespace == ("model", "cache_key", "affinity:x-grok-conv-id")


def test_xai_cache_is_per_server_by_conversation_id():
    """"cache entries are stored per-server": requests of another x-grok-conv-id land elsewhere."""
    from promptcache.model import Part

    def req(i, conv):
        return Request(id=f"r{i}", source=Source("x", i + 1), format="openai-chat", api="chat", provider=None,
                       model="grok-4.6", arrival=1_764_547_200.0 + i,
                       parts=(Part("system", "messages[0].content", "Be brief. " * 300, role="system", message=0),),
                       affinity={"x-grok-conv-id": conv})
    steps = list(Pipeline.from_requests([req(0, "a"), req(1, "b"), req(2, "a")], AuditOptions(diagnose=False)).steps())
    from promptcache.diagnose.redact import fingerprint

    a, b = (f"xai/grok-4.6/x-grok-conv-id=<session id #{fingerprint(c)}>" for c in "ab")  # a conversation id: fingerprinted
    assert [s.outcome.namespace for s in steps] == [a, b, a]
    assert steps[1].outcome.cached_tokens == 0 and steps[1].outcome.miss_reason == "namespace"
    assert steps[2].outcome.cached_tokens > 0 and steps[2].outcome.cached_tokens % 128 == 0


def test_mistral_64_token_blocks():
    sim = PrefixSim(P["mistral"].rules_for("mistral-medium-latest"), 4, 1)
    sim.step(prompt(500), 0.0)
    assert sim.step(shared(100, 200, 10**6), 1.0)[0] == 64
    assert sim.step(shared(63, 200, 2 * 10**6), 2.0)[0] == 0            # "<64 never hit"


def test_groq_two_hours_without_use():
    r = P["groq"].rules_for("openai/gpt-oss-120b")
    sim = PrefixSim(r, 4, 1)
    sim.step(prompt(1000), 0.0)
    assert sim.step(prompt(1000), 7000.0)[0] == 1000                     # within 2 h idle
    assert sim.step(prompt(1000), 7000.0 + 7201)[0] == 0                 # 2 h 0 min 1 s later: expired
    other = PrefixSim(P["groq"].rules_for("llama-3.3-70b-versatile"), 4, 1)
    other.step(prompt(5000), 0.0)
    assert other.step(prompt(5000), 1.0)[0] == 0                          # not a caching model


def test_fireworks_and_together():
    f = PrefixSim(P["fireworks"].rules_for("accounts/fireworks/models/kimi-k3"), 4, 1)
    f.step(prompt(777), 0.0)
    assert f.step(prompt(777), 1.0)[0] == 777                             # token level, no minimum published
    t = PrefixSim(P["together"].rules_for("moonshotai/Kimi-K3"), 4, 1)
    t.step(prompt(500), 0.0)
    assert t.step(prompt(500), 3500.0)[0] == 500 and t.step(prompt(500), 3500.0 + 3601)[0] == 0  # ~1 h


# ---------------------------------------------------------------- Qwen, Kimi

def test_qwen_explicit_and_implicit_modes():
    exp = P["qwen"].rules_for("qwen3-max", explicit=True)
    imp = P["qwen"].rules_for("qwen3-max", explicit=False)
    assert (exp.mode, exp.max_breakpoints, exp.lookback, exp.min_tokens, exp.bills_writes) == ("breakpoints", 4, 20, 1024, True)
    assert (imp.mode, imp.min_tokens, imp.bills_writes) == ("prefix", 1024, False)
    sim = BoundarySim(exp)
    assert sim.step(bp_prompt([(1100, "5m"), (50, None)]), 0.0)[:2] == (0, 1100)   # created after the response
    assert sim.step(bp_prompt([(1100, "5m"), (80, None)]), 299.0)[:2] == (1100, 0)  # valid 5 minutes ...
    assert sim.step(bp_prompt([(1100, "5m"), (80, None)]), 598.0)[:2] == (1100, 0)  # ... reset on a hit
    assert sim.step(bp_prompt([(1100, "5m"), (80, None)]), 899.0)[0] == 0


def test_kimi_5m_and_1h_writes():
    k3 = P["kimi"].rules_for("kimi-k3")
    assert (k3.ttl_seconds, k3.granularity, k3.bills_writes) == (300, 256, True)
    one_h = P["kimi"].rules_for("kimi-k3", retention="1h")
    assert one_h.ttl_seconds == 3600
    sim = PrefixSim(one_h, 4, 1)
    assert sim.step(prompt(1000), 0.0)[:3] == (0, 1000, 1000)            # all written at the 1-hour price (2x)
    assert sim.step(prompt(1000), 3000.0)[:3] == (768, 232, 232)         # floor(1000/256)*256 read; the rest written again
    assert PrefixSim(k3, 4, 1).step(prompt(1000), 0.0)[:3] == (0, 1000, 0)  # 5-minute write (1x)
    assert P["kimi"].rules_for("kimi-k2.6").bills_writes is False


# DeepSeek's cache prefix units: tests/test_deepseek_units.py


# ---------------------------------------------------------------- the audit's messages

def test_new_tokenizer_range_is_stated(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"model": "claude-opus-4-7", "max_tokens": 10, "system": "x " * 100,
                               "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    res = audit([log], AuditOptions())
    (w,) = [w for w in res.warnings if "token counts are approximate" in w]
    assert "1.0-1.35x as many tokens" in w and "under-counted by up to 35%" in w


def test_rules_checked_long_before_the_log_are_flagged():
    from datetime import datetime, timezone

    pf = P["openai"]                                                       # checked 2026-12-01
    at = lambda *d: datetime(*d, tzinfo=timezone.utc).timestamp()          # noqa: E731
    assert stale([pf], at(2027, 3, 1)) == []                               # 90 days later: not yet
    (w,) = stale([pf], at(2027, 3, 2, 12))                                 # 91 days
    assert w.startswith("openai.yaml was checked on 2026-12-01, 91 days before the log's newest request (2027-03-02)")
    assert f"more than {STALE_DAYS} days" in w and stale([pf], None) == []


def test_overlay_prices_are_labelled_and_unknown_models_still_warn(tmp_path):
    log = tmp_path / "log.jsonl"
    body = {"messages": [{"role": "user", "content": "hello " * 300}]}
    log.write_text("\n".join(json.dumps({**body, "model": m}) for m in ("gpt-6.2-sol", "gpt-nonexistent-9")) + "\n")
    res = audit([log], AuditOptions())
    assert any(w.startswith("priced from promptcache's price overlay") and "gpt-6.2-sol" in w for w in res.warnings)
    assert "promptcache price overlay (rules/prices/overlay.yaml) for gpt-6.2-sol" in res.prices_source
    assert res.unknown_models == ["gpt-nonexistent-9"]
    assert any("no price for model(s) gpt-nonexistent-9" in w for w in res.warnings)


def test_rules_providers_lists_every_file_and_warns_on_stale(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "promptcache", "rules", "providers", "--format", "json"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert sorted(x["id"] for x in d["providers"]) == sorted(P)
    assert all(x["checked"] == "2026-12-01" for x in d["providers"]) and d["warnings"] == []
    log = tmp_path / "late.jsonl"
    log.write_text(json.dumps({"model": "gpt-4o", "created_at": "2027-06-01T00:00:00Z",
                               "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    p = subprocess.run([sys.executable, "-m", "promptcache", "rules", "providers", str(log), "--format", "json"],
                       capture_output=True, text=True)
    d = json.loads(p.stdout)
    assert len(d["warnings"]) == len(P) and all("182 days before the log's newest request (2027-06-01)" in w
                                                 for w in d["warnings"])
    res = audit([log], AuditOptions())
    assert [w for w in res.warnings if "openai.yaml was checked on 2026-12-01, 182 days before" in w]
