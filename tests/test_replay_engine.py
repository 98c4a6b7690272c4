"""The hf replay engine on a tiny random Llama: cache correctness against plain, cache-free
forward passes, and exact agreement of measured with simulated cached tokens (LRU included)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from promptcache.replay import ReplayOptions, make_engine, replay_record, verify  # noqa: E402
from promptcache.replay.engine import EngineRequest  # noqa: E402
from promptcache.replay.hf import HFEngine, capacity_blocks_for  # noqa: E402
from promptcache.replay.models import PRESETS, ModelRef, load_model  # noqa: E402
from replay_util import chat_log, make_tokenizer_dir  # noqa: E402

VOCAB = 512


@pytest.fixture(scope="module")
def tiny():
    """A random 2-layer Llama (hidden 64, 4 heads, 2 KV heads), vocabulary 512."""
    ref = ModelRef("random", "random:llama-tiny", None, "", dict(PRESETS["llama-tiny"]))
    return load_model(ref, device="cpu", dtype="float32", vocab_size=VOCAB, seed=1)


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory):
    return make_tokenizer_dir(tmp_path_factory.mktemp("tok"))


def reference(model, ids: list[int], steps: int) -> tuple[torch.Tensor, list[int]]:
    """Last-token logits and greedy tokens computed with no KV cache at all: every step runs
    the whole sequence from scratch."""
    seq = list(ids)
    out = []
    first = None
    with torch.inference_mode():
        for _ in range(steps):
            logits = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
            if first is None:
                first = logits.clone()
            tok = int(logits.argmax())
            out.append(tok)
            seq.append(tok)
    return first, out


def test_kv_bytes_per_token_and_capacity(tiny):
    # 2 layers × (K and V) × 2 KV heads × head dim 64/4 = 16 × 4 bytes
    assert tiny.kv_bytes_per_token == 2 * 2 * 2 * 16 * 4
    # a 16-token block is 8,192 bytes: 100,000 bytes hold 12 blocks
    assert capacity_blocks_for(100_000, tiny.kv_bytes_per_token, 16) == 12
    assert capacity_blocks_for(None, 512, 16) is None
    from promptcache.errors import ConfigError

    with pytest.raises(ConfigError):
        capacity_blocks_for(8_191, 512, 16)


@pytest.mark.parametrize("chunk", [512, 7])
def test_cache_correctness_against_cache_free_forward(tiny, chunk):
    eng = HFEngine(tiny, block_size=16, kv_budget_bytes=None, warmup=False, prefill_chunk=chunk)
    rng = random.Random(3)
    stem = [rng.randrange(VOCAB) for _ in range(150)]
    prompts = [stem + [rng.randrange(VOCAB) for _ in range(k)] for k in (7, 30, 1, 64)]
    prompts.append(list(prompts[1]))         # an exact repeat: all but the last block served
    prompts.append(stem[:144])               # a whole number of blocks, all cached
    served = []
    for i, p in enumerate(prompts):
        r = eng.run(EngineRequest(str(i), p, decode_tokens=4))
        ref_logits, ref_tokens = reference(tiny.model, p, 4)
        assert float((r.logits - ref_logits).abs().max()) < 1e-4
        assert r.output_ids == ref_tokens
        assert r.output_ids_uncached == ref_tokens
        assert r.outputs_match
        served.append(r.cached_tokens)
    # worked out by hand: the stem's 9 full blocks (144 tokens) are cached after request 0;
    # request 1 (180 tokens) hits 9 blocks; its repeat hits (180-1)//16 = 11 blocks; the
    # 144-token prompt may use at most (144-1)//16 = 8 blocks
    assert served == [0, 144, 144, 144, 176, 128]


def test_measured_equals_simulated_with_lru_eviction(tiny, tokdir, tmp_path):
    log = chat_log(tmp_path / "chat.jsonl", sessions=4, turns=3, system_words=40)
    eng = HFEngine(tiny, block_size=16, kv_budget_bytes=None, warmup=False)
    kv = tiny.kv_bytes_per_token
    results = {}
    for blocks in (None, 12, 40):
        eng.cache.capacity_blocks = blocks
        eng.capacity_tokens = None if blocks is None else blocks * 16
        eng.reset()
        opts = ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir), block_size=16,
                             kv_budget_bytes=None if blocks is None else blocks * 16 * kv, decode_tokens=2)
        res = verify([log], opts, engine=eng)
        assert res.exact and res.capacity_tokens == (None if blocks is None else blocks * 16)
        for rec in res.records:
            assert rec.cached_tokens_measured == rec.cached_tokens_simulated, rec
            assert rec.outputs_match is True
            assert rec.cached_tokens_measured % 16 == 0 and rec.cached_tokens_measured < rec.prompt_tokens
        results[blocks] = [r.cached_tokens_measured for r in res.records]
    unbounded, small, mid = results[None], results[12], results[40]
    assert unbounded[0] == 0 and sum(unbounded) > 0
    # a small budget evicts blocks that the unbounded cache still serves
    assert sum(small) < sum(unbounded)
    assert all(s <= u for s, u in zip(small, unbounded))
    assert sum(small) <= sum(mid) <= sum(unbounded)


def test_namespaces_from_prompt_cache_key_do_not_share(tiny, tokdir, tmp_path):
    log = chat_log(tmp_path / "keyed.jsonl", sessions=4, turns=2, cache_key=True)
    eng = HFEngine(tiny, block_size=16, kv_budget_bytes=None, warmup=False)
    res = verify([log], ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir), decode_tokens=1), engine=eng)
    from promptcache.diagnose.redact import fingerprint

    # the keys are shown as fingerprints (a key is often a user's id), and still kept apart
    assert {r.namespace for r in res.records} == {f"vllm/tiny/key=<cache key #{fingerprint(k)}>" for k in ("team-0", "team-1")}
    assert not res.disagreements
    # the first request of each key is a miss although the system prompt is shared
    firsts = {}
    for r in res.records:
        firsts.setdefault(r.namespace, r.cached_tokens_measured)
    assert set(firsts.values()) == {0}


def test_proposed_variant_and_json(tiny, tokdir, tmp_path):
    orig = chat_log(tmp_path / "orig.jsonl", seed=1, sessions=2, turns=2)
    prop = tmp_path / "prop.jsonl"
    # the "proposal": same requests, but the system prompt moved behind a fixed marker (changes output)
    lines = [json.loads(x) for x in orig.read_text().splitlines()]
    for rec in lines:
        rec["request"]["messages"][0]["content"] = "Be brief. " + rec["request"]["messages"][0]["content"]
    prop.write_text("".join(json.dumps(r) + "\n" for r in lines))
    eng = HFEngine(tiny, block_size=16, kv_budget_bytes=None, warmup=False)
    res = verify([orig], ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir), decode_tokens=3,
                                       proposed=[str(prop)]), engine=eng)
    assert [r.variant for r in res.records] == ["original"] * 4 + ["proposed"] * 4
    assert not res.disagreements and res.ok
    # the proposed variant starts from an empty cache
    assert res.variant("proposed")[0].cached_tokens_measured == 0
    pc = res.proposal
    assert pc is not None and pc.compared == 4
    doc = replay_record(res)
    assert doc["schema"] == "promptcache.replay/v1"
    for key in ("engine", "model", "block_size", "device", "requests", "summary"):
        assert key in doc
    req0 = doc["requests"][0]
    for key in ("id", "variant", "prompt_tokens", "cached_tokens_simulated", "cached_tokens_measured", "prefill_s",
                "prefill_s_uncached", "outputs_match"):
        assert key in req0
    s = doc["summary"]
    assert s["cached_tokens_simulated"] == sum(r["cached_tokens_simulated"] for r in doc["requests"])
    assert s["cached_tokens_measured"] == s["cached_tokens_simulated"]
    total = sum(r["prompt_tokens"] for r in doc["requests"])
    assert s["ideal_speedup"] == pytest.approx(total / (total - s["cached_tokens_measured"]), rel=1e-3)
    su = sum(r["prefill_s_uncached"] for r in doc["requests"])
    sc = sum(r["prefill_s"] for r in doc["requests"])
    assert s["prefill_speedup"] == pytest.approx(su / sc, rel=1e-3)
    assert s["outputs_match_ratio"] == 1.0


def test_engine_rejects_ids_outside_vocabulary(tiny):
    from promptcache.errors import InputError

    eng = HFEngine(tiny, block_size=16, kv_budget_bytes=None, warmup=False)
    with pytest.raises(InputError):
        eng.run(EngineRequest("x", [1, 2, VOCAB]))
    with pytest.raises(InputError):
        eng.run(EngineRequest("y", []))


def test_cli_replay_json_and_errors(tokdir, tmp_path):
    log = chat_log(tmp_path / "c.jsonl", sessions=2, turns=2)
    cmd = [sys.executable, "-m", "promptcache", "replay", str(log), "--model", "random:llama-tiny",
           "--tokenizer", str(tokdir), "--decode-tokens", "2", "--kv-budget", "64KiB", "-f", "json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"] is True and doc["capacity_tokens"] == (65536 // (512 * 16)) * 16
    assert len(doc["requests"]) == 4
    p = subprocess.run(cmd[:5] + ["--model", str(tmp_path / "missing.gguf")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "missing.gguf" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = subprocess.run(cmd[:5] + ["--model", "random:llama-tiny", "--tokenizer", str(tokdir), "--kv-budget", "lots"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "lots" in p.stderr


def test_proposed_requests_in_memory_equal_the_file(tiny, tokdir, tmp_path):
    from promptcache.ingest import InputStats, read_requests

    orig = chat_log(tmp_path / "o.jsonl", seed=5, sessions=2, turns=2)
    prop = chat_log(tmp_path / "p.jsonl", seed=6, sessions=2, turns=2)
    eng = HFEngine(tiny, block_size=16, kv_budget_bytes=None, warmup=False)
    opts = ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir), decode_tokens=2)
    from_file = verify([orig], ReplayOptions(**{**opts.__dict__, "proposed": [str(prop)]}), engine=eng)
    eng.reset()
    reqs = list(read_requests(prop, InputStats(str(prop))))
    in_memory = verify([orig], opts, engine=eng, proposed_requests=reqs)
    key = [(r.variant, r.id, r.prompt_tokens, r.cached_tokens_measured, r.output_ids) for r in from_file.records]
    assert key == [(r.variant, r.id, r.prompt_tokens, r.cached_tokens_measured, r.output_ids) for r in in_memory.records]
    assert in_memory.inputs["proposed"] == ["<proposed>"]


def test_token_ids_outside_the_vocabulary_name_file_and_line(tiny, tokdir, tmp_path):
    from promptcache.errors import InputError
    from promptcache.replay.models import ModelRef as Ref

    small = load_model(Ref("random", "random:llama-tiny", None, "", dict(PRESETS["llama-tiny"])), vocab_size=64)
    eng = HFEngine(small, block_size=16, kv_budget_bytes=None, warmup=False)
    log = chat_log(tmp_path / "v.jsonl", sessions=1, turns=1)
    with pytest.raises(InputError, match=r"v\.jsonl:1: request s0-t0: token id \d+ is outside"):
        verify([log], ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir)), engine=eng)


def test_replay_says_what_it_cannot_prove(tmp_path, tokdir):
    """Prompts beyond the model's context and tool definitions the chat template drops are said
    in the warnings; an empty log and impossible options are errors, not a pass."""
    from promptcache.errors import ConfigError, InputError

    short = ModelRef("random", "random:llama-tiny", None, "",
                     {**PRESETS["llama-tiny"], "max_position_embeddings": 64})
    eng = HFEngine(load_model(short, device="cpu", dtype="float32", vocab_size=VOCAB, seed=1), warmup=False)
    log = chat_log(tmp_path / "chat.jsonl", sessions=1, turns=1, system_words=80)
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    rows[0]["request"]["tools"] = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = verify([log], ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir), decode_tokens=1), engine=eng)
    assert res.records[0].prompt_tokens > 64
    assert any("longer than the model's context (64 tokens)" in w for w in res.warnings)
    assert any("chat template ignores tool definitions" in w for w in res.warnings)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="no requests to replay|no record in any input"):  # an empty log: an input error
        verify([empty], ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir)), engine=eng)
    for bad in ({"repeats": 0}, {"prefill_chunk": 0}, {"kv_budget_bytes": 0}):
        with pytest.raises(ConfigError):
            verify([log], ReplayOptions(model="random:llama-tiny", tokenizer=str(tokdir), **bad), engine=eng)
