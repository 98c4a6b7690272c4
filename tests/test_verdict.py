"""The provider's own cache verdict, read from records in the shapes the APIs return, shown beside
the cause the diagnosis located, and where the two disagree, said so (issue 17, scope 4).

Shapes: Anthropic Messages responses with ``diagnostics.cache_miss_reason`` (``type``,
``cache_missed_input_tokens``) for requests that carry ``diagnostics.previous_message_id``, and
``diagnostics: null`` where the comparison found no divergence
(https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics); OpenAI Responses
objects with ``prompt_cache_diagnostics`` (``type``, ``reason``, ``cache_missed_tokens``,
``comparison_reusable_tokens``) for requests with ``prompt_cache_options.comparison_response_id``
(https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics). Both as a gateway
logs them (``{timestamp, request, response}``) and, for Anthropic, in a Helicone export.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from promptcache.model import CacheVerdict
from promptcache.pipeline import AuditOptions, audit

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
import handcount  # noqa: E402  (tests/data/handcount.py: counts without promptcache's reader)

import producer_shapes as shapes  # noqa: E402

HANDBOOK = "\n".join(f"Clause {k}. Staff answer questions about refund timing by restating the request, checking "
                     f"handbook section {k}, and replying in short numbered steps." for k in range(1, 61))
AN_TOOLS = [{"name": "lookup_order", "description": "Look up an order by its id.",
             "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
            {"name": "refund", "description": "Refund an order.",
             "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}]


def anthropic_body(k: int, prev: str | None) -> dict:
    """Request ``k`` of one conversation: a clock to the second at the top of the system prompt."""
    msgs: list[dict] = []
    for j in range(k):
        msgs += [{"role": "user", "content": f"Where is order {j}?"}, {"role": "assistant", "content": f"Order {j} shipped."}]
    msgs.append({"role": "user", "content": f"Where is order {k}?"})
    return {"model": "claude-sonnet-4-5", "max_tokens": 512, "tools": AN_TOOLS,
            "system": [{"type": "text", "text": f"You are the refunds desk. Current time: 10:0{k}:1{k}.\n" + HANDBOOK,
                        "cache_control": {"type": "ephemeral"}}],
            "messages": msgs, "diagnostics": {"previous_message_id": prev}}


def anthropic_response(k: int, diagnostics, read: int = 0, write: int = 1500) -> dict:
    """A Messages response as the API returns it, ``diagnostics`` included (``None``: null)."""
    return {"id": f"msg_{k:04d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": f"Order {k} shipped."}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 30, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                      "output_tokens": 6}, "diagnostics": diagnostics}


def miss(kind: str, tokens: int) -> dict:
    return {"cache_miss_reason": {"type": kind, "cache_missed_input_tokens": tokens}}


def anthropic_log(tmp_path: Path, verdicts: list) -> Path:
    recs, prev = [], None
    for k, d in enumerate(verdicts):
        recs.append({"timestamp": f"2026-05-01T10:0{k}:1{k}Z", "request": anthropic_body(k, prev),
                     "response": anthropic_response(k, d)})
        prev = f"msg_{k:04d}"
    path = tmp_path / "anthropic_diagnostics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def cli_json(path: Path, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(path), "--format", "json", *args],
                         capture_output=True, text=True, check=False)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def cli_text(path: Path, fmt: str = "text") -> str:
    out = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(path), "--format", fmt],
                         capture_output=True, text=True, check=False, env={**__import__("os").environ, "COLUMNS": "250"})
    assert out.returncode in (0, 1), out.stderr
    return out.stdout


# ------------------------------------------------------------------ the reader's side

def test_a_null_diagnostics_where_a_previous_message_was_named_is_no_divergence():
    from promptcache.ingest.anthropic import verdict_of

    asked = {"diagnostics": {"previous_message_id": "msg_0001"}}
    assert verdict_of({"id": "msg_0002", "diagnostics": None}, asked) == \
        CacheVerdict("anthropic", "no_divergence", None, None, None, "msg_0001")
    # the first turn opts in with null: nothing compared; a response without the field says nothing
    assert verdict_of({"id": "msg_0001", "diagnostics": None}, {"diagnostics": {"previous_message_id": None}}) is None
    assert verdict_of({"id": "msg_0002"}, asked) is None
    assert verdict_of({"diagnostics": {"cache_miss_reason": None}}, asked) is None  # still pending


# ------------------------------------------------------------------ Anthropic, through the CLI

def test_anthropic_verdicts_beside_the_located_timestamp_agreeing_and_not(tmp_path):
    """Four turns with a clock in the system prompt. Anthropic says the system prompt changed on
    turn 2 (right), the tools on turn 3 (wrong: they are byte-identical in the log) and finds no
    divergence on turn 4 (wrong). The timestamp finding shows the first verdict, the others with
    their counts, and the first disagreement in words."""
    path = anthropic_log(tmp_path, [None, miss("system_changed", 1490), miss("tools_changed", 1502), None])
    rec = cli_json(path)
    f = next(f for f in rec["findings"] if f["rule"] == "timestamp-in-prefix")
    assert f["location"]["segment"] == "system[0]" and f["requests"] == 3
    ev = f["evidence"]
    assert ev["provider_verdict"] == "anthropic: cache_miss (system_changed), 1,490 tokens missed"
    assert ev["provider_verdicts"] == {"anthropic: cache_miss (system_changed), 1,490 tokens missed": 1,
                                       "anthropic: cache_miss (tools_changed), 1,502 tokens missed": 1,
                                       "anthropic: no divergence found": 1}
    assert ev["provider_disagrees"] == ("the provider names the tools (tools_changed); the located cause is in the "
                                        "system prompt, at system[0]; on 2 of 3 requests with a verdict")
    assert "provider_agrees" not in ev
    text = cli_text(path)
    assert "provider says: anthropic: cache_miss (system_changed), 1,490 tokens missed" in text
    assert "disagrees: the provider names the tools (tools_changed); the located cause is in the system prompt" in text
    md = cli_text(path, "markdown")
    assert "Provider says: anthropic: cache\\_miss (system\\_changed)" in md and "disagrees: the provider names the tools" in md
    html = cli_text(path, "html")
    assert "provider says:</span> anthropic: cache_miss (system_changed), 1,490 tokens missed" in html
    assert "disagrees:</span> the provider names the tools (tools_changed)" in html


def test_anthropic_verdicts_that_all_agree_say_so(tmp_path):
    path = anthropic_log(tmp_path, [None] + [miss("system_changed", 1490)] * 3)
    f = next(f for f in cli_json(path)["findings"] if f["rule"] == "timestamp-in-prefix")
    assert f["evidence"]["provider_verdict"] == "anthropic: cache_miss (system_changed), 1,490 tokens missed"
    assert f["evidence"]["provider_agrees"] is True and "provider_disagrees" not in f["evidence"]
    assert "provider_verdicts" not in f["evidence"]  # one verdict on every request
    assert "agrees with the located cause" in cli_text(path)


def test_the_timestamp_costs_what_the_hand_count_says(tmp_path):
    """The verdicts change nothing in the accounting: the timestamp's tokens, counted by hand
    (tests/data/handcount.py: the clock undone, each turn would share its predecessor's whole
    prompt), within the corpus's 10%."""
    path = anthropic_log(tmp_path, [None, miss("system_changed", 1490), miss("tools_changed", 1502), None])
    res = audit([path], AuditOptions())
    bodies = [json.loads(line)["request"] for line in path.read_text().splitlines()]
    c = handcount.Counter("cl100k_base", "anthropic")
    hand = handcount.content_loss(c, bodies, handcount.sub(r"Current time: \d\d:\d\d:\d\d", "Current time: T"))
    f = next(f for f in res.findings if f.rule.id == "timestamp-in-prefix")
    assert abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)


# ------------------------------------------------------------------ a change only the provider saw

def test_a_change_only_the_provider_saw_claims_the_reported_gap(tmp_path):
    """A Helicone export of a conversation whose logged requests never change (no clock), where
    the cache reads stay 0 and Anthropic says the tools changed each turn (a gateway re-ordered
    them after the log): the reported gap is the provider's verdict's, not unexplained, and it
    is exactly what the simulation serves: each turn's predecessor's prompt up to its last
    breakpoint (the system block), tools and system, counted by hand."""
    recs, prev = [], None
    for k in range(4):
        body = anthropic_body(k, prev)
        body["system"][0]["text"] = "You are the refunds desk.\n" + HANDBOOK
        recs.append({"timestamp": f"2026-05-01T10:0{k}:00Z", "request": body,
                     "response": anthropic_response(k, None if k == 0 else miss("tools_changed", 1540))})
        prev = f"msg_{k:04d}"
    path = shapes.write(tmp_path / "helicone.jsonl", shapes.helicone(recs, provider="ANTHROPIC"))
    res = audit([path], AuditOptions())
    assert [o.usage.cache_read_tokens for o in res.outcomes] == [0, 0, 0, 0]
    (f,) = [f for f in res.findings if f.rule.id == "provider-reported-change"]
    simulated = sum(o.cached_tokens for o in res.outcomes)
    assert f.tokens_lost == simulated == res.accounting.gaps["reported"] and f.requests == 3
    assert not [r for r in res.accounting.rows if r.rule == "unexplained"]
    # by hand: tools + system, the prefix the system block's breakpoint caches (a frame for it)
    c = handcount.Counter("cl100k_base", "anthropic")
    head = c.upto(recs[0]["request"], lambda i, u: u[0] == "text")  # through the system text
    assert abs(simulated - 3 * head) <= 0.05 * 3 * head, (simulated, 3 * head)
    assert f.evidence["provider_reason"] == "tools_changed" and f.evidence["reported_tokens"] == 0
    assert "say a change in the tools (tools_changed) in 3 requests" in f.message
    assert f.evidence.get("provider_agrees") is None and "provider_disagrees" not in f.evidence


# ------------------------------------------------------------------ OpenAI, Responses objects

OA_TOOLS = [{"type": "function", "name": "lookup_order", "description": "Look up an order by its id.",
             "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
            {"type": "function", "name": "refund", "description": "Refund an order.",
             "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}]


def openai_record(k: int, tools: list, diag: dict | None, cached: int, prompt: int = 1700) -> dict:
    inp: list[dict] = []
    for j in range(k):
        inp += [{"role": "user", "content": f"Where is order {j}?"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Order {j} shipped."}]}]
    inp.append({"role": "user", "content": f"Where is order {k}?"})
    body = {"model": "gpt-5.6", "instructions": "You are the refunds desk.\n" + HANDBOOK, "input": inp, "tools": tools,
            "prompt_cache_key": "conv-1", **({"prompt_cache_options": {"comparison_response_id": f"resp_{k - 1:04d}"}} if k else {})}
    resp = {"id": f"resp_{k:04d}", "object": "response", "created_at": 1777629600 + 60 * k, "status": "completed",
            "model": "gpt-5.6-sol", "output": [{"type": "message", "id": f"msg_{k}", "status": "completed", "role": "assistant",
                                                "content": [{"type": "output_text", "text": f"Order {k} shipped.", "annotations": []}]}],
            "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": 6,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + 6},
            **({"prompt_cache_diagnostics": diag} if diag is not None else {})}
    return {"timestamp": f"2026-05-01T10:0{k}:00Z", "request": body, "response": resp}


def test_openai_verdicts_beside_reordered_tools_and_a_change_the_log_does_not_show(tmp_path):
    """Turn 2 sends the tools in another order: tools-reordered, and OpenAI says tools_changed
    (agrees). Turn 3 sends them as turn 2 did, yet reads nothing from the cache and OpenAI
    says input_changed: a change only the provider saw, whose tokens (the simulation's read on
    turn 3) it claims."""
    swapped = OA_TOOLS[::-1]
    recs = [openai_record(0, OA_TOOLS, None, 0),
            openai_record(1, swapped, {"type": "cache_miss", "reason": "tools_changed", "cache_missed_tokens": 1650,
                                       "comparison_reusable_tokens": 1024}, 0),
            openai_record(2, swapped, {"type": "cache_miss", "reason": "input_changed", "cache_missed_tokens": 1690,
                                       "comparison_reusable_tokens": 1690}, 0)]
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    rec = cli_json(path)
    f = next(f for f in rec["findings"] if f["rule"] == "tools-reordered")
    assert f["evidence"]["provider_verdict"] == "openai: cache_miss (tools_changed), 1,650 tokens missed, 1,024 reusable"
    assert f["evidence"]["provider_agrees"] is True
    g = next(f for f in rec["findings"] if f["rule"] == "provider-reported-change")
    outcomes = audit([path], AuditOptions()).outcomes
    assert g["tokens_lost"] == outcomes[2].cached_tokens > 1024 and g["requests"] == 1
    assert g["evidence"]["provider_reason"] == "input_changed" and "a change in the input (input_changed)" in g["message"]


def test_a_cache_hit_verdict_beside_a_located_change_disagrees(tmp_path):
    swapped = OA_TOOLS[::-1]
    recs = [openai_record(0, OA_TOOLS, None, 0), openai_record(1, swapped, {"type": "cache_hit"}, 0)]
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    f = next(f for f in audit([path], AuditOptions()).findings if f.rule.id == "tools-reordered")
    assert f.evidence["provider_verdict"] == "openai: cache_hit"
    assert f.evidence["provider_disagrees"] == ("the provider found no change against the request it compared with; "
                                                "the located cause is in the tools, at tools[0]")


@pytest.mark.parametrize("kind", ["comparison_response_not_found", "unavailable"])
def test_an_inconclusive_verdict_is_shown_and_not_compared(tmp_path, kind):
    swapped = OA_TOOLS[::-1]
    recs = [openai_record(0, OA_TOOLS, None, 0), openai_record(1, swapped, {"type": kind}, 0)]
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    f = next(f for f in audit([path], AuditOptions()).findings if f.rule.id == "tools-reordered")
    assert f.evidence["provider_verdict"] == f"openai: {kind}"
    assert "provider_agrees" not in f.evidence and "provider_disagrees" not in f.evidence


def test_a_verdict_against_another_request_than_the_predecessor_says_which(tmp_path):
    """Turn 2 names an older conversation's response as its previous message (a client that
    keeps a stale id): the provider compared with msg_0777, the diagnosis with turn 1; the
    finding says which the provider compared with."""
    recs = []
    for k, (prev, d) in enumerate([(None, None), ("msg_0777", miss("system_changed", 1490)),
                                   ("msg_0001", miss("system_changed", 1530))]):
        recs.append({"timestamp": f"2026-05-01T10:0{k}:1{k}Z", "request": anthropic_body(k, prev),
                     "response": anthropic_response(k, d)})
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    f = next(f for f in audit([path], AuditOptions()).findings if f.rule.id == "timestamp-in-prefix")
    assert f.evidence["provider_compared_with"] == "msg_0777" and f.evidence["provider_agrees"] is True
    assert "compared with msg_0777, not the request the cause was located against" in cli_text(path)
    recs[1]["request"]["diagnostics"]["previous_message_id"] = "msg_0000"  # its predecessor: nothing to say
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    f = next(f for f in audit([path], AuditOptions()).findings if f.rule.id == "timestamp-in-prefix")
    assert "provider_compared_with" not in f.evidence
