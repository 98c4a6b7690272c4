"""Every input format, arrival times, usage shapes and bad-line accounting."""

from __future__ import annotations

import gzip
import json

import pytest

from promptcache.errors import InputError
from promptcache.ingest import InputStats, ReadOptions, detect, read_requests
from promptcache.ingest.fields import parse_time
from promptcache.ingest.usage import normalize_usage
from promptcache.model import Usage

CHAT = {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be brief."},
                                       {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                                                    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}]},
                                       {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                                       {"role": "tool", "tool_call_id": "c1", "content": "42"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "prompt_cache_key": "k1", "tool_choice": "auto", "response_format": {"type": "json_object"}}


def read(path, **kw):
    st = InputStats(str(path))
    reqs = list(read_requests(path, st, ReadOptions(**kw)))
    return reqs, st


def test_openai_chat_body(tmp_log):
    reqs, st = read(tmp_log([{"timestamp": "2026-01-01T00:00:00Z", **CHAT}]))
    assert st.format == "openai-chat" and st.requests == 1
    r = reqs[0]
    assert r.provider == "openai" and r.model == "gpt-4o" and r.cache_key == "k1"
    assert r.arrival == 1767225600.0
    assert [p.path for p in r.parts] == ["tools[0]", "messages[0].content", "messages[1].content[0]",
                                         "messages[1].content[1]", "messages[2].tool_calls[0]", "messages[3].content"]
    assert [p.kind for p in r.parts] == ["tool", "system", "user", "image", "tool_call", "tool_result"]
    assert r.parts[4].text == '{"name":"f","arguments":"{\\"a\\":1}"}'
    assert r.params == {"tool_choice": "auto", "response_format": {"type": "json_object"}}


def test_gateway_record_and_usage(tmp_log):
    rec = {"created_at": 1767225600123, "request_id": "r-9", "request": CHAT,
           "response": {"usage": {"prompt_tokens": 2000, "completion_tokens": 5,
                                  "prompt_tokens_details": {"cached_tokens": 1920}}}}
    reqs, st = read(tmp_log([rec]))
    r = reqs[0]
    assert r.id == "r-9" and r.arrival == pytest.approx(1767225600.123)
    assert r.usage == Usage(2000, 5, 1920, 0)


def test_batch_input_lines(tmp_log):
    rec = {"custom_id": "task-1", "method": "POST", "url": "/v1/chat/completions", "body": CHAT}
    reqs, st = read(tmp_log([rec]))
    assert st.format == "openai-chat" and reqs[0].id == "task-1"
    assert st.missing_arrival == 1  # no time anywhere: file order, with a warning


def test_responses_api(tmp_log):
    body = {"model": "gpt-4.1", "instructions": "Answer briefly.", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "doc"}, {"type": "input_text", "text": "q?"}]},
        {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"}],
        "tools": [{"type": "function", "name": "f"}], "prompt_cache_retention": "24h"}
    reqs, st = read(tmp_log([body]))
    assert st.format == "openai-responses"
    r = reqs[0]
    assert [p.path for p in r.parts] == ["tools[0]", "instructions", "input[0].content[0]", "input[0].content[1]", "input[1]", "input[2]"]
    assert r.cache_retention == "24h"


def test_anthropic_body_breakpoints_and_blocks(tmp_log):
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100,
            "tools": [{"name": "t", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            "system": [{"type": "text", "text": "S1"}, {"type": "text", "text": "S2", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "hello"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "tu", "name": "t", "input": {}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu", "content": [{"type": "text", "text": "res"}]},
                                                      {"type": "image", "source": {"type": "base64", "data": "AAA"}}]}],
            "cache_control": {"type": "ephemeral"}, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    reqs, st = read(tmp_log([body]))
    assert st.format == "anthropic"
    r = reqs[0]
    assert [p.path for p in r.parts] == ["tools[0]", "system[0]", "system[1]", "messages[0].content",
                                         "messages[1].content[0]", "messages[2].content[0]", "messages[2].content[1]"]
    bps = [(p.path, p.breakpoint.ttl_seconds, p.breakpoint.automatic) for p in r.parts if p.breakpoint]
    # top-level cache_control lands on the last block as an automatic breakpoint
    assert bps == [("tools[0]", 3600, False), ("system[1]", 300, False), ("messages[2].content[1]", 300, True)]
    assert r.parts[5].text.endswith("res") and r.params == {"thinking": {"type": "enabled", "budget_tokens": 1024}}


def test_anthropic_usage_normalised():
    u = normalize_usage({"input_tokens": 50, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 300,
                         "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200},
                         "output_tokens": 7})
    assert u == Usage(1350, 7, 1000, 300, 200)


@pytest.mark.parametrize("raw,expected", [
    ({"prompt_tokens": 900, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 768, "cache_write_tokens": 100}},
     Usage(900, 3, 768, 100)),
    ({"input_tokens": 500, "output_tokens": 2, "input_tokens_details": {"cached_tokens": 256}}, Usage(500, 2, 256, 0)),
    ({"prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 60, "completion_tokens": 1}, Usage(700, 1, 640, 0)),
    ({"promptTokenCount": 4200, "cachedContentTokenCount": 4096, "candidatesTokenCount": 9}, Usage(4200, 9, 4096, 0)),
])
def test_usage_shapes(raw, expected):
    assert normalize_usage(raw) == expected


def test_mooncake_and_block_size(tmp_log):
    path = tmp_log([{"timestamp": 1500, "input_length": 1030, "output_length": 5, "hash_ids": [1, 2, 3]}])
    reqs, st = read(path)
    assert st.format == "mooncake"
    assert reqs[0].hashed.block_ids == (1, 2, 3) and reqs[0].arrival == 1.5
    reqs, st = read(path, hash_block_tokens=16)  # 1030 tokens need 65 blocks of 16
    assert st.skipped_lines == 1 and "expected 65" in st.errors[0][1]


def test_json_array_gz_and_line_numbers(tmp_path):
    arr = [CHAT, {"model": "gpt-4o", "messages": 3}, CHAT]
    text = "[\n" + ",\n".join(json.dumps(x, indent=1) for x in arr) + "\n]\n"
    p = tmp_path / "log.json.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(text)
    reqs, st = read(p)
    assert st.requests == 2 and st.skipped_lines == 1
    line_of_second = 2 + json.dumps(CHAT, indent=1).count("\n") + 1
    assert st.errors[0][0] == line_of_second and "messages" in st.errors[0][1]
    assert reqs[1].source.line == line_of_second + json.dumps(arr[1], indent=1).count("\n") + 1


@pytest.mark.parametrize("name, body, first_line", [
    ("bom.jsonl", lambda: "\n".join(json.dumps(x) for x in (CHAT, CHAT)) + "\r\n", 1),
    ("bom_array.json", lambda: json.dumps([CHAT, CHAT], indent=2), 2),  # "[" alone on line 1
])
def test_utf8_byte_order_mark_is_skipped(tmp_path, name, body, first_line):
    """Windows tools write a BOM first; both requests are read, on their own lines."""
    p = tmp_path / name
    p.write_bytes(b"\xef\xbb\xbf" + body().encode("utf-8"))
    reqs, st = read(p)
    assert st.requests == 2 and st.skipped_lines == 0
    assert reqs[0].source.line == first_line


def test_malformed_lines_reported_and_rest_audited(tmp_log):
    path = tmp_log([CHAT, "{not json", {"model": "gpt-4o", "messages": [{"content": "no role"}]}, "[1,2]", CHAT])
    reqs, st = read(path)
    # "[1,2]" is an array of two records (as a whole-file array would be), neither an object
    assert st.requests == 2 and st.skipped_lines == 4 and st.records == 6
    assert [ln for ln, _ in st.errors] == [2, 3, 4, 4]
    assert "invalid JSON" in st.errors[0][1] and "role" in st.errors[1][1]
    with pytest.raises(InputError, match=r"log.jsonl:2: invalid JSON"):
        read(path, strict=True)


def test_out_of_order_arrivals_are_restored(tmp_log):
    recs = [{**CHAT, "timestamp": t} for t in (10, 5, 20, 15)]
    reqs, st = read(tmp_log(recs))
    assert [r.arrival for r in reqs] == [5, 10, 15, 20] and st.out_of_order == 0


def test_requests_without_time_keep_their_place_after_the_one_before(tmp_log):
    """Lines: t=10, no time, t=5, t=20. The undated request follows line 1 wherever it goes;
    line 3 arrived first."""
    recs = [{**CHAT, "timestamp": 10}, CHAT, {**CHAT, "timestamp": 5}, {**CHAT, "timestamp": 20}]
    reqs, st = read(tmp_log(recs))
    assert [r.source.line for r in reqs] == [3, 1, 2, 4] and st.missing_arrival == 1


@pytest.mark.parametrize("value,expected", [
    # 2026-01-01T00:00Z is 1767225600; Nov 29 is 332 days later: 1767225600 + 332*86400 + 10*3600
    ("2026-11-29T10:00:00Z", 1795946400.0), ("2026-11-29T11:00:00+01:00", 1795946400.0),
    ("2026-11-29 10:00:00", 1795946400.0), ("Sun, 29 Nov 2026 10:00:00 GMT", 1795946400.0),
    (1795946400, 1795946400.0), (1795946400000, 1795946400.0), ("1795946400.5", 1795946400.5),
])
def test_parse_time(value, expected):
    assert parse_time(value) == expected


def test_detect():
    assert detect({"hash_ids": [1], "input_length": 3, "timestamp": 0}) == "mooncake"
    assert detect({"model": "claude-opus-4-5", "max_tokens": 5, "messages": []}) == "anthropic"
    assert detect({"model": "gpt-4o", "messages": []}) == "openai-chat"
    assert detect({"model": "gpt-4o", "input": "hi"}) == "openai-responses"
    assert detect({"foo": 1}) is None


def test_part_memo_returns_the_same_parts_and_stays_within_budget():
    from promptcache.ingest.common import PartMemo

    memo = PartMemo(budget_bytes=2 * 2000)
    built = []

    def build(i):
        built.append(i)
        return [("part", i)]

    msgs = [{"role": "user", "content": "x" * 290 + str(i)} for i in range(20)]  # ~320 bytes of JSON each
    first = [memo.get("chat", 0, m, lambda i=i: build(i)) for i, m in enumerate(msgs[:5])]
    again = [memo.get("chat", 0, m, lambda i=i: build(i)) for i, m in enumerate(msgs[:5])]
    assert built == [0, 1, 2, 3, 4] and all(a is b for a, b in zip(first, again))
    for i, m in enumerate(msgs):
        memo.get("chat", 0, m, lambda i=i: build(i))
    # messages 10-19 are 320 bytes of JSON, kept at 2 x 320 = 640 bytes each: the newest six fit
    assert len(memo._d) == 6 and memo.size == 6 * 640 <= memo.budget
    assert [v[0] for v in memo._d.values()] == [(("part", i),) for i in range(14, 20)]
