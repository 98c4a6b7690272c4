"""Each kind of change end to end: what it writes into the proposed log, that it keeps every
request's content, and what it does to the re-simulated cache reads."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from promptcache.content import canonical_json
from promptcache.ingest import InputStats, read_requests
from promptcache.pipeline import AuditOptions
from promptcache.propose.engine import propose

CASES = Path(__file__).parent / "data" / "cases"
WORDS = ("order parcel refund invoice account address courier warehouse ticket escalate confirm policy verify "
         "identity record window carrier label").split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _atoms(req) -> Counter:
    """A request's content as a multiset of sentences and lines (JSON canonically; a moved
    tool sentence without the ``[name tool]`` label that says where it came from)."""
    from promptcache.propose.observe import canonical_part

    got: Counter = Counter()
    for p in req.parts:
        if p.kind == "tool":  # its description is counted by sentence (:func:`_tool_sentences`)
            d = json.loads(p.text)
            d.pop("description", None)
            got[canonical_json(json.dumps(d))] += 1
            continue
        if p.kind in ("tool_call", "param") or (p.kind == "tool_result" and canonical_part(p.text)):
            got[canonical_part(p.text) or canonical_json(p.text)] += 1
            continue
        text = re.sub(r"\[\w+ tool\] ", "", p.text)
        for piece in re.split(r"(?<=[.!?;])\s+|\n+", text):
            if piece.strip():
                got[canonical_json(piece.strip())] += 1
    return got


def _tool_atoms(req) -> Counter:
    """The atoms of a request's tool definitions alone."""
    from promptcache.model import Request

    return _atoms(Request(req.id, req.source, req.format, req.api, req.provider, req.model, req.arrival,
                          tuple(p for p in req.parts if p.kind == "tool"))) + _tool_sentences(req)


def _tool_sentences(req) -> Counter:
    out: Counter = Counter()
    for p in req.parts:
        if p.kind == "tool":
            d = json.loads(p.text)
            for piece in re.split(r"(?<=[.!?])\s+", d.get("description", "")):
                if piece.strip():
                    out[piece.strip()] += 1
    return out


@pytest.mark.parametrize("case", sorted(p.name[:-6] for p in CASES.glob("C*.jsonl")))
def test_cases_keep_every_requests_content_and_the_providers_limits(case, tmp_path):
    """Every proposed request holds its original's sentences, and beyond them only sentences
    of earlier requests of the log (the text a plan moved to a turn it re-sends; history kept
    append-only between cuts) or, with one tool set, the template's other tools; it may lack some of its own only where the plan keeps a rewritten
    history (a window's front, a summary, cleared tool results); it carries at most the
    provider's breakpoints, longer TTLs first."""
    dest = tmp_path / "p.jsonl"
    res = propose([CASES / f"{case}.jsonl"], AuditOptions(cache_model="vllm" if case.startswith("C03") else None),
                  write=dest)
    before = list(read_requests(CASES / f"{case}.jsonl", InputStats("a")))
    after = [r for r in read_requests(dest, InputStats("b")) if r.id.split("+keepalive")[0] == r.id]
    assert len(after) == len(before)
    cut = any(c.applied and c.kind == "history-batches" for p in res.proposals for c in p.plan.changes)
    seen: Counter = Counter()
    union = any(c.applied and c.kind == "tool-set-union" for p in res.proposals for c in p.plan.changes)
    tools = {k for r in before for k in _tool_atoms(r)} if union else set()  # every tool, in every request
    for a, b in zip(before, after):
        ta, tb = _atoms(a) + _tool_sentences(a), _atoms(b) + _tool_sentences(b)
        assert not {k for k in tb - ta if k not in seen and k not in tools}, (case, a.source.line, tb - ta)
        if not cut:
            assert not ta - tb, (case, a.source.line, ta - tb)
        seen.update(ta)
        marks = [p.breakpoint for p in b.parts if p.breakpoint is not None]
        limit = res.after.rules[next(iter(res.after.rules))].max_breakpoints
        if limit is not None:
            assert len(marks) <= limit
        ttls = [m.ttl_seconds or 300 for m in marks]
        assert ttls == sorted(ttls, reverse=True)


def test_tool_result_turns_are_marked(tmp_path):
    """C11: the last block of each request is a turn of tool results; the plan marks it."""
    dest = tmp_path / "p.jsonl"
    res = propose([CASES / "C11-redpanda-no-marker-on-tool-result.jsonl"], AuditOptions(), write=dest)
    assert [c.kind for p in res.proposals for c in p.plan.changes] == ["mark-tool-results"]
    for line in dest.read_text().splitlines():
        last = json.loads(line)["messages"][-1]["content"][-1]
        assert last["type"] == "tool_result" and last["cache_control"] == {"type": "ephemeral"}


def test_breakpoint_window_covers_turns_longer_than_the_lookback(tmp_path):
    """C09: each request adds 24 blocks, more than the 20-block lookback: the window puts a
    marker every 20 blocks back from the newest, so a request's markers reach the previous
    request's newest one, and every request after the first reads it."""
    dest = tmp_path / "p.jsonl"
    res = propose([CASES / "C09-axonhub-moving-breakpoint.jsonl"], AuditOptions(), write=dest)
    reqs = list(read_requests(dest, InputStats("x")))
    for r in reqs:
        idx = [i for i, p in enumerate(r.parts) if p.breakpoint is not None]
        assert idx[0] == 4 and idx[-1] == len(r.parts) - 1  # the anchor (system[0]), the newest block
        assert len(idx) == min(4, 2 + (len(r.parts) - 1 - 5) // 20)
        assert all(b - a == 20 for a, b in zip(idx[1:], idx[2:]))
    outs = res.after.outcomes
    assert all(o.cached_tokens >= outs[i - 1].prompt_tokens - 10 for i, o in enumerate(outs) if i)


def _summary_log(path: Path, anthropic: bool) -> None:
    """An agent runtime's prompt (the persistent-agent-runtime layout: platform system prompt,
    the compaction summary, the user's system prompt), the summary in the middle and rewritten
    at each compaction (every third turn); content invented."""
    rng = random.Random(21)
    platform = "You are the platform agent. " + _text(rng, 700) + "."
    instructions = "User instructions: " + _text(rng, 700) + "."
    records = []
    for s in range(4):
        hist: list[dict] = []
        for k in range(6):
            summary = f"Summary of the conversation so far: session {s} phase {k // 3}: " + _text(rng, 60) + "."
            hist.append({"role": "user", "content": f"Session {s} turn {k}: " + _text(rng, 30) + "."})
            if anthropic:
                body = {"model": "claude-sonnet-4-5", "max_tokens": 512,
                        "system": [{"type": "text", "text": platform}, {"type": "text", "text": summary},
                                   {"type": "text", "text": instructions}], "messages": json.loads(json.dumps(hist))}
            else:
                body = {"model": "gpt-5.1", "messages": [{"role": "system", "content": platform},
                                                         {"role": "system", "content": summary},
                                                         {"role": "system", "content": instructions},
                                                         *json.loads(json.dumps(hist))]}
            records.append({"timestamp": 1_793_000_000 + 100 * k + 7 * s, "request": body})
            hist.append({"role": "assistant", "content": "Done: " + _text(rng, 30) + "."})
    records.sort(key=lambda r: r["timestamp"])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("anthropic", [False, True])
def test_compaction_summary_goes_after_stable_content(tmp_path, anthropic):
    log, dest = tmp_path / "s.jsonl", tmp_path / "p.jsonl"
    _summary_log(log, anthropic)
    res = propose([log], AuditOptions(), write=dest)
    (p,) = res.proposals
    assert "summary-after-stable" in [c.kind for c in p.plan.changes if c.applied]
    for line in dest.read_text().splitlines():
        body = json.loads(line)["request"]
        if anthropic:
            texts = [b["text"] for b in body["system"]]
            assert texts[0].startswith("You are the platform agent") and texts[1].startswith("User instructions")
            assert texts[2].startswith("Summary of the conversation")
            assert "cache_control" in body["system"][1] and "cache_control" not in body["system"][2]
        else:
            assert [m["content"][:10] for m in body["messages"][:3]] == ["You are th", "User instr", "Summary of"]
    assert p.after["simulated"].cached_tokens > p.before["simulated"].cached_tokens
    assert p.after["simulated"].cached_tokens >= 0.95 * p.after["ideal"].cached_tokens


def test_cache_key_per_conversation(tmp_path):
    """Two conversations whose requests each carry a new uuid4 prompt_cache_key: the plan keys
    each conversation once (a fingerprint of its first message, the log naming no session)."""
    import uuid

    rng = random.Random(3)
    system = "You are a reflection worker. " + _text(rng, 1500) + "."
    log, dest = tmp_path / "k.jsonl", tmp_path / "p.jsonl"
    recs = []
    for s in range(2):
        hist: list[dict] = []
        for k in range(4):
            hist.append({"role": "user", "content": f"conversation {s} question {k}: " + _text(rng, 20)})
            recs.append({"timestamp": 1_793_000_000 + 8 * k + 3 * s, "request": {
                "model": "gpt-5-codex", "prompt_cache_key": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "messages": [{"role": "system", "content": system}, *json.loads(json.dumps(hist))]}})
            hist.append({"role": "assistant", "content": "answer " + _text(rng, 20)})
    recs.sort(key=lambda r: r["timestamp"])
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = propose([log], AuditOptions(), write=dest)
    assert "cache-key" in [c.kind for p in res.proposals for c in p.plan.changes if c.applied]
    keys: dict[str, set] = {}
    for line in dest.read_text().splitlines():
        body = json.loads(line)["request"]
        conv = body["messages"][1]["content"].split(" question")[0]
        keys.setdefault(conv, set()).add(body["prompt_cache_key"])
    assert len(keys) == 2 and all(len(v) == 1 for v in keys.values())
    assert len(set().union(*keys.values())) == 2
    assert res.after.scenarios["simulated"].cached_tokens > res.before.scenarios["simulated"].cached_tokens


def test_pin_routing_writes_one_upstream(tmp_path):
    """A template whose conversations a router spread over upstreams (Request.response.upstream,
    as the ingest readers fill it; built here) in namespaces that carry the upstream: the plan
    pins the most used one."""
    from dataclasses import replace

    from promptcache.model import Part, Request, Response, Source
    from promptcache.propose.observe import TemplateStats
    from promptcache.propose.plan import Plan, _routing
    from promptcache.propose.rewrite import Rewriter
    from promptcache.propose.templates import TemplateIndex

    ix = TemplateIndex()
    req = Request("r", Source("x", 1), "openai-chat", "chat", "openai", "gpt-5.1", 1.0,
                  (Part("system", "messages[0].content", "sys " * 50, "system", 0),
                   Part("user", "messages[1].content", "q", "user", 1)), response=Response(upstream="Fireworks"))
    ix.add(req, "openai/gpt-5.1")
    (t,) = ix.templates().values()
    st = TemplateStats(requests=3, provider="openai", upstreams=Counter(Fireworks=2, Together=1), spread=1, routed=3)
    plan = Plan(t, st, "chat")
    _routing(plan)
    assert plan.pin == "Fireworks" and [c.kind for c in plan.changes] == ["pin-routing"]
    rw = Rewriter({t.key: plan}, ix, lambda rec, r: replace(r))
    rec = {"model": "gpt-5.1", "messages": [{"role": "system", "content": "sys " * 50}, {"role": "user", "content": "q"}],
           "provider": {"sort": "price"}}
    got = rw.rewrite(rec, req)
    assert got.changed and got.record["provider"] == {"sort": "price", "order": ["Fireworks"], "allow_fallbacks": False}
    assert rec["provider"] == {"sort": "price"}  # the logged record is left as it is


def test_memories_in_varying_order_are_sorted(tmp_path):
    """Memories from a similarity search, the same set in another order on every turn (Open
    WebUI's [User Memory] section): sorted within their section, they make one system prompt."""
    rng = random.Random(8)
    notes = [f"Memory {c}: the user likes {w}." for c, w in zip("ABCDEF", ("trains", "cabins", "lakes", "markets",
                                                                         "museums", "hiking"))]
    head = "You are a local assistant. " + _text(rng, 1300) + ".\n\n[User Memory]\n"
    log, dest = tmp_path / "m.jsonl", tmp_path / "p.jsonl"
    hist: list[dict] = []
    recs = []
    for k in range(6):
        order = notes[:]
        rng.shuffle(order)
        hist.append({"role": "user", "content": f"question {k}: " + _text(rng, 20)})
        recs.append({"timestamp": 1_793_000_000 + 30 * k, "request": {"model": "gpt-5.1", "messages": [
            {"role": "system", "content": head + "\n".join(order) + "\n\nAnswer briefly."},
            *json.loads(json.dumps(hist))]}})
        hist.append({"role": "assistant", "content": "answer " + _text(rng, 20)})
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = propose([log], AuditOptions(), write=dest)
    (p,) = res.proposals
    assert [c.kind for c in p.plan.changes if c.applied] == ["sort-items"]
    systems = {json.loads(x)["request"]["messages"][0]["content"] for x in dest.read_text().splitlines()}
    assert systems == {head + "\n".join(sorted(notes)) + "\n\nAnswer briefly."}
    assert p.after["simulated"].cached_tokens >= 0.95 * p.after["ideal"].cached_tokens
