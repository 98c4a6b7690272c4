"""Proposals: template inference, content preserved, re-simulated savings, clean proposed logs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from promptcache.pipeline import AuditOptions, audit
from promptcache.content import canonical_json, extract_sentences
from promptcache.ingest import InputStats, read_requests
from promptcache.propose.engine import propose

from conftest import SAMPLES

FIXED = {"agent_timestamp": {"timestamp-in-prefix"}, "support_bot": {"user-data-before-shared"},
         "rag_app": {"documents-reordered"}, "anthropic_app": {"ttl-choice"}}


@pytest.fixture(scope="module")
def proposed(tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("proposed")
    for name in [*FIXED, "well_structured"]:
        dest = d / f"{name}.jsonl"
        out[name] = (propose([SAMPLES / f"{name}.jsonl"], AuditOptions(), write=dest), dest)
    return out


def atoms(req) -> Counter:
    """A request's content as a multiset: JSON parts canonically, text parts by sentence/line."""
    got: Counter = Counter()
    for p in req.parts:
        if p.kind in ("tool", "tool_call", "param"):
            got[canonical_json(p.text)] += 1
            continue
        for piece in re.split(r"(?<=[.!?])\s+|\n+", p.text):
            if piece.strip():
                got[piece.strip()] += 1
    return got


@pytest.mark.parametrize("name", list(FIXED))
def test_each_request_keeps_exactly_its_content(proposed, name):
    """Every proposed request holds all of its original's content; what it holds beyond it is
    what an earlier request of its conversation moved to a turn it re-sends (the moved text
    stays with its turn), so it comes from the log too."""
    res, dest = proposed[name]
    before = {r.source.line: r for r in read_requests(SAMPLES / f"{name}.jsonl", InputStats("x"))}
    after = {r.source.line: r for r in read_requests(dest, InputStats("y"))}
    assert len(after) == len(before)
    changed = 0
    seen: Counter = Counter()
    for line, r in sorted(before.items(), key=lambda kv: (kv[1].arrival or 0, kv[0])):
        a = after[line]
        assert not atoms(r) - atoms(a), f"{name}:{line}"
        extra = atoms(a) - atoms(r)
        assert not {k for k in extra if k not in seen}, f"{name}:{line}"
        seen.update(atoms(r))
        changed += [p.text for p in a.parts] != [p.text for p in r.parts] or a.parts != r.parts
    assert changed > 0 or name == "anthropic_app"  # the TTL change touches cache_control only


@pytest.mark.parametrize("name", list(FIXED))
def test_proposal_reaches_within_a_few_points_of_ideal(proposed, name):
    res, _ = proposed[name]
    after = res.after.scenarios
    assert after["simulated"].hit_ratio >= after["ideal"].hit_ratio - 0.04
    assert after["simulated"].hit_ratio > res.before.scenarios["simulated"].hit_ratio
    assert res.proposals and res.proposals[0].savings_usd > 0


def test_well_structured_gets_no_proposal(proposed):
    res, _ = proposed["well_structured"]
    assert res.proposals == []


@pytest.mark.parametrize("name", list(FIXED))
def test_proposed_log_audits_without_the_fixed_findings(proposed, name):
    _, dest = proposed[name]
    found = {f.rule.id for f in audit([dest], AuditOptions()).findings}
    assert not (found & FIXED[name]), found


def test_templates_name_their_slots(proposed):
    res, _ = proposed["agent_timestamp"]
    (p,) = res.proposals
    change = p.plan.changes[0]
    assert change.kind == "move-slots" and change.where == "messages[0].content"
    names = [s.name for part in p.plan.template.parts for s in part.slots]
    assert names[:2] == ["timestamp", "number"]
    res, _ = proposed["support_bot"]
    assert [s.name for part in res.proposals[0].plan.template.parts for s in part.slots] == ["user_data"] * 3


def test_moved_sentences_close_the_newest_user_turn(proposed):
    """The user's details leave the system prompt and end the newest user message, after a
    blank line: the message's own text, which the next turn re-sends, stays a prefix of it."""
    _, dest = proposed["support_bot"]
    first = json.loads(dest.read_text().splitlines()[0])
    system, user = first["messages"][0]["content"], first["messages"][1]["content"]
    assert "speaking with" not in system and system.startswith("You are Aria, the support assistant of Northwind Bank.")
    assert re.search(r"\n\nYou are speaking with [A-Z]\w+ [A-Z]\w+ \(customer id C-\d+, e-mail \S+@example\.com\)\.$", user)
    assert "usage" not in json.dumps(first)


def test_extract_sentences_keeps_every_character():
    text = "You are Aria. You are speaking with Ana (id 7). Address them by name."
    rest, moved = extract_sentences(text, [(text.index("Ana"), text.index("Ana") + 3)])
    assert moved == ["You are speaking with Ana (id 7)."]
    assert sorted(rest.replace(" ", "") + "".join(moved).replace(" ", "")) == sorted(text.replace(" ", ""))


def test_cli_propose_json():
    p = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(SAMPLES / "rag_app.jsonl"), "--propose",
                        "--format", "json", "--no-requests"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    (item,) = d["proposals"]
    assert set(item) >= {"template_id", "requests", "changes", "before", "after", "savings_usd"}
    assert item["changes"][0]["kind"] == "sort-documents" and set(item["changes"][0]) >= {"kind", "from", "to", "rationale"}
    assert set(item["before"]) == {"no_cache", "simulated", "ideal"} and item["savings_usd"] > 0


def _second_app(path, n=30):
    """Another application on the support bot's model with the same message layout: a
    conversation UUID opens its own, unrelated policy text."""
    import random
    import uuid

    rng = random.Random(3)
    words = "ledger invoice vendor payable remittance accrual variance approval threshold".split()
    policy = "\n".join(f"Rule {i}: " + " ".join(rng.choice(words) for _ in range(24)) + "." for i in range(60))
    with open(path, "w") as fh:
        for i in range(n):
            body = {"model": "gpt-4o-mini", "messages": [
                {"role": "system", "content": f"Conversation {uuid.UUID(int=rng.getrandbits(128), version=4)}.\n\n{policy}"},
                {"role": "user", "content": f"Question {i}: is invoice {1000 + i} payable?"}]}
            fh.write(json.dumps({"timestamp": 1_790_000_000 + 30 * i, "request": body}) + "\n")
    return path


def test_two_applications_on_one_model_stay_separate_templates(proposed, tmp_path):
    """Same model and layout, different prompts: two templates, each proposal exactly what it
    is for its log alone (same id, same re-simulated hit ratio), and no system prompt emptied."""
    other = _second_app(tmp_path / "ledger.jsonl")
    alone = {p.plan.template.id: p for p in propose([other], AuditOptions()).proposals}
    alone.update({p.plan.template.id: p for p in proposed["support_bot"][0].proposals})
    dest = tmp_path / "both.jsonl"
    both = propose([SAMPLES / "support_bot.jsonl", other], AuditOptions(), write=dest)
    got = {p.plan.template.id: p for p in both.proposals}
    assert len(got) == 2 and set(got) == set(alone)
    for tid, p in got.items():
        assert p.requests == alone[tid].requests
        assert p.after["simulated"].cached_tokens == alone[tid].after["simulated"].cached_tokens
    for r in read_requests(dest, InputStats("z")):
        system = [p.text for p in r.parts if p.kind == "system"]
        assert system and all(len(t) > 200 for t in system)


def test_two_formats_write_one_proposed_log(tmp_path):
    """An OpenAI chat log and an Anthropic log proposed together write one log, each record in
    its own format (the readers detect every record's format), and its audit gives the after
    figures the proposal printed."""
    dest = tmp_path / "both.jsonl"
    res = propose([SAMPLES / "support_bot.jsonl", SAMPLES / "anthropic_app.jsonl"], AuditOptions(), write=dest)
    again = audit([dest], AuditOptions())
    for name in ("no_cache", "simulated", "ideal"):
        a, b = res.after.scenarios[name], again.scenarios[name]
        assert (a.requests, a.prompt_tokens, a.cached_tokens, a.cost) == (b.requests, b.prompt_tokens, b.cached_tokens, b.cost)
    apis = Counter(r.api for r in read_requests(dest, InputStats("d")))
    assert apis["chat"] and apis["anthropic"]


def _anthropic_time_log(path, gap=60, sessions=4, turns=6):
    """Anthropic sessions with the time in the system prompt, and no cache_control."""
    import random

    rng = random.Random(5)
    words = [f"w{i}" for i in range(400)]
    system = "You are a coding agent. " + " ".join(rng.choices(words, k=900))
    out = []
    for sid in range(sessions):
        hist, recs = [], []
        for t in range(turns):
            hist.append({"role": "user", "content": " ".join(rng.choices(words, k=80))})
            recs.append({"timestamp": 1793000000 + sid * 7 + t * gap,
                         "request": {"model": "claude-sonnet-4-5", "max_tokens": 1024,
                                     "system": f"Current time: 2026-11-02T10:{t:02d}:{sid * 7:02d}Z.\n" + system,
                                     "messages": json.loads(json.dumps(hist))}})
            hist.append({"role": "assistant", "content": " ".join(rng.choices(words, k=80))})
        out.append(recs)
    lines = [json.dumps(r) for turn in zip(*out) for r in turn]
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_moving_the_time_without_a_breakpoint_is_completed_by_one(tmp_path):
    """Issue 21's opening case: an Anthropic app with the time in its system prompt and no
    cache_control. Moving the time alone saves nothing (Anthropic caches only at breakpoints);
    the plan adds them (an anchor after the system prompt, a marker on each turn's newest stable
    block), and re-simulated together the plan saves money and reaches the ideal after it."""
    log = tmp_path / "anthropic_time.jsonl"
    _anthropic_time_log(log)
    res = propose([log], AuditOptions())
    (p,) = res.proposals
    kinds = [c.kind for c in p.plan.changes if c.applied]
    assert kinds[:2] == ["move-slots", "add-breakpoints"]
    assert p.savings_usd > 0
    assert p.after["simulated"].cached_tokens >= 0.95 * p.after["ideal"].cached_tokens
    assert res.before.scenarios["simulated"].cached_tokens == 0


def test_a_proposal_that_costs_more_is_withdrawn(tmp_path):
    """A request every two days: a breakpoint would write the system prompt at 1.25x the input
    price and no later request could read it (no TTL or keep-alive bridges two days).
    Re-simulated, the plan costs more than it saves: it is withdrawn, and the proposed log is
    the log as it was."""
    log = tmp_path / "rare.jsonl"
    lines = _anthropic_time_log(log, gap=2 * 86400, sessions=1, turns=4)
    dest = tmp_path / "proposed.jsonl"
    res = propose([log], AuditOptions(), write=dest)
    assert res.proposals
    for p in res.proposals:
        assert not p.plan.applies and p.savings_usd == 0
        assert all("Withdrawn: re-simulated on this traffic it cost $" in c.rationale for c in p.plan.changes)
    assert res.after.scenarios["simulated"].cost == res.before.scenarios["simulated"].cost
    assert [json.loads(x) for x in dest.read_text().splitlines()] == [json.loads(x) for x in lines]


def test_written_log_of_two_inputs_audits_to_the_after(tmp_path):
    """Two inputs of one format: the proposed log is one file, in the audit's order (arrival,
    then file), gzipped for .gz, and its audit is the proposal's after."""
    other = _second_app(tmp_path / "ledger.jsonl")
    dest = tmp_path / "both.jsonl.gz"
    res = propose([SAMPLES / "support_bot.jsonl", other], AuditOptions(), write=dest)
    again = audit([dest], AuditOptions())
    for name in ("no_cache", "simulated", "ideal"):
        a, b = res.after.scenarios[name], again.scenarios[name]
        assert (a.requests, a.prompt_tokens, a.cached_tokens, a.cost) == (b.requests, b.prompt_tokens, b.cached_tokens, b.cost)
    import gzip

    from promptcache.ingest.fields import parse_time

    recs = [json.loads(x) for x in gzip.decompress(dest.read_bytes()).decode().splitlines()]
    times = [parse_time(r.get("timestamp", r.get("created_at"))) for r in recs]
    assert len(times) == res.after.scenarios["no_cache"].requests and times == sorted(times)


def test_a_file_mixing_anthropic_and_openai_bodies(tmp_path):
    """One file interleaving an Anthropic app (C40: the clock in ``system``) and an OpenAI app
    (C24: a token counter in the system message), by arrival: each record is read and rewritten
    in its own format (an Anthropic body keeps its ``system``; read as OpenAI chat it would lose
    it), and the proposal is the two apps' own proposals together."""
    cases = Path(__file__).parent / "data" / "cases"
    a = [json.loads(x) for x in (cases / "C40-home-agent-clock-reported-usage.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (cases / "C24-bub-token-usage-in-system-prompt.jsonl").read_text().splitlines()]
    mixed = sorted(a + b, key=lambda r: r["timestamp"])
    log = tmp_path / "mixed.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in mixed))
    from promptcache.propose import logio

    items, _ = logio.items([log], AuditOptions().read)
    assert [it.fmt for it in items] == ["anthropic" if "system" in r else "openai-chat" for r in mixed]
    dest = tmp_path / "proposed.jsonl"
    res = propose([log], AuditOptions(), write=dest)
    assert len(res.proposals) == 2
    assert all(any(c.kind == "move-slots" and c.applied for c in p.plan.changes) for p in res.proposals)
    for rec in (json.loads(x) for x in dest.read_text().splitlines()):
        if "system" in rec:
            text = "".join(x["text"] for x in rec["system"]) if isinstance(rec["system"], list) else rec["system"]
            assert "Current time is" not in text and "Hearth Home" in text
        else:
            system = rec["messages"][0]
            assert system["role"] == "system" and "Budget:" not in system["content"] and "Bubble Works" in system["content"]
    separate = [propose([cases / f"{c}.jsonl"], AuditOptions()) for c in
                ("C40-home-agent-clock-reported-usage", "C24-bub-token-usage-in-system-prompt")]
    for name in ("simulated", "ideal"):
        assert res.after.scenarios[name].cached_tokens == sum(s.after.scenarios[name].cached_tokens for s in separate)
    again = audit([dest], AuditOptions())
    assert again.scenarios["simulated"].cached_tokens == res.after.scenarios["simulated"].cached_tokens
