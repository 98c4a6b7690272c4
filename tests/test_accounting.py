"""Loss accounting and the diagnosis that feeds it: every lost token goes to one cause, the
reports show the table, the single-slot engine, the provider's own verdict beside the located
cause, and causes only the reported usage shows."""

from __future__ import annotations

import io
from decimal import Decimal
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from promptcache.diagnose.accounting import UNEXPLAINED, build
from promptcache.ingest import ReadOptions, read_requests
from promptcache.ingest import InputStats
from promptcache.model import CacheVerdict, Response
from promptcache.pipeline import AuditOptions, Pipeline, audit, run
from promptcache.report.audit_records import audit_record
from promptcache.report.audit_text import render_findings
from promptcache.report.html import render_html
from promptcache.report.markdown import render_markdown
from promptcache.simulate import Prompt, Simulator, RequestRef
from promptcache.simulate.rules import load_providers
from promptcache.simulate.slots import SlotSim

from conftest import units

FILLER = "Refunds go to the original payment method within five business days. " * 120


def _chat(t: float, msgs: list, **extra) -> dict:
    return {"timestamp": t, "request": {"model": "gpt-4o", "prompt_cache_key": "conv-1", "messages": msgs}, **extra}


def _text(res) -> str:
    buf = io.StringIO()
    render_findings(res, Console(file=buf, width=200, color_system=None))
    return buf.getvalue()


# ------------------------------------------------------------------ the table and the reports

def test_unexplained_reported_loss_is_a_row_and_no_report_says_no_causes(tmp_log):
    """The simulation serves what the log reports as uncached, with nothing to explain it (a
    stable key, no pause, the same parameters): an unexplained row of exactly those tokens, and
    every format says so."""
    sys = {"role": "system", "content": FILLER}
    usage = lambda cached: {"usage": {"prompt_tokens": 1400, "completion_tokens": 5,
                                      "prompt_tokens_details": {"cached_tokens": cached}}}
    recs = [_chat(0, [sys, {"role": "user", "content": "Hi"}], response={"id": "a", **usage(0)}),
            _chat(5, [sys, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
                      {"role": "user", "content": "More"}], response={"id": "b", **usage(0)})]
    res = audit([tmp_log(recs)], AuditOptions())
    sim = res.outcomes[1].cached_tokens
    assert sim > 0 and res.outcomes[1].usage.cache_read_tokens == 0
    acc = res.accounting
    assert acc.gaps["reported"] == sim
    (row,) = [r for r in acc.rows if r.gap == "reported"]
    assert (row.rule, row.tokens, row.requests, row.line) == (UNEXPLAINED.id, sim, 1, 2)
    # the evidence there is: the model, the prompt's size, request 2 only appends to request 1,
    # and the log reports nothing cached on it
    assert row.evidence == {"miss_reasons": {"reported below simulated": 1}, "models": ["gpt-4o"],
                            "prompt_tokens_band": f"{res.outcomes[1].prompt_tokens:,}",
                            "prefix_unchanged_requests": 1, "reported_zero_requests": 1}
    assert not [f for f in res.findings if f.tokens_lost]  # no rule claims it
    text = _text(res)
    assert "No cache-breaking causes found" not in text and "unexplained" in text
    rec = audit_record(res, detail=True)
    assert rec["accounting"]["gaps"]["reported"]["tokens"] == sim
    assert sum(r["tokens"] for r in rec["accounting"]["rows"] if r["gap"] == "reported") == sim
    json.dumps(rec)  # serialisable
    md = render_markdown(rec)
    assert "Where the lost tokens go" in md and "No cache-breaking causes found" not in md
    html = render_html(rec)
    assert 'id="accounting"' in html and "No cache-breaking causes found" not in html


def test_a_log_without_losses_says_no_causes_and_has_no_rows(tmp_log):
    recs = [_chat(0, [{"role": "system", "content": "You are Helper."}, {"role": "user", "content": "Hi"}])]
    res = audit([tmp_log(recs)], AuditOptions(cache_model="sglang"))
    assert res.accounting.total_tokens == 0 and res.accounting.rows == []
    assert "No cache-breaking causes found" in _text(res)


def test_build_groups_by_gap_and_cause():
    from promptcache.diagnose.findings import Candidate
    from promptcache.diagnose.rules import resolve

    ttl = resolve("ttl-expired")
    c = lambda rule, gap, idx, n, reason=None: Candidate(rule, ("k",), idx, "log", idx + 1, None, None, None, {}, n, None,
                                                         {"reason": reason} if reason else {}, gap)
    acc = build([c(ttl, "rules", 1, 10), c(ttl, "rules", 3, 5), c(UNEXPLAINED, "rules", 2, 7, "evicted"),
                 c(ttl, None, 4, 0)])
    assert acc.gaps == {"content": 0, "rules": 22, "reported": 0}
    assert [(r.rule, r.tokens, r.requests, r.line) for r in acc.rows] == [("ttl-expired", 15, 2, 2), ("unexplained", 7, 1, 3)]
    assert acc.rows[1].evidence == {"miss_reasons": {"evicted": 1}}


# ------------------------------------------------------------------ the provider's own verdict

def test_the_provider_verdict_is_shown_beside_the_located_cause(tmp_log):
    """Requests built here (the readers fill Response.verdict later): the Anthropic verdict of
    the second request appears in the evidence of the cause located for it."""
    sys_a = "Session 1b4e28ba-2fa1-41d2-883f-0016d3cca427. " + FILLER
    sys_b = "Session 6fa459ea-ee8a-4ca4-894e-db77e160355e. " + FILLER
    path = tmp_log([{"timestamp": 0, "model": "gpt-4o", "messages": [{"role": "system", "content": s},
                                                                    {"role": "user", "content": "Hi"}]}
                    for s in (sys_a, sys_b)])
    st = InputStats(str(path))
    reqs = list(read_requests(path, st, ReadOptions()))
    verdict = CacheVerdict("anthropic", "cache_miss", "system_changed", missed_tokens=812)
    reqs[1] = replace(reqs[1], response=Response(id="msg_2", verdict=verdict))
    res = run(Pipeline.from_requests(reqs, AuditOptions()))
    f = next(f for f in res.findings if f.rule.id == "uuid-in-prefix")
    assert f.evidence["provider_verdict"] == "anthropic: cache_miss (system_changed), 812 tokens missed"
    assert "provider says: anthropic: cache_miss (system_changed)" in _text(res)


# ------------------------------------------------------------------ the single-slot engine

def _p(ids: list[int]) -> Prompt:
    return Prompt(units(ids), 4, 1, len(ids))


def test_one_slot_alternating_conversations_evict_each_other():
    rules = load_providers()["llamacpp"].rules_for("llama3.1:8b")
    assert (rules.mode, rules.slots, rules.max_hit_offset) == ("slots", 1, 1)
    a, b = list(range(100)), list(range(1000, 1100))
    sim = SlotSim(rules, 4, 1)
    assert sim.step(_p(a), 0)[0] == 0
    assert sim.step(_p(a + [7, 8]), 1)[0] == 100          # extends the slot: all 100 reused
    assert sim.step(_p(b), 2)[0] == 0                     # another conversation takes the slot
    assert sim.step(_p(a + [7, 8, 9]), 3)[0] == 0         # ... so the first one is gone
    assert sim.step(_p(a + [7, 8, 9]), 4)[0] == 102       # identical: one token evaluated anyway
    two = SlotSim(replace(rules, slots=2), 4, 1)
    two.step(_p(a), 0), two.step(_p(b), 1)
    assert two.step(_p(a + [7]), 2)[0] == 100             # two slots: each conversation keeps its own


def test_slot_eviction_is_named_with_its_tokens(tmp_log):
    agent = [{"role": "system", "content": "Agent. " + FILLER}, {"role": "user", "content": "Task one."}]
    title = [{"role": "system", "content": "Write a title."}, {"role": "user", "content": "Task one."}]
    recs = [{"timestamp": 0, "model": "m", "messages": agent}, {"timestamp": 5, "model": "m", "messages": title},
            {"timestamp": 9, "model": "m", "messages": agent + [{"role": "assistant", "content": "Done."},
                                                                 {"role": "user", "content": "Next."}]}]
    res = audit([tmp_log(recs)], AuditOptions(cache_model="llamacpp"))
    third = res.outcomes[2]
    # the slot holds the title request: only the system header's framing is shared with it
    assert third.cached_tokens < 20 and third.shared_prefix_tokens > 500 and third.miss_reason == "evicted"
    (f,) = [f for f in res.findings if f.rule.id == "slot-evicted"]
    assert f.tokens_lost == third.shared_prefix_tokens - third.cached_tokens and f.requests == 1


def test_headline_cache_rules_is_the_accounting_rows_sum(tmp_log):
    """Trial s02/s06: the headline said "$0.2956 to the cache rules" (simulated minus ideal
    scenario cost) while the accounting's cache-rules row said $0.2696. Now both are the rules
    gap's rows; the scenario difference is its own, labelled figure.

    Two Anthropic requests share the ~529-token system prompt under a breakpoint, below the
    1,024-token minimum: the simulated rules neither read nor write it, the ideal cache reads it.
    Each of those tokens is billed at the full $3.00/M instead of the $0.30/M read price:
    shared × $2.70/M (529 × 2.70e-6 = $0.0014283 when the tokenizer counts 529)."""
    stable = "Refunds go to the original payment method within five business days. " * 40
    recs = [{"timestamp": t, "model": "claude-sonnet-4-5", "max_tokens": 100,
             "system": [{"type": "text", "text": stable, "cache_control": {"type": "ephemeral"}}],
             "messages": [{"role": "user", "content": q}]}
            for t, q in ((0, "Where is my refund for order 1?"), (5, "Can I return shoes?"))]
    res = audit([tmp_log(recs)], AuditOptions())
    second = res.outcomes[1]
    assert second.cached_tokens == 0 and second.write_tokens == 0 and second.miss_reason == "below_min"
    shared = second.shared_prefix_tokens
    assert 500 < shared < 560
    want = shared * Decimal("2.70") / 1_000_000
    [row] = res.accounting.rows
    assert (row.rule, row.tokens, row.cost_usd) == ("below-minimum", shared, want)
    sav = audit_record(res, include_requests=False)["summary"]["savings_usd"]
    assert sav["cache_rules"] == pytest.approx(float(want), abs=1e-6)
    assert sav["left_on_table"] == pytest.approx(float(want), abs=1e-6)
    sc = res.scenarios
    assert sav["simulated_vs_ideal"] == pytest.approx(float(sc["simulated"].cost - sc["ideal"].cost), abs=1e-6)
    assert abs(sav["simulated_vs_ideal"] - sav["cache_rules"]) > 1e-4  # the two definitions differ here
    from promptcache.report.audit_text import render_audit
    buf = io.StringIO()
    render_audit(res, Console(file=buf, width=300, color_system=None))
    out = buf.getvalue()
    assert f"Left on the table: ${want:.4f}" in out
    assert f"The scenario costs differ by ${sc['simulated'].cost - sc['ideal'].cost:.4f}" in out


def test_a_findings_requests_are_those_that_lost_tokens_to_it(tmp_log):
    """Trial s15: PC209 said 76 requests while its accounting row said 36: instances that lost
    nothing (the ideal cache already served the prefix from another request) were counted.

    Two template versions alternate: v1, v2, v1, v2 (one character apart, early). Request 2
    loses to the change what request 1 would have served without it: the whole system prompt
    (what request 3 shares with request 1) less what the ideal already serves (``You are
    Helper v``). Requests 3 and 4 lose nothing to it: the ideal cache serves each from the
    request two back. One request, as in the accounting."""
    fill = "Refunds go to the original payment method within five business days. " * 60
    recs = [{"timestamp": t, "model": "gpt-4o", "messages": [
        {"role": "system", "content": f"You are Helper v{v}.\n" + fill}, {"role": "user", "content": q}]}
        for t, v, q in ((0, 1, "a?"), (5, 2, "b?"), (10, 1, "c?"), (15, 2, "d?"))]
    res = audit([tmp_log(recs)], AuditOptions())
    o = res.outcomes
    f = next(f for f in res.findings if f.rule.id == "prefix-changed")
    [row] = [r for r in res.accounting.rows if r.rule == "prefix-changed"]
    assert f.tokens_lost == row.tokens == o[2].shared_prefix_tokens - o[1].shared_prefix_tokens
    assert f.requests == row.requests == 1


def test_a_clock_line_put_in_front_is_the_timestamp_not_a_generic_change(tmp_log):
    """Trial s15: half the sessions put ``Current time: ...`` in front of the same system prompt.
    A clocked session's first request, after a request without the clock, lost the whole shared
    system prompt to that line, and was filed under the generic PC209. The line holds a
    timestamp and what follows it is the other request's text: timestamp-in-prefix, costing
    what request 1 would have served (its whole prompt but the user turn: what request 3, the
    same prompt without a clock, shares with it)."""
    base = "# Fleet assistant\nRefunds go to the original payment method within five business days. " * 60
    recs = [{"timestamp": 0, "model": "gpt-4o", "messages": [
                {"role": "system", "content": base}, {"role": "user", "content": "Where is my refund?"}]},
            {"timestamp": 5, "model": "gpt-4o", "messages": [
                {"role": "system", "content": "Current time: 2026-11-02T09:00:05Z\n" + base},
                {"role": "user", "content": "Can I return shoes?"}]},
            {"timestamp": 9, "model": "gpt-4o", "messages": [
                {"role": "system", "content": base}, {"role": "user", "content": "Is shipping free?"}]}]
    res = audit([tmp_log(recs)], AuditOptions())
    f = next(f for f in res.findings if f.rule.id == "timestamp-in-prefix")
    # request 3 (no clock) after request 2 loses nothing: the ideal cache serves it from request 1
    assert sum(x.tokens_lost for x in res.findings if x.rule.id == "prefix-changed") == 0
    assert (f.line, f.requests, f.segment) == (2, 1, "messages[0].content")
    assert f.evidence["value"] == "2026-11-02T09:00:05Z"
    shared = res.outcomes[2].shared_prefix_tokens  # request 3 reads request 1's system prompt
    assert f.tokens_lost == shared - res.outcomes[1].shared_prefix_tokens


# ------------------------------------------------------------------ two changes in one request (trial s07)

AGENTS = [(n, f"Handles {n} work: reads the tree, plans the change in short steps, and reports what it touched.")
          for n in ("general", "explore", "build", "plan", "reviewer", "docs-writer", "migrator", "triage")]
SKILLS = [(n, f"Loads the {n} playbook and its checklists before the first command.")
          for n in ("git-flow", "pnpm", "docker", "k8s", "sql", "bun")]


def _two_list_tools(k: int, split: bool) -> list[dict]:
    """opencode's tools (anomalyco/opencode#18215): the agents and the skills listed one per line
    in tool descriptions, each list in another order on every call (rotated by ``k``). ``split``:
    the two lists in two tools (``task`` and ``skill``), else both in ``task``'s description."""
    agents = "\n".join(f"- {n}: {d}" for n, d in AGENTS[k:] + AGENTS[:k])
    skills = "\n".join(f"- {n}: {d}" for n, d in SKILLS[k:] + SKILLS[:k])
    fn = lambda name, desc: {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}}}
    read = fn("read", "Read a file from the workspace and return its text with line numbers.")
    if split:
        return [read, fn("task", "Launch an agent for a multistep task.\nAgent types:\n" + agents),
                fn("skill", "Load a skill by name.\nSkills:\n" + skills + "\nEnd of skills.")]
    return [read, fn("task", "Launch an agent for a multistep task.\nAgent types:\n" + agents + "\nSkills:\n" + skills)]


@pytest.mark.parametrize("split", [False, True], ids=["one-description", "two-tools"])
def test_two_lists_reordered_in_one_request_lose_everything_after_the_first_break(tmp_log, split):
    """Trial s07: two lists re-ordered in one request (in one tool's description, escaped
    ``\\n`` in the tool's JSON, or in two tools). Undoing either alone restores nothing, and the
    loss shrank to the first tool's tail. items-reordered now puts every reordered list back:
    the loss is every token after the first divergence that the predecessor would otherwise
    serve. Hand count (o200k on the units, tests/data/handcount.py): Σ over requests 2-5 of
    shared(both orders restored, predecessor restored) − the best prefix shared as logged."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
    import handcount

    system = {"role": "system", "content": "You are the coding agent of this repository.\n" + FILLER}
    bodies, hist = [], []
    for k in range(5):
        hist += [{"role": "user", "content": f"Step {k}: rename module m{k} and update the imports."}]
        bodies.append({"model": "gpt-4.1", "prompt_cache_key": "ses-1", "messages": [system] + hist,
                       "tools": _two_list_tools(k, split)})
        hist += [{"role": "assistant", "content": f"Renamed m{k}. " + "The imports of the package were updated and its tests pass. " * 12}]
    recs = [{"timestamp": 10 * k, "request": b} for k, b in enumerate(bodies)]
    res = audit([tmp_log(recs)], AuditOptions())
    (f,) = [f for f in res.findings if f.rule.id == "items-reordered"]
    assert f.segment == "tools[1]" and f.requests == 4
    c = handcount.Counter("o200k_base", "openai")
    flat = lambda b: {**b, "tools": _two_list_tools(0, split)}  # one order for every request
    hand = sum(c.shared(flat(bodies[k]), flat(bodies[k - 1])) - max(c.shared(bodies[k], bodies[j]) for j in range(k))
               for k in range(1, 5))
    assert abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)
    # the history after the tools counts, not only the tools up to the second list
    assert f.tokens_lost > sum(c.length({"tools": bodies[k]["tools"]}) for k in range(1, 5))
    assert res.accounting.gaps["content"] == f.tokens_lost


def test_two_values_changed_in_two_segments_lose_everything_after_the_first(tmp_log):
    """The same class with values: a clock line in the system prompt and a build counter in a
    tool description, both new on every call. Undoing the time alone restores only the system
    prompt's tail; the loss goes to the first change (timestamp-in-prefix) in full: every token
    after it the predecessor would serve. Hand count: Σ over requests 2-4 of shared(both values
    as the predecessor's) − the best prefix shared as logged."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
    import handcount

    def body(k: int, hist: list, t: int, build: int) -> dict:
        return {"model": "gpt-4.1", "prompt_cache_key": "ses-2",
                "messages": [{"role": "system", "content": f"Current time: 2026-05-01 10:0{t}:00\n" + FILLER}] + hist,
                "tools": [{"type": "function", "function": {"name": "deploy", "description": f"Deploy build {build} of the service. " + FILLER[:600],
                                                            "parameters": {"type": "object", "properties": {}}}}]}
    bodies, hist = [], []
    for k in range(4):
        hist += [{"role": "user", "content": f"Deploy step {k}."}]
        bodies.append(body(k, list(hist), k, 4100 + k))
        hist += [{"role": "assistant", "content": f"Step {k} deployed. " + "All health checks are green and traffic moved. " * 10}]
    res = audit([tmp_log([{"timestamp": 10 * k, "request": b} for k, b in enumerate(bodies)])], AuditOptions())
    (f,) = [f for f in res.findings if f.rule.id == "timestamp-in-prefix"]
    c = handcount.Counter("o200k_base", "openai")
    same = lambda k: body(k, bodies[k]["messages"][1:], 0, 4100)  # both values as request 1's
    hand = sum(c.shared(same(k), same(k - 1)) - max(c.shared(bodies[k], bodies[j]) for j in range(k)) for k in range(1, 4))
    assert f.requests == 3 and abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)
    assert res.accounting.gaps["content"] == f.tokens_lost


# ------------------------------------------------------------------ a parameter switch under breakpoints (trial s09)

def test_tool_choice_switched_on_side_requests_claims_the_messages_cache(tmp_log):
    """Trial s09 (damianvtran/local-operator#534): side requests (a compaction advisor) send the
    session's tools with tool_choice "none" while the working turns send "auto"; Anthropic:
    changing tool_choice invalidates the messages level of the cache ("What invalidates the
    cache"), tools and system stay cached. Portkey logs export rows, Portkey's universal body sent
    to Anthropic, cache_control on the system part and on the last message.

    Each aside would, with the working turns' tool_choice, be read from the main turn before it up
    to that turn's last breakpoint (the end of its messages); the cache serves the system
    breakpoint only. So parameter-changed loses, per aside, the main turn's messages: hand count
    (cl100k on the units, 4 framing tokens a message) Σ over the asides of the preceding main
    turn's messages. The trial split this into 5,837 on parameter-changed and 13,160 on
    cache-granularity (meaningless at Anthropic's 1-token granularity): a later aside shares
    more with the aside before it than the cache can read (that aside's breakpoints lie past
    the divergence), a gap the switch causes."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
    import handcount

    cc = {"type": "ephemeral"}
    system = {"role": "system", "content": [{"type": "text", "text": "You operate the build machine.\n" + FILLER, "cache_control": cc}]}
    tools = [{"type": "function", "function": {"name": n, "description": f"Run {n} on the build machine.",
                                               "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}
             for n in ("shell", "read", "write")]
    hist, rows, mains_before_asides = [], [], []
    for turn in range(6):
        hist.append({"role": "user", "content": f"Step {turn}: run the build of module {turn} and report. " * 3})
        for kind in (("main", "aside") if turn % 2 else ("main",)):
            msgs = [dict(m) for m in hist] + ([{"role": "user", "content": "[advisor] Compact the session now? yes/no"}]
                                             if kind == "aside" else [])
            msgs[-1] = {"role": "user", "content": [{"type": "text", "text": msgs[-1]["content"], "cache_control": cc}]}
            body = {"model": "claude-sonnet-4-5", "max_tokens": 4096 if kind == "main" else 8, "messages": [system] + msgs,
                    "tools": tools, "tool_choice": "auto" if kind == "main" else "none"}
            if kind == "aside":
                mains_before_asides.append([dict(m) for m in hist])
            rows.append({"created_at": f"2026-07-01 10:{len(rows):02d}:00", "request.body": body,
                         "response.body": {"id": f"msg_{len(rows)}", "object": "chat.completion", "model": "claude-sonnet-4-5",
                                           "choices": [{"index": 0, "message": {"role": "assistant", "content": "(reply)"},
                                                        "finish_reason": "stop"}]},
                         "is_success": 1, "ai_org": "anthropic", "ai_model": "claude-sonnet-4-5",
                         "request_url": "https://api.portkey.ai/v1/chat/completions", "response_status_code": 200,
                         "cache_status": "DISABLED", "trace_id": "sess-9", "mode": "SINGLE", "virtual_key": "anthropic-prod"})
        hist.append({"role": "assistant", "content": f"Module {turn} built; " + "all tests passed and the artefact was uploaded. " * 20})
    res = audit([tmp_log(rows)], AuditOptions())
    (f,) = [f for f in res.findings if f.rule.id == "parameter-changed"]
    c = handcount.Counter("cl100k_base", "anthropic")
    hand = sum(c.length({"messages": m}) for m in mains_before_asides)
    assert abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)
    assert f.requests == 3 and f.evidence["param"] == "tool_choice"
    # what is left of the rules gap is the chat framing past a breakpoint, a few tokens a request
    rest = [r for r in res.accounting.rows if r.gap == "rules" and r.rule != "parameter-changed"]
    assert sum(r.tokens for r in rest) <= 4 * len(rows), rest


# ------------------------------------------------------------------ a switch of model

def _switch_log(models: list[str], key: str | None = "conv-1") -> list[dict]:
    """One conversation growing a turn per request, each request on the model given."""
    sys = {"role": "system", "content": FILLER}
    msgs = [sys, {"role": "user", "content": "Turn 0"}]
    out = []
    for i, m in enumerate(models):
        body = {"model": m, "messages": list(msgs), **({"prompt_cache_key": key} if key else {})}
        out.append({"timestamp": 10.0 * i, "request": body})
        msgs += [{"role": "assistant", "content": f"Answer {i}."}, {"role": "user", "content": f"Turn {i + 1}"}]
    return out


@pytest.mark.parametrize("key", ["conv-1", None])
def test_first_request_after_a_switch_of_model_is_parameter_changed(tmp_log, key):
    """The session moves from gpt-4o to gpt-4o-mini at its third request (a helper's probe:
    no finding at all, its lost prefix in no gap). The cache is per model, so that request
    shares nothing (ideal 0); had it stayed on gpt-4o it would have shared what the same log all
    on gpt-4o shows as its ideal shared prefix S: the content gap is undone minus ideal, so
    parameter-changed claims S tokens at line 3, like any located cause (the rules gap, ideal
    minus simulated, is 0 for it). With sessions (a cache key) and without (the log's latest
    request of another model)."""
    same = audit([tmp_log(_switch_log(["gpt-4o"] * 3, key), "same.jsonl")], AuditOptions())
    s = same.outcomes[2].shared_prefix_tokens
    assert s > 1024 and same.outcomes[2].cached_tokens == s // 128 * 128
    res = audit([tmp_log(_switch_log(["gpt-4o", "gpt-4o", "gpt-4o-mini"], key))], AuditOptions())
    o = res.outcomes[2]
    assert (o.model, o.shared_prefix_tokens, o.cached_tokens) == ("gpt-4o-mini", 0, 0)
    (f,) = [f for f in res.findings if f.rule.id == "parameter-changed"]
    assert f.tokens_lost == s and f.requests == 1 and f.line == 3
    assert (f.evidence["before"], f.evidence["after"]) == ("gpt-4o", "gpt-4o-mini")
    assert res.accounting.gaps["content"] == s


def test_a_model_back_in_its_session_is_no_switch(tmp_log):
    """gpt-4o, gpt-4o-mini, gpt-4o in one session: the second request lost what gpt-4o had;
    the third extends the first (its own model's cache still holds it), so only one request
    is a switch."""
    res = audit([tmp_log(_switch_log(["gpt-4o", "gpt-4o-mini", "gpt-4o"]))], AuditOptions())
    assert res.outcomes[2].cached_tokens > 1024
    (f,) = [f for f in res.findings if f.rule.id == "parameter-changed"]
    assert f.requests == 1 and f.line == 2


def test_another_model_sharing_nothing_is_no_switch(tmp_log):
    """Without sessions, a first gpt-4o-mini request whose prompt shares only the framing with
    the latest gpt-4o request lost nothing to a switch: no finding."""
    recs = _switch_log(["gpt-4o"], None)
    recs.append({"timestamp": 20.0, "request": {"model": "gpt-4o-mini", "messages": [
        {"role": "system", "content": "Summarise the ticket. " * 200}, {"role": "user", "content": "Go"}]}})
    res = audit([tmp_log(recs)], AuditOptions())
    assert not [f for f in res.findings if f.rule.id == "parameter-changed"]


def test_a_switch_to_a_model_that_caches_nothing_here_still_loses_the_prefix(tmp_log):
    """A second probe: Anthropic, a ~1,400-token system prompt with a breakpoint, Sonnet then
    Haiku (whose minimum the prompt does not reach) in one session: the switch got no finding,
    because the loss was counted under the new model's rules. The content gap is undone minus
    ideal: the Haiku request would have shared S tokens with the Sonnet one (S: the ideal shared
    prefix of the same log all on Sonnet), so parameter-changed claims S at line 2."""
    def log(models):
        sys = [{"type": "text", "text": "Policy: refunds within five business days. " * 140,
                "cache_control": {"type": "ephemeral"}}]
        msgs, out = [{"role": "user", "content": "Turn 0"}], []
        for i, m in enumerate(models):
            out.append({"timestamp": 10.0 * i, "request": {"model": m, "max_tokens": 64, "system": sys,
                                                          "metadata": {"user_id": "u-1"}, "messages": list(msgs)}})
            msgs += [{"role": "assistant", "content": f"Answer {i}."}, {"role": "user", "content": f"Turn {i + 1}"}]
        return out
    same = audit([tmp_log(log(["claude-sonnet-4-5"] * 2), "same.jsonl")], AuditOptions())
    s = same.outcomes[1].shared_prefix_tokens
    assert s > 1024
    res = audit([tmp_log(log(["claude-sonnet-4-5", "claude-haiku-4-5"]))], AuditOptions())
    assert res.outcomes[1].cached_tokens == 0
    (f,) = [f for f in res.findings if f.rule.id == "parameter-changed"]
    assert (f.tokens_lost, f.requests, f.line) == (s, 1, 2)


# ------------------------------------------------------------------ a content cause under the minimum

def _clocked_haiku(repeats: int) -> list[dict]:
    """Three calls to Claude Haiku 3.5 (a 2,048-token minimum on Anthropic) whose system prompt,
    with a breakpoint at its end, starts with the time of the call."""
    rules = "Refunds go to the original payment method within five business days. " * repeats
    return [{"timestamp": t, "request": {"model": "claude-3-5-haiku-20241022", "max_tokens": 100,
                                         "system": [{"type": "text", "text": f"Current time: 2026-11-02T09:0{t}:00Z\n{rules}",
                                                     "cache_control": {"type": "ephemeral"}}],
                                         "messages": [{"role": "user", "content": f"Where is order {t}?"}]}}
            for t in (0, 1, 2)]


def test_a_content_cause_under_the_minimum_costs_nothing_under_the_rules(tmp_log):
    """Bedrock/Anthropic Haiku 3.5 prompts of ~1,000 tokens with a timestamp in front (a helper's
    probe log): the timestamp is the cause the text shows and keeps its tokens (the content gap
    is measured against the ideal cache), but each prompt is shorter than the 2,048-token
    minimum, so undone the provider would still cache none of it: it was listed as money
    lost under the simulated rules."""
    res = audit([tmp_log(_clocked_haiku(80))], AuditOptions())
    assert res.outcomes[1].prompt_tokens < 2048  # the whole prompt is under the minimum
    f = next(f for f in res.findings if f.rule.id == "timestamp-in-prefix")
    assert f.requests == 2 and f.tokens_lost > 1500  # each of calls 2 and 3 loses the ~1,000-token system prompt
    assert f.cost_usd_lost == Decimal(0)
    assert f.evidence["under_minimum"] == {"requests": 2, "tokens": f.tokens_lost, "min_tokens": 2048}
    assert "all 2 requests are shorter than the 2,048-token minimum" in f.message and "costs nothing" in f.message
    assert res.accounting.cost["content"] == Decimal(0)
    # the same log with a system prompt past the minimum: the timestamp's loss is money
    res = audit([tmp_log(_clocked_haiku(200), "long.jsonl")], AuditOptions())
    assert res.outcomes[1].shared_prefix_tokens < 20 < 2048 < res.outcomes[1].prompt_tokens
    f = next(f for f in res.findings if f.rule.id == "timestamp-in-prefix")
    assert f.cost_usd_lost > 0 and "under_minimum" not in f.evidence and "minimum" not in f.message


def test_an_interleaved_long_prompt_is_not_valued_as_under_the_minimum(tmp_log):
    """Long and short prompts alternate (a helper's probe: a document in every other call). The
    third call, compared with the short second one, shares fewer tokens than the minimum even
    with the timestamp undone; but undone it would read the first call's long prompt, so only
    the short calls (2 and 4, each shorter than the 2,048-token minimum) cost nothing."""
    long_, short = _clocked_haiku(200), _clocked_haiku(80)
    recs = [long_[0], short[1], long_[2], {**short[1], "timestamp": 3}]
    recs[3] = {"timestamp": 3, "request": {**short[1]["request"], "system": [
        {**short[1]["request"]["system"][0],
         "text": short[1]["request"]["system"][0]["text"].replace("09:01", "09:03")}]}}
    res = audit([tmp_log(recs)], AuditOptions())
    assert [o.prompt_tokens > 2048 for o in res.outcomes] == [True, False, True, False]
    f = next(f for f in res.findings if f.rule.id == "timestamp-in-prefix")
    assert f.requests == 3 and f.cost_usd_lost > 0
    assert f.evidence["under_minimum"]["requests"] == 2
    assert "2 of the 3 requests are shorter than the 2,048-token minimum" in f.message
