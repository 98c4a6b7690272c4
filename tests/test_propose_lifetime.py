"""The cache-lifetime optimiser: per-gap arithmetic worked out by hand, and its choice checked
against a brute-force simulation of each policy (the proposed log rewritten with that policy,
keep-alive requests included, and audited) on logs with known gap distributions."""

from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest

from promptcache.pipeline import AuditOptions, audit
from promptcache.propose import lifetime as lt
from promptcache.propose.engine import propose

M = Decimal(1_000_000)
#: Claude Sonnet 4.5's list prices, USD per million tokens: input 3, read 0.30, 5-minute write
#: 3.75, 1-hour write 6 (1.25x and 2x the input price).
SONNET = lt.Prices(Decimal(3) / M, Decimal("0.3") / M, Decimal("3.75") / M, Decimal(6) / M)
FIVE = lt.Policy("5m", 300, 300, "write", "write")
HOUR = lt.Policy("1h", 3600, 3600, "write_1h", "write_1h")


def test_gap_cost_by_hand():
    """One cached token after a pause: a read inside the TTL, a write after it; each keep-alive
    request during the pause costs a read and restarts the TTL."""
    assert lt.gap_cost(200, FIVE, SONNET) == Decimal("0.3") / M
    assert lt.gap_cost(400, FIVE, SONNET) == Decimal("3.75") / M
    assert lt.gap_cost(400, HOUR, SONNET) == Decimal("0.3") / M
    assert lt.gap_cost(4000, HOUR, SONNET) == Decimal(6) / M
    ka = FIVE.with_pings(2)
    assert ka.interval == 270
    assert lt.gap_cost(400, ka, SONNET) == Decimal("0.6") / M  # one ping at 270 s, then a read
    assert lt.gap_cost(900, ka, SONNET) == (Decimal("0.6") + Decimal("3.75")) / M  # pings at 270, 540; 360 s > 5 min


def test_winning_gaps_by_hand():
    """1 h against 5 min wins on pauses between 5 min and 1 h; two keep-alive requests at
    270 s bridge pauses up to 2 x 270 + 300 = 840 s, the break-even gap."""
    assert lt.winning_gaps(HOUR, FIVE, SONNET) == (300, 3600, "conversation")
    assert lt.winning_gaps(FIVE.with_pings(2), FIVE, SONNET) == (300, 840, "conversation")
    mixed = lt.Policy("1h anchor, 5m conversation", 3600, 300, "write_1h", "write")
    assert lt.winning_gaps(mixed, FIVE, SONNET) == (300, 3600, "anchor")


def test_replay_by_hand():
    """Two conversations on one template: A at 0 s and 100 s, B at 1000 s. Anchor 1,000 tokens,
    each conversation adds 500. Under 5 minutes: A1 writes 1,500; A2 reads 1,500 and writes 500;
    B1 (1,000 s later) finds the anchor expired and writes it again with its 500. Under 1 hour
    B1 reads the anchor."""
    v = [lt.Visit(0, 1, 0, 0, 1000, 500, 10, 1), lt.Visit(100, 1, 1000, 500, 0, 500, 10, 2),
         lt.Visit(1000, 2, 1000, 0, 0, 500, 10, 3)]
    five = lt.cost(v, FIVE, SONNET)
    p_in, p_rd, p_w, p_1h = (Decimal(x) / M for x in ("3", "0.3", "3.75", "6"))
    assert five.per_visit == [1500 * p_w + 10 * p_in, 1500 * p_rd + 500 * p_w + 10 * p_in,
                              1500 * p_w + 10 * p_in]  # B1: the anchor (1,000) written again, plus its 500
    assert five.total == Decimal(13665) / M  # 3,500 written at 3.75, 1,500 read at 0.30, 30 plain at 3
    hour = lt.cost(v, HOUR, SONNET)
    assert hour.per_visit[2] == 1000 * p_rd + 500 * p_1h + 10 * p_in
    assert hour.total == Decimal(15840) / M  # 9,030 + 3,480 + 3,330: the 2x writes cost more than B1 saves
    choice = lt.choose(v, [HOUR], FIVE, SONNET, 1000)
    assert choice.best is choice.current and choice.saves == 0 and choice.losing == []
    ka = lt.cost(v, FIVE.with_pings(1), SONNET)  # one keep-alive after each request, 270 s later
    # A2 comes before A1's keep-alive is due; A2's (at 370 s) re-reads its 2,000 tokens, but B1
    # comes 630 s after it and still writes the anchor; B1's own (1,270 s) re-reads its 1,500.
    assert ka.pings == 2 and ka.total == five.total + (2000 * p_rd + 10 * p_in) + (1500 * p_rd + 10 * p_in)


def _log(path, gaps, *, sessions=6, turns=6, seed=1, model="claude-sonnet-4-5", anthropic=True):
    """Sessions of one agent (a 2,500-word system prompt, 150-word turns) whose pauses are drawn
    from ``gaps``; sessions start 37 s apart."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(500)]
    system = "You are a coding agent. " + " ".join(rng.choices(words, k=2500))
    recs = []
    for s in range(sessions):
        t = 1_793_000_000 + s * 37
        hist: list[dict] = []
        for _ in range(turns):
            hist.append({"role": "user", "content": " ".join(rng.choices(words, k=150))})
            msgs = json.loads(json.dumps(hist))
            body = ({"model": model, "max_tokens": 512, "system": system, "messages": msgs} if anthropic
                    else {"model": model, "messages": [{"role": "system", "content": system}, *msgs]})
            recs.append({"timestamp": t, "request": body})
            hist.append({"role": "assistant", "content": " ".join(rng.choices(words, k=150))})
            t += gaps(rng)
    recs.sort(key=lambda r: r["timestamp"])
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


GAPS = {
    "short": (lambda r: r.uniform(20, 200), "5m"),  # every pause inside 5 minutes: nothing to change
    "pauses": (lambda r: 60 if r.random() < 0.6 else r.uniform(900, 2400), "1h"),  # 15-40 min breaks
    "hours": (lambda r: r.uniform(5000, 9000), "keep-alive"),  # beyond 1 h: the 1 h TTL with keep-alive
}


def _brute(log, names):
    """Each policy applied to the whole proposed log and audited: simulated cost (USD)."""
    out = {}
    for name in names:
        res = propose([log], AuditOptions(), lifetime=name)
        out[name] = res.after.scenarios["simulated"].cost
    return out


def _check(log, expect, every):
    res = propose([log], AuditOptions())
    ((_, choice),) = res.lifetimes.items()
    names = [c.policy.name for c in choice.ranked]
    if not every:
        names = names[:4]
    names = list(dict.fromkeys([*names, choice.current.policy.name]))
    brute = _brute(log, names)
    est = {c.policy.name: c.total for c in choice.ranked}
    est.setdefault(choice.current.policy.name, choice.current.total)
    for name in names:  # the optimiser's replay prices what the simulator simulates
        assert abs(est[name] - brute[name]) <= Decimal("0.01") * brute[name], (name, est[name], brute[name])
    cheapest = min(brute.values())
    assert brute[choice.best.policy.name] == cheapest, (choice.best.policy.name, brute)
    if expect == "keep-alive":
        assert choice.best.policy.pings > 0
    else:
        assert choice.best.policy.name == expect
    return res, choice


@pytest.mark.parametrize("dist", ["short", "pauses"])
def test_choice_matches_brute_force(dist, tmp_path):
    gaps, expect = GAPS[dist]
    _check(_log(tmp_path / f"{dist}.jsonl", gaps), expect, every=False)


@pytest.mark.slow
@pytest.mark.parametrize("dist", list(GAPS))
def test_choice_matches_brute_force_over_every_policy(dist, tmp_path):
    gaps, expect = GAPS[dist]
    _check(_log(tmp_path / f"{dist}.jsonl", gaps), expect, every=True)


@pytest.mark.slow
def test_openai_retention_matches_brute_force(tmp_path):
    """gpt-4.1 asked for ``in_memory`` keeps its cache about 10 minutes (the provider file's
    ``in_memory``); pauses of 12-25 minutes fit the extended retention's 30, which gpt-4.1 offers
    (gpt-4o-mini does not: tests/test_lifetimes.py)."""
    log = _log(tmp_path / "oa.jsonl", lambda r: r.uniform(720, 1500), model="gpt-4.1", anthropic=False)
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    log.write_text("".join(json.dumps({**r, "request": {**r["request"], "prompt_cache_retention": "in_memory"}}) + "\n"
                           for r in recs))
    _check(log, "24h", every=True)
    dest = tmp_path / "proposed.jsonl"
    propose([log], AuditOptions(), write=dest)
    assert {json.loads(x)["request"].get("prompt_cache_retention") for x in dest.read_text().splitlines()} == {"24h"}


def test_keepalive_requests_are_in_the_proposed_log(tmp_path):
    """With keep-alive chosen, the proposed log holds each keep-alive request: a copy of the
    request before it with no output (max_tokens 0), at 270 s steps, and its audit is the
    proposal's after."""
    log = _log(tmp_path / "hours.jsonl", GAPS["hours"][0], sessions=3, turns=3)
    dest = tmp_path / "proposed.jsonl"
    res = propose([log], AuditOptions(), write=dest)
    ((_, choice),) = res.lifetimes.items()
    k = choice.best.policy.pings
    assert k > 0
    out = [json.loads(x) for x in dest.read_text().splitlines()]
    pings = [r for r in out if r["request"].get("max_tokens") == 0]
    assert len(pings) == choice.best.pings
    assert len(out) == 9 + len(pings)
    times = [r["timestamp"] for r in out]
    assert times == sorted(times)
    again = audit([dest], AuditOptions())
    assert again.scenarios["simulated"].cost == res.after.scenarios["simulated"].cost
    assert again.scenarios["simulated"].cached_tokens == res.after.scenarios["simulated"].cached_tokens
