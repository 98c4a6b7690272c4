"""Routing in proposals, end to end on logs in the record shapes real producers write:
``pin-routing`` simulated where the router keeps one cache per upstream, and a
``prompt_cache_key`` derived from the session identity each producer's records carry.

Shapes: the gateway record of tests/data/cases/C31 (``{request, response: {id: "gen-…",
provider}}``, jeffdafoe/llm-memory-api PR #269), Portkey's logs export, Helicone's export,
LiteLLM's spend logs and OpenRouter's generation stats (tests/data/formats/README.md names the
source of each). The expected figures are built independently: the log pinned by hand and
audited, the key computed from the session each record names.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path


from promptcache.ingest import InputStats, read_requests
from promptcache.pipeline import AuditOptions, audit
from promptcache.propose.engine import propose
from promptcache.propose.identity import derived_key

DATA = Path(__file__).parent / "data"
C31 = DATA / "cases" / "C31-openrouter-upstream-hosts.jsonl"
FORMATS = DATA / "formats"


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _c31(model: str | None = None) -> list[dict]:
    recs = [json.loads(x) for x in C31.read_text().splitlines()]
    if model:
        for r in recs:
            r["request"]["model"] = model
    return recs


def test_pin_routing_is_simulated_behind_openrouter(tmp_path):
    """C31's requests named as OpenRouter's (``openrouter/`` slug): the router's rules keep one
    cache per upstream, so the two requests served by a new host (GMICloud, Baidu) and the one
    after a move read nothing. Pinned to DeepInfra (two of five), every request after the first
    reads its predecessor there: the after figures are the audit of the log pinned by hand."""
    log = _jsonl(tmp_path / "or.jsonl", _c31("openrouter/deepseek/deepseek-v4-flash"))
    dest = tmp_path / "proposed.jsonl"
    res = propose([log], AuditOptions(), write=dest)
    assert len({o.namespace for o in res.before.outcomes}) == 3
    (p,) = res.proposals
    (c,) = [c for c in p.plan.changes if c.kind == "pin-routing"]
    assert c.applied and "Simulated" in c.rationale and '"DeepInfra"' in c.after
    by_hand = _c31("openrouter/deepseek/deepseek-v4-flash")
    for r in by_hand:
        r["response"]["provider"] = "DeepInfra"
        r["response"].pop("usage")
    pinned = audit([_jsonl(tmp_path / "by_hand.jsonl", by_hand)], AuditOptions())
    assert [o.cached_tokens for o in res.after.outcomes] == [o.cached_tokens for o in pinned.outcomes]
    assert {o.namespace for o in res.after.outcomes} == {o.namespace for o in pinned.outcomes}
    assert all(o.namespace.endswith("/upstream=DeepInfra") for o in res.after.outcomes)
    # before: only the requests that stayed on their predecessor's host read (2 of 4 after the first)
    assert sum(o.cached_tokens > 0 for o in res.before.outcomes) == 2
    assert sum(o.cached_tokens > 0 for o in res.after.outcomes) == 4
    assert res.after.scenarios["simulated"].cached_tokens > res.before.scenarios["simulated"].cached_tokens
    for line in dest.read_text().splitlines():
        rec = json.loads(line)
        assert rec["request"]["provider"] == {"order": ["DeepInfra"], "allow_fallbacks": False}
        assert rec["response"]["provider"] == "DeepInfra" and "usage" not in rec["response"]
    again = audit([dest], AuditOptions())
    assert again.scenarios["simulated"].cached_tokens == res.after.scenarios["simulated"].cached_tokens


def test_generation_stats_beside_the_log_change_nothing(tmp_path):
    """OpenRouter's generation stats (usage only, no prompt) read beside the request log are
    usage-only records: the proposal and its after figures are the log's alone."""
    log = _jsonl(tmp_path / "or.jsonl", _c31("openrouter/deepseek/deepseek-v4-flash"))
    alone = propose([log], AuditOptions())
    both = propose([log, FORMATS / "openrouter_generation_stats.jsonl"], AuditOptions())
    assert both.before.inputs[1].requests == 0 and both.before.inputs[1].usage_only == 7
    assert [c.to_record() for p in both.proposals for c in p.plan.changes] == \
           [c.to_record() for p in alone.proposals for c in p.plan.changes]
    assert both.after.scenarios["simulated"].cached_tokens == alone.after.scenarios["simulated"].cached_tokens


def test_pin_routing_is_advice_where_no_router_is_named(tmp_path):
    """C31 as logged (a ``deepseek/…`` slug, no router named): DeepSeek's rules keep one cache
    for every host, so the simulation cannot show the pin; the change is advice, quoting what
    the reported usage lost to the moves (the diagnosis's routed-elsewhere row), and the
    written log carries no OpenRouter field."""
    dest = tmp_path / "proposed.jsonl"
    res = propose([C31], AuditOptions(), write=dest)
    (c,) = [c for p in res.proposals for c in p.plan.changes if c.kind == "pin-routing"]
    assert not c.applied and "Not simulated" in c.rationale
    (row,) = [r for r in res.before.accounting.rows if r.rule == "routed-elsewhere"]
    assert abs(row.tokens - 3328) <= 333  # the corpus's hand count (tests/data/corpus.yaml)
    assert f"{row.tokens:,} tokens lost to the moves" in c.rationale
    assert all("provider" not in json.loads(x)["request"] for x in dest.read_text().splitlines())


def _keyed(records: list[dict], body_key: str) -> list[dict]:
    """A uuid4-like ``prompt_cache_key`` per request (tests/data/cases/C18), where the record
    keeps its request body."""
    for i, r in enumerate(records):
        body = r[body_key]
        text = isinstance(body, str)
        b = json.loads(body) if text else body
        b["prompt_cache_key"] = str(uuid.UUID(int=0x5EED0000 + i))
        r[body_key] = json.dumps(b) if text else b
    return records


def _sessions_keys(res, dest: Path) -> dict[str, set[str]]:
    """Each session's proposed keys, from the written log."""
    out: dict[str, set[str]] = {}
    for r in read_requests(dest, InputStats("p")):
        out.setdefault(r.session, set()).add(r.cache_key)
    return out


def _check_keys(res, dest: Path, sessions: list[str], ident=lambda s: f"session:{s}") -> None:
    (p,) = res.proposals
    assert [c.kind for c in p.plan.changes if c.applied] == ["cache-key"]
    tid = p.plan.template.id
    keys = _sessions_keys(res, dest)
    assert keys == {s: {derived_key(tid, ident(s))} for s in sessions}
    assert res.before.scenarios["simulated"].cached_tokens == 0  # a cache of its own per request
    assert res.after.scenarios["simulated"].cached_tokens > 0


def test_cache_key_from_portkeys_trace_id(tmp_path):
    """Portkey's logs export: ``trace_id`` names the session (the reader's ``session``); the
    user in ``metadata`` (``portkey._user``) names a person and is no conversation."""
    recs = _keyed([json.loads(x) for x in (FORMATS / "portkey_logs_export.jsonl").read_text().splitlines()],
                  "request.body")
    dest = tmp_path / "proposed.jsonl"
    res = propose([_jsonl(tmp_path / "portkey.jsonl", recs)], AuditOptions(), write=dest)
    _check_keys(res, dest, ["sess-a1", "sess-b2"])


def test_cache_key_from_helicones_session_property(tmp_path):
    """Helicone's export (``npx @helicone/export``) of OpenAI traffic: the session is the
    ``Helicone-Session-Id`` property; the request body is the one sent to OpenAI."""
    recs = [json.loads(x) for x in (FORMATS / "helicone_export.jsonl").read_text().splitlines()]
    chat = [json.loads(x)["request.body"] for x in (FORMATS / "portkey_logs_export.jsonl").read_text().splitlines()]
    for r, body in zip(recs, chat):
        r["request_body"] = body
        r["model"] = r["response_model"] = "gpt-4.1-mini"
        r["provider"] = "OPENAI"
        r.pop("response_body", None)
    recs = _keyed(recs, "request_body")
    dest = tmp_path / "proposed.jsonl"
    res = propose([_jsonl(tmp_path / "helicone.jsonl", recs)], AuditOptions(), write=dest)
    assert [r.session for r in read_requests(dest, InputStats("h"))][:2] == ["sess-a1", "sess-b2"]
    _check_keys(res, dest, ["sess-a1", "sess-b2"])


def test_cache_key_from_litellms_session_id(tmp_path):
    """LiteLLM's spend logs: ``session_id`` names the session, ``user`` a person (kept out of the
    key); the stored body (``proxy_server_request``, JSON text) carries the key."""
    recs = [json.loads(x) for x in (FORMATS / "litellm_spend_logs.jsonl").read_text().splitlines()]
    for r in recs:
        r["model"] = "gpt-4.1-mini"
        psr = json.loads(r["proxy_server_request"])
        psr["model"] = "gpt-4.1-mini"
        r["proxy_server_request"] = json.dumps(psr)
    recs = _keyed(recs, "proxy_server_request")
    log = _jsonl(tmp_path / "litellm.jsonl", recs)
    assert {r.affinity.get("user") for r in read_requests(log, InputStats("l"))} <= {"user-17", None}
    dest = tmp_path / "proposed.jsonl"
    res = propose([log], AuditOptions(), write=dest)
    _check_keys(res, dest, ["sess-a1", "sess-b2"])


def test_cache_key_from_a_session_affinity_header(tmp_path):
    """A gateway record that logged the request headers: ``x-session-affinity`` names the
    conversation (OpenRouter's and Fireworks' session header), so it wins over the first
    message; two conversations that open alike still get two keys."""
    recs = _c31()
    for i, r in enumerate(recs):
        r["request"]["model"] = "gpt-4.1"
        r["request"]["prompt_cache_key"] = str(uuid.UUID(int=i + 1))
        r["headers"] = {"X-Session-Affinity": "conv-1" if i < 3 else "conv-2"}
        r.pop("response")
    dest = tmp_path / "proposed.jsonl"
    res = propose([_jsonl(tmp_path / "hdr.jsonl", recs)], AuditOptions(), write=dest)
    (p,) = res.proposals
    tid = p.plan.template.id
    got = [r.cache_key for r in read_requests(dest, InputStats("x"))]
    want = [derived_key(tid, "x-session-affinity:conv-1")] * 3 + [derived_key(tid, "x-session-affinity:conv-2")] * 2
    assert got == want
