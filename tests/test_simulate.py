"""Provider and engine cache rules on explicit token lists, with counts worked out by hand."""

from __future__ import annotations

import hashlib

import pytest

from promptcache.model import Breakpoint, Segment
from promptcache.simulate import Prompt, PrefixSim, RequestRef, Simulator
from promptcache.simulate.boundaries import BoundarySim
from promptcache.simulate.rules import load_providers

from conftest import units

P = load_providers()


def prompt(ids: list[int]) -> Prompt:
    return Prompt(units(ids), 4, 1, len(ids))


def seq(n: int, base: int = 0) -> list[int]:
    return list(range(base, base + n))


# ---------------------------------------------------------------- OpenAI (automatic, prefix)

def test_openai_minimum_and_128_token_steps():
    sim = PrefixSim(P["openai"].rules_for("gpt-4o"), 4, 1)
    a = seq(1500)
    assert sim.step(prompt(a), 0.0)[0] == 0                       # cold
    b = a[:1300] + seq(700, 10_000)                               # shares 1,300 tokens
    assert sim.step(prompt(b), 1.0)[0] == 1280                    # floor(1300/128)*128
    c = a[:1000] + seq(600, 20_000)                               # shares 1,000 < 1,024
    assert sim.step(prompt(c), 2.0)[0] == 0
    assert sim.step(prompt(a), 3.0)[0] == 1408                    # identical: floor(1500/128)*128


def test_openai_ttl_expiry_and_refresh():
    r = P["openai"].rules_for("gpt-4o")                           # in_memory: 600 s idle
    assert r.ttl_seconds == 600
    a = seq(2048)
    sim = PrefixSim(r, 4, 1)
    sim.step(prompt(a), 0.0)
    assert sim.step(prompt(a), 601.0)[0] == 0                     # idle 601 s > 600: expired
    sim = PrefixSim(r, 4, 1)
    sim.step(prompt(a), 0.0)
    assert sim.step(prompt(a), 500.0)[0] == 2048                  # hit at 500 s refreshes ...
    assert sim.step(prompt(a), 1000.0)[0] == 2048                 # ... so 1000 s is only 500 s idle


def test_openai_retention_and_overrides():
    pf = P["openai"]
    # "24h" only on the extended-retention models (gpt-4.1 yes, gpt-4o no: it keeps in_memory's 600 s)
    assert pf.rules_for("gpt-4.1", retention="24h").ttl_seconds == 1800
    assert pf.rules_for("gpt-4.1", retention="in_memory").ttl_seconds == 600
    assert pf.rules_for("gpt-4o", retention="24h").ttl_seconds == 600
    assert pf.rules_for("gpt-5.6").mode == "boundaries"
    assert pf.rules_for("gpt-5.5").granularity == 2048
    assert pf.rules_for("gpt-4o", ttl=0).ttl_seconds is None


def test_namespace_isolation():
    sim = Simulator()
    r = P["openai"].rules_for("gpt-4o")
    a = prompt(seq(2000))
    kw = dict(rules=r, ideal_key=("openai", "gpt-4o"), now=0.0)
    sim.step(ref=RequestRef(0, "a", 1, "x"), prompt=a, namespace="openai/gpt-4o/key=A", **kw)
    out = sim.step(ref=RequestRef(1, "b", 2, "x"), prompt=a, namespace="openai/gpt-4o/key=B", **kw)
    cached, _, _, shared, reason, other, _ = out
    assert cached == 0 and shared == 2000 and reason == "namespace"  # the ideal ignores the key
    out = sim.step(ref=RequestRef(2, "c", 3, "x"), prompt=a, namespace="openai/gpt-4o/key=A", **kw)
    assert out[0] == 1920                                          # same key: floor(2000/128)*128


# ---------------------------------------------------------------- engines

def test_vllm_full_blocks_and_last_token():
    sim = PrefixSim(P["vllm"].rules_for(None), 4, 1)              # block 16
    sim.step(prompt(seq(32)), None)
    assert sim.step(prompt(seq(32)), None)[0] == 16                # last token recomputed: (32-1)//16*16
    assert sim.step(prompt(seq(33)), None)[0] == 32
    assert sim.step(prompt(seq(40)), None)[0] == 32                # only 2 full blocks were stored by 33


def test_vllm_lru_evicts_tail_blocks_first():
    r = P["vllm"].rules_for(None, capacity_tokens=48)              # 3 blocks of 16
    sim = PrefixSim(r, 4, 1)
    a, b = seq(32), seq(32, 1000)
    sim.step(prompt(a), None)                                      # a1 a2
    sim.step(prompt(b), None)                                      # b1 b2 → evicts a2 (a's deepest)
    assert sim.step(prompt(a + [7]), None)[0] == 16                # a1 survives
    r2 = P["vllm"].rules_for(None, capacity_tokens=32)
    sim = PrefixSim(r2, 4, 1)
    sim.step(prompt(a), None)
    sim.step(prompt(b), None)                                      # evicts a2 then a1
    assert sim.step(prompt(a + [7]), None)[0] == 0


def test_sglang_token_level_and_leaf_eviction():
    sim = PrefixSim(P["sglang"].rules_for(None), 4, 1)
    sim.step(prompt(seq(10)), None)
    assert sim.step(prompt(seq(7) + [99, 98]), None)[0] == 7      # token granularity
    r = P["sglang"].rules_for(None, capacity_tokens=10)
    sim = PrefixSim(r, 4, 1)
    sim.step(prompt(seq(6)), None)
    sim.step(prompt(seq(6, 100)), None)                            # 12 > 10: the older leaf (6 tokens) goes whole
    assert sim.step(prompt(seq(6, 100) + [5]), None)[0] == 6       # the newer one is served (6 of 7 tokens) ...
    assert sim.step(prompt(seq(6) + [5]), None)[0] == 0            # ... the older one was evicted


# ---------------------------------------------------------------- Anthropic breakpoints

def bp_prompt(spec: list[tuple[int, str | None]]) -> Prompt:
    """Segments of the given token lengths; spec items: (tokens, None | '5m' | '1h').
    Keys chain the segment identities like the pipeline does."""
    segs, ends, keys = [], [], []
    total, h = 0, b""
    for i, (n, ttl) in enumerate(spec):
        bp = Breakpoint({"5m": 300, "1h": 3600}[ttl]) if ttl else None
        segs.append(Segment(f"s[{i}]", "user", f"text{i}", breakpoint=bp))
        total += n
        ends.append(total)
        h = hashlib.blake2b(h + f"{i}:{n}".encode(), digest_size=16).digest()
        keys.append(h)
    return Prompt(b"", 4, 1, total, segs, ends, keys)


ANTH = P["anthropic"].rules_for("claude-sonnet-4-5")               # min 1,024


def test_anthropic_reads_writes_and_moving_breakpoint():
    assert ANTH.min_tokens == 1024 and ANTH.lookback == 20 and ANTH.max_breakpoints == 4
    sim = BoundarySim(ANTH)
    # tools 500 | system 1500 (bp) | user 100 (bp): writes everything up to 2,100
    cached, write, w1h, reason, flags = sim.step(bp_prompt([(500, None), (1500, "5m"), (100, "5m")]), 0.0)
    assert (cached, write, w1h) == (0, 2100, 0)
    # next turn: + assistant 100 + user 100 (bp moved to the newest turn): lookback finds 2,100
    cached, write, w1h, reason, flags = sim.step(
        bp_prompt([(500, None), (1500, "5m"), (100, None), (100, None), (100, "5m")]), 60.0)
    assert (cached, write) == (2100, 200)


def test_anthropic_1h_split_and_ttl_expiry():
    sim = BoundarySim(ANTH)
    p = bp_prompt([(1500, "1h"), (1500, "5m"), (200, None)])
    assert sim.step(p, 0.0)[:3] == (0, 3000, 1500)                 # A=0, B=1500 (1 h), C=3000
    assert sim.step(p, 200.0)[:3] == (3000, 0, 0)                  # both live
    cached, write, w1h, reason, _ = sim.step(p, 200.0 + 301)       # 5 m entry expired, 1 h entry live
    assert (cached, write, w1h, reason) == (1500, 1500, 0, "expired")


def test_anthropic_minimum_and_lookback_limit():
    sim = BoundarySim(ANTH)
    cached, write, _, reason, _ = sim.step(bp_prompt([(800, "5m"), (50, None)]), 0.0)
    assert (cached, write, reason) == (0, 0, "below_min")          # silently not cached
    sim = BoundarySim(ANTH)
    base = [(1200, "5m")]
    sim.step(bp_prompt(base), 0.0)
    # 20 more blocks after the entry, breakpoint on the 21st: the window (20 blocks, counting the
    # breakpoint's own) ends one block short of the entry
    far = base[:1] + [(10, None)] * 20 + [(10, "5m")]
    far[0] = (1200, None)
    cached, write, _, reason, _ = sim.step(bp_prompt(far), 10.0)
    assert cached == 0 and reason == "lookback"
    near = base[:1] + [(10, None)] * 18 + [(10, "5m")]
    near[0] = (1200, None)
    assert sim.step(bp_prompt(near), 20.0)[0] == 1200              # 19 blocks back: found


def test_anthropic_more_than_four_breakpoints_flagged():
    sim = BoundarySim(ANTH)
    *_, flags = sim.step(bp_prompt([(1100, "5m")] + [(10, "5m")] * 4), 0.0)
    assert "breakpoints_over_limit" in flags


def test_openai_gpt56_implicit_breakpoint_at_last_user_message():
    r = P["openai"].rules_for("gpt-5.6")
    sim = BoundarySim(r)

    def conv(n_turns: int) -> Prompt:
        segs, ends, keys, total, h = [], [], [], 0, b""
        items = [("system", 1200)] + [("user", 50), ("assistant", 50)] * n_turns + [("user", 50)]
        for i, (role, n) in enumerate(items):
            segs.append(Segment(f"m[{i}]", role, "x", role=role, message=i))
            total += n
            ends.append(total)
            h = hashlib.blake2b(h + f"{i}{role}{n}".encode(), digest_size=16).digest()
            keys.append(h)
        segs.append(Segment("<gen>", "frame", "", ()))
        ends.append(total + 3)
        keys.append(hashlib.blake2b(h + b"gen", digest_size=16).digest())
        return Prompt(b"", 4, 1, total + 3, segs, ends, keys)

    assert sim.step(conv(0), 0.0)[:2] == (0, 1250)                 # writes up to the user message
    cached, write, *_ = sim.step(conv(1), 10.0)                    # earlier user ending (1,250) is live
    assert (cached, write) == (1250, 100)


def test_ttl_override_reaches_breakpoint_caches():
    """``--ttl`` ("Override the cache TTL in seconds (0: never expire)") applies to every entry a
    breakpoint writes, whatever ``ttl`` its ``cache_control`` asks for: before, the breakpoint's own
    5 minutes won and ``--ttl 0`` still expired after 300 s."""
    p = bp_prompt([(1500, "5m"), (200, None)])
    sim = BoundarySim(ANTH)
    sim.step(p, 0.0)
    assert sim.step(p, 3600.0)[0] == 0                                # the 5-minute entry expired
    never = P["anthropic"].rules_for("claude-sonnet-4-5", ttl=0)
    sim = BoundarySim(never)
    sim.step(p, 0.0)
    assert sim.step(p, 86_400.0)[:2] == (1500, 0)                     # a day later: still there
    two_h = P["anthropic"].rules_for("claude-sonnet-4-5", ttl=7200)
    sim = BoundarySim(two_h)
    sim.step(p, 0.0)
    assert sim.step(p, 7000.0)[0] == 1500 and sim.step(p, 7000.0 + 7201)[0] == 0


def test_ttl_override_reaches_deepseek_units():
    from promptcache.simulate.units import UnitSim

    r = P["deepseek"].rules_for("deepseek-chat", ttl=0)
    sim = UnitSim(r)
    p = bp_prompt([(800, None), (300, None)])                         # the whole prompt is a unit
    p.units = units(list(range(1100)))
    sim.step(p, 0.0)
    assert sim.step(p, 10 * 86_400.0)[0] == 1100                       # the 4 h default would have expired it
