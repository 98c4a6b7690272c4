"""Weights, the GPU memory budget, and how many tokens and contexts of KV cache fit in it.

Units: memory sizes given on the command line are GiB (2**30 bytes: vLLM logs memory in GiB and
an "80 GB" A100 holds 80 GiB); everything returned is in bytes, tokens or FLOPs.

vLLM sizes its KV cache as ``total GPU memory × gpu_memory_utilization − (weights + peak
activations + non-torch memory)`` (vLLM ``Worker.determine_available_memory``); the default
``gpu_memory_utilization`` is read from ``rules/kv.yaml`` (0.92 in vLLM main, 0.9 in earlier
releases; both read in ``vllm/config/cache.py`` on 2026-11-29). Activations are not estimated
here: pass them as ``--reserved-gb`` per GPU, else ``max_tokens`` is an upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .arch import DTYPE_BITS, Architecture, normalize_dtype

GiB = 2**30


@dataclass(frozen=True)
class ParamCount:
    """Estimated parameter counts (parameters, not bytes).

    Attributes:
        total: every weight the served model loads (embeddings, lm_head unless tied, all
            experts; not DeepSeek's multi-token-prediction modules).
        active: weights one token uses (MoE: the routed top-k plus shared experts).
        embedding: input embeddings + untied lm_head + learned positions.
        active_layers: ``active`` without embeddings and lm_head: the matmul weights a prompt
            token passes through (prefill FLOPs = 2 × this per token, plus attention).
    """

    total: int
    active: int
    embedding: int
    active_layers: int


def _mlp(arch: Architecture, width: int) -> int:
    """One dense MLP of ``width`` (gate/up/down, or up/down), with its biases."""
    mats = 3 if arch.mlp_gated else 2
    p = mats * arch.hidden * width
    if arch.mlp_bias:
        p += (mats - 1) * width + arch.hidden
    return p


def _attention(arch: Architecture) -> int:
    h = arch.hidden
    if arch.attention == "mla":
        qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        if arch.q_lora_rank:
            q = h * arch.q_lora_rank + arch.q_lora_rank + arch.q_lora_rank * arch.heads * qk
        else:
            q = h * arch.heads * qk
        kv = h * (arch.kv_lora_rank + arch.qk_rope_head_dim) + arch.kv_lora_rank
        kv += arch.kv_lora_rank * arch.heads * (arch.qk_nope_head_dim + arch.v_head_dim)
        o = arch.heads * arch.v_head_dim * h
        return q + kv + o
    q_dim = arch.heads * arch.head_dim
    kv_dim = arch.kv_heads * arch.head_dim
    p = h * (q_dim + 2 * kv_dim) + q_dim * h
    if arch.qkv_bias:
        p += q_dim + 2 * kv_dim
    if arch.o_bias:
        p += h
    if arch.qk_norm:
        p += 2 * arch.head_dim
    return p


def _is_moe_layer(arch: Architecture, i: int) -> bool:
    return bool(arch.experts) and i >= arch.first_dense_layers and i % max(1, arch.moe_every) == 0


def estimate_params(arch: Architecture) -> ParamCount:
    """Estimate parameter counts from the architecture.

    Formula (per layer, ``h`` hidden, ``d`` head_dim, ``H``/``K`` query/KV heads):

    - attention: ``h·H·d`` (q) + ``2·h·K·d`` (k, v) + ``H·d·h`` (o), plus the biases the
      config implies (Qwen2: q, k, v; ``attention_bias``; Falcon ``bias``; GPT-BigCode all)
      and Qwen3's q/k norms. MLA: ``h·q_lora + q_lora·H·(nope+rope)`` (or ``h·H·(nope+rope)``
      without ``q_lora_rank``) + ``h·(kv_lora+rope) + kv_lora·H·(nope+v)`` + ``H·v·h`` + the
      two latent norms.
    - MLP: ``3·h·intermediate`` when gated (SwiGLU/GeGLU), ``2·h·intermediate`` for Falcon
      and GPT-BigCode. MoE layers (``i ≥ first_k_dense_replace`` and ``i % moe_layer_freq ==
      0``): ``experts · 3·h·moe_intermediate`` + shared experts + the router ``h·experts``
      (DeepSeek's per-expert score-correction bias, 256 values a layer, is not counted).
    - norms: RMSNorm ``h`` (LayerNorm ``2h``), two per layer (Falcon-7B's parallel block:
      one), plus the final norm.
    - embeddings: ``vocab·h``, twice unless ``tie_word_embeddings``; GPT-BigCode adds
      ``n_positions·h``.

    Checked exactly against transformers' own modules for Llama-3, Qwen2.5, Mistral,
    Falcon-7B, GPT-BigCode and DeepSeek-V3 (``tests/test_kv.py``); DeepSeek-V3 comes to
    671.0 B, the "671B" of its README_WEIGHTS.md (github.com/deepseek-ai/DeepSeek-V3).

    Raises:
        ConfigError: when the config lacks ``vocab_size`` or ``intermediate_size``.
    """
    if not arch.vocab:
        raise ConfigError(f"{arch.name}: config lacks 'vocab_size' (needed to estimate the weights; or pass --weights-gb)")
    if not arch.intermediate and not (arch.experts and arch.moe_intermediate):
        raise ConfigError(f"{arch.name}: config lacks 'intermediate_size' (needed to estimate the weights; or pass --weights-gb)")
    h = arch.hidden
    norm = h * (2 if arch.norm_bias else 1)
    norms_per_layer = 1 if arch.parallel_attn_single_norm else 2
    attn = _attention(arch)
    total_layers = active_layers = 0
    expert = 3 * h * arch.moe_intermediate
    shared = arch.shared_experts * expert + (3 * h * arch.shared_intermediate + h if arch.shared_intermediate else 0)
    for i in range(arch.layers):
        base = attn + norms_per_layer * norm
        if _is_moe_layer(arch, i):
            router = h * arch.experts
            total_layers += base + arch.experts * expert + shared + router
            active_layers += base + min(arch.experts_per_token or arch.experts, arch.experts) * expert + shared + router
        else:
            mlp = _mlp(arch, arch.intermediate)
            total_layers += base + mlp
            active_layers += base + mlp
    emb = arch.vocab * h * (1 if arch.tie_embeddings else 2) + arch.position_embeddings * h
    return ParamCount(total=total_layers + norm + emb, active=active_layers + norm + emb, embedding=emb,
                      active_layers=active_layers)


def weights_bytes(params: int, dtype: str = "bf16") -> int:
    """Bytes of ``params`` weights stored in ``dtype`` (bf16/fp16 2, fp8 1, fp4 ½; quantization
    scales not counted: FP8 with 128×128 block scales adds 4 bytes per 16,384 weights)."""
    return (params * DTYPE_BITS[normalize_dtype(dtype)] + 7) // 8


@dataclass(frozen=True)
class MemoryPlan:
    """How much KV cache fits (bytes, tokens).

    Attributes:
        gpu_memory_bytes: memory of one GPU.
        gpus: GPUs holding one model copy (tensor parallel).
        utilization: fraction of each GPU the engine may use.
        usable_bytes: ``gpus × round(gpu_memory × utilization)``.
        weights_bytes: model weights, all GPUs together.
        reserved_bytes: activations and other non-KV memory, all GPUs together.
        kv_cache_bytes: ``usable − weights − reserved``.
        kv_bytes_per_token: KV bytes per token, all GPUs together.
        max_tokens: ``floor(kv_cache_bytes / kv_bytes_per_token)``.
        context_tokens: tokens per context, or ``None``.
        max_contexts: ``max_tokens // context_tokens`` (``None`` without a context length).
    """

    gpu_memory_bytes: int
    gpus: int
    utilization: float
    usable_bytes: int
    weights_bytes: int
    reserved_bytes: int
    kv_cache_bytes: int
    kv_bytes_per_token: int
    max_tokens: int
    context_tokens: int | None
    max_contexts: int | None


def plan_memory(*, kv_bytes_per_token: int, weights: int, gpu_memory_bytes: int, utilization: float,
                gpus: int = 1, reserved_bytes_per_gpu: int = 0, context_tokens: int | None = None) -> MemoryPlan:
    """Tokens and contexts of KV cache that fit after the weights.

    ``max_tokens = floor((gpus × gpu_memory × utilization − weights − gpus × reserved) /
    kv_bytes_per_token)``; ``max_contexts = max_tokens // context_tokens``.

    Args:
        kv_bytes_per_token: KV bytes per token over all ``gpus`` (see
            :func:`~promptcache.kv.arch.kv_bytes_per_token`).
        weights: weight bytes over all GPUs.
        gpu_memory_bytes: memory of one GPU, bytes.
        utilization: fraction of each GPU the engine may use, in (0, 1].
        gpus: tensor-parallel GPUs.
        reserved_bytes_per_gpu: activations and other memory to keep free, per GPU.
        context_tokens: context length for ``max_contexts``.

    Raises:
        ConfigError: for a utilization outside (0, 1], non-positive sizes, or a budget that
            does not hold the weights and the reserve.
    """
    if not 0 < utilization <= 1:
        raise ConfigError(f"--gpu-utilization must be in (0, 1], got {utilization}")
    if gpu_memory_bytes <= 0:
        raise ConfigError("--gpu-memory-gb must be positive")
    if reserved_bytes_per_gpu < 0:
        raise ConfigError("--reserved-gb must not be negative")
    if context_tokens is not None and context_tokens < 1:
        raise ConfigError("--context-tokens must be at least 1")
    usable = gpus * round(gpu_memory_bytes * utilization)
    reserved = gpus * reserved_bytes_per_gpu
    kv = usable - weights - reserved
    if kv <= 0:
        raise ConfigError(
            f"the budget does not hold the weights: {gpus} × {gpu_memory_bytes / GiB:g} GiB × {utilization:g} = "
            f"{usable / GiB:.1f} GiB usable, weights {weights / GiB:.1f} GiB"
            + (f" + reserved {reserved / GiB:.1f} GiB" if reserved else "")
            + " (more GPUs with --tensor-parallel, smaller --weights-dtype, or --weights-gb)")
    max_tokens = kv // kv_bytes_per_token
    return MemoryPlan(gpu_memory_bytes=gpu_memory_bytes, gpus=gpus, utilization=utilization, usable_bytes=usable,
                      weights_bytes=weights, reserved_bytes=reserved, kv_cache_bytes=kv,
                      kv_bytes_per_token=kv_bytes_per_token, max_tokens=max_tokens, context_tokens=context_tokens,
                      max_contexts=max_tokens // context_tokens if context_tokens else None)


def attention_flops_coefficient(arch: Architecture) -> int:
    """``c`` in causal-attention prefill FLOPs ``c × L²`` for a prefix of ``L`` tokens.

    Per layer and head, ``QKᵀ`` over the ``L²/2`` causal (query, key) pairs costs
    ``2 × d_qk`` FLOPs per pair and ``AV`` ``2 × d_v``: ``L² × (d_qk + d_v)``. So
    ``c = layers × heads × (d_qk + d_v)``; with ``d_qk = d_v = head_dim`` and ``heads ×
    head_dim = hidden`` that is ``4 × layers × hidden × L² / 2``. MLA (prefill runs as
    multi-head attention): ``d_qk = qk_nope + qk_rope``, ``d_v = v_head_dim``.
    """
    if arch.attention == "mla":
        return arch.layers * arch.heads * (arch.qk_nope_head_dim + arch.qk_rope_head_dim + arch.v_head_dim)
    return arch.layers * arch.heads * 2 * arch.head_dim


def prefill_flops(arch: Architecture, params: ParamCount, tokens: int) -> float:
    """FLOPs to recompute the KV of a ``tokens``-token prefix: ``2 × active_layers × L +
    c × L²`` (:func:`attention_flops_coefficient`); no lm_head (prefix tokens need no logits)."""
    return 2.0 * params.active_layers * tokens + attention_flops_coefficient(arch) * float(tokens) ** 2
