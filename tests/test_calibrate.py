"""Calibration recovers the parameters of synthetic logs generated under known rules.

The generator below is a literal prefix cache (every request stores its whole prompt and
refreshes every prefix it shares; a prefix is live while idle for at most TTL seconds; a read
is the live shared prefix floored to the granularity, none below the minimum), applied to
families of prompts whose shared prefix lengths and idle gaps are chosen around the parameters.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import yaml

from promptcache.calibrate import NOT_ENOUGH, Calibrator, load_overlay, write_overlay
from promptcache.model import Usage
from promptcache.simulate.rules import load_providers

RULES = load_providers()["openai"].rules_for("gpt-4o")     # documented: min 1,024, 128-token steps, 600 s


class Reference:
    """A literal prefix cache over token lists (min, granularity, ttl)."""

    def __init__(self, min_tokens: int, gran: int, ttl: float):
        self.min, self.g, self.ttl = min_tokens, gran, ttl
        self.seen: list[tuple[list[int], list[float]]] = []   # prompt, last use of each prefix length

    def read(self, toks: list[int], now: float) -> int:
        live = 0
        for other, last in self.seen:
            k = 0
            m = min(len(other), len(toks))
            while k < m and other[k] == toks[k]:
                k += 1
            # the longest L <= k whose last use is within the TTL (last use falls with depth)
            while k > 0 and now - last[k - 1] > self.ttl:
                k -= 1
            live = max(live, k)
        hit = (live // self.g) * self.g
        hit = hit if hit >= self.min else 0
        # every earlier prompt's prefixes shared with this one are used now
        for other, last in self.seen:
            k = 0
            m = min(len(other), len(toks))
            while k < m and other[k] == toks[k]:
                last[k] = now
                k += 1
        self.seen.append((toks, [now] * len(toks)))
        return hit


def synthetic(min_tokens: int, gran: int, ttl: float):
    """Requests (tokens, arrival, usage) around the parameters: pairs sharing s tokens one second
    apart for s around the minimum, and pairs sharing a long prefix at idle gaps around the TTL."""
    ref = Reference(min_tokens, gran, ttl)
    fam = itertools.count(1)
    t = 0.0
    out = []

    def pair(shared: int, gap: float):
        nonlocal t
        f = next(fam)
        base = [f * 10_000 + i for i in range(shared)]
        for j, at in enumerate((t, t + gap)):
            toks = base + [900_000_000 + len(out) * 10 + j, 7, 7]
            out.append((toks, at, Usage(len(toks), cache_read_tokens=ref.read(toks, at))))
        t += gap + 10 * ttl   # the next family starts long after (families never share tokens)

    for s in range(min_tokens - 2 * gran, min_tokens + 2 * gran, 7):
        pair(s, 1.0)
    for gap in range(int(ttl) - 20, int(ttl) + 21):
        pair(min_tokens + 3 * gran + 5, float(gap))
    return out


def calibrate(requests):
    c = Calibrator()
    for toks, at, usage in requests:
        units = np.asarray(toks, dtype="<u4").tobytes()
        c.add("openai/m", "openai", "m", RULES, units, 4, 1, len(toks), at, usage)
    (res,) = c.results()
    return res


@pytest.mark.parametrize("min_tokens,gran,ttl", [(1024, 128, 300), (2048, 64, 3600), (4096, 128, 300),
                                                 (1024, 64, 3600), (2048, 128, 300), (4096, 64, 3600)])
def test_recovers_known_rules(min_tokens, gran, ttl):
    res = calibrate(synthetic(min_tokens, gran, ttl))
    assert res.min_tokens.value == min_tokens                       # the smallest prefix ever cached
    assert min_tokens - gran <= res.min_tokens.low < min_tokens     # the longest shared prefix that never hit
    assert res.granularity.value == gran
    lo, hi = res.ttl_seconds.low, res.ttl_seconds.high
    assert lo == ttl and hi == ttl + 1                              # within one second
    assert res.ttl_seconds.requests > 0 and res.min_tokens.requests > 0


def test_disagreement_with_the_documented_rules_is_reported():
    res = calibrate(synthetic(2048, 64, 3600))                     # documented: 1,024 / 128 / 600
    text = " | ".join(res.disagreements)
    # the longest shared prefix that never hit: 2,046 tokens (pairs step by 7 from 1,920)
    assert "min_tokens: a 2,046-token shared prefix never hit where the rules cache from 1,024 (the log shows " \
           "2,047-2,048)" in text
    assert "granularity: reads come in 64-token units, not multiples of the documented 128" in text
    assert "ttl_seconds: a prefix still hit after 3,600 s idle where the rules expire it after 600 s" in text
    same = calibrate(synthetic(1024, 128, 600))
    assert same.disagreements == []


def test_not_enough_data():
    res = calibrate(synthetic(1024, 128, 300)[:2])                 # one pair: one hit at most
    assert res.min_tokens.value is None and res.min_tokens.note.startswith(NOT_ENOUGH)
    assert res.granularity.value is None and res.granularity.note.startswith(NOT_ENOUGH)
    assert res.ttl_seconds.value is None and res.ttl_seconds.note.startswith(NOT_ENOUGH)
    assert res.disagreements == []       # one pair below the documented minimum says nothing about the TTL
    hits_only = [r for r in synthetic(1024, 128, 300)]
    hits_only = hits_only[:len(hits_only) - 2 * 20]                 # drop the pairs past the TTL: no miss
    res = calibrate(hits_only)
    assert res.ttl_seconds.value is None and "no miss" in res.ttl_seconds.note and "at least 300 s" in res.ttl_seconds.note


def test_overlay_round_trip(tmp_path):
    res = calibrate(synthetic(2048, 64, 3600))
    path = tmp_path / "overlay.yaml"
    assert write_overlay([res], path, ["log.jsonl"]) == 1
    doc = yaml.safe_load(path.read_text())
    assert doc["kind"] == "promptcache-rules-overlay/v1" and doc["entries"][0]["min_tokens"] == 2048
    ov = load_overlay(path)
    r = ov.apply(RULES, "openai", "m")
    assert (r.min_tokens, r.granularity, r.ttl_seconds) == (2048, 64, 3600.0)
    assert ov.apply(RULES, "openai", "other") is RULES


def _chat_log(tmp_path, n: int = 2):
    """OpenAI Chat Completions records with reported usage (the OpenAI shape: prompt_tokens
    includes cached_tokens)."""
    import json

    sys_prompt = "You are a careful assistant. " * 300
    lines = []
    for i in range(n):
        lines.append(json.dumps({
            "request": {"model": "gpt-4o", "messages": [{"role": "system", "content": sys_prompt},
                                                        {"role": "user", "content": f"question {i}"}]},
            "response": {"id": f"c{i}", "model": "gpt-4o", "choices": [{"message": {"role": "assistant", "content": "ok"}}],
                         "usage": {"prompt_tokens": 1812, "completion_tokens": 1,
                                   "prompt_tokens_details": {"cached_tokens": 1792 if i else 0}}},
            "created_at": 1764547200 + 60 * i}))
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_cli_calibrate_json_and_overlay(tmp_path):
    import json

    from typer.testing import CliRunner

    from promptcache.cli import app

    log = _chat_log(tmp_path)
    r = CliRunner().invoke(app, ["audit", str(log), "--calibrate", "--format", "json"])
    assert r.exit_code == 0, r.output
    (cal,) = json.loads(r.stdout)["calibration"]
    assert cal["namespace"] == "openai/gpt-4o" and cal["requests"] == 2 and cal["requests_with_usage"] == 2
    assert cal["min_tokens"]["value"] is None and cal["min_tokens"]["note"].startswith(NOT_ENOUGH)
    assert cal["documented"]["min_tokens"] == 1024 and cal["disagreements"] == []
    # an overlay, hand-written in the format --write-overlay writes, replaces the documented rules
    ov = tmp_path / "overlay.yaml"
    ov.write_text(yaml.safe_dump({"kind": "promptcache-rules-overlay/v1", "checked": "2026-12-01", "source": ["x"],
                                  "entries": [{"provider": "openai", "match": ["gpt-4o"], "min_tokens": 2048,
                                               "granularity": 64, "ttl_seconds": 1200.0}]}))
    r = CliRunner().invoke(app, ["audit", str(log), "--rules-overlay", str(ov), "--format", "json"])
    assert r.exit_code == 0, r.output
    rules = json.loads(r.stdout)["rules"]["openai/gpt-4o"]
    assert (rules["min_tokens"], rules["granularity"]) == (2048, 64) and rules["source"].endswith("(calibrated)")
    out = tmp_path / "written.yaml"
    r = CliRunner().invoke(app, ["audit", str(log), "--write-overlay", str(out), "--format", "json"])
    assert r.exit_code == 0 and yaml.safe_load(out.read_text())["entries"] == []   # nothing the log could tell
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: other\n")
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(log), "--rules-overlay", str(bad)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "not a rules overlay" in p.stderr
    before = log.read_text()
    p = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(log), "--write-overlay", str(log)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and log.read_text() == before              # never over an input


def test_a_breakpoint_cache_is_judged_by_what_its_rules_serve(tmp_path):
    """Anthropic: requests with a breakpoint on their 3,100-token system block read it (as
    reported); title requests share the first ~1,800 of those tokens but carry no breakpoint, so
    they read nothing, as the documented rules say. Their misses are no evidence of a minimum
    above 1,024: before, calibration reported "a 1,816-token shared prefix never hit where the
    rules cache from 1,024"."""
    import json

    from promptcache.pipeline import AuditOptions, audit

    text = " ".join(f"word{i % 400} clause{i % 37}" for i in range(900))
    recs = []
    for k in range(8):
        marked = k % 2 == 0
        block = {"type": "text", "text": text if marked else text[:len(text) // 2] + " (title mode)"}
        if marked:
            block["cache_control"] = {"type": "ephemeral"}
        body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": [block],
                "messages": [{"role": "user", "content": f"question {k}"}]}
        usage = {"input_tokens": 20 if marked else 1600, "output_tokens": 1,
                 "cache_read_input_tokens": 3100 if marked and k else 0, "cache_creation_input_tokens": 3100 if k == 0 else 0}
        recs.append({"timestamp": 1_790_000_000 + 20 * k, "request": body,
                     "response": {"id": f"m{k}", "type": "message", "role": "assistant",
                                  "content": [{"type": "text", "text": "a"}], "usage": usage}})
    log = tmp_path / "anthropic.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = audit([log], AuditOptions(calibrate=True, diagnose=False))
    (c,) = res.calibration
    assert [o.cached_tokens for o in res.outcomes][1::2] == [0, 0, 0, 0]   # the title requests: nothing to serve
    assert c.min_tokens.value == 3100 and c.min_tokens.low is None and c.disagreements == []
