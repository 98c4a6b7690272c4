"""Bedrock ConverseStream usage whose ``inputTokens`` already holds the cache reads and writes
(trial defect 16).

AWS documents Converse usage like Anthropic's: "When prompt caching is enabled, the inputTokens
field represents only the non-cached input tokens", the prompt being ``inputTokens +
cacheReadInputTokens + cacheWriteInputTokens``
(https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html, checked 2026-12-01;
crmne/ruby_llm PR #832 quotes it). ConverseStream metadata for OpenAI models on Bedrock does not
follow it: on openai.gpt-5.6 the stream reported ``inputTokens`` 4,995 with
``cacheWriteInputTokens`` 4,993 (``totalTokens`` 10,007) where the non-streaming call for the
same prompt reported 2 (maximhq/bifrost PR #6942, 2026-09-07).

The records are Bedrock model invocation log lines in the shape of
``tests/data/formats/bedrock_invocation_logs.json.gz`` (``operation: ConverseStream``, the
aggregated ``outputBodyJson`` such logs hold for streams), with invented text: a ~3,000-token
system prompt with a ``cachePoint`` and three short questions.

Hand count (from the records' fields only):

- double-counted (openai.gpt-5.6): each call logs ``inputTokenCount`` 3,010; call 1 writes
  3,000, calls 2 and 3 read 3,000. Summed as documented that is 6,010 a call (twice the
  prompt); read right, 3,010. Reported: 3 x 3,010 = 9,030 prompt tokens (before: 18,030),
  2 x 3,000 = 6,000 cached, 3,000 written; hit ratio 6,000 / 9,030 = 66.4% (before: 33.3%).
- documented (Claude, Converse): ``inputTokenCount`` 10 with 3,000 written / read: 3,010 a call
  as documented, and left as it is.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from promptcache.pipeline import AuditOptions, audit

T0 = 1781700000.0
SYSTEM = ("You are Tally, the reconciliation assistant of the Ashgrove co-operative bank.\n"
          + "".join(f"Check {i}: match ledger entry {i} against the statement line of the same amount and date, "
                    f"then flag any entry older than {i % 9 + 2} days.\n" for i in range(1, 101)))


def record(n: int, model: str, op: str, inp: int, read: int, write: int) -> dict:
    body = {"system": [{"text": SYSTEM}, {"cachePoint": {"type": "default"}}],
            "messages": [{"role": "user", "content": [{"text": f"Reconcile batch {n}."}]}],
            "inferenceConfig": {"maxTokens": 64}}
    usage = {"inputTokens": inp, "outputTokens": 6, "totalTokens": inp + read + write + 6,
             "cacheReadInputTokens": read, "cacheWriteInputTokens": write}
    return {"schemaType": "ModelInvocationLog", "schemaVersion": "1.0",
            "timestamp": f"2026-06-17T12:40:{20 * n:02d}Z", "accountId": "123456789012",
            "identity": {"arn": "arn:aws:sts::123456789012:assumed-role/tally/i-0abc"}, "region": "us-east-1",
            "requestId": f"00000000-0000-0000-0000-00000000{n:04d}", "operation": op, "modelId": model,
            "input": {"inputContentType": "application/json", "inputBodyJson": body, "inputTokenCount": inp,
                      "cacheReadInputTokenCount": read, "cacheWriteInputTokenCount": write},
            "output": {"outputContentType": "application/json",
                       "outputBodyJson": {"output": {"message": {"role": "assistant", "content": [{"text": "Done."}]}},
                                          "stopReason": "end_turn", "metrics": {"latencyMs": 900}, "usage": usage},
                       "outputTokenCount": 6},
            "requestMetadata": {"session": "tally-1"}, "inferenceRegion": "us-east-1"}


def write(tmp_path: Path, name: str, rows: list[dict]) -> Path:
    p = tmp_path / name
    p.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    return p


@pytest.fixture
def doubled(tmp_path: Path) -> Path:
    return write(tmp_path, "stream.json.gz", [
        record(0, "openai.gpt-5.6", "ConverseStream", 3010, 0, 3000),
        record(1, "openai.gpt-5.6", "ConverseStream", 3010, 3000, 0),
        record(2, "openai.gpt-5.6", "ConverseStream", 3010, 3000, 0)])


def test_an_input_count_that_holds_the_cache_tokens_is_read_as_the_prompt(doubled):
    res = audit([doubled], AuditOptions(workers=1))
    # the premise: the rendered prompt is about 3,010 tokens (within the 10% tokenizer tolerance)
    assert all(abs(o.prompt_tokens - 3010) <= 301 for o in res.outcomes)
    assert [o.usage.input_tokens for o in res.outcomes] == [3010, 3010, 3010]  # before: 6,010 each
    rep = res.scenarios["reported"]
    assert (rep.requests, rep.prompt_tokens, rep.cached_tokens, rep.cache_write_tokens) == (3, 9030, 6000, 3000)
    assert round(rep.hit_ratio, 3) == 0.664
    (st,) = res.inputs
    assert (st.counted_twice, st.counted_twice_example[:3]) == (3, (1, 3010, 3000))
    assert st.over_reported == 0  # before: "part of the prompt is not in the log ... or the reader is wrong"
    (w,) = [w for w in res.warnings if "appears to include their cache reads and writes" in w]
    assert "input 3,010 + cache read/write 3,000 = 6,010 tokens" in w and "read as 3,010 prompt tokens" in w


def test_the_rules_hint_for_a_bedrock_model_names_bedrock_not_a_self_hosted_engine(doubled):
    res = audit([doubled], AuditOptions(workers=1))
    (w,) = [w for w in res.warnings if "is in no provider's model list" in w]
    assert "--cache-model bedrock" in w and "vllm" not in w  # before: "use --cache-model vllm or sglang"


def test_the_documented_meaning_is_left_alone(tmp_path):
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    p = write(tmp_path, "converse.json.gz", [record(0, model, "Converse", 10, 0, 3000),
                                             record(1, model, "Converse", 10, 3000, 0)])
    res = audit([p], AuditOptions(workers=1))
    assert [o.usage.input_tokens for o in res.outcomes] == [3010, 3010]
    assert res.inputs[0].counted_twice == 0
    assert not any("appears to include" in w for w in res.warnings)


def without_input_cache_counts(rec: dict, anthropic_body: bool = False) -> dict:
    """The record as logs without ``input.cacheReadInputTokenCount`` / ``cacheWriteInputTokenCount``
    hold it (only ``inputTokenCount``, the uncached part): the cache counts are in the response's
    own usage, Converse's or, for InvokeModel with an Anthropic body, the Messages usage."""
    rec = json.loads(json.dumps(rec))
    inp, out = rec["input"], rec["output"]
    read, write = inp.pop("cacheReadInputTokenCount"), inp.pop("cacheWriteInputTokenCount")
    if anthropic_body:
        rec["operation"] = "InvokeModel"
        inp["inputBodyJson"] = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
                                "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
                                "messages": inp["inputBodyJson"]["messages"][0:1]}
        inp["inputBodyJson"]["messages"][0] = {"role": "user", "content": inp["inputBodyJson"]["messages"][0]["content"][0]["text"]}
        out["outputBodyJson"] = {"id": "msg_bdrk_01", "type": "message", "role": "assistant",
                                 "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
                                 "usage": {"input_tokens": inp["inputTokenCount"], "cache_creation_input_tokens": write,
                                           "cache_read_input_tokens": read, "output_tokens": 6}}
    return rec


@pytest.mark.parametrize("anthropic_body", [False, True])
def test_cache_counts_only_in_the_response_body_are_read(tmp_path, anthropic_body):
    """A fresh user's Bedrock logs (Converse, and InvokeModel with an Anthropic body) without the
    cache counts in ``input``: they were read as 10 uncached prompt tokens a call, no cache read,
    no warning. The response's usage holds them: 3,010 a call, call 1 writes 3,000, call 2 reads it."""
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    p = write(tmp_path, "invocations.json.gz",
              [without_input_cache_counts(record(0, model, "Converse", 10, 0, 3000), anthropic_body),
               without_input_cache_counts(record(1, model, "Converse", 10, 3000, 0), anthropic_body)])
    res = audit([p], AuditOptions(workers=1))
    assert [(o.usage.input_tokens, o.usage.cache_read_tokens, o.usage.cache_write_tokens) for o in res.outcomes] == \
        [(3010, 0, 3000), (3010, 3000, 0)]
    rep = res.scenarios["reported"]
    assert (rep.prompt_tokens, rep.cached_tokens, rep.cache_write_tokens) == (6020, 3000, 3000)
    assert not any("no cache fields" in w for w in res.warnings)
