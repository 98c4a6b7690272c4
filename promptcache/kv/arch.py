"""Attention kind and KV-cache bytes per token from a Hugging Face ``config.json``.

An engine caches, per token and per layer, what later tokens attend to:

- **MHA / GQA / MQA**: a key and a value vector per KV head:
  ``layers × kv_heads × head_dim × 2 (K and V) × bytes per element``. MHA has as many KV heads
  as query heads, GQA fewer (Llama-3-70B: 64 query heads, 8 KV heads), MQA one (Falcon-7B).
- **MLA** (DeepSeek-V2/V3 multi-head latent attention): the compressed KV latent plus the
  decoupled rope key, shared by all heads:
  ``layers × (kv_lora_rank + qk_rope_head_dim) × bytes``. vLLM and SGLang cache this latent
  (vLLM ``ModelConfig.get_num_kv_heads`` returns 1 for MLA: "When using MLA during decode it
  becomes MQA", github.com/vllm-project/vllm ``vllm/config/model.py``, read 2026-11-29);
  Hugging Face transformers' eager implementation caches the decompressed K/V instead.

Bytes per element (``--dtype``): bf16/fp16 2, fp8 1, fp4 ½. FP4 KV formats carry block scales:
NVFP4 stores one FP8 (E4M3) scale per 16 values (vLLM ``vllm/config/cache.py`` ``nvfp4``:
"scales per 16 values"; https://modal.com/llm-almanac/block-quants, read 2026-11-29), i.e.
4.5 bits per value; ``fp4_scales=True`` adds them. FP8 KV caches in vLLM use per-tensor
``k_scale``/``v_scale`` (a few bytes per layer, ignored here).

Config keys follow transformers' names, with the older aliases engines also read
(``n_layer``/``n_head``/``n_embd``, Falcon's ``multi_query``, ``num_kv_heads``, ``n_head_kv``,
ChatGLM's ``multi_query_group_num``). A multimodal config's ``text_config`` is used for the
language model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

#: Bits per cached element by ``--dtype`` (names engines use map to these four).
DTYPE_BITS: dict[str, int] = {"bf16": 16, "fp16": 16, "fp8": 8, "fp4": 4}
_DTYPE_ALIASES = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "auto": "bf16",
    "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "float8": "fp8", "e4m3": "fp8",
    "nvfp4": "fp4", "mxfp4": "fp4", "float4": "fp4",
}
#: NVFP4: one 8-bit scale per 16 values (see the module docstring).
FP4_SCALE_BITS_PER_VALUE = 8 / 16

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla")

# Model types whose MLP has two matrices (up, down) and LayerNorm with a bias; every other
# model type is taken as gated (SwiGLU/GeGLU: gate, up, down) with RMSNorm.
_PLAIN_MLP = {"falcon", "gpt_bigcode"}


def normalize_dtype(name: str) -> str:
    """``bf16``/``fp16``/``fp8``/``fp4`` for a dtype name or alias (``bfloat16``, ``fp8_e4m3``, ``nvfp4`` ...).

    Raises:
        ConfigError: for an unknown name, listing the known ones.
    """
    n = str(name).strip().lower()
    n = _DTYPE_ALIASES.get(n, n)
    if n not in DTYPE_BITS:
        raise ConfigError(f"unknown dtype {name!r}; use one of {', '.join(DTYPE_BITS)}")
    return n


@dataclass(frozen=True)
class Architecture:
    """What capacity planning needs from a model config (sizes in elements or tokens).

    Attributes:
        name: where the numbers came from (a file path or ``preset:<id>``), for messages.
        model_type: the config's ``model_type`` (``llama``, ``qwen2``, ``deepseek_v3`` ...).
        attention: ``mha``, ``gqa``, ``mqa`` or ``mla``.
        layers: transformer layers (``num_hidden_layers``).
        hidden: hidden size.
        heads: query heads.
        kv_heads: KV heads (1 for MQA; for MLA the number the config states, unused for the cache).
        head_dim: per-head dimension (``head_dim``, else ``hidden // heads``).
        kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim, q_lora_rank: MLA sizes
            (0 when not MLA; ``q_lora_rank`` 0 means a plain query projection).
        intermediate: dense MLP width.
        vocab: vocabulary size.
        tie_embeddings: input and output embeddings share weights.
        max_position: ``max_position_embeddings`` (or ``n_positions``), or ``None``.
        experts, experts_per_token, shared_experts, moe_intermediate, shared_intermediate,
            first_dense_layers, moe_every: mixture-of-experts shape (``experts`` 0 when dense).
        mlp_gated: three MLP matrices (gated) rather than two.
        norm_bias: LayerNorm with a bias (2 × hidden per norm) rather than RMSNorm.
        qkv_bias, o_bias, mlp_bias: which linear layers carry a bias.
        qk_norm: per-head RMSNorm on queries and keys (Qwen3).
        parallel_attn_single_norm: Falcon's one input norm per layer (parallel attention).
        position_embeddings: learned absolute positions (GPT-BigCode ``wpe``).
        sliding_window: the config's sliding window, or ``None`` (reported, not applied).
        mtp_layers: DeepSeek multi-token-prediction modules (``num_nextn_predict_layers``).
        config_keys: the keys the config had (for diagnostics).
    """

    name: str
    model_type: str
    attention: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int = 0
    vocab: int = 0
    tie_embeddings: bool = False
    max_position: int | None = None
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    q_lora_rank: int = 0
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_intermediate: int = 0
    shared_intermediate: int = 0
    first_dense_layers: int = 0
    moe_every: int = 1
    mlp_gated: bool = True
    norm_bias: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    parallel_attn_single_norm: bool = False
    position_embeddings: int = 0
    sliding_window: int | None = None
    mtp_layers: int = 0
    config_keys: frozenset[str] = field(default_factory=frozenset)

    @property
    def kv_elements_per_token(self) -> int:
        """Cached elements per token over all layers (one copy, no tensor-parallel replication)."""
        if self.attention == "mla":
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim)
        return self.layers * self.kv_heads * self.head_dim * 2

    def kv_heads_per_gpu(self, tensor_parallel: int) -> int:
        """KV heads each tensor-parallel rank holds: ``max(1, kv_heads // tp)``; MLA: 1 (the
        latent is replicated on every rank). Source: vLLM ``ModelConfig.get_num_kv_heads``
        (``vllm/config/model.py``, read 2026-11-29)."""
        if self.attention == "mla":
            return 1
        return max(1, self.kv_heads // max(1, tensor_parallel))

    def describe(self) -> str:
        """One line, e.g. ``llama, GQA: 80 layers, 64 heads, 8 KV heads × 128``."""
        if self.attention == "mla":
            return (f"{self.model_type}, MLA: {self.layers} layers, latent {self.kv_lora_rank} + "
                    f"rope key {self.qk_rope_head_dim} per layer")
        return (f"{self.model_type}, {self.attention.upper()}: {self.layers} layers, {self.heads} heads, "
                f"{self.kv_heads} KV head{'s' if self.kv_heads != 1 else ''} × {self.head_dim}")


def kv_bytes_per_token(arch: Architecture, dtype: str = "bf16", *, fp4_scales: bool = False,
                       tensor_parallel: int = 1) -> int:
    """KV-cache bytes one token occupies, summed over every GPU of the tensor-parallel group.

    With ``tensor_parallel`` 1 this is the model's own figure (Llama-3-70B in bf16:
    80 × 8 × 128 × 2 × 2 = 327,680). With more ranks than KV heads each rank still holds one
    head (replicated), and MLA's latent is held whole on every rank, so the group's total
    grows; :meth:`Architecture.kv_heads_per_gpu` gives the rule.

    Args:
        arch: the model.
        dtype: ``bf16``, ``fp16``, ``fp8`` or ``fp4`` (aliases accepted).
        fp4_scales: count NVFP4's per-16-value FP8 scales (4.5 bits per value).
        tensor_parallel: tensor-parallel size (GPUs sharing one model copy).

    Returns:
        Bytes per token (rounded up to a whole byte).

    Raises:
        ConfigError: for an unknown dtype or a tensor-parallel size below 1.
    """
    d = normalize_dtype(dtype)
    check_tensor_parallel(arch, tensor_parallel)
    bits = DTYPE_BITS[d] + (FP4_SCALE_BITS_PER_VALUE if d == "fp4" and fp4_scales else 0)
    if arch.attention == "mla":
        per_rank = arch.layers * (arch.kv_lora_rank + arch.qk_rope_head_dim)
    else:
        per_rank = arch.layers * arch.kv_heads_per_gpu(tensor_parallel) * arch.head_dim * 2
    return math.ceil(per_rank * tensor_parallel * bits / 8)


def check_tensor_parallel(arch: Architecture, tensor_parallel: int) -> None:
    """Reject a tensor-parallel size the engine would reject: query heads must split evenly,
    and KV heads must split evenly or be replicated evenly (vLLM ``ModelConfig.verify_with_parallel_config``
    and ``QKVParallelLinear``).

    Raises:
        ConfigError: naming the head counts.
    """
    tp = tensor_parallel
    if tp < 1:
        raise ConfigError("--tensor-parallel must be at least 1")
    if arch.heads % tp:
        raise ConfigError(f"{arch.name}: {arch.heads} attention heads do not split over --tensor-parallel {tp}")
    if arch.attention != "mla" and (arch.kv_heads % tp if arch.kv_heads >= tp else tp % arch.kv_heads):
        raise ConfigError(f"{arch.name}: {arch.kv_heads} KV heads neither split over nor replicate evenly on "
                          f"--tensor-parallel {tp}")


# ------------------------------------------------------------------------- config parsing

_LAYERS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers")
_HIDDEN = ("hidden_size", "n_embd", "d_model", "dim")
_HEADS = ("num_attention_heads", "n_head", "n_heads", "num_heads")
_KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "n_kv_heads", "multi_query_group_num")


def _first(d: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        v = d.get(k)
        if v is not None:
            return v
    return None


def _need(d: Mapping[str, Any], keys: tuple[str, ...], where: str) -> int:
    v = _first(d, keys)
    if v is None:
        raise ConfigError(f"{where}: config lacks {keys[0]!r}" + (f" (or {', '.join(keys[1:])})" if len(keys) > 1 else ""))
    key = next(k for k in keys if d.get(k) is not None)
    if isinstance(v, list):
        raise ConfigError(f"{where}: {key!r} varies per layer ({len(v)} values); give a uniform config")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or v <= 0:
        raise ConfigError(f"{where}: {key!r} must be a positive integer, got {v!r}")
    return int(v)


def _opt(d: Mapping[str, Any], keys: tuple[str, ...], where: str) -> int:
    """An optional non-negative integer field (0 when absent or null)."""
    for k in keys:
        v = d.get(k)
        if v is None:
            continue
        if isinstance(v, list):
            raise ConfigError(f"{where}: {k!r} varies per layer ({len(v)} values); give a uniform config")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or v < 0:
            raise ConfigError(f"{where}: {k!r} must be a non-negative integer, got {v!r}")
        return int(v)
    return 0


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language-model part of a config: ``text_config`` (multimodal models such as LLaVA,
    Gemma 3, Llama 4, Qwen2.5-VL keep it there) merged over the top level, else the config."""
    tc = config.get("text_config")
    if isinstance(tc, Mapping) and _first(tc, _LAYERS) is not None:
        merged = {k: v for k, v in config.items() if k != "text_config"}
        merged.update(tc)
        return merged
    return config


def from_config(config: Mapping[str, Any], name: str = "config.json") -> Architecture:
    """Read an :class:`Architecture` from a Hugging Face config dict.

    Detection: MLA when ``kv_lora_rank`` and ``qk_rope_head_dim`` are set; otherwise MQA when
    one KV head (or Falcon's ``multi_query`` without ``new_decoder_architecture``), GQA when
    1 < KV heads < heads, MHA when the KV heads equal the heads or the config names none.

    Args:
        config: the parsed ``config.json``.
        name: the file (or preset) it came from, for error messages.

    Raises:
        ConfigError: naming ``name`` and the missing or bad field.
    """
    if not isinstance(config, Mapping):
        raise ConfigError(f"{name}: not a JSON object")
    d = text_config(config)
    where = name
    model_type = str(d.get("model_type") or config.get("model_type") or "unknown")
    layers = _need(d, _LAYERS, where)
    kv_lora = _opt(d, ("kv_lora_rank",), where)
    rope_dim = _opt(d, ("qk_rope_head_dim",), where)
    mla = bool(kv_lora and rope_dim)
    heads = _need(d, _HEADS, where)
    hidden = _need(d, _HIDDEN, where)
    hd = d.get("head_dim")
    if hd is None:
        if hidden % heads:
            raise ConfigError(f"{where}: config lacks 'head_dim' and hidden_size {hidden} is not a multiple of "
                              f"num_attention_heads {heads}")
        head_dim = hidden // heads
    else:
        head_dim = _need(d, ("head_dim",), where)
    falcon_mq = bool(d.get("multi_query")) and not d.get("new_decoder_architecture")
    if falcon_mq:
        kv_heads = 1
    else:
        kv = _first(d, _KV_HEADS)
        if kv is None:
            kv_heads = heads
        else:
            kv_heads = _need(d, _KV_HEADS, where)
    if mla:
        attention = "mla"
    elif kv_heads == 1 and heads > 1:
        attention = "mqa"
    elif kv_heads >= heads:
        if kv_heads > heads:
            raise ConfigError(f"{where}: num_key_value_heads {kv_heads} exceeds num_attention_heads {heads}")
        attention = "mha"
    else:
        if heads % kv_heads:
            raise ConfigError(f"{where}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
        attention = "gqa"

    plain = model_type in _PLAIN_MLP
    inter = _opt(d, ("intermediate_size", "ffn_hidden_size", "n_inner"), where)
    if not inter and plain:
        inter = 4 * hidden
    experts = _opt(d, ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts"), where)
    moe_inter = _opt(d, ("moe_intermediate_size",), where)
    shared = _opt(d, ("n_shared_experts",), where)
    shared_inter = _opt(d, ("shared_expert_intermediate_size",), where)
    if experts and not moe_inter:
        moe_inter = inter
    sw = d.get("sliding_window")
    if d.get("use_sliding_window") is False:
        sw = None
    max_pos = _opt(d, ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"), where) or None
    if max_pos is None and model_type == "falcon":
        max_pos = 2048  # transformers FalconConfig default (configuration_falcon.py)
    every_bias = model_type == "gpt_bigcode" or (model_type == "falcon" and bool(d.get("bias")))
    attn_bias = bool(d.get("attention_bias"))
    return Architecture(
        name=name, model_type=model_type, attention=attention, layers=layers, hidden=hidden, heads=heads,
        kv_heads=kv_heads, head_dim=head_dim,
        intermediate=inter, vocab=_opt(d, ("vocab_size",), where),
        tie_embeddings=bool(d.get("tie_word_embeddings", model_type in ("falcon", "gpt_bigcode"))),
        max_position=max_pos,
        kv_lora_rank=kv_lora, qk_rope_head_dim=rope_dim,
        qk_nope_head_dim=_opt(d, ("qk_nope_head_dim",), where), v_head_dim=_opt(d, ("v_head_dim",), where),
        q_lora_rank=_opt(d, ("q_lora_rank",), where),
        experts=experts, experts_per_token=_opt(d, ("num_experts_per_tok",), where), shared_experts=shared,
        moe_intermediate=moe_inter, shared_intermediate=shared_inter,
        first_dense_layers=_opt(d, ("first_k_dense_replace",), where),
        moe_every=_opt(d, ("moe_layer_freq",), where) or 1,
        mlp_gated=not plain, norm_bias=plain,
        qkv_bias=every_bias or attn_bias or model_type == "qwen2",  # Qwen2 always biases q, k, v
        o_bias=every_bias or attn_bias,
        mlp_bias=every_bias or bool(d.get("mlp_bias")),
        qk_norm=model_type in ("qwen3", "qwen3_moe"),
        parallel_attn_single_norm=model_type == "falcon" and bool(d.get("parallel_attn", True))
        and not d.get("new_decoder_architecture"),
        position_embeddings=_opt(d, ("n_positions",), where) if model_type == "gpt_bigcode" else 0,
        sliding_window=int(sw) if isinstance(sw, (int, float)) and sw else None,
        mtp_layers=_opt(d, ("num_nextn_predict_layers",), where),
        config_keys=frozenset(d),
    )
