"""DeepSeek V4's cache prefix units (rules/providers/deepseek.yaml, promptcache/simulate/units.py)
against the guide's own examples, worked out by hand.

The guide (https://api-docs.deepseek.com/guides/kv_cache.md; the Chinese page
https://api-docs.deepseek.com/zh-cn/guides/kv_cache.md): "A subsequent request can only hit the
cache if it fully matches a cache prefix unit"; units at the end of each request's user input
and of its model output, at common prefixes the system detects ("first A+B, then A+C misses, but
A is persisted; a third A+D hits A"), and at fixed token intervals in long texts (the interval is
not published, not modelled: a lower bound).

Prompts here are built segment by segment from token ids; every count is the sum of segment
lengths chosen below, so each expected read is arithmetic on those lengths.
"""

from __future__ import annotations

import hashlib
import json

from promptcache.model import Segment
from promptcache.pipeline import AuditOptions, audit
from promptcache.simulate import Prompt, RequestRef, Simulator
from promptcache.simulate.rules import load_providers
from promptcache.simulate.units import UnitSim

from conftest import units

R = load_providers()["deepseek"].rules_for("deepseek-chat")
GEN = list(range(900_000, 900_006))  # the generation prompt: 6 tokens (<|start|>assistant)


def seq(base: int, n: int) -> list[int]:
    return list(range(base, base + n))


def make(*segs: tuple[str | None, list[int]]) -> Prompt:
    """A prompt of ``(role, token ids)`` segments (role ``None``: the generation prompt), keys
    chained as blake2b(previous key + segment bytes), the pipeline's construction."""
    out, ends, keys, ids, h, total = [], [], [], [], b"", 0
    for i, (role, toks) in enumerate(segs):
        out.append(Segment(f"s[{i}]", "frame" if role is None else role, "", role=role,
                           message=None if role is None else i))
        total += len(toks)
        ends.append(total)
        h = hashlib.blake2b(h + units(toks), digest_size=16).digest()
        keys.append(h)
        ids += toks
    return Prompt(units(ids), 4, 1, total, out, ends, keys)


class Run:
    """Requests through the simulator's one entry point (ideal cache, then the units)."""

    def __init__(self):
        self.sim = Simulator()
        self.i = 0

    def __call__(self, p: Prompt, now: float = 0.0, ns: str = "deepseek/deepseek-chat"):
        ref = RequestRef(self.i, f"r{self.i}", self.i + 1, "log")
        self.i += 1
        cached, _, _, shared, reason, _, _ = self.sim.step(ref=ref, prompt=p, rules=R, namespace=ns,
                                                           ideal_key=("deepseek", "deepseek-chat"), now=now)
        return cached, shared, reason


S = seq(1000, 800)           # system prompt, 800 tokens
U1 = seq(5000, 300)          # first question, 300 tokens


def test_rules_file_says_units():
    assert (R.mode, R.min_tokens, R.ttl_seconds, R.bills_writes) == ("units", 64, 14400, False)


def test_example_1_multi_turn_reads_the_whole_first_request():
    """Guide, example 1: the second turn "can fully reuse" the first request's unit, system and
    user message: all 800 + 300 + 6 = 1,106 tokens of the first prompt (its input ends after the
    generation prompt, which the second turn repeats as its assistant message's header)."""
    run = Run()
    assert run(make(("system", S), ("user", U1), (None, GEN))) == (0, 0, None)
    a1 = GEN + seq(7000, 194)  # the first answer, 200 tokens with its header
    cached, shared, reason = run(make(("system", S), ("user", U1), ("assistant", a1), ("user", seq(8000, 50)),
                                      (None, GEN)), 10.0)
    assert (cached, shared, reason) == (1106, 1106, None)


def test_example_2_common_prefix_is_persisted_and_read_by_the_third_request():
    """Guide, example 2 (A+B, A+C, A+D): A = system 800 + the report 1,000 = 1,800 tokens, the
    questions differ at their first token. The second request reads nothing (A+C matches no unit:
    the first request's unit is A+B+gen, 1,820 tokens), the system persists A; the third reads
    exactly A."""
    run = Run()
    report = seq(20_000, 1000)
    q = [seq(30_000, 20), seq(31_000, 25), seq(32_000, 30)]
    got = [run(make(("system", S), ("user", report + qi), (None, GEN)), 60.0 * k) for k, qi in enumerate(q)]
    assert got == [(0, 0, None), (0, 1800, "no_unit"), (1800, 1800, None)]


def test_a_longer_common_prefix_is_a_unit_of_its_own():
    """The third request shares one token more with the second (1,801) than the second with the
    first (1,800): it reads the 1,800-token unit, the rest is no unit yet; the 1,801-token common
    prefix it revealed is read by a fourth request that starts the same way."""
    run = Run()
    report = seq(20_000, 1000)
    b, c, d = seq(30_000, 20), [77] + seq(31_000, 24), [77] + seq(32_000, 29)
    run(make(("system", S), ("user", report + b), (None, GEN)))
    assert run(make(("system", S), ("user", report + c), (None, GEN)), 1.0) == (0, 1800, "no_unit")
    assert run(make(("system", S), ("user", report + d), (None, GEN)), 2.0) == (1800, 1801, "no_unit")
    assert run(make(("system", S), ("user", report + [77, 5]), (None, GEN)), 3.0) == (1801, 1801, None)


def test_stable_system_prompt_is_read_from_the_third_request_on():
    """What the boundaries-only model got wrong: a system prompt every request shares (800
    tokens, the questions differ from their first token) was never read, no request ending
    there. Now: request 2 reveals it, requests 3 and 4 read 800 each."""
    run = Run()
    got = [run(make(("system", S), ("user", seq(40_000 + 1000 * k, 40)), (None, GEN)), 30.0 * k)[0]
           for k in range(4)]
    assert got == [0, 0, 800, 800]


def test_the_previous_output_is_a_unit_for_later_branches():
    """Request 2 (S, U1, A1, U2) reads request 1's input (1,106) and persists the unit of
    request 1's output at the end of A1 (1,106 + 194 = 1,300). Request 3 edits the second
    question (S, U1, A1, U2'): request 2's input unit does not match, the output unit does:
    1,300."""
    run = Run()
    a1 = GEN + seq(7000, 194)
    run(make(("system", S), ("user", U1), (None, GEN)))
    assert run(make(("system", S), ("user", U1), ("assistant", a1), ("user", seq(8000, 50)), (None, GEN)), 5.0)[0] == 1106
    cached, shared, _ = run(make(("system", S), ("user", U1), ("assistant", a1), ("user", seq(9000, 50)), (None, GEN)), 9.0)
    assert (cached, shared) == (1300, 1300)


def test_detection_needs_the_earlier_request_still_cached():
    """A common prefix is detected against what the system still holds: request 1's unit has
    expired (4 h TTL) when request 2 comes 5 hours later, so A is not persisted then; request 3,
    a minute after request 2, reveals it against request 2; request 4 reads it (1,800)."""
    run = Run()
    report = seq(20_000, 1000)
    reqs = [make(("system", S), ("user", report + seq(30_000 + 1000 * k, 20)), (None, GEN)) for k in range(4)]
    got = [run(p, t)[0] for p, t in zip(reqs, (0.0, 18_000.0, 18_060.0, 18_120.0))]
    assert got == [0, 0, 0, 1800]


def test_detection_stays_inside_the_namespace():
    """Two cache namespaces under one ideal cache (a key or route splits the traffic): request 1
    (A+B) in one, requests 2-4 (A+C, A+D, A+E) in the other. Request 2's common prefix is with a
    request the other namespace's cache never saw: nothing is persisted; request 3 reveals A
    against request 2; request 4 reads it."""
    run = Run()
    report = seq(20_000, 1000)
    reqs = [make(("system", S), ("user", report + seq(30_000 + 1000 * k, 20)), (None, GEN)) for k in range(4)]
    got = [run(p, float(k), ns="deepseek/deepseek-chat/key=a" if k == 0 else "deepseek/deepseek-chat/key=b")
           for k, p in enumerate(reqs)]
    # request 2 shares A only with request 1, in the other namespace; request 3 with request 2
    assert got == [(0, 0, None), (0, 1800, "namespace"), (0, 1800, "no_unit"), (1800, 1800, None)]


def test_fixed_interval_units_are_not_modelled_a_lower_bound():
    """A 10,000-token document left at token 8,000 by the next request: DeepSeek's fixed-interval
    units (interval unpublished) would serve part of the 8,800 shared tokens; the model serves
    none (the documented lower bound), and the third request reads the revealed 8,800."""
    run = Run()
    doc = seq(100_000, 10_000)
    first = run(make(("system", S), ("user", doc), (None, GEN)))
    second = run(make(("system", S), ("user", doc[:8000] + seq(200_000, 50)), (None, GEN)), 1.0)
    third = run(make(("system", S), ("user", doc[:8000] + seq(300_000, 50)), (None, GEN)), 2.0)
    assert (first[0], second, third[0]) == (0, (0, 8800, "no_unit"), 8800)


def test_units_under_64_tokens_are_not_persisted():
    run = Run()
    short = [("system", seq(1, 30)), ("user", seq(100, 20)), (None, GEN)]  # 56 tokens
    run(make(*short))
    assert run(make(("system", seq(1, 30)), ("user", seq(100, 20)), ("assistant", GEN + [5]), ("user", [6]),
                    (None, GEN)), 1.0) == (0, 56, "below_min")


def test_expired_units_and_sweep():
    """A unit unread for more than 4 hours is gone (reason ``expired``); the sweep drops it, its
    offsets and the request that wrote it."""
    sim = UnitSim(R)
    p = make(("system", S), ("user", U1), (None, GEN))
    sim.step(p, 0.0)
    sim.detect(p, 0, 0, None, 0.0)
    assert sim.step(p, 14_401.0)[0] == 0 and sim.detect(p, 1, 1106, 0, 14_401.0) == "expired"
    sim.sweep(30_000.0)
    assert sim.store.entries == {} and sim.cuts == {} and sim.members == {}


def test_audit_of_the_guides_example_2(tmp_path):
    """The guide's long-text example as a chat log (its own messages, a third question added):
    the second request reads nothing and the third reads exactly the common prefix the first two
    share (whatever its length in tokens)."""
    report = "这是一份虚构的财报。" * 200
    qs = ["请总结一下这份财报的关键信息。", "请分析一下这份财报的盈利情况。", "请评估一下这份财报的偿债能力。"]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"model": "deepseek-chat", "timestamp": 1_790_000_000 + 60 * k, "messages": [
        {"role": "system", "content": "你是一位资深的财报分析师..."},
        {"role": "user", "content": f"{report}\n\n{q}"}]}, ensure_ascii=False) + "\n" for k, q in enumerate(qs)),
        encoding="utf-8")
    o = audit([log], AuditOptions()).outcomes
    assert [x.cached_tokens for x in o[:2]] == [0, 0] and o[1].miss_reason == "no_unit"
    assert o[1].shared_prefix_tokens > 1000  # the system message and the report
    assert o[2].cached_tokens == o[1].shared_prefix_tokens <= o[2].shared_prefix_tokens


def test_audit_of_the_guides_example_1(tmp_path):
    log = tmp_path / "log.jsonl"
    sys_msg = {"role": "system", "content": "你是一位乐于助人的助手" * 20}
    turns = [[sys_msg, {"role": "user", "content": "中国的首都是哪里？"}],
             [sys_msg, {"role": "user", "content": "中国的首都是哪里？"}, {"role": "assistant", "content": "中国的首都是北京。"},
              {"role": "user", "content": "美国的首都是哪里？"}]]
    log.write_text("".join(json.dumps({"model": "deepseek-chat", "messages": m}, ensure_ascii=False) + "\n"
                           for m in turns), encoding="utf-8")
    o = audit([log], AuditOptions()).outcomes
    assert o[1].cached_tokens == o[0].prompt_tokens == o[1].shared_prefix_tokens


# ------------------------------------------------------------------ the loss accounting

def _case(name: str):
    from pathlib import Path

    (path,) = (Path(__file__).resolve().parent / "data" / "cases").glob(f"{name}*.jsonl")
    return path, audit([path], AuditOptions())


def test_tokens_no_unit_covers_yet_are_claimed_by_their_own_rule():
    """C27 (Continue's compaction summary, DeepSeek): the guide's A+B, A+C, A+D. The second
    request shares the system prompt A with the first (1,361 tokens by hand: cl100k_base on an
    independent serialization, chat markers as text, so within 1%) and reads none of it: no unit
    ends there yet (miss reason no_unit); A is persisted then, and the third and fourth read it.
    cache-unit-not-persisted (PC309) claims exactly the shared tokens no unit covered, the
    accounting has no unexplained row, and no finding is made of it (a loss by design)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
    import handcount

    _, res = _case("C27")
    recs = handcount.load("C27")
    a = handcount.Counter("cl100k_base", "openai", frame="text").shared(recs[1], recs[0])
    assert a == 1361
    o = res.outcomes
    assert [x.miss_reason for x in o] == [None, "no_unit", None, None]
    assert o[1].cached_tokens == 0 and abs(o[1].shared_prefix_tokens - a) <= 0.01 * a
    assert o[2].cached_tokens == o[3].cached_tokens == o[1].shared_prefix_tokens  # A, read from the third on
    rows = {r.rule: r for r in res.accounting.rows if r.gap == "rules"}
    assert set(rows) == {"cache-unit-not-persisted"}
    assert (rows["cache-unit-not-persisted"].tokens, rows["cache-unit-not-persisted"].requests) == \
        (o[1].shared_prefix_tokens, 1)
    assert not [f for f in res.findings if f.rule.id == "cache-unit-not-persisted"]


def test_every_deepseek_case_accounts_for_its_no_unit_tokens():
    """C02 (a timestamp in the system prompt) and C26 (tool output pruned in place): every rules-
    gap token of a request whose shared prefix no unit covers (shared − read, summed over the
    no_unit requests) goes to cache-unit-not-persisted, none to unexplained."""
    for name in ("C02", "C26"):
        _, res = _case(name)
        want = sum(x.shared_prefix_tokens - x.cached_tokens for x in res.outcomes if x.miss_reason == "no_unit")
        n = sum(1 for x in res.outcomes if x.miss_reason == "no_unit")
        rows = {r.rule: r for r in res.accounting.rows if r.gap == "rules"}
        assert set(rows) == {"cache-unit-not-persisted"}, (name, rows)
        assert (rows["cache-unit-not-persisted"].tokens, rows["cache-unit-not-persisted"].requests) == (want, n), name
        assert want > 0 and res.accounting.gaps["rules"] == want


def test_the_text_report_of_a_deepseek_log_speaks_of_units_not_breakpoints():
    """C02's text report: the no_unit tokens under their rule, nothing unexplained, and no word of
    breakpoints (DeepSeek's requests carry none)."""
    import os
    import subprocess
    import sys

    path, _ = _case("C02")
    out = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(path)], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "250"}, check=False).stdout
    assert "cache-unit-not-persisted" in out and "not yet in a persisted cache prefix unit (DeepSeek): 4,239 tokens" in out
    assert "unexplained" not in out and "breakpoint" not in out.lower()
