"""Proposals on the record shapes of the audit trial (issue 21; trial defects 13 and 18): each
log rebuilds a trial log's structure with invented content, small enough to count by hand.

- a note a client re-renders into a tool's description on every call after a failure
  (Braintrust rows from ``wrap_anthropic``: the messages with the system prompt appended last,
  the tools in ``metadata.tools``; the structure of OpenDigitalProductFactory's
  ``enrichToolDescriptions``, which appended ``[WARNING ...]`` notes): the note moves out of the
  description into the newest turn;
- a finding no proposal addresses is named with its reason, never "the templates are fine".
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from rich.console import Console

from promptcache.pipeline import AuditOptions, Pipeline, run
from promptcache.propose.engine import propose
from promptcache.report.proposal_text import render_proposals

WORDS = ("route parcel refund ledger depot courier invoice ticket branch schema handler session deploy review "
         "verify archive throttle reconcile carrier manifest").split()


def _sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _system(rng: random.Random, sections: int = 14) -> str:
    return "# Build coworker (invented)\n\n" + "\n\n".join(
        f"## Section {i}\n" + " ".join(_sentence(rng) for _ in range(6)) for i in range(1, sections + 1))


DESCRIPTION = "Run the invented build for a target and return its exit code and log tail."


def _note(k: int, failed_at: int) -> str:
    return (f"\n\n[NOTE run_build failed 1 time(s) this session; last failure {k - failed_at} turn(s) ago "
            "(exit 2: lockfile out of date). Fix the cause before retrying.]")


def braintrust_tool_note_log(path, calls: int = 8, failed_at: int = 2):
    """Braintrust LLM span rows of one agent session; from call ``failed_at + 2`` on (index
    ``failed_at + 1``), ``run_build``'s description ends with a note whose turn count changes on
    every call."""
    rng = random.Random(8)
    system = _system(rng)
    tools = [{"name": n, "description": d, "input_schema": {"type": "object", "properties": {"target": {"type": "string"}},
                                                             "required": ["target"]}}
             for n, d in (("list_backlog", "List the invented backlog items."), ("run_build", DESCRIPTION),
                          ("open_pr", "Open an invented pull request."))]
    hist: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "Ship the parcel service. " + _sentence(rng)}]}]
    rows = []
    t = 1_790_000_000.0
    for k in range(calls):
        tl = json.loads(json.dumps(tools))
        if k > failed_at:
            tl[1]["description"] += _note(k, failed_at)
        msgs = json.loads(json.dumps(hist))
        msgs[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        inp = msgs + [{"role": "system", "content": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]}]
        rows.append({"id": f"row-{k}", "_xact_id": str(1000 + k), "created": f"2026-09-21T10:{k:02d}:00Z",
                     "span_id": f"span-{k}", "root_span_id": "root-1", "span_parents": ["root-1"], "is_root": False,
                     "span_attributes": {"name": "anthropic.messages.create", "type": "llm"}, "input": inp,
                     "output": {"role": "assistant", "content": [{"type": "text", "text": "(tool call)"}]},
                     "metadata": {"model": "claude-sonnet-4-6", "max_tokens": 1024, "provider": "anthropic", "tools": tl,
                                  "session_id": "build-1"},
                     "metrics": {"start": t, "end": t + 4, "prompt_tokens": 40, "prompt_cached_tokens": 0,
                                 "completion_tokens": 40}})
        hist.append({"role": "assistant", "content": [{"type": "text", "text": "Next step."},
                                                      {"type": "tool_use", "id": f"toolu_{k}", "name": "run_build",
                                                       "input": {"target": f"svc-{k}"}}]})
        hist.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}",
                                                  "content": _sentence(rng, 30)}]})
        t += 20
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def audit_file(path):
    """The audit of one log, as ``promptcache audit`` runs it."""
    return run(Pipeline([path], AuditOptions()))


def _text(res) -> str:
    buf = io.StringIO()
    render_proposals(res, Console(file=buf, width=400, color_system=None))
    return buf.getvalue()


def test_a_note_re_rendered_into_a_tool_description_moves_to_the_newest_turn(tmp_path):
    """8 calls, the note from index 3 on (5 calls), its turn count 1..5. Before: the tools
    change at ``metadata.tools[1]`` on each of those 5 calls (index 3 against index 2, then each
    count against the one before). After: every call sends the description as the first three
    did, byte for byte; each of the 5 calls ends its newest turn with ``[run_build tool]`` and
    its own note (without the two line breaks that joined it to the description), earlier turns
    keep the note they were sent with; the proposed log's audit loses nothing to a prompt
    change, and no finding is left unaddressed."""
    log, dest = tmp_path / "bt.jsonl", tmp_path / "proposed.jsonl"
    rows = braintrust_tool_note_log(log)
    res = propose([log], AuditOptions(), write=dest)
    before = [f for f in res.before.findings if f.segment == "metadata.tools[1]"]
    assert [(f.rule.id, f.requests) for f in before] == [("prefix-changed", 5)]
    moves = [c for p in res.proposals for c in p.plan.changes if c.kind == "move-slots"]
    assert [(c.where, c.applied) for c in moves] == [("metadata.tools[1]", True)]
    out = [json.loads(x) for x in dest.read_text().splitlines()]
    assert len(out) == len(rows) == 8
    for k, rec in enumerate(out):
        assert rec["metadata"]["tools"][1]["description"] == DESCRIPTION
        newest = rec["input"][-2]["content"]  # the system prompt is the last message
        if k > 2:
            assert newest[-1]["text"] == "[run_build tool] " + _note(k, 2).strip()
            assert "prompt_tokens" not in rec["metrics"]  # the logged usage was the original prompt's
        else:
            assert all("[run_build tool]" not in b.get("text", "") for m in rec["input"] for b in m["content"])
    # the history keeps each turn as it was sent: call 7 re-sends the notes of calls 3..6 on their turns
    carried = [b["text"] for m in out[7]["input"][:-2] for b in m["content"] if "[run_build tool]" in b.get("text", "")]
    assert carried == ["[run_build tool] " + _note(k, 2).strip() for k in range(3, 7)]
    assert res.after.accounting.gaps["content"] == 0
    assert not [f for f in res.after.findings if f.rule.id == "prefix-changed"]
    assert not [u for u in res.unaddressed if u.finding.rule.id == "prefix-changed"]
    assert "No proposals" not in _text(res)


def anthropic_thinking_toggle_log(path, calls: int = 6):
    """One Anthropic Messages conversation whose odd calls switch extended thinking on (the
    ``parameter-changed`` rule's own bad example, grown to a cacheable system prompt)."""
    rng = random.Random(9)
    system = _system(rng)
    hist: list[dict] = []
    recs = []
    for k in range(calls):
        hist.append({"role": "user", "content": f"Question {k}: " + _sentence(rng)})
        body = {"model": "claude-sonnet-4-5", "max_tokens": 4096,
                "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                "messages": json.loads(json.dumps(hist))}
        body["messages"][-1]["content"] = [{"type": "text", "text": hist[-1]["content"], "cache_control": {"type": "ephemeral"}}]
        if k % 2:
            body["thinking"] = {"type": "enabled", "budget_tokens": 2048}
        recs.append({"timestamp": 1_790_000_000 + 30 * k, "session_id": "s", "request": body})
        hist.append({"role": "assistant", "content": f"Answer {k}."})
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_no_proposals_names_each_finding_it_leaves_and_why(tmp_path):
    """Thinking on and off within one conversation: calls 1..5 each switch it (5 changes), and
    the proposal changes no ``thinking`` setting. The report may not say the templates are fine:
    it names the parameter-changed finding, its tokens, and that the proposal does not change
    `thinking`."""
    log = tmp_path / "think.jsonl"
    anthropic_thinking_toggle_log(log)
    res = propose([log], AuditOptions())
    found = [f for f in res.before.findings if f.rule.id == "parameter-changed"]
    assert len(found) == 1 and found[0].evidence["param"] == "thinking" and found[0].tokens_lost > 0
    assert not any(c.applied for p in res.proposals for c in p.plan.changes if c.kind != "lifetime")
    left = [u for u in res.unaddressed if u.finding.rule.id == "parameter-changed"]
    assert len(left) == 1 and "does not change `thinking`" in left[0].reason
    text = _text(res)
    assert "already keep their stable content first" not in text
    assert f"PC401 parameter-changed at <params>: {found[0].tokens_lost:,} tokens" in text


def portkey_aside_log(path, turns: int = 4):
    """A Portkey logs export (``request.body`` / ``response.body``, ``ai_org``) of one agent
    session sent to Anthropic in the universal (OpenAI Chat) shape: the working turns send
    ``tool_choice: "auto"``, a one-word aside after turns 1 and 3 sends the same tools with
    ``tool_choice: "none"`` (the structure of local-operator's compaction advisor)."""
    rng = random.Random(10)
    system = _system(rng)
    tools = [{"type": "function", "function": {"name": n, "description": _sentence(rng),
                                               "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}
             for n in ("shell", "read")]
    hist: list[dict] = [{"role": "user", "content": "Tidy the invented repository. " + _sentence(rng)}]
    plan = [("main", k) for k in range(turns)]
    for k in (3, 1):
        plan.insert(k + 1, ("aside", k))
    recs = []
    for n, (kind, k) in enumerate(plan):
        msgs = json.loads(json.dumps(hist))
        if kind == "aside":
            msgs.append({"role": "user", "content": "[advisor] In one word: compact now? yes/no"})
        last = msgs[-1]
        last["content"] = [{"type": "text", "text": last["content"], "cache_control": {"type": "ephemeral"}}]
        body = {"model": "claude-sonnet-4-5", "max_tokens": 4096 if kind == "main" else 8,
                "messages": [{"role": "system", "content": [{"type": "text", "text": system,
                                                             "cache_control": {"type": "ephemeral"}}]}] + msgs,
                "tools": tools, "tool_choice": "auto" if kind == "main" else "none"}
        recs.append({"created_at": f"2026-09-22 10:{n:02d}:00", "request.body": body,
                     "response.body": {"id": f"msg_{n}", "object": "chat.completion", "model": "claude-sonnet-4-5",
                                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "(reply)"},
                                                    "finish_reason": "stop"}]},
                     "ai_org": "anthropic", "ai_model": "claude-sonnet-4-5", "trace_id": "sess-1"})
        if kind == "main":
            hist.append({"role": "assistant", "content": "Working on it.",
                         "tool_calls": [{"id": f"call_{k}", "type": "function",
                                         "function": {"name": "shell", "arguments": json.dumps({"cmd": f"make step{k}"})}}]})
            hist.append({"role": "tool", "tool_call_id": f"call_{k}", "content": _sentence(rng, 40)})
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return recs


def test_a_tool_choice_switched_for_asides_is_kept_and_said_in_the_message(tmp_path):
    """Order m0 m1 a1 m2 m3 a3: tool_choice changes against the previous request at a1
    (auto→none), m2 (none→auto) and a3: 3 requests. The plan keeps ``auto`` (4 of 6) in every
    request; the 2 asides end their newest user turn with the instruction that ``none`` was;
    the proposed log's audit finds no parameter change, and nothing is left unaddressed."""
    log, dest = tmp_path / "pk.jsonl", tmp_path / "proposed.jsonl"
    recs = portkey_aside_log(log)
    res = propose([log], AuditOptions(), write=dest)
    found = [f for f in res.before.findings if f.rule.id == "parameter-changed"]
    assert [(f.evidence["param"], f.requests) for f in found] == [("tool_choice", 3)]
    changes = [c for p in res.proposals for c in p.plan.changes if c.kind == "keep-tool-choice"]
    assert [(c.applied, c.after.split(";")[0]) for c in changes] == [(True, 'tool_choice "auto" in every request')]
    out = [json.loads(x) for x in dest.read_text().splitlines()]
    assert [r["request.body"]["tool_choice"] for r in out] == ["auto"] * 6
    asides = [i for i, r in enumerate(recs) if r["request.body"]["tool_choice"] == "none"]
    assert asides == [2, 5]
    for i, (a, b) in enumerate(zip(recs, out)):
        ma, mb = a["request.body"]["messages"], b["request.body"]["messages"]
        if i in asides:
            assert mb[:-1] == ma[:-1]
            assert mb[-1]["content"] == ma[-1]["content"] + [
                {"type": "text", "text": "(Answer in text; do not call a tool for this message.)"}]
        else:
            assert mb == ma
    assert not [f for f in res.after.findings if f.rule.id == "parameter-changed"]
    assert not res.unaddressed
    assert res.proposals[0].savings_usd > 0


AGENTS = {"general": "General-purpose agent for research and multi-step work.",
          "explore": "Fast agent for exploring an invented codebase.",
          "build": "Agent that builds and tests the invented project.",
          "plan": "Agent that plans changes without editing files."}
TASK_HEAD = "Launch a new agent to handle a multi-step task.\n\nAvailable agent types:\n"


def anthropic_agent_list_log(path, calls: int = 5):
    """Anthropic Messages bodies of one agent session whose ``task`` tool lists the agents in
    another order on every call (opencode's ``Agent.list()`` insertion order, issue #18215):
    the description's agent lines are the same lines, shuffled."""
    rng = random.Random(11)
    system = _system(rng)
    orders = [["general", "explore", "build", "plan"], ["plan", "general", "build", "explore"],
              ["explore", "plan", "general", "build"], ["build", "explore", "plan", "general"],
              ["general", "plan", "explore", "build"]][:calls]
    hist: list[dict] = []
    recs = []
    for k, order in enumerate(orders):
        tools = [{"name": "read", "description": "Read an invented file.",
                  "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
                 {"name": "task", "description": TASK_HEAD + "\n".join(f"- {n}: {AGENTS[n]}" for n in order),
                  "input_schema": {"type": "object", "properties": {"prompt": {"type": "string"}}}}]
        hist.append({"role": "user", "content": f"Step {k}: " + _sentence(rng)})
        msgs = json.loads(json.dumps(hist))
        msgs[-1]["content"] = [{"type": "text", "text": msgs[-1]["content"], "cache_control": {"type": "ephemeral"}}]
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": tools,
                "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}], "messages": msgs}
        recs.append({"timestamp": 1_790_000_000 + 20 * k, "request": body})
        hist.append({"role": "assistant", "content": f"Done with step {k}."})
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return recs


def test_a_reordered_list_in_a_tool_description_is_sorted_not_moved(tmp_path):
    """Five calls, five orders of the same four agent lines in ``tools[1]``'s description (JSON
    text, its lines joined by escaped line breaks): the change is ``sort-items`` on
    ``tools[1]``, no span moves. Every proposed request sends the head and the four lines
    sorted by text (build, explore, general, plan); nothing else in its body changes but the
    breakpoints; the proposed log's audit finds no prompt change left."""
    log, dest = tmp_path / "agents.jsonl", tmp_path / "proposed.jsonl"
    recs = anthropic_agent_list_log(log)
    res = propose([log], AuditOptions(), write=dest)
    assert [f.requests for f in res.before.findings if f.segment == "tools[1]"] == [4]
    applied = [(c.kind, c.where) for p in res.proposals for c in p.plan.changes if c.applied]
    assert ("sort-items", "tools[1]") in applied
    assert not [k for k, _ in applied if k == "move-slots"]
    want = TASK_HEAD + "\n".join(f"- {n}: {AGENTS[n]}" for n in ("build", "explore", "general", "plan"))
    out = [json.loads(x) for x in dest.read_text().splitlines()]
    assert len(out) == 5
    for a, b in zip(recs, out):
        assert b["request"]["tools"][1]["description"] == want
        assert list(b["request"]["tools"][1]) == ["name", "description", "input_schema"]  # its key order kept
        assert b["request"]["tools"][0] == a["request"]["tools"][0]
        assert [m["role"] for m in b["request"]["messages"]] == [m["role"] for m in a["request"]["messages"]]
    assert res.after.accounting.gaps["content"] == 0
    assert res.proposals[0].savings_usd > 0


FORMATS = Path(__file__).parent / "data" / "formats"


@pytest.mark.parametrize("name", ["bedrock_invocation_logs.json.gz", "braintrust_logs.jsonl", "helicone_export.jsonl",
                                  "helicone_export_cli.json", "helicone_export_nobody.jsonl", "litellm_spend_logs.jsonl",
                                  "litellm_spend_logs_api.json", "litellm_standard_logging_payload.jsonl",
                                  "portkey_logs_export.jsonl"])
def test_a_rewritten_record_of_every_rewritable_shape_reports_no_usage(name):
    """Each of these producers' fixtures holds 7 requests with reported usage, in the fields
    its reader reads (a usage object, the row's own token columns, LiteLLM's
    ``metadata.usage_object``, Braintrust's ``metrics``, Portkey's units). A record the proposal
    rewrote describes another prompt: read back after :func:`~promptcache.propose.logio.drop_usage`
    none of the 7 reports usage, and each is still detected as its producer's."""
    from promptcache.propose import logio

    opts = AuditOptions().read
    items, _ = logio.items([FORMATS / name], opts)
    with_usage = [it for it in items if it.fmt in logio.BODY_FORMATS and any(r.usage for r in it.requests)]
    assert len(with_usage) == 7
    for it in with_usage:
        rec = logio.copy_record(it.record)
        logio.drop_usage(rec)
        assert logio.record_format(rec, None) == it.fmt
        got = logio.Parsers().parse(rec, it.fmt, str(FORMATS / name), it.line, opts)
        assert got and all(r.usage is None for r in got), (name, it.line)


def litellm_tree_log(path, calls: int = 4):
    """LiteLLM spend-log rows (``proxy_server_request`` as JSON text, the usage in the row's
    columns and in ``metadata.usage_object`` as JSON text) of DeepSeek calls whose system prompt
    lists the project tree in another order on every call (the trial's s10 structure)."""
    rng = random.Random(12)
    head = _system(rng, 20)
    files = [f"src/mod_{i}/file_{i}.py" for i in range(6)]
    orders = [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [2, 0, 4, 1, 5, 3], [1, 3, 5, 0, 2, 4]][:calls]
    rows = []
    for k, order in enumerate(orders):
        system = head + "\n\nProject files:\n" + "\n".join(files[i] for i in order)
        body = {"model": "deepseek-chat", "messages": [{"role": "system", "content": system},
                                                       {"role": "user", "content": f"Task {k}: " + _sentence(rng)}]}
        usage = {"prompt_tokens": 2000, "completion_tokens": 50, "total_tokens": 2050,
                 "prompt_tokens_details": {"cached_tokens": 0}, "prompt_cache_hit_tokens": 0,
                 "prompt_cache_miss_tokens": 2000}
        rows.append({"request_id": f"chatcmpl-{k}", "session_id": f"s-{k}", "call_type": "acompletion",
                     "startTime": f"2026-09-23 10:{k:02d}:00.000000", "endTime": f"2026-09-23 10:{k:02d}:02.000000",
                     "model": "deepseek-chat", "metadata": json.dumps({"usage_object": usage}), "spend": 0.0,
                     "total_tokens": 2050, "prompt_tokens": 2000, "completion_tokens": 50,
                     "custom_llm_provider": "deepseek", "messages": "{}", "response": "{}",
                     "proxy_server_request": json.dumps(body), "status": "success"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_the_proposed_log_keeps_no_usage_of_the_prompts_it_rewrote(tmp_path):
    """Four rows, the tree in four orders, the first already sorted: the plan sorts it, so rows
    2 to 4 are rewritten and none of those 3 keeps the usage its original prompt was billed
    (2,000 prompt tokens, 0 cached); row 1 is left byte-identical with its own usage. The audit
    of the written log has reported usage on 1 request (the first: nothing before it to read)
    and no reported gap."""
    log, dest = tmp_path / "spend.jsonl", tmp_path / "proposed.jsonl"
    rows = litellm_tree_log(log)
    res = propose([log], AuditOptions(), write=dest)
    assert ("sort-items", "messages[0].content") in [(c.kind, c.where) for p in res.proposals for c in p.plan.changes
                                                     if c.applied]
    assert res.before.scenarios["reported"].requests == 4
    out = [json.loads(x) for x in dest.read_text().splitlines()]
    assert len(out) == len(rows) == 4
    assert out[0] == rows[0]
    for rec in out[1:]:
        assert (rec["prompt_tokens"], rec["completion_tokens"], rec["total_tokens"]) == (None, None, None)
        assert "usage_object" not in json.loads(rec["metadata"])
    again = audit_file(dest)
    assert again.scenarios["reported"].requests == 1
    assert again.accounting.gaps["reported"] == 0
