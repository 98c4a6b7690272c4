"""A JSONL line holding a JSON array of records, times no real traffic has, and a usage count of
``1e300`` (trial defect 15).

The records are LiteLLM ``StandardLoggingPayload`` objects (the fields of
``tests/data/formats/litellm_standard_logging_payload.jsonl``) as LiteLLM's Generic API callback
sends them: ``log_format: json_array`` (the default) posts each batch as one JSON array, and
``ndjson`` / ``single`` post objects (docs.litellm.ai/docs/observability/generic_api, checked
2026-12-01); a receiving endpoint that appends each body as a line writes both kinds of line.

Hand count of the file below (one system prompt, gpt-4.1; 2,000 prompt tokens and 1,536 cached
reported on every call but the first, which reports 0 cached):

- line 1: call c1 at t0; line 2: an array of c2 (t0+30 s) and c3 (t0+60 s); line 3: c4 stamped
  1969-07-20; line 4: c5 stamped 2099-01-01; line 5: c6 at t0+120 s reporting ``prompt_tokens``
  ``1e300``. Records 6 (the array line holds 2), requests 6, none malformed (before: line 2
  rejected as "record is not a JSON object", 5 requests).
- c4 and c5 are untimed: audited after the request before them in the file, so the order is
  lines 1, 2, 2, 3, 4, 5, the span is t0 .. t0+120 s = 120 s (before: 1969 to 2099), and no TTL
  expires (every gap is 30-60 s, OpenAI's in-memory retention is 5-10 minutes; before: the 1969
  request wrote the prefix ~57 years before c1 read it: PC302 ttl-expired).
- c6's usage is impossible: left out of the reported scenario, said with ``1e+300`` (before: a
  301-digit number). Reported: 5 requests, 5 x 2,000 = 10,000 prompt tokens, 4 x 1,536 = 6,144
  cached (c1 reports 0).
"""

from __future__ import annotations

import json
from pathlib import Path

from promptcache.ingest import InputStats, ReadOptions, read_inputs
from promptcache.ingest.jsonio import iter_records
from promptcache.pipeline import AuditOptions, audit

T0 = 1782900000.0  # 2026-07-01T10:00:00Z
JULY_1969 = -14182940.0  # 1969-07-20T20:17:40Z
JAN_2099 = 4070908800.0  # 2099-01-01T00:00:00Z
SYSTEM = ("You are Relay, the support assistant of the Meridian parcel service.\n"
          + "".join(f"Policy {i}: a parcel held at depot {i} is released after the sender confirms the address.\n"
                    for i in range(1, 80)))


def payload(cid: str, t: float, question: str, prompt_tokens: float = 2000, cached: int = 1536) -> dict:
    usage = {"completion_tokens": 12, "prompt_tokens": prompt_tokens, "total_tokens": 2012,
             "prompt_tokens_details": {"cached_tokens": cached}}
    return {"id": cid, "trace_id": "trace-relay-1", "call_type": "acompletion", "cache_hit": None, "stream": False,
            "status": "success", "custom_llm_provider": "openai", "saved_cache_cost": 0.0, "startTime": t,
            "endTime": t + 1.2, "completionStartTime": t + 1.2, "response_time": 1.2, "model": "gpt-4.1",
            "metadata": {"user_api_key_user_id": "user-3", "spend_logs_metadata": {"session_id": "sess-relay"},
                         "requester_ip_address": None, "applied_guardrails": []},
            "cache_key": None, "response_cost": 0.004, "total_tokens": 2012, "prompt_tokens": prompt_tokens,
            "completion_tokens": 12, "request_tags": [], "end_user": "", "api_base": "https://api.openai.com",
            "model_group": "gpt-4.1", "model_id": "", "requester_ip_address": None,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
            "response": {"id": cid, "created": 1782900000, "model": "gpt-4.1-2025-04-14", "object": "chat.completion",
                         "choices": [{"finish_reason": "stop", "index": 0,
                                      "message": {"content": "(answer)", "role": "assistant"}}], "usage": usage},
            "model_parameters": {"temperature": 0.2}, "hidden_params": {"api_base": "https://api.openai.com"},
            "error_str": None}


def log(tmp_path: Path) -> Path:
    lines = [payload("c1", T0, "Where is parcel 4471?", cached=0),
             [payload("c2", T0 + 30, "Can it go to depot 12 instead?"),
              payload("c3", T0 + 60, "When will it be released?")],
             payload("c4", JULY_1969, "Why was it held?"),
             payload("c5", JAN_2099, "Can I pick it up myself?"),
             payload("c6", T0 + 120, "Thanks, anything else?", prompt_tokens=1e300)]
    p = tmp_path / "litellm_generic_api.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return p


def test_an_array_line_holds_one_record_per_item(tmp_path):
    stats = [InputStats(str(log(tmp_path)))]
    reqs = list(read_inputs([stats[0].path], stats, ReadOptions()))
    (st,) = stats
    assert (st.records, st.requests, st.skipped_lines) == (6, 6, 0)
    assert [(r.id, r.source.line) for r in reqs] == [("c1", 1), ("c2", 2), ("c3", 2), ("c4", 3), ("c5", 4), ("c6", 5)]
    assert st.accounted == st.records


def test_times_before_1970_or_far_ahead_leave_the_request_untimed(tmp_path):
    stats = [InputStats(str(log(tmp_path)))]
    reqs = {r.id: r for r in read_inputs([stats[0].path], stats, ReadOptions())}
    (st,) = stats
    assert reqs["c4"].arrival is None and reqs["c5"].arrival is None and reqs["c3"].arrival == T0 + 60
    assert (st.missing_arrival, st.times.negative, st.times.future, st.times.unusable) == (2, 1, 1, 0)
    notes = " | ".join(st.notes())
    assert "1 time(s) are before 1970 (negative epoch seconds): left untimed" in notes
    assert "1 time(s) lie more than a year in the future (e.g. line 4: 4070908800 epoch seconds): left untimed" in notes


def test_the_audit_has_no_ttl_finding_from_bogus_times_and_no_300_digit_usage(tmp_path):
    res = audit([log(tmp_path)], AuditOptions(workers=1))
    assert [o.line for o in res.outcomes] == [1, 2, 2, 3, 4, 5]
    assert res.span_seconds == 120.0  # before: 1969 to 2099
    assert not [f for f in res.findings if f.rule.id.startswith("ttl-expired")]
    rep = res.scenarios["reported"]
    assert (rep.requests, rep.prompt_tokens, rep.cached_tokens) == (5, 10_000, 6_144)
    (st,) = res.inputs
    assert st.bad_usage_examples == [(5, "input_tokens 1e+300 is more than any model reads in a request (100,000,000)")]
    assert not any(len(w) > 600 for w in res.warnings)


def test_arrays_in_other_places_lose_nothing(tmp_path):
    # JSONL whose first line is an array, an empty array line (one malformed record), and records after a
    # whole-file array
    p = tmp_path / "a.jsonl"
    p.write_text('[{"a": 1}, {"a": 2}]\n{"a": 3}\n[]\n[{"a": 4}]\n', encoding="utf-8")
    got = list(iter_records(p))
    assert got[:3] + got[4:] == [(1, {"a": 1}), (1, {"a": 2}), (2, {"a": 3}), (4, {"a": 4})]
    assert got[3][0] == 3 and str(got[3][1]) == "an empty JSON array: no record in it"  # counted, not vanished
    q = tmp_path / "b.json"
    q.write_text('[\n  {"a": 1},\n  {"a": 2}\n]\n{"a": 3}\n', encoding="utf-8")
    assert list(iter_records(q)) == [(2, {"a": 1}), (3, {"a": 2}), (5, {"a": 3})]  # before: {"a": 3} dropped
