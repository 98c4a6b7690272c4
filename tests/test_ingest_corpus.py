"""Every log-format fixture of ``tests/data/formats`` (27 producers' record shapes, see its
README) read with its expected requests, model, first arrival and reported cached tokens
(``expected.json``), every record accounted for, and batch inputs joined with their outputs.

Where the file cannot hold what ``expected.json`` says, the test says what it holds instead and
why (``DIFFERENT``): the expectation was written from the generator's defaults, not the bytes.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from promptcache.ingest import InputStats, ReadOptions, read_inputs

FORMATS = Path(__file__).parent / "data" / "formats"
EXPECTED = json.loads((FORMATS / "expected.json").read_text())

#: file → {field: (what the file holds, why)} where expected.json asks for what the bytes do not hold.
DIFFERENT = {
    # lengths only: no prompt and no block hashes, so no request can be simulated (skipped, with the reason)
    "burstgpt.csv": {"requests": (0, "length-only rows: nothing to simulate"), "model": (None, "no request"),
                     "first_arrival": (None, "no request")},
    "azure_llm_inference_trace.csv": {"requests": (0, "length-only rows: nothing to simulate"),
                                      "first_arrival": (None, "no request")},
    # vLLM's request log line names no model (pass --model)
    "vllm_request_log.txt": {"model": (None, "the logged line has no model")},
    # trace-relative milliseconds from 0: the first arrival is 0.0 s into the trace, not an absolute time
    "mooncake_trace.jsonl": {"first_arrival": (0.0, "trace-relative time")},
}
#: files whose records report usage without a cache count: read as 0 cached tokens, not unknown
NO_CACHE_COUNT = {"cloudflare_ai_gateway_logs.json"}


def read(*names: str):
    paths = [FORMATS / n for n in names]
    stats = [InputStats(str(p)) for p in paths]
    reqs = list(read_inputs(paths, stats, ReadOptions()))
    return reqs, stats


def epoch(iso: str | None) -> float | None:
    return None if iso is None else datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def reported_cached(reqs, stats) -> int | None:
    """Cache reads the file reports: over its requests and its usage-only records."""
    if not any(r.usage for r in reqs) and not any(s.usage_only for s in stats):
        return None
    return sum(r.usage.cache_read_tokens for r in reqs if r.usage) + sum(s.usage_only_usage.cache_read_tokens for s in stats)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_reads_as_expected(name):
    want = dict(EXPECTED[name])
    for k, (v, _why) in DIFFERENT.get(name, {}).items():
        want[k] = v
    reqs, (st,) = read(name)
    assert len(reqs) == want["requests"], (name, st.errors, st.skipped)
    if want["requests"]:
        models = {r.model for r in reqs}
        assert models == {want["model"]}, name
        arrivals = [r.arrival for r in reqs if r.arrival is not None]
        first = want["first_arrival"]
        assert (min(arrivals) if arrivals else None) == (first if isinstance(first, float) else epoch(first)), name
    cached = want["reported_cached_tokens"]
    if name in NO_CACHE_COUNT:
        cached = 0
    assert reported_cached(reqs, [st]) == cached, name
    # every record ended as exactly one outcome
    assert st.records == st.accounted == (st.requests + st.usage_only + st.joined + st.duplicates
                                          + sum(st.skipped.values()) + st.skipped_lines)
    assert st.skipped_lines == 0, st.errors  # none of these fixtures holds a malformed record


@pytest.mark.parametrize("name,records,requests,usage_only,joined,duplicates,skipped", [
    # Vercel AI SDK parent + child generation: 4 calls logged twice (4 duplicates), 3 calls once
    ("langfuse_observations_export.jsonl", 17, 7, 0, 0, 4, 6),
    ("otel_genai_semconv_otlp.jsonl", 14, 7, 0, 0, 0, 7),          # invoke_agent spans skipped
    ("otel_genai_events_in_logs.jsonl", 14, 7, 0, 7, 0, 0),        # the log record with the content joins its span
    # span + one log record per message (system + 1..4 turns, 1..3 turns): 7 spans, 25 message records, 7 of
    # which start their span's content
    ("otel_genai_legacy_log_events.jsonl", 39, 7, 0, 32, 0, 0),
    ("vercel_ai_sdk_otlp.jsonl", 14, 7, 0, 0, 7, 0),               # ai.generateText wraps ai.generateText.doGenerate
    ("sglang_request_log.jsonl", 14, 7, 0, 7, 0, 0),               # request.finished joins request.received
    ("litellm_spend_logs.jsonl", 7, 5, 2, 0, 0, 0),                # two rows without stored prompts
    ("helicone_export_nobody.jsonl", 7, 0, 7, 0, 0, 0),
    ("openai_batch_output.jsonl", 7, 0, 7, 0, 0, 0),                # alone: usage only
    ("openai_response_objects.jsonl", 7, 0, 7, 0, 0, 0),            # Response objects are never requests
    ("vllm_request_log.txt", 14, 7, 0, 0, 0, 7),                    # "Added request" lines
    ("ollama_server_debug.log", 14, 7, 0, 0, 0, 7),                 # [GIN] access lines
    ("cloudflare_logpush_ai_gateway_events.jsonl", 7, 0, 0, 0, 0, 7),  # encrypted bodies
    ("azure_openai_diagnostic_logs.jsonl", 7, 0, 0, 0, 0, 7),
    ("burstgpt.csv", 7, 0, 0, 0, 0, 7),
])
def test_every_record_is_accounted_for(name, records, requests, usage_only, joined, duplicates, skipped):
    _, (st,) = read(name)
    assert (st.records, st.requests, st.usage_only, st.joined, st.duplicates, sum(st.skipped.values())) == (
        records, requests, usage_only, joined, duplicates, skipped)


@pytest.mark.parametrize("files", [
    ("openai_batch_input.jsonl", "openai_batch_output.jsonl"),
    ("openai_batch_output.jsonl", "openai_batch_input.jsonl"),  # either order: outputs are read first
    ("anthropic_batch_requests.jsonl", "anthropic_batch_results.jsonl"),
    ("anthropic_batch_results.jsonl", "anthropic_batch_requests.jsonl"),
])
def test_batch_inputs_join_their_outputs(files):
    reqs, stats = read(*files)
    assert len(reqs) == 7 and all(r.usage is not None for r in reqs)
    assert sum(r.usage.cache_read_tokens for r in reqs) == 7680  # the 5 turns after the two first ones read 1,536 each
    inp = next(s for s in stats if s.requests)
    out = next(s for s in stats if not s.requests)
    assert (inp.requests, out.joined, out.usage_only, out.records) == (7, 7, 0, 7)
    # the returned turn, numbered as the message after the request's own
    r = reqs[0]
    n = 1 + max(p.message for p in r.parts if p.message is not None)
    assert r.response is not None and r.response.parts and r.response.parts[0].message == n
    assert r.response.parts[0].text == "(answer)"
    # OpenAI's output lines carry when the batch served each request (``body.created``): the joined
    # requests take it as their arrival (the input lines hold none), so TTLs are evaluated;
    # Anthropic's results carry no time
    if files[0].startswith("openai"):
        created = [json.loads(line)["response"]["body"]["created"]
                   for line in (FORMATS / "openai_batch_output.jsonl").read_text().splitlines() if line.strip()]
        assert [r.arrival for r in reqs] == [float(c) for c in created]
        assert reqs[0].arrival == epoch(EXPECTED["openai_batch_output.jsonl"]["first_arrival"])
    else:
        assert all(r.arrival is None for r in reqs)


def test_responses_chain_is_rebuilt_through_previous_response_id():
    """Each turn sends only its new message; the log holds every earlier turn and response, so
    each prompt is rebuilt as OpenAI sees it: the chain's input and output items, then the new
    input. The first turn's instructions are not carried over (the API reference says so)."""
    reqs, (st,) = read("openai_responses_previous_response_id.jsonl")
    by = {}
    for r in reqs:
        by.setdefault(r.session or r.id, []).append(r)
    first, second = reqs[0], next(r for r in reqs if r.previous_response_id == reqs[0].response.id)
    assert first.previous_response_id is None and first.parts[0].path == "instructions"
    assert [(p.kind, p.path) for p in second.parts] == [
        ("user", f"previous[{first.response.id}].input[0].content"),
        ("assistant", f"previous[{first.response.id}].output[0].content[0]"),
        ("user", "input[0].content")]
    assert [p.message for p in second.parts] == [0, 1, 2]
    assert not any(r.prefix_on_server for r in reqs) and st.prefix_on_server == 0


def test_a_chain_whose_first_response_is_not_in_the_log_is_marked(tmp_path):
    lines = [json.loads(x) for x in (FORMATS / "openai_responses_previous_response_id.jsonl").read_text().splitlines()]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(json.dumps(x) for x in lines if x["request"].get("previous_response_id")) + "\n")
    st = InputStats(str(cut))
    reqs = list(read_inputs([cut], [st], ReadOptions()))
    # 5 follow-ups: those whose previous response was cut out are marked, and so are the turns after them
    assert len(reqs) == 5 and all(r.prefix_on_server for r in reqs) and st.prefix_on_server == 5
    assert any("continue a server-side conversation" in n for n in st.notes())


@pytest.mark.parametrize("name,tools,system,breakpoints,session", [
    ("litellm_spend_logs.jsonl", 0, 1, 1, "sess-a1"),              # a Chat Completions body for Claude: its system message
    ("litellm_standard_logging_payload.jsonl", 1, 1, 0, "sess-a1"),  # tools in model_parameters, session in spend_logs_metadata
    ("helicone_export.jsonl", 0, 1, 1, "sess-a1"),                 # session in request_properties
    ("openllmetry_traceloop_otlp.jsonl", 1, 1, 0, "sess-a1"),      # llm.request.functions.*, traceloop association session
    ("openinference_otlp.jsonl", 1, 1, 0, "sess-a1"),              # llm.tools.N.tool.json_schema
    ("vercel_ai_sdk_otlp.jsonl", 1, 1, 0, "sess-a1"),              # ai.prompt.tools, ai.telemetry.metadata.sessionId
    ("otel_genai_semconv_otlp.jsonl", 1, 1, 0, "sess-a1"),         # gen_ai.tool.definitions, gen_ai.conversation.id
    ("bedrock_invocation_logs.json.gz", 0, 1, 1, "sess-a1"),       # a cachePoint after the system block
    ("braintrust_logs.jsonl", 0, 1, 0, "sess-a1"),
    ("mlflow_traces.jsonl", 0, 1, 0, "sess-a1"),                   # mlflow.trace.session
    ("anthropic_batch_requests.jsonl", 0, 1, 1, None),
])
def test_tools_system_breakpoints_and_sessions_are_read(name, tools, system, breakpoints, session):
    reqs, _ = read(name)
    r = reqs[-1]  # the last request: the fourth turn of session sess-a1 (fixtures interleave two sessions)
    assert sum(p.kind == "tool" for p in r.parts) == tools
    assert sum(p.kind == "system" for p in r.parts) == system and r.parts[tools].kind == "system"
    assert sum(p.breakpoint is not None for p in r.parts) == breakpoints
    assert r.session == session
    assert [p.role for p in r.parts[tools + 1:]] == ["user", "assistant"] * 3 + ["user"]  # the history, in order


@pytest.mark.parametrize("files,named,api,share", [
    (("anthropic_batch_requests.jsonl", "anthropic_batch_results.jsonl"),
     ("anthropic_batch_requests.jsonl", "anthropic_batch_results.jsonl"), "Anthropic's Message Batches API", "50%"),
    # an OpenAI batch's input lines read as Chat Completions bodies: the output file tells the batch
    (("openai_batch_input.jsonl", "openai_batch_output.jsonl"), ("openai_batch_output.jsonl",), "OpenAI's Batch API", "50%"),
])
def test_a_batch_apis_discount_is_said_where_costs_are_at_standard_prices(files, named, api, share):
    """Batch APIs bill below the standard prices every cost is computed at (the rules files'
    ``batch_price``, with its source): the audit says so once per API, naming its files (a fresh
    user's Message Batches audit showed every cost about twice the bill, with no word)."""
    from promptcache.pipeline import audit
    from promptcache.simulate.rules import load_providers

    res = audit([FORMATS / n for n in files])
    (w,) = [w for w in res.warnings if api in w]
    pid = "anthropic" if api.startswith("Anthropic") else "openai"
    bp = load_providers()[pid].batch_price
    assert f"at {share} of the standard price" in w and bp["source"] in w and bp["what"] in w
    assert all(n in w for n in named) and all(n not in w for n in set(files) - set(named))
    plain = audit([FORMATS / "litellm_spend_logs.jsonl"])
    assert not [w for w in plain.warnings if "batch API" in w.lower() or "Batches API" in w]
