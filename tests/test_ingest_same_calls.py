"""One call logged by two producers is audited once (trial defect 6).

Teams keep a LiteLLM proxy's own logs (``StandardLoggingPayload``, to S3 or a custom logger)
beside its Langfuse callback's observations of the same calls; the callback names each
generation by LiteLLM's call id. Both records are rebuilt here in the producers' real shapes
(the field sets of ``tests/data/formats/langfuse_observations_export.jsonl`` and
``litellm_standard_logging_payload.jsonl``, sources in that folder's README) with invented text.

Hand count, same ids (Langfuse first, LiteLLM 0.4 s later, as a proxy stamps its start before
the callback's SDK call starts or after it, a fraction of a second apart):

- Langfuse: calls A (t0), B (t0+30 s), C (t0+60 s): 3 records, 3 requests;
- LiteLLM: A, B, C again (same id, prompt, time within 2 s: 3 duplicates), D with B's id but
  another question at t0+90 s (id reused, other prompt: audited), E with A's id and prompt but
  at t0+600 s (another call: audited): 5 records, 2 requests, 3 duplicates, 2 reused ids.
- Audited: 3 + 2 = 5 requests (before: 8).

Other ids (LiteLLM's own ``chatcmpl-…`` ids): nothing is dropped (6 requests), and the LiteLLM
file's 3 requests are said to share the prompt and time of the Langfuse file's.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from promptcache.ingest import InputStats, ReadOptions, read_inputs
from promptcache.pipeline import AuditOptions, audit

T0 = 1782300000.0  # 2026-06-24T11:20:00Z
SYSTEM = ("You are Quay, the booking assistant of the Northern Ferry Line.\n\n"
          + "".join(f"Rule {i}: quote the fare of route {i} from the current tariff and never round it.\n"
                    for i in range(1, 120)))
MODEL = "anthropic/claude-sonnet-4.5"


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def messages(question: str) -> list[dict]:
    return [{"role": "system", "content": [{"type": "text", "text": SYSTEM}]},
            {"role": "user", "content": question}]


def langfuse(oid: str, t: float, question: str) -> dict:
    """A Langfuse observations-export row (a GENERATION of a LiteLLM callback)."""
    return {"id": oid, "traceId": "7c1f0e7a9b2d4c55a1e3f0d2b4c6a8e0", "startTime": iso(t), "endTime": iso(t + 6),
            "projectId": "cm-ferry", "parentObservationId": None, "type": "GENERATION", "environment": "production",
            "name": "litellm-acompletion", "level": "DEFAULT", "statusMessage": None, "version": None,
            "createdAt": iso(t + 20), "updatedAt": iso(t + 20), "input": messages(question),
            "output": {"role": "assistant", "content": "(answer)"}, "model": MODEL, "internalModelId": None,
            "modelParameters": {"temperature": 0.2, "max_tokens": 1024}, "completionStartTime": iso(t + 1),
            "promptId": None, "latency": 6000, "timeToFirstToken": 1000,
            "usageDetails": {"input": 1900, "output": 40, "total": 1940}, "costDetails": {}, "totalCost": 0,
            "metadata": {"hidden_params": {}}, "sessionId": "sess-ferry-1", "traceName": "litellm-acompletion",
            "userId": "user-8", "scores": {}, "comments": []}


def litellm(cid: str, t: float, question: str) -> dict:
    """A LiteLLM ``StandardLoggingPayload`` of the same call."""
    usage = {"completion_tokens": 40, "prompt_tokens": 1900, "total_tokens": 1940,
             "prompt_tokens_details": {"cached_tokens": 0}}
    return {"id": cid, "trace_id": "trace-ferry-1", "call_type": "acompletion", "cache_hit": None, "stream": False,
            "status": "success", "custom_llm_provider": "anthropic", "saved_cache_cost": 0.0, "startTime": t,
            "endTime": t + 6.0, "completionStartTime": t + 1.0, "response_time": 6.0, "model": MODEL,
            "metadata": {"user_api_key_user_id": "user-8", "spend_logs_metadata": {"session_id": "sess-ferry-1"},
                         "requester_ip_address": None, "applied_guardrails": []},
            "cache_key": None, "response_cost": 0.0061, "total_tokens": 1940, "prompt_tokens": 1900,
            "completion_tokens": 40, "request_tags": [], "end_user": "", "api_base": "https://api.anthropic.com",
            "model_group": "", "model_id": "", "messages": messages(question),
            "response": {"id": cid, "created": int(t), "model": MODEL, "object": "chat.completion",
                         "choices": [{"finish_reason": "stop", "index": 0,
                                      "message": {"content": "(answer)", "role": "assistant"}}], "usage": usage},
            "model_parameters": {"temperature": 0.2, "max_tokens": 1024},
            "hidden_params": {"model_id": None, "cache_key": None, "api_base": "https://api.anthropic.com"},
            "error_str": None}


CALLS = [("a1f0c2d4-0001", T0, "When does the 07:10 to Skarvik leave on Sundays?"),
         ("a1f0c2d4-0002", T0 + 30, "Is there a bicycle fare on that route?"),
         ("a1f0c2d4-0003", T0 + 60, "Can I change my booking to the evening sailing?")]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def logs(tmp_path: Path, same_ids: bool) -> tuple[Path, Path]:
    lf = write(tmp_path / "langfuse_observations.jsonl", [langfuse(i, t, q) for i, t, q in CALLS])
    rows = [litellm(i if same_ids else f"chatcmpl-{n:04d}", t + 0.4, q) for n, (i, t, q) in enumerate(CALLS)]
    if same_ids:
        rows.append(litellm(CALLS[1][0], T0 + 90, "And a dog fare?"))  # D: B's id, another prompt
        rows.append(litellm(CALLS[0][0], T0 + 600, CALLS[0][2]))  # E: A's id and prompt, ten minutes on
    return lf, write(tmp_path / "litellm_payloads.jsonl", rows)


def read(*paths: Path):
    stats = [InputStats(str(p)) for p in paths]
    return list(read_inputs(list(paths), stats, ReadOptions())), stats


def test_the_same_call_from_two_producers_is_counted_once(tmp_path):
    lf, ll = logs(tmp_path, same_ids=True)
    reqs, (a, b) = read(lf, ll)
    assert (a.format, b.format) == ("langfuse", "litellm")
    assert (a.records, a.requests, a.duplicates) == (3, 3, 0)
    assert (b.records, b.requests, b.duplicates, b.same_calls, b.duplicate_ids) == (5, 2, 3, 3, 2)
    assert b.accounted == b.records
    assert len(reqs) == 5  # before: 8
    assert [(r.source.path, r.source.line) for r in reqs] == [
        (str(lf), 1), (str(lf), 2), (str(lf), 3), (str(ll), 4), (str(ll), 5)]
    assert b.same_call_example == ("a1f0c2d4-0001", 1, str(lf), 1)
    notes = " | ".join(b.notes())
    assert "3 record(s) log a call counted already: the same id, prompt and time (within 2 s)" in notes
    assert "2 request(s) reuse the id of an earlier request with another prompt or time" in notes
    assert "wrapper" not in notes  # these are no wrapper spans


def test_which_copy_counts_follows_arrival_not_the_argument_order(tmp_path):
    lf, ll = logs(tmp_path, same_ids=True)
    reqs, (b, a) = read(ll, lf)  # LiteLLM given first: its copies still arrive 0.4 s after Langfuse's
    assert (a.requests, a.duplicates, b.requests, b.duplicates) == (3, 0, 2, 3)
    assert len(reqs) == 5


def test_the_audit_counts_each_call_once(tmp_path):
    lf, ll = logs(tmp_path, same_ids=True)
    res = audit([lf, ll], AuditOptions(workers=1))
    assert len(res.outcomes) == 5
    assert [st.duplicates for st in res.inputs] == [0, 3]
    assert any("log a call counted already" in w for w in res.warnings)


def test_other_ids_same_prompt_and_time_are_said_not_dropped(tmp_path):
    lf, ll = logs(tmp_path, same_ids=False)
    reqs, (a, b) = read(lf, ll)
    assert len(reqs) == 6 and (a.requests, b.requests, b.duplicates) == (3, 3, 0)
    assert (a.same_prompts, b.same_prompts, b.same_prompt_example) == (0, 3, (1, str(lf), 1))
    (note,) = [n for n in b.notes() if "may log the same calls" in n]
    assert note.startswith(f"{ll}: 3 of its 3 request(s) have the prompt and time (within 2 s) of a request in {lf}")


def test_one_file_alone_keeps_its_calls_and_identical_prompts_at_other_times(tmp_path):
    # the same question asked in two sessions a minute apart under other ids is two calls
    rows = [litellm("chatcmpl-a", T0, CALLS[0][2]), litellm("chatcmpl-b", T0 + 60, CALLS[0][2]),
            litellm("chatcmpl-a", T0 + 0.5, CALLS[0][2])]  # the first call's record written twice
    reqs, (st,) = read(write(tmp_path / "one.jsonl", rows))
    assert [r.source.line for r in reqs] == [1, 2]
    assert (st.requests, st.duplicates, st.same_calls, st.same_prompts, st.duplicate_ids) == (2, 1, 1, 0, 0)


def _call(rid: str, t: float | None, question: str, line: int):
    from promptcache.model import Part, Request, Source

    return Request(rid, Source("one.jsonl", line), "openai-chat", "chat", None, MODEL, t,
                   (Part("system", "messages[0]", SYSTEM, "system", 0), Part("user", "messages[1]", question, "user", 1)))


def test_one_file_digests_a_prompt_only_when_a_record_may_log_the_same_call():
    # one file's requests are digested only when a later record has their id and time (or when
    # a burst makes them leave undigested room): the verdicts are those of digesting every one
    from promptcache.ingest.seen import KEPT, SeenCalls

    seen = SeenCalls()
    assert seen.check(_call("a", T0, "fare to Skye?", 1), "one.jsonl") == ("new", None)
    assert seen.ids["a"][3] is None  # kept whole, not digested
    assert seen.check(_call("a", T0 + 0.4, "fare to Skye?", 2), "one.jsonl") == ("same-call", ("one.jsonl", 1))
    assert seen.ids["a"][3] is not None  # digested when its id came again
    assert seen.check(_call("a", T0 + 1.0, "fare to Mull?", 3), "one.jsonl") == ("id-reused", ("one.jsonl", 1))
    # a burst at one second: the first ones leave for room, digested, and are still found
    for k in range(KEPT + 5):
        assert seen.check(_call(f"b{k}", T0 + 10, f"question {k}", 10 + k), "one.jsonl") == ("new", None)
    assert len(seen._kept) == KEPT and seen.ids["b0"][3] is not None and seen.ids[f"b{KEPT + 4}"][3] is None
    assert seen.check(_call("b0", T0 + 10.5, "question 0", 200), "one.jsonl") == ("same-call", ("one.jsonl", 10))
    assert seen.check(_call("b1", T0 + 10.5, "question 9", 201), "one.jsonl") == ("id-reused", ("one.jsonl", 11))
    # past the horizon: let go undigested (no later record in arrival order shares its time)
    assert seen.check(_call("c", T0 + 20, "later", 300), "one.jsonl") == ("new", None)
    assert seen.ids["b0"][3] is not None and seen.ids[f"b{KEPT + 4}"][3] is None and list(seen._kept) == ["c"]
    assert seen.check(_call(f"b{KEPT + 4}", T0 + 30, f"question {KEPT + 4}", 301), "one.jsonl")[0] == "id-reused"
    # untimed requests are never the same call: nothing kept
    assert seen.check(_call("d", None, "untimed", 400), "one.jsonl") == ("new", None)
    assert "d" not in seen._kept and seen.check(_call("d", None, "untimed", 401), "one.jsonl")[0] == "id-reused"
