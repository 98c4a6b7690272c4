"""The smaller things a new user tripped over: kv with a config that only gives bytes per token,
replay's progress, speedups under 1, counts of one, an unknown model's tokenizer, the README's
install line, and _compiled.status() with nothing compiled."""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
from rich.console import Console

from promptcache.plurals import counted, fill
from promptcache.report.numbers import speed

from conftest import ROOT


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    from promptcache.cli import main

    monkeypatch.setattr(sys, "argv", ["promptcache", *args])
    with pytest.raises(SystemExit) as e:
        main()
    got = capsys.readouterr()
    return int(e.value.code or 0), got.out, got.err


# ------------------------------------------------------------------ kv --config without weight fields

def test_kv_config_without_the_weight_fields_prints_bytes_per_token(tmp_path, monkeypatch, capsys):
    """A config with the attention shape but no ``vocab_size`` / ``intermediate_size`` was
    refused although bytes per token need neither: 32 layers × 8 KV heads × 128 × 2 (K and V)
    × 2 bytes (bf16) = 131,072. The budget then needs --weights-gb, and says so."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
                               "num_key_value_heads": 8, "hidden_size": 4096, "head_dim": 128}))
    code, out, err = run_main(monkeypatch, capsys, "kv", "--config", str(cfg))
    assert code == 0, err
    assert "131,072 bytes per token in bf16" in out
    assert "config lacks 'vocab_size'" in out and "--weights-gb" in out
    code, out, err = run_main(monkeypatch, capsys, "kv", "--config", str(cfg), "--gpu-memory-gb", "80", "-f", "json")
    assert code == 0, err
    rec = json.loads(out)
    assert rec["kv_bytes_per_token"] == 131_072 and rec["weights_bytes"] is None and rec["max_tokens"] is None
    assert rec["weights_source"] == "unknown" and any("--weights-gb" in w for w in rec["warnings"])
    code, out, err = run_main(monkeypatch, capsys, "kv", "--config", str(cfg), "--gpu-memory-gb", "80",
                              "--weights-gb", "16", "--gpu-utilization", "0.9", "-f", "json")
    assert code == 0, err
    # (80 × 0.9 − 16) GiB / 131,072 bytes per token = 56 × 2^30 / 2^17 = 458,752 tokens
    assert json.loads(out)["max_tokens"] == 458_752


# ------------------------------------------------------------------ counts and speedups in words

def test_a_count_of_one_is_singular_in_rule_messages():
    """"over 1 requests": every rule message filled with counts of 1 reads in the singular."""
    from promptcache.diagnose.rules import load_rules

    for rule in load_rules():
        names = set(re.findall(r"\{(\w+)\}", rule.message))
        text = rule.format(**{n: 1 for n in names})
        assert not re.search(r"\b1 (?:[a-z]+ ){0,2}(requests|tokens|blocks|documents|breakpoints|keys)\b", text), text
        assert not re.search(r"\b1 (?:[a-z]+ ){0,2}token after it were\b", text), text
        many = rule.format(**{n: 2 for n in names})
        assert not re.search(r"\b2 (?:[a-z]+ ){0,2}(request|token|block)\b(?!-)", many), many
    assert fill("{n} requests share {t} tokens", {"n": 1, "t": "1,024"}) == "1 request shares 1,024 tokens"
    assert fill("{x} and {y}", {"x": 1}) == "1 and {y}"  # an unknown placeholder stays visible
    assert counted(1, "request") == "1 request" and counted(12_345, "token") == "12,345 tokens"


def test_an_audit_of_one_request_says_one_request(tmp_log, monkeypatch, capsys):
    shared = "Refunds go to the original payment method within five business days. " * 40
    recs = [{"timestamp": t, "model": "gpt-4o", "messages": [
        {"role": "system", "content": f"Current time: 2026-11-02T09:00:0{t}Z. " + shared},
        {"role": "user", "content": "Refund?"}]} for t in range(2)]
    code, out, err = run_main(monkeypatch, capsys, "audit", str(tmp_log(recs)))
    assert code == 0, err
    assert "over 1 request" in out and "1 requests" not in out
    assert "2 requests," in out


def test_a_slowdown_is_not_called_faster():
    assert speed(0.58) == "1.72× slower" and speed(2.5) == "2.50× faster" and speed(1.0) == "no faster"
    from promptcache.replay import render_replay
    from promptcache.replay.verify import ReplayRecord, ReplayResult

    rec = ReplayRecord(id="r1", path="log.jsonl", line=1, variant="original", namespace="ns", prompt_tokens=64,
                       cached_tokens_simulated=48, cached_tokens_measured=48, prefill_s=0.010,
                       prefill_s_uncached=0.0058, ttft_s=0.011, ttft_s_uncached=0.007, outputs_match=True,
                       logits_max_abs_diff=0.0, output_ids=[1])
    res = ReplayResult(engine="hf", model="m", device="cpu", block_size=16, exact=True, capacity_tokens=None,
                       inputs={"original": ["log.jsonl"]}, records=[rec], info={}, warnings=[], decode_tokens=1)
    buf = io.StringIO()
    render_replay(res, Console(file=buf, width=200), per_request=False)
    text = buf.getvalue()
    assert "0.58× faster" not in text and "1.72× slower with the cache" in text, text


# ------------------------------------------------------------------ an unknown model's tokenizer

def test_an_unknown_model_is_counted_with_an_approximate_tokenizer():
    """A model tiktoken does not know, under OpenAI's rules, was labelled "o200k_base (exact)"."""
    from promptcache.tokenize import resolve_tokenizer

    known = resolve_tokenizer(None, default="tiktoken", model="gpt-4.1-mini")
    assert known.exact and known.name == "o200k_base"
    for model in ("acme-chat-7b", None):
        tok = resolve_tokenizer(None, default="tiktoken", model=model)
        assert not tok.exact and tok.name == "approx:o200k_base" and "--tokenizer" in tok.note, model
    assert resolve_tokenizer(None, default="tiktoken", model="openai/gpt-4-0613").name == "cl100k_base"


def test_the_audit_labels_an_unknown_model_approximate(tmp_log, monkeypatch, capsys):
    recs = [{"model": m, "messages": [{"role": "user", "content": f"Hello {i}"}]}
            for i, m in enumerate(["acme-chat-7b", "gpt-4.1"])]
    code, out, err = run_main(monkeypatch, capsys, "audit", str(tmp_log(recs)), "-f", "json")
    assert code == 0, err
    tok = json.loads(out)["summary"]["tokenizer"]
    assert tok["exact"] is False and "approx:o200k_base" in tok["name"]
    assert any("acme-chat-7b" in n for n in tok["notes"])


# ------------------------------------------------------------------ replay progress

def test_replay_shows_a_progress_bar_on_a_terminal_and_nothing_when_piped(monkeypatch):
    """Loading, then per variant a bar with done/total; nothing when stderr is no terminal."""
    import promptcache.cli.common as common

    buf = io.StringIO()
    monkeypatch.setattr(common, "console", lambda **kw: Console(file=buf, force_terminal=True, width=120))

    def run(step, variant):
        assert step is not None and variant is not None
        variant("original", 3)
        for _ in range(3):
            step(object())
        variant("proposed", 2)
        step(object())
        return "done"

    assert common.with_replay_progress(run) == "done"
    out = buf.getvalue()
    assert "loading the model" in out and "replaying the original requests" in out and "3/3" in out
    assert "replaying the proposed requests" in out and "1/2" in out
    monkeypatch.setattr(common, "console", lambda **kw: Console(file=io.StringIO(), force_terminal=False))
    assert common.with_replay_progress(lambda step, variant: (step, variant)) == (None, None)


def test_verify_says_how_many_requests_each_variant_replays(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from promptcache.replay import ReplayOptions, verify
    from replay_util import chat_log, make_tokenizer_dir

    tokdir = make_tokenizer_dir(tmp_path / "tok")
    orig = chat_log(tmp_path / "o.jsonl", seed=1, sessions=2, turns=2)   # 4 requests
    prop = chat_log(tmp_path / "p.jsonl", seed=2, sessions=2, turns=2)
    seen, steps = [], []
    opts = ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir), decode_tokens=1, limit=3,
                         proposed=[str(prop)], uncached=False)
    res = verify([orig], opts, progress=steps.append, on_variant=lambda v, n: seen.append((v, n, len(steps))))
    assert seen == [("original", 3, 0), ("proposed", 3, 3)]
    assert len(steps) == len(res.records) == 6


# ------------------------------------------------------------------ README install line, _compiled.status()

def test_readme_quick_start_makes_a_virtual_environment_first():
    """``python3 -m pip install .`` alone stops with externally-managed-environment on Debian 12,
    Ubuntu 23.04+ and Homebrew Pythons (PEP 668): the one-command quick start makes a venv first."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].strip()
    assert block.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    assert block.endswith("promptcache audit samples/agent_timestamp.jsonl")
    assert "externally-managed-environment" in text


def test_compiled_status_says_why_nothing_is_compiled(monkeypatch, tmp_path):
    """Inside the checkout nothing is compiled: status() printed ``{}``; now it says why, and
    names an installed build the checkout shadows."""
    from promptcache import _compiled

    monkeypatch.setattr(_compiled, "manifest", lambda package=_compiled.PACKAGE: {}
                        if package == _compiled.PACKAGE else {"promptcache.ingest": "ab", "promptcache.render": "cd"})
    monkeypatch.setattr(_compiled, "_installed_elsewhere", lambda: None)
    s = _compiled.status()
    assert s == {} and str(s).startswith("nothing compiled: ") and "_compiled.json" in str(s)
    other = tmp_path / "site-packages" / "promptcache"
    other.mkdir(parents=True)
    monkeypatch.setattr(_compiled, "_installed_elsewhere", lambda: other)
    text = str(_compiled.status())
    assert str(other) in text and "2 compiled modules" in text and "run from another directory" in text
