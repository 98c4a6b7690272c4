"""The input formats beyond bare provider bodies, each read from a fixture built from its
documented field names (tests/fixtures/logs/README.md lists the sources, checked 2026-11-29):

- LiteLLM spend logs / StandardLoggingPayload: litellm schema.prisma, docs.litellm.ai/docs/proxy/logging_spec
- Langfuse observations: langfuse.com/docs/observability/data-model, langfuse.com/docs/model-usage-and-cost
- Helicone request exports: docs.helicone.ai/gateway/concepts/prompt-caching, docs.helicone.ai/features/sessions
- OpenTelemetry GenAI spans: github.com/open-telemetry/semantic-conventions-genai (gen-ai-spans.md, registry)
- OpenAI Batch input: platform.openai.com/docs/guides/batch
- Gemini generateContent: ai.google.dev/api/generate-content, ai.google.dev/api/caching#Content
- ShareGPT / plain prompts: docs.vllm.ai/en/latest/benchmarking/cli/, LLaMA-Factory data/README.md
- Qwen-Bailian traces: github.com/alibaba-edu/qwen-bailian-usagetraces-anon (timestamps in seconds, 16-token blocks)

Expected values are worked out by hand from the fixture lines (times: 2026-11-29T10:00:00Z is
1795946400, so 09:30 is 1795944600, 11:00 is 1795950000, 12:00 is 1795953600 and 12:30 is
1795955400).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptcache.pipeline import AuditOptions, audit
from promptcache.errors import InputError
from promptcache.ingest import PARSERS, InputStats, ReadOptions, detect, read_requests
from promptcache.ingest.usage import langfuse_usage, litellm_usage, otel_usage
from promptcache.model import Breakpoint, Usage
from promptcache.simulate.routing import router

LOGS = Path(__file__).parent / "fixtures" / "logs"


def read(name: str | Path, **kw):
    path = LOGS / name if isinstance(name, str) else name
    st = InputStats(str(path))
    reqs = list(read_requests(path, st, ReadOptions(**kw)))
    return {r.id: r for r in reqs}, reqs, st


def first_record(name: str):
    return json.loads((LOGS / name).read_text(encoding="utf-8").splitlines()[0])


def shape(req):
    return [(p.kind, p.path, p.role) for p in req.parts]


@pytest.mark.parametrize("name,fmt", [
    ("litellm.jsonl", "litellm"), ("langfuse.jsonl", "langfuse"), ("helicone.jsonl", "helicone"),
    ("otel.jsonl", "otel"), ("gemini.jsonl", "gemini"), ("openai_batch.jsonl", "openai-chat"),
    ("sharegpt.jsonl", "sharegpt"), ("prompts.jsonl", "prompt"), ("bailian.jsonl", "bailian"),
])
def test_detection(name, fmt):
    assert detect(first_record(name)) == fmt
    assert fmt in PARSERS


@pytest.mark.parametrize("rec,fmt", [
    # a Langfuse API page, a console-exporter span, Gemini Batch lines, a Responses Batch line
    ({"data": [{"id": "o", "traceId": "t", "type": "SPAN"}], "meta": {}}, "langfuse"),
    ({"name": "chat", "context": {"span_id": "0x1"}, "attributes": {"gen_ai.operation.name": "chat"}}, "otel"),
    ({"key": "k", "request": {"contents": [{"parts": [{"text": "hi"}]}]}}, "gemini"),
    ({"custom_id": "c", "method": "POST", "url": "/v1/responses", "body": {"model": "gpt-4.1", "input": "hi"}}, "openai-responses"),
    ({"custom_id": "c", "method": "POST", "url": "/v1/completions", "body": {"model": "gpt-3.5-turbo-instruct", "prompt": "hi"}}, "prompt"),
    # Mooncake stays Mooncake: no Bailian session fields
    ({"timestamp": 0, "input_length": 3, "hash_ids": [1], "session_id": "s"}, "mooncake"),
])
def test_detection_of_other_shapes(rec, fmt):
    assert detect(rec) == fmt


@pytest.mark.parametrize("name,line,reason", [
    ("langfuse.jsonl", 4, "'input' is neither a prompt string"),
    ("helicone.jsonl", 3, "request_body is a string but not JSON"),
    ("otel.jsonl", 3, "span badspan000000001: attributes is neither"),
    ("gemini.jsonl", 3, "contents[0].role 'narrator' is not 'user' or 'model'"),
    ("openai_batch.jsonl", 2, "body is a string but not JSON"),
    ("sharegpt.jsonl", 2, "conversations[1].from 'narrator' is not a ShareGPT speaker"),
    ("prompts.jsonl", 2, "'prompt' is neither text nor a list of texts"),
    ("bailian.jsonl", 4, "3 hash_ids for input_length 70 at 16 tokens per block (expected 5)"),
])
def test_malformed_record_reported_with_its_line(name, line, reason):
    _, reqs, st = read(name)
    assert st.skipped_lines == 1 and [ln for ln, _ in st.errors] == [line]
    assert reason in st.errors[0][1]
    assert any(r.source.line > line for r in reqs)  # the rest of the file is still read
    with pytest.raises(InputError, match=rf"{name}:{line}: "):
        read(name, strict=True)


def test_litellm_spend_logs_and_payloads():
    by_id, reqs, st = read("litellm.jsonl")
    assert st.format == "litellm" and st.requests == 4
    # line 3's startTime "yesterday" is no time: the request stays, untimed, and the reason is counted
    assert by_id["chatcmpl-lt-bad"].arrival is None and st.skipped_lines == 0
    assert (st.times.unusable, st.times.unusable_examples) == (1, [(3, "not a time: 'yesterday'")])
    r1 = by_id["chatcmpl-lt-1"]  # the prompt comes from proxy_server_request
    assert shape(r1) == [("system", "messages[0].content", "system"), ("user", "messages[1].content", "user")]
    assert r1.parts[1].text == "How do I rotate an API key?"
    assert (r1.arrival, r1.session, r1.cache_key, r1.provider, r1.api) == (1795946400.0, "sess-42", "tenant-7", "openai", "chat")
    # metadata is JSON text holding usage_object: prompt_tokens 1200 include 1024 cached
    assert r1.usage == Usage(1200, 40, 1024, 0)
    r2 = by_id["chatcmpl-lt-2"]  # empty proxy_server_request: the stored messages are the prompt
    assert [p.path for p in r2.parts] == [f"messages[{i}].content" for i in range(4)]
    assert [p.kind for p in r2.parts] == ["system", "user", "assistant", "user"]
    assert (r2.arrival, r2.session, r2.cache_key, r2.usage) == (1795946460.0, "sess-42", None, Usage(1300, 30, 1152, 0))
    r3 = by_id["slp-3"]  # StandardLoggingPayload: epoch-seconds startTime, Anthropic cache fields
    assert (r3.arrival, r3.model, r3.provider, r3.session) == (1795946520.25, "claude-sonnet-4-5", "anthropic", None)
    # LiteLLM's prompt_tokens already include reads and writes: 3000 >= 2000 + 500
    assert r3.usage == Usage(3000, 20, 2000, 500)
    # line 5 stores no prompt: usage only, counted but not passed on
    assert "chatcmpl-lt-5" not in by_id
    assert st.no_content == 1 and st.no_content_usage == Usage(500, 5, 0, 0)


def test_langfuse_observations_and_api_page():
    by_id, reqs, st = read("langfuse.jsonl")
    assert st.format == "langfuse" and st.requests == 3
    o1 = by_id["obs-1"]
    assert shape(o1) == [("system", "input[0].content", "system"), ("user", "input[1].content", "user")]
    assert (o1.arrival, o1.session, o1.cache_key, o1.model) == (1795944600.0, "chat-77", "returns-v3", "gpt-4o")
    assert o1.params == {"tool_choice": "auto"}
    # Langfuse "input" excludes the cached tokens, which come as their own input type: 150 + 1024
    assert o1.usage == Usage(1174, 40, 1024, 0)
    o3 = by_id["obs-3"]  # input holds an Anthropic body; session falls back to the trace
    assert shape(o3) == [("system", "input.system", "system"), ("user", "input.messages[0].content", "user")]
    assert (o3.api, o3.provider, o3.session, o3.arrival) == ("anthropic", "anthropic", "tr-2", 1795944660.0)
    assert o3.usage == Usage(20 + 3000 + 400, 55, 3000, 400)
    o5 = by_id["obs-5"]  # from the API page on line 5
    assert shape(o5) == [("user", "input", "user")] and o5.source.line == 5
    assert (o5.parts[0].text, o5.usage) == ("Write a haiku about caches.", Usage(9, 17, 0, 0))
    assert st.ignored == {"Langfuse SPAN observation (not an LLM call)": 1, "Langfuse EVENT observation (not an LLM call)": 1}
    assert st.no_content == 1 and st.no_content_usage == Usage(300, 10, 0, 0)  # obs-7: input null


def test_helicone_request_export():
    by_id, reqs, st = read("helicone.jsonl")
    assert st.format == "helicone" and st.requests == 3
    h1 = by_id["hc-1"]  # request_body is an Anthropic body with a cache_control breakpoint
    assert shape(h1) == [("system", "system[0]", "system"), ("user", "messages[0].content", "user")]
    assert h1.parts[0].breakpoint == Breakpoint(300)
    assert (h1.arrival, h1.session, h1.provider, h1.model) == (1795953600.0, "hs-1", "anthropic", "claude-sonnet-4-5-20250929")
    # Helicone prompt_tokens are the uncached ones: 12 + 0 read + 2100 written
    assert h1.usage == Usage(2112, 80, 0, 2100)
    h2 = by_id["hc-2"]  # request_body as JSON text; no session property: the user id groups it
    assert shape(h2) == [("system", "messages[0].content", "system"), ("user", "messages[1].content", "user")]
    assert (h2.arrival, h2.session, h2.cache_key) == (1795953630.0, "u-5", "tutor")
    # 100 uncached + 1024 read = 1124, the prompt_tokens its own response_body reports
    assert h2.usage == Usage(1124, 64, 1024, 0)
    assert st.no_content == 1 and st.no_content_usage == Usage(700 + 512, 9, 512, 0)  # hc-4: no body
    h5 = by_id["hc-5"]  # a Gemini body through Helicone
    assert shape(h5) == [("user", "contents[0].parts[0]", "user")]
    assert (h5.api, h5.provider, h5.usage) == ("gemini", "google", Usage(8, 3, 0, 0))  # Helicone's GOOGLE, as logged
    assert router().resolve(h5.provider, h5.model).file.id == "gemini"


def test_otel_spans_current_and_legacy():
    by_id, reqs, st = read("otel.jsonl")
    assert st.format == "otel" and st.requests == 5
    chat = by_id["eee19b7ec3c1b174"]
    assert shape(chat) == [
        ("tool", "gen_ai.tool.definitions[0]", None),
        ("system", "gen_ai.system_instructions[0]", "system"),
        ("user", "gen_ai.input.messages[0].parts[0]", "user"),
        ("tool_call", "gen_ai.input.messages[1].parts[0]", "assistant"),
        ("tool_result", "gen_ai.input.messages[2].parts[0]", "tool"),
    ]
    assert chat.parts[2].text == "Review: def f(x): return x/0"
    assert chat.parts[3].text == '{"name":"run_tests","arguments":{"path":"f.py"}}'
    assert chat.parts[4].text == "ZeroDivisionError"
    assert (chat.arrival, chat.session, chat.model, chat.provider) == (1795950000.0, "conv-9", "gpt-4o", "openai")
    assert chat.usage == Usage(1500, 30, 1024, 0)  # input_tokens include the cached ones
    legacy = by_id["legacy00000000001"]  # gen_ai.system, gen_ai.prompt on a gen_ai.content.prompt event
    assert shape(legacy) == [("system", "gen_ai.prompt[0].content", "system"), ("user", "gen_ai.prompt[1].content", "user")]
    assert (legacy.provider, legacy.arrival, legacy.source.line) == ("anthropic", 1795950060.0, 2)
    # prompt_tokens 40 < 3000 + 200 cannot include the cache parts: 40 + 3000 + 200
    assert legacy.usage == Usage(3240, 10, 3000, 200)
    oi = by_id["openinf000000001"]  # OpenInference
    assert shape(oi) == [("system", "llm.input_messages.0.message.content", "system"),
                         ("user", "llm.input_messages.1.message.content", "user")]
    assert (oi.model, oi.session, oi.usage) == ("gpt-4o-mini", "s-oi", Usage(800, 5, 512, 0))
    ollm = by_id["openllmetry00001"]  # the good span next to the malformed one on line 3
    assert shape(ollm) == [("user", "gen_ai.prompt.0.content", "user")] and ollm.source.line == 3
    console = by_id["0x5fb397be34d26b51"]  # console exporter: context.span_id, ISO start_time, message events
    assert shape(console) == [("system", "events[0]", "system"), ("user", "events[1]", "user")]
    # no cache attribute on the span: the cache usage is not logged (not 0 cached)
    assert (console.arrival, console.usage) == (1795955400.0, Usage(20, 3, 0, 0, cache_reported=False))
    assert [r.id for r in reqs] == ["eee19b7ec3c1b174", "legacy00000000001", "openinf000000001",
                                    "openllmetry00001", "0x5fb397be34d26b51"]  # arrival order
    # usage-only span (no content captured): counted with its usage, not simulated
    assert "usageonly0000001" not in by_id
    assert st.no_content == 1 and st.no_content_usage == Usage(400, 7, 256, 0)
    assert st.ignored == {"OpenTelemetry 'invoke_agent' span (not an inference)": 1,
                          "OpenTelemetry 'execute_tool' span (not an inference)": 1}


def test_gemini_bodies():
    by_id, reqs, st = read("gemini.jsonl")
    assert st.format == "gemini" and st.requests == 3
    g1 = by_id["gem-1"]
    assert shape(g1) == [("tool", "tools[0].functionDeclarations[0]", None), ("tool", "tools[0].functionDeclarations[1]", None),
                         ("system", "systemInstruction.parts[0]", "system"), ("user", "contents[0].parts[0]", "user")]
    assert json.loads(g1.parts[0].text)["name"] == "lookup_order"
    assert (g1.api, g1.provider, g1.arrival) == ("gemini", "gemini", 1795950000.0)
    assert g1.params == {"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}  # temperature is no prefix parameter
    assert g1.usage == Usage(2300, 12, 2048, 0)  # promptTokenCount includes cachedContentTokenCount
    g2 = by_id["gem-2"]
    assert shape(g2)[4:] == [("tool_call", "contents[1].parts[0]", "assistant"), ("tool_result", "contents[2].parts[0]", "user"),
                             ("user", "contents[3].parts[0]", "user"), ("image", "contents[3].parts[1]", "user")]
    assert g2.parts[4].text == '{"name":"lookup_order","args":{"id":"1234"}}'
    assert g2.parts[7].text.startswith("<inlineData image/png ")
    assert g2.params["responseMimeType"] == "text/plain" and g2.arrival == 1795950005.0
    b = by_id["batch-7"]  # Batch API line: key is the id, a content without role is the user's
    assert shape(b) == [("user", "contents[0].parts[0]", "user")]
    assert (b.params, b.model, b.arrival) == ({"cachedContent": "cachedContents/abc123"}, None, None)


def test_openai_batch_input():
    by_id, reqs, st = read("openai_batch.jsonl")
    assert st.format == "openai-chat" and sorted(by_id) == ["task-0", "task-2"]
    assert shape(by_id["task-0"]) == [("system", "messages[0].content", "system"), ("user", "messages[1].content", "user")]
    assert by_id["task-2"].cache_key == "sentiment" and st.missing_arrival == 2


def test_sharegpt_expands_per_human_turn():
    by_id, reqs, st = read("sharegpt.jsonl")
    assert st.format == "sharegpt" and [r.id for r in reqs] == ["conv-a#1", "conv-a#2", "sharegpt.jsonl:3#1", "sharegpt.jsonl:3#2"]
    a1, a2 = by_id["conv-a#1"], by_id["conv-a#2"]
    assert shape(a1) == [("system", "conversations[0].value", "system"), ("user", "conversations[1].value", "user")]
    assert [p.path for p in a2.parts] == [f"conversations[{i}].value" for i in range(4)]
    assert a2.parts[-1].text == "June 3 to June 10."  # the final gpt answer is the output, not the prompt
    assert (a1.session, a2.session, a1.source.line, a2.source.line, a1.arrival) == ("conv-a", "conv-a", 1, 1, None)
    f2 = by_id["sharegpt.jsonl:3#2"]  # LLaMA-Factory fields: tools, system, function_call, observation
    assert [p.kind for p in f2.parts] == ["tool", "system", "user", "tool_call", "tool_result", "assistant", "user"]
    assert [p.path for p in f2.parts[:2]] == ["tools", "system"]
    assert reqs[0].model is None and read("sharegpt.jsonl", model="gpt-4o")[1][0].model == "gpt-4o"


def test_plain_prompts():
    by_id, reqs, st = read("prompts.jsonl")
    assert st.format == "prompt"
    p = by_id["prompts.jsonl:1"]
    assert shape(p) == [("user", "prompt", "user")] and p.model is None and p.provider is None
    assert p.parts[0].text == "Summarise the attached contract in three bullet points."
    assert [by_id[f"prompts.jsonl:3#{k}"].parts[0].path for k in (0, 1)] == ["prompt[0]", "prompt[1]"]
    assert by_id["prompts.jsonl:3#1"].arrival == 1795946400.0 and by_id["prompts.jsonl:3#1"].provider == "openai"
    assert read("prompts.jsonl", model="gpt-4o")[0]["prompts.jsonl:1"].model == "gpt-4o"


def test_bailian_trace_sessions_blocks_and_seconds():
    by_id, reqs, st = read("bailian.jsonl")
    assert st.format == "bailian" and [r.id for r in reqs] == ["159", "160", "161", "162", "170"]
    assert [r.arrival for r in reqs] == [61.114, 61.5, 75.25, 90.0, 95.5]  # seconds, not milliseconds
    r161 = by_id["161"]
    assert (r161.hashed.block_tokens, r161.hashed.input_tokens, r161.hashed.block_ids) == (16, 80, (1089, 1090, 1091, 6326, 6327))
    # sessions follow parent_chat_id to the root; a parent missing from the file stands for its session
    assert {k: r.session for k, r in by_id.items()} == {"159": "159", "160": "160", "161": "159", "162": "159", "170": "150"}
    # --hash-block-size overrides the 16-token default: 80 tokens need 3 blocks of 32, not 5
    _, _, st32 = read("bailian.jsonl", hash_block_tokens=32)
    assert "expected 3" in dict(st32.errors)[3]


def test_bailian_sessions_do_not_leak_across_files(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    rec = {"timestamp": 1.0, "input_length": 16, "output_length": 1, "type": "text", "hash_ids": [1]}
    a.write_text("\n".join(json.dumps({**rec, "chat_id": c, "parent_chat_id": p, "turn": t}) for c, p, t in [(10, -1, 1), (11, 10, 2)]))
    b.write_text(json.dumps({**rec, "chat_id": 12, "parent_chat_id": 11, "turn": 3}))
    for fmt in (None, "bailian"):
        read(a, input_format=fmt)
        assert read(b, input_format=fmt)[0]["12"].session == "11"  # 11 is not in b.jsonl


@pytest.mark.parametrize("details,expected", [
    # 1-hour and 5-minute writes without an aggregate: both are writes, the 1h share kept
    ({"input": 10, "input_cache_creation_1h": 100, "input_cache_creation_5m": 50, "output": 1}, Usage(160, 1, 0, 150, 100)),
    # an aggregate and its split: counted once
    ({"input": 10, "cache_creation_input_tokens": 150, "input_cache_creation_1h": 100, "output": 1}, Usage(160, 1, 0, 150, 100)),
    ({"input": 5, "input_cache_read": 95, "input_audio_tokens": 7, "output_reasoning_tokens": 3, "output_text": 4}, Usage(107, 7, 95, 0)),
    ({"output": 3}, None),
])
def test_langfuse_usage_types(details, expected):
    assert langfuse_usage(details) == expected


@pytest.mark.parametrize("rec,uo,expected", [
    # an older LiteLLM that did not add writes into prompt_tokens: 700 < 600 + 400 reads as the remainder
    ({"prompt_tokens": 700, "completion_tokens": 1}, {"cache_read_input_tokens": 600, "cache_creation_input_tokens": 400}, Usage(1700, 1, 600, 400)),
    ({"prompt_tokens": 0, "completion_tokens": 0}, {}, None),  # failed call: no usage
    ({"prompt_tokens": "90", "completion_tokens": 2}, {"prompt_tokens_details": {"cached_tokens": 64, "cache_creation_tokens": 10,
                                                       "cache_creation_token_details": {"ephemeral_1h_input_tokens": 10}}}, Usage(90, 2, 64, 10, 10)),
])
def test_litellm_usage(rec, uo, expected):
    assert litellm_usage(rec, uo) == expected


@pytest.mark.parametrize("attrs,expected", [
    ({"gen_ai.usage.input_tokens": 100, "gen_ai.usage.cache_read.input_tokens": 60, "gen_ai.usage.cache_creation.input_tokens": 30},
     Usage(100, 0, 60, 30)),
    ({"gen_ai.usage.input_tokens": 100, "gen_ai.usage.cache_read_input_tokens": 40}, Usage(100, 0, 40, 0)),
    ({"gen_ai.usage.input_tokens": 100, "gen_ai.usage.input_tokens.cached": 40}, Usage(100, 0, 40, 0)),
    ({"llm.token_count.prompt": 100, "llm.token_count.prompt_details.cache_read": 40, "llm.token_count.completion": 2}, Usage(100, 2, 40, 0)),
    ({"gen_ai.usage.output_tokens": 5}, None),
])
def test_otel_usage_names(attrs, expected):
    assert otel_usage(attrs) == expected


def outcomes(res):
    return {o.id: o for o in res.outcomes}


def test_audit_gemini_second_turn_reuses_first():
    res = audit([LOGS / "gemini.jsonl"])
    o = outcomes(res)
    assert res.inputs[0].format == "gemini" and res.inputs[0].skipped_lines == 1 and len(res.outcomes) == 3
    # gem-2 resends gem-1's tools, system and first turn; Gemini framing opens the model's turn with
    # the same text as gem-1's generation prompt, so all of gem-1 is a prefix of gem-2
    assert 0 < o["gem-1"].prompt_tokens == o["gem-2"].shared_prefix_tokens < o["gem-2"].prompt_tokens
    assert o["gem-2"].divergence.segment == "contents[1].parts[0]"
    assert o["gem-2"].provider == "gemini"


def test_audit_sharegpt_turns_share_history():
    res = audit([LOGS / "sharegpt.jsonl"], AuditOptions(model="gpt-4o"))
    o = outcomes(res)
    assert o["conv-a#2"].model == "gpt-4o"
    assert 0 < o["conv-a#1"].prompt_tokens == o["conv-a#2"].shared_prefix_tokens < o["conv-a#2"].prompt_tokens
    assert o["conv-a#2"].divergence.segment == "conversations[2].value"
    assert o["sharegpt.jsonl:3#1"].prompt_tokens == o["sharegpt.jsonl:3#2"].shared_prefix_tokens


def test_audit_litellm_simulates_and_keeps_usage_only_rows_out():
    res = audit([LOGS / "litellm.jsonl"])
    o = outcomes(res)
    assert sorted(o) == ["chatcmpl-lt-1", "chatcmpl-lt-2", "chatcmpl-lt-bad", "slp-3"]  # lt-bad: untimed, not dropped
    assert 0 < o["chatcmpl-lt-1"].prompt_tokens == o["chatcmpl-lt-2"].shared_prefix_tokens
    assert o["chatcmpl-lt-2"].divergence.segment == "messages[2].content"
    # the simulated rows with cache usage logged: 1200 + 1300 + 3000, 1024 + 1152 + 2000 cached (lt-bad logs
    # prompt_tokens and no usage object: its cache usage is unknown, not 0, so it is not in "reported")
    rep = res.scenarios["reported"]
    assert (rep.requests, rep.prompt_tokens, rep.cached_tokens, rep.cache_write_tokens) == (3, 5500, 4176, 500)
    assert any("1 request(s) carry no prompt content" in w and "500 prompt tokens" in w for w in res.warnings)


def test_audit_bailian_blocks_under_vllm():
    res = audit([LOGS / "bailian.jsonl"], AuditOptions(cache_model="vllm", block_size=16))
    o = outcomes(res)
    # 161 repeats 159's 3 blocks of 16; 162 repeats 161's 5 blocks; 160 shares nothing with 159
    assert [(o[k].shared_prefix_tokens, o[k].cached_tokens) for k in ("159", "160", "161", "162")] == [
        (0, 0), (0, 0), (48, 48), (80, 80)]


def test_audit_notes_ignored_records():
    res = audit([LOGS / "otel.jsonl"])
    assert len(res.outcomes) == 5
    assert any("skipped 2 record(s) that hold no LLM request to audit" in w for w in res.warnings)
