"""Reading-side defects a fresh-user trial found (issue 19, trial of 25 producer logs), each on a
record of the producer's real shape with invented content and a value worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptcache.ingest.usage import normalize_usage
from promptcache.model import Usage
from promptcache.pipeline import AuditOptions, audit

FILLER = "\n".join(f"Rule {k}: answer the customer about parcel {k} in two short sentences and quote the depot code."
                   for k in range(1, 121))


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ------------------------------------------------------------------ 1. cache writes in OpenAI-shaped usage

def test_copilot_usage_reads_nested_anthropic_cache_writes():
    """VS Code Copilot's chat log for a Claude model (jher7/tokenyst-copilot issue 16): OpenAI
    usage, prompt_tokens the total, Anthropic's write count nested in prompt_tokens_details."""
    u = {"prompt_tokens": 57768, "completion_tokens": 210, "total_tokens": 57978,
         "prompt_tokens_details": {"cached_tokens": 57029, "cache_creation_input_tokens": 738,
                                   "anthropic_cache_creation": {"ephemeral_1h_input_tokens": 0,
                                                                "ephemeral_5m_input_tokens": 738}}}
    assert normalize_usage(u) == Usage(57768, 210, 57029, 738, 0)
    # the 1-hour share from the same nesting
    u["prompt_tokens_details"]["anthropic_cache_creation"] = {"ephemeral_1h_input_tokens": 700, "ephemeral_5m_input_tokens": 38}
    assert normalize_usage(u) == Usage(57768, 210, 57029, 738, 700)


def test_litellm_usage_object_anthropic_counts_beside_prompt_tokens():
    """LiteLLM's ``Usage`` for an Anthropic call: prompt_tokens is the whole prompt (reads and
    writes added in), with Anthropic's counts at the top level and LiteLLM's own nested names.
    Read as Anthropic's meaning it would be 1500 + 505 = 2,005 prompt tokens, the uncached 1
    lost; the total is prompt_tokens, 2,006."""
    u = {"prompt_tokens": 2006, "completion_tokens": 12, "total_tokens": 2018,
         "cache_read_input_tokens": 1500, "cache_creation_input_tokens": 505,
         "prompt_tokens_details": {"cached_tokens": 1500, "cache_creation_tokens": 505}}
    assert normalize_usage(u) == Usage(2006, 12, 1500, 505, 0)
    # mozilla-ai any-llm (PR 896): the write count nested under Anthropic's name, no top-level one
    assert normalize_usage({"prompt_tokens": 900, "completion_tokens": 3,
                            "prompt_tokens_details": {"cached_tokens": 0, "cache_creation_input_tokens": 880}}) \
        == Usage(900, 3, 0, 880, 0)
    # Anthropic's own usage still reads as the uncached remainder plus the cache parts
    assert normalize_usage({"input_tokens": 6, "cache_read_input_tokens": 1500, "cache_creation_input_tokens": 500,
                            "output_tokens": 4}) == Usage(2006, 4, 1500, 500, 0)


def copilot_rows(n: int) -> list[dict]:
    """Gateway records {timestamp, request, response} of Copilot chat completions for a Claude
    model: no cache_control in the logged body (the client adds breakpoints after logging), the
    usage shows the previous prompt read from the cache and the rest written."""
    msgs = [{"role": "system", "content": FILLER}, {"role": "user", "content": "Where is parcel 1?"}]
    rows = []
    for k in range(n):
        read = 0 if k == 0 else 3000 + 20 * (k - 1)
        total = 3000 + 20 * k + 10
        rows.append({"timestamp": f"2026-07-18T18:4{k}:00Z", "request_id": f"req-{k}", "session_id": "chat-1",
                     "request": {"model": "claude-sonnet-4.5", "messages": json.loads(json.dumps(msgs)), "stream": True},
                     "response": {"id": f"msg_{k:04d}", "object": "chat.completion", "model": "claude-sonnet-4.5",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "(reply)"}}],
                                  "usage": {"prompt_tokens": total, "completion_tokens": 40, "total_tokens": total + 40,
                                            "prompt_tokens_details": {"cached_tokens": read,
                                                                      "cache_creation_input_tokens": total - read - 1}}}})
        msgs += [{"role": "assistant", "content": f"Parcel {k + 1} is at the depot."},
                 {"role": "user", "content": f"Where is parcel {k + 2}?"}]
    return rows


def test_reported_reads_without_logged_breakpoints_book_no_breakpoint_missing(tmp_path):
    """Reads in the bill and no breakpoint in the body: caching was applied outside the logged
    body. No PC501 loss; PC512 names it at $0 and a warning gives the reported hit ratio.
    By hand: reads 0 + 3000 + 3020 = 6,020 of prompts 3010 + 3030 + 3050 = 9,090 (66.2%); the 2
    later requests are PC512's, their reported ratio (3000 + 3020) / (3030 + 3050) = 99.0%."""
    log = write_jsonl(tmp_path / "copilot.jsonl", copilot_rows(3))
    res = audit([str(log)], AuditOptions())
    # writes are prompt - read - 1: 3009, 3030 - 3000 - 1 = 29, 3050 - 3020 - 1 = 29
    assert sum(o.usage.cache_write_tokens for o in res.outcomes) == 3009 + 29 + 29
    assert sum(o.usage.cache_read_tokens for o in res.outcomes) == 6020
    ids = [f.rule.id for f in res.findings]
    assert "breakpoint-missing" not in ids
    got = next(f for f in res.findings if f.rule.id == "breakpoint-outside-log")
    assert got.requests == 2 and got.cost_usd_lost == 0
    assert any("6,020 of 6,080 prompt tokens read from the cache (99.0%)" in w for w in res.warnings), res.warnings
    # the accounting still adds up: the rules gap's tokens are this row's, at no cost
    rows = [r for r in res.accounting.rows if r.gap == "rules"]
    assert [r.rule for r in rows] == ["breakpoint-outside-log"] and rows[0].cost_usd == 0


def test_no_reported_reads_still_books_breakpoint_missing(tmp_path):
    """The same traffic with nothing read in the bill: the breakpoint really is missing."""
    rows = copilot_rows(3)
    for r in rows:
        d = r["response"]["usage"]["prompt_tokens_details"]
        d["cached_tokens"], d["cache_creation_input_tokens"] = 0, 0
    res = audit([str(write_jsonl(tmp_path / "copilot.jsonl", rows))], AuditOptions())
    ids = [f.rule.id for f in res.findings]
    assert "breakpoint-missing" in ids and "breakpoint-outside-log" not in ids


# ------------------------------------------------------------------ 2. AI SDK providerOptions cacheControl

from promptcache.ingest import InputStats, ReadOptions, read_inputs  # noqa: E402

EPH = {"anthropic": {"cacheControl": {"type": "ephemeral"}}}


def read_all(path: Path):
    st = InputStats(str(path))
    reqs = list(read_inputs([path], [st], ReadOptions()))
    assert st.records == st.accounted
    return reqs


def marks(req) -> list[tuple[str, int | None]]:
    """(path, TTL) of each breakpoint; the default TTL (no ``ttl`` given) as 300 whichever body
    reader (None: the provider's default, Anthropic's 5 minutes) read it."""
    return [(p.path, p.breakpoint.ttl_seconds or 300) for p in req.parts if p.breakpoint is not None]


def aisdk_messages() -> list[dict]:
    """``ai.prompt.messages`` as AI SDK v5 logs it for opencode (the standardized prompt): a
    message-level cacheControl on the system message (content a string), one on the last user
    message (the SDK marks its last part), and a part-level 1-hour one on an earlier part; a
    tool-call part still carrying last turn's cacheControl (it must not read as changed text)."""
    return [
        {"role": "system", "content": FILLER, "providerOptions": EPH},
        {"role": "user", "content": [{"type": "text", "text": "Where is parcel 7?",
                                      "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral", "ttl": "1h"}}}}]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "toolu_01", "toolName": "track",
                                           "input": {"parcel": 7}, "providerOptions": EPH}]},
        {"role": "user", "content": [{"type": "text", "text": "And parcel 8?"}, {"type": "text", "text": "Thanks."}],
         "providerOptions": EPH},
    ]


def aisdk_span_line(messages: list[dict]) -> dict:
    attrs = [{"key": "ai.operationId", "value": {"stringValue": "ai.streamText.doStream"}},
             {"key": "ai.model.provider", "value": {"stringValue": "anthropic.messages"}},
             {"key": "ai.model.id", "value": {"stringValue": "claude-sonnet-4-5"}},
             {"key": "ai.telemetry.metadata.sessionId", "value": {"stringValue": "ses_1"}},
             {"key": "ai.prompt.messages", "value": {"stringValue": json.dumps(messages)}},
             {"key": "ai.usage.inputTokens", "value": {"intValue": "3100"}},
             {"key": "ai.usage.outputTokens", "value": {"intValue": "20"}}]
    span = {"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "2", "parentSpanId": "", "flags": 257,
            "name": "ai.streamText.doStream", "kind": 1, "startTimeUnixNano": "1782600000000000000",
            "endTimeUnixNano": "1782600001000000000", "attributes": attrs, "events": [], "status": {"code": 1}}
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "opencode"}}]},
                               "scopeSpans": [{"scope": {"name": "ai", "version": "5.0.0"}, "spans": [span]}]}]}


#: By hand: system message (messages[0].content, 5m), the 1-hour part (messages[1].content[0]),
#: the tool call's part-level mark (messages[2].content[0]), and the last part of the last
#: message (messages[3].content[1]), from its message-level option.
AISDK_MARKS = [("ai.prompt.messages[0].content", 300), ("ai.prompt.messages[1].content[0]", 3600),
               ("ai.prompt.messages[2].content[0]", 300), ("ai.prompt.messages[3].content[1]", 300)]


def test_aisdk_otlp_provider_options_are_breakpoints(tmp_path):
    (req,) = read_all(write_jsonl(tmp_path / "aisdk.jsonl", [aisdk_span_line(aisdk_messages())]))
    assert marks(req) == AISDK_MARKS
    call = next(p for p in req.parts if p.path == "ai.prompt.messages[2].content[0]")
    assert "providerOptions" not in call.text and '"toolName":"track"' in call.text


def test_aisdk_v4_provider_metadata_is_a_breakpoint(tmp_path):
    """AI SDK 4 logs the standardized prompt with ``providerMetadata`` (and its input messages
    with ``experimental_providerMetadata``)."""
    msgs = [{"role": "system", "content": FILLER, "providerMetadata": EPH},
            {"role": "user", "content": [{"type": "text", "text": "Hi", "experimental_providerMetadata": EPH}]}]
    (req,) = read_all(write_jsonl(tmp_path / "aisdk4.jsonl", [aisdk_span_line(msgs)]))
    assert marks(req) == [("ai.prompt.messages[0].content", 300), ("ai.prompt.messages[1].content[0]", 300)]


def aisdk4_usage_line(usage: dict, provider_metadata: dict) -> dict:
    """An AI SDK 4 ``doGenerate`` span: ``ai.usage.promptTokens`` / ``completionTokens`` (also as
    ``gen_ai.usage.*``) and the provider's cache counts only in ``ai.response.providerMetadata``
    (a JSON string), as a fresh user's export had them."""
    line = aisdk_span_line([{"role": "system", "content": FILLER}, {"role": "user", "content": "Hi"}])
    span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith("ai.usage.")] + [
        {"key": k, "value": {"intValue": str(v)}} for k, v in usage.items()] + [
        {"key": "ai.response.providerMetadata", "value": {"stringValue": json.dumps(provider_metadata)}}]
    return line


@pytest.mark.parametrize("usage,meta,want", [
    # @ai-sdk/anthropic 1.x: promptTokens is Anthropic's input_tokens (the uncached remainder)
    ({"ai.usage.promptTokens": 30, "ai.usage.completionTokens": 60, "gen_ai.usage.input_tokens": 30},
     {"anthropic": {"cacheCreationInputTokens": 0, "cacheReadInputTokens": 1620}}, (1650, 1620, 0)),
    ({"ai.usage.promptTokens": 30, "ai.usage.completionTokens": 60},
     {"anthropic": {"cacheCreationInputTokens": 1620, "cacheReadInputTokens": 0}}, (1650, 0, 1620)),
    # the raw Messages usage the Anthropic provider also passes: the provider's own bill
    ({"ai.usage.promptTokens": 110, "ai.usage.completionTokens": 60},
     {"anthropic": {"cacheCreationInputTokens": 0, "usage": {"input_tokens": 110, "cache_creation_input_tokens": 0,
                                                            "cache_read_input_tokens": 1620, "output_tokens": 60}}},
     (1730, 1620, 0)),
    # @ai-sdk/openai 1.x: promptTokens is OpenAI's prompt_tokens (all of them), cachedPromptTokens inside
    ({"ai.usage.promptTokens": 1650, "ai.usage.completionTokens": 60}, {"openai": {"cachedPromptTokens": 1536}},
     (1650, 1536, 0)),
])
def test_aisdk4_cache_counts_in_provider_metadata_are_read(tmp_path, usage, meta, want):
    """They were not: "records report prompt tokens but no cache fields", and a breakpoint-missing
    loss booked on tokens the log shows were read from the cache."""
    (req,) = read_all(write_jsonl(tmp_path / "aisdk4.jsonl", [aisdk4_usage_line(usage, meta)]))
    u = req.usage
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens) == want and u.cache_reported
    assert u.output_tokens == 60


def aisdk5_usage_line(usage: dict, provider_metadata: dict | None, provider: str = "anthropic.messages") -> dict:
    """An AI SDK 5 ``doGenerate`` span: ``ai.usage.inputTokens`` / ``cachedInputTokens`` (and
    ``gen_ai.usage.input_tokens``, the same count), the Anthropic provider's cache writes only in
    ``ai.response.providerMetadata`` (@ai-sdk/anthropic 2.x: ``inputTokens: input_tokens``,
    ``cachedInputTokens: cache_read_input_tokens``, ``providerMetadata.anthropic
    .cacheCreationInputTokens``; vercel/ai ``packages/anthropic/src/anthropic-messages-language-model.ts``)."""
    line = aisdk4_usage_line(usage, provider_metadata or {})
    span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] = [a for a in span["attributes"] if not (a["key"] == "ai.model.provider" or
                          (provider_metadata is None and a["key"] == "ai.response.providerMetadata"))] + [
        {"key": "ai.model.provider", "value": {"stringValue": provider}}]
    return line


@pytest.mark.parametrize("usage,meta,provider,want", [
    # a cache read: 30 uncached + 1,620 read = 1,650 prompt tokens
    ({"ai.usage.inputTokens": 30, "gen_ai.usage.input_tokens": 30, "ai.usage.cachedInputTokens": 1620,
      "ai.usage.outputTokens": 60}, {"anthropic": {"cacheCreationInputTokens": 0}}, "anthropic.messages",
     (1650, 1620, 0)),
    # a cache write, seen only in provider metadata: 30 + 1,620 written
    ({"ai.usage.inputTokens": 30, "ai.usage.cachedInputTokens": 0, "ai.usage.outputTokens": 60},
     {"anthropic": {"cacheCreationInputTokens": 1620}}, "anthropic.messages", (1650, 0, 1620)),
    # uncached larger than the read (so "a count smaller than its cache parts" does not tell):
    # 2,000 + 1,620 read + 300 written = 3,920, not 2,000 with 1,620 of them read
    ({"ai.usage.inputTokens": 2000, "ai.usage.cachedInputTokens": 1620, "ai.usage.outputTokens": 60},
     {"anthropic": {"cacheCreationInputTokens": 300}}, "anthropic.messages", (3920, 1620, 300)),
    # Claude on Vertex AI through @ai-sdk/google-vertex/anthropic, provider metadata not logged
    ({"ai.usage.inputTokens": 2000, "ai.usage.cachedInputTokens": 1620, "ai.usage.outputTokens": 60},
     None, "vertex.anthropic.messages", (3620, 1620, 0)),
    # @ai-sdk/openai 2.x: inputTokens is prompt_tokens, the cached ones included
    ({"ai.usage.inputTokens": 2000, "ai.usage.cachedInputTokens": 1536, "ai.usage.outputTokens": 60},
     {"openai": {"reasoningTokens": 0}}, "openai.chat", (2000, 1536, 0)),
    # v6 names: inputTokens is the whole prompt whichever provider served it
    ({"ai.usage.inputTokens": 3920, "ai.usage.cachedInputTokens": 1620, "ai.usage.outputTokens": 60,
      "ai.usage.inputTokenDetails.noCacheTokens": 2000, "ai.usage.inputTokenDetails.cacheReadTokens": 1620,
      "ai.usage.inputTokenDetails.cacheWriteTokens": 300},
     {"anthropic": {"cacheCreationInputTokens": 300}}, "anthropic.messages", (3920, 1620, 300)),
])
def test_aisdk5_anthropic_input_is_the_uncached_remainder(tmp_path, usage, meta, provider, want):
    """A fresh user's AI SDK 5 export: the cache write in ``providerMetadata`` was not read and
    ``inputTokens`` was taken as the whole prompt, so a request that read 1,620 tokens and wrote
    300 showed 2,000 prompt tokens with 1,620 of them read and nothing written."""
    (req,) = read_all(write_jsonl(tmp_path / "aisdk5.jsonl", [aisdk5_usage_line(usage, meta, provider)]))
    u = req.usage
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens) == want and u.cache_reported
    assert u.output_tokens == 60


def test_aisdk5_anthropic_without_cache_counts_reports_no_cache(tmp_path):
    """A v5 Anthropic span with neither a cache count nor provider metadata says nothing of the
    cache: its 3,100 input tokens are the prompt, with no cache reported (not 0 cached)."""
    (req,) = read_all(write_jsonl(tmp_path / "aisdk5.jsonl", [aisdk_span_line([{"role": "user", "content": "Hi"}])]))
    assert req.usage.input_tokens == 3100 and not req.usage.cache_reported


def test_langfuse_aisdk_generation_provider_options_are_breakpoints(tmp_path):
    """A Langfuse observation export row of an AI SDK generation (the doStream leaf): ``input`` is
    the SDK's message list, as in tests/data/producers/langfuse_trace_vercel_aisdk.json."""
    row = {"id": "obs-1", "traceId": "t" * 32, "startTime": "2026-07-01T10:00:00.000Z", "endTime": "2026-07-01T10:00:02.000Z",
           "projectId": "cm-proj-1", "parentObservationId": None, "type": "GENERATION", "environment": "default",
           "name": "ai.streamText.doStream", "level": "DEFAULT", "input": aisdk_messages(), "output": None,
           "model": "claude-sonnet-4-5", "modelParameters": {}, "usageDetails": {"input": 3100, "output": 20},
           "costDetails": {}, "metadata": {}}
    (req,) = read_all(write_jsonl(tmp_path / "langfuse.jsonl", [row]))
    assert [(p, t) for p, t in marks(req)] == [(p.replace("ai.prompt.messages", "input"), t) for p, t in AISDK_MARKS]


# ------------------------------------------------------------------ 3. LiteLLM custom_llm_provider: openrouter

from promptcache.simulate.routing import router  # noqa: E402


def test_router_named_as_its_own_upstream_resolves_by_the_model():
    """LiteLLM logs the route (``custom_llm_provider: openrouter``) where a router's own records
    name who served the call; the router itself is no upstream: resolve by the model's
    organisation, as without the field."""
    r = router()
    model = "openrouter/anthropic/claude-sonnet-4.5"
    got = r.resolve("openrouter", model, "openrouter")
    assert got is not None and got.label == "openrouter>anthropic" and got.upstream is None
    assert got.label == r.resolve(None, model, None).label
    # a named upstream still decides
    assert r.resolve("openrouter", "openrouter/openai/gpt-4.1", "Anthropic").file.id == "anthropic"


def litellm_openrouter_row(k: int, provider_field: bool) -> dict:
    """A LiteLLM_SpendLogs row (the proxy's stored body, usage in metadata.usage_object) of an
    OpenRouter call for a Claude model."""
    body = {"model": "openrouter/anthropic/claude-sonnet-4.5",
            "messages": [{"role": "system", "content": FILLER}, {"role": "user", "content": f"Where is parcel {k}?"}]}
    uo = {"prompt_tokens": 3010, "completion_tokens": 9, "total_tokens": 3019}
    row = {"request_id": f"chatcmpl-{k}", "session_id": "sess-1", "call_type": "acompletion",
           "startTime": f"2026-07-01 10:0{k}:00.000000", "endTime": f"2026-07-01 10:0{k}:02.000000",
           "model": body["model"], "metadata": json.dumps({"usage_object": uo, "status": "success"}),
           "prompt_tokens": 3010, "completion_tokens": 9, "total_tokens": 3019, "api_base": "https://openrouter.ai/api/v1",
           "messages": "{}", "response": "{}", "proxy_server_request": json.dumps(body), "status": "success"}
    if provider_field:
        row["custom_llm_provider"] = "openrouter"
    return row


def test_litellm_openrouter_rows_get_the_upstreams_rules(tmp_path):
    res = {}
    for field in (True, False):
        log = write_jsonl(tmp_path / f"or{field}.jsonl", [litellm_openrouter_row(k, field) for k in range(2)])
        got = audit([str(log)], AuditOptions())
        assert not any("names no known provider" in w for w in got.warnings), got.warnings
        res[field] = got
    assert {o.provider for o in res[True].outcomes} == {"anthropic"}
    assert [o.namespace for o in res[True].outcomes] == [o.namespace for o in res[False].outcomes]
    assert [o.cached_tokens for o in res[True].outcomes] == [o.cached_tokens for o in res[False].outcomes]


# ------------------------------------------------------------------ 4. absent cache fields are unknown, not 0

from promptcache.ingest.usage import litellm_usage  # noqa: E402


def slp_row(k: int, usage: dict | None) -> dict:
    """A LiteLLM StandardLoggingPayload (https://docs.litellm.ai/docs/proxy/logging_spec): token
    counts at the top level; cache counts only in ``response.usage`` when the response is logged
    with it (here: without, as a streamed call's payload may be)."""
    msgs = [{"role": "system", "content": FILLER}, {"role": "user", "content": f"Where is parcel {k}?"}]
    resp = {"id": f"chatcmpl-{k}", "object": "chat.completion", "model": "claude-sonnet-4-5",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "At the depot."}}]}
    if usage is not None:
        resp["usage"] = usage
    return {"id": f"chatcmpl-{k}", "trace_id": "task-1", "call_type": "acompletion", "status": "success",
            "custom_llm_provider": "anthropic", "startTime": 1780300000.0 + 30 * k, "endTime": 1780300003.0 + 30 * k,
            "model": "claude-sonnet-4-5", "metadata": {"user_api_key_alias": "dev"}, "total_tokens": 3030,
            "prompt_tokens": 3010, "completion_tokens": 20, "messages": msgs, "response": resp,
            "model_parameters": {"max_tokens": 1024}, "hidden_params": {"api_base": "https://api.anthropic.com/v1/messages"}}


def test_litellm_row_without_cache_fields_reports_no_cache_usage(tmp_path):
    u = litellm_usage({"prompt_tokens": 3010, "completion_tokens": 20}, None)
    assert (u.input_tokens, u.output_tokens, u.cache_reported) == (3010, 20, False)
    # the usage object written, with its cache fields saying 0: reported 0 (LiteLLM always writes them)
    u0 = litellm_usage({"prompt_tokens": 3010}, {"prompt_tokens": 3010, "completion_tokens": 20,
                                                  "prompt_tokens_details": {"cached_tokens": 0}})
    assert (u0.cache_read_tokens, u0.cache_reported) == (0, True)
    res = audit([str(write_jsonl(tmp_path / "slp.jsonl", [slp_row(k, None) for k in range(3)]))], AuditOptions())
    assert all(o.usage is None for o in res.outcomes)
    assert res.scenarios["reported"].requests == 0
    assert not [r for r in res.accounting.rows if r.gap == "reported"]
    assert any("no cache fields (cache usage not logged)" in w for w in res.warnings)


def test_litellm_row_with_zero_cache_fields_keeps_the_reported_gap(tmp_path):
    """The same rows with the usage object logged and saying 0 cached: a reported 0, and the
    simulation's reads are a reported gap."""
    usage = {"prompt_tokens": 3010, "completion_tokens": 20, "total_tokens": 3030,
             "prompt_tokens_details": {"cached_tokens": 0}, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    res = audit([str(write_jsonl(tmp_path / "slp.jsonl", [slp_row(k, usage) for k in range(3)]))], AuditOptions())
    assert res.scenarios["reported"].requests == 3 and res.scenarios["reported"].cached_tokens == 0


# ------------------------------------------------------------------ 5. a truncated .gz

import gzip  # noqa: E402

import pytest  # noqa: E402

from promptcache.errors import InputError  # noqa: E402


def test_gzip_without_its_trailer_reads_every_record_and_warns(tmp_path):
    """A gzip member ends with an 8-byte trailer (CRC32, ISIZE; RFC 1952 section 2.3): cut it off
    and all 5 lines still decompress, but the stream has no end marker. By hand: 5 requests, the
    warning names line 5; --strict refuses the file."""
    rows = [{"model": "gpt-4.1", "messages": [{"role": "system", "content": FILLER},
                                              {"role": "user", "content": f"Where is parcel {k}?"}]} for k in range(5)]
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode())
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(data[:-8])
    st = InputStats(str(p))
    reqs = list(read_inputs([p], [st], ReadOptions()))
    assert len(reqs) == 5 and st.records == st.accounted == 5
    assert any("truncated" in n and "up to line 5," in n for n in st.notes()), st.notes()
    with pytest.raises(InputError, match="truncated"):
        list(read_inputs([p], [InputStats(str(p))], ReadOptions(strict=True)))


def test_otel_spans_without_cache_attributes_report_no_cache_usage(tmp_path):
    """OpenTelemetry GenAI spans (tests/data/formats/otel_genai_semconv_otlp.jsonl, the OTLP JSON
    of opentelemetry-instrumentation-openai-v2): the cache counts are optional ("Recommended")
    attributes. With them stripped, the spans say nothing of the cache: no reported scenario and
    no reported-gap rows (before, each read as 0 cached, and the simulation's reads were billed
    as a reported gap). As exported, every chat span reports its reads."""
    src = Path(__file__).parent / "data" / "formats" / "otel_genai_semconv_otlp.jsonl"
    res = audit([str(src)], AuditOptions())
    chats = len(res.outcomes)
    assert chats > 0 and res.scenarios["reported"].requests == chats
    lines = []
    for ln in src.read_text(encoding="utf-8").splitlines():
        rec = json.loads(ln)
        for rs in rec["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    sp["attributes"] = [a for a in sp["attributes"] if "cache" not in a["key"]]
        lines.append(rec)
    stripped = write_jsonl(tmp_path / "otel.jsonl", lines)
    assert "cache" not in stripped.read_text(encoding="utf-8")
    res = audit([str(stripped)], AuditOptions())
    assert len(res.outcomes) == chats
    assert all(o.usage is None for o in res.outcomes)
    assert res.scenarios["reported"].requests == 0
    assert not [r for r in res.accounting.rows if r.gap == "reported"]
    assert any("no cache fields (cache usage not logged)" in w for w in res.warnings)
