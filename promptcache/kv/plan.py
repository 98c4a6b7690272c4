"""``promptcache kv`` as a library call: model → KV bytes per token → what fits → (with logs)
hit ratio against capacity, tiers, and loading versus recomputing.

Units: options ending ``_gb`` are GiB (2**30 bytes); ``*_gbps`` GB/s (10**9 bytes/s);
``gpu_tflops`` 10**12 FLOP/s; results are bytes, tokens, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ConfigError
from .arch import Architecture, check_tensor_parallel, from_config, kv_bytes_per_token, normalize_dtype
from .memory import GiB, MemoryPlan, ParamCount, estimate_params, plan_memory, weights_bytes
from .presets import Defaults, Preset, load_defaults, preset as get_preset, read_config
from .sweep import SweepResult, sweep_logs
from .tiers import BreakEven, TierShare, break_even, parse_tier, split_hits


@dataclass
class KvOptions:
    """Everything ``promptcache kv`` can set.

    Attributes:
        config: path of a ``config.json`` (or a model directory).
        preset: a ``rules/models`` preset id (exactly one of ``config``/``preset``).
        dtype: KV cache dtype (bf16, fp16, fp8, fp4).
        fp4_scales: count NVFP4 block scales in fp4 (4.5 bits per value).
        weights_gb: weight memory over all GPUs, GiB (else estimated).
        weights_dtype: dtype of the estimated weights (default: the preset's, else bf16).
        gpu_memory_gb: memory of one GPU, GiB (``None``: no budget, no max_tokens).
        gpu_utilization: fraction of each GPU the engine may use (default ``rules/kv.yaml``).
        reserved_gb: activations and other non-KV memory per GPU, GiB.
        tensor_parallel: GPUs holding one model copy.
        context_tokens: tokens per context (default: the config's max_position_embeddings).
        logs: request logs for the capacity sweep.
        capacities: sweep capacities in tokens (``None``: automatic).
        cache_model, block_size, tokenizer, hash_block_size, input_format, strict: sweep
            options as for ``promptcache audit``.
        cpu_tier, ssd_tier: ``GB[:GBps]``.
        gpu_tflops: peak dense TFLOP/s of one GPU (default ``rules/kv.yaml``).
        mfu: fraction of peak a prefill reaches (default ``rules/kv.yaml``).
    """

    config: str | Path | None = None
    preset: str | None = None
    dtype: str = "bf16"
    fp4_scales: bool = False
    weights_gb: float | None = None
    weights_dtype: str | None = None
    gpu_memory_gb: float | None = None
    gpu_utilization: float | None = None
    reserved_gb: float = 0.0
    tensor_parallel: int = 1
    context_tokens: int | None = None
    logs: Sequence[str | Path] = ()
    capacities: Sequence[int] | None = None
    cache_model: str = "vllm"
    block_size: int | None = None
    tokenizer: str | None = None
    hash_block_size: int | None = None
    input_format: str | None = None
    strict: bool = False
    cpu_tier: str | None = None
    ssd_tier: str | None = None
    gpu_tflops: float | None = None
    mfu: float | None = None


@dataclass
class KvReport:
    """What :func:`run_kv` returns (bytes, tokens, seconds).

    Attributes:
        arch: the model.
        preset: the preset used, or ``None`` for a config file.
        dtype: normalized KV dtype.
        bits_per_value: bits per cached value (4.5 for fp4 with scales).
        kv_bytes_per_token: KV bytes per token, all tensor-parallel GPUs together.
        kv_bytes_per_token_model: the model's own figure (one copy, no replication).
        params: estimated parameters (``None`` when the config lacks what the estimate needs).
        weights_dtype: dtype of the estimated weights.
        weights_bytes: weight bytes (given or estimated).
        weights_source: ``estimate``, ``--weights-gb``, or ``unknown`` (the config lacks what
            the estimate needs, and no ``--weights-gb``: no budget then, and a warning says so).
        memory: the budget and what fits, or ``None`` without ``gpu_memory_gb``.
        context_tokens: context length used for ``max_contexts``.
        sweep: the capacity sweep, or ``None`` without logs.
        tiers: hit split by tier, or empty.
        break_even: loading versus recomputing, per tier with a bandwidth.
        flops_per_s: effective FLOP/s used for recomputation (peak × MFU × GPUs).
        gpu_tflops, mfu: the peak TFLOP/s of one GPU and the MFU behind ``flops_per_s``.
        defaults: the engine and hardware defaults file.
        options: the options as given.
        warnings: one-line warnings.
    """

    arch: Architecture
    preset: Preset | None
    dtype: str
    bits_per_value: float
    kv_bytes_per_token: int
    kv_bytes_per_token_model: int
    params: ParamCount | None
    weights_dtype: str
    weights_bytes: int | None
    weights_source: str
    memory: MemoryPlan | None
    context_tokens: int | None
    sweep: SweepResult | None
    tiers: list[TierShare]
    break_even: list[BreakEven]
    flops_per_s: float | None
    gpu_tflops: float | None
    mfu: float | None
    defaults: Defaults
    options: KvOptions
    warnings: list[str] = field(default_factory=list)


def load_architecture(config: str | Path | None, preset: str | None) -> tuple[Architecture, Preset | None]:
    """The architecture from ``--config`` or ``--preset`` (exactly one).

    Raises:
        ConfigError: when neither or both are given, or the config lacks a needed field.
        InputError: when the config file cannot be read.
    """
    if (config is None) == (preset is None):
        raise ConfigError("give exactly one of --config FILE or --preset NAME (see --list-presets)")
    if preset is not None:
        p = get_preset(preset)
        return from_config(p.config, f"preset {p.id} ({p.path})"), p
    path = Path(config)  # type: ignore[arg-type]
    cfg = read_config(path)
    return from_config(cfg, str(path / "config.json" if path.is_dir() else path)), None


def run_kv(opts: KvOptions, progress: Callable[[int], None] | None = None) -> KvReport:
    """Plan KV-cache capacity (see the module docstring).

    Raises:
        ConfigError: for bad options, a config lacking a needed field, or a budget that does
            not hold the weights.
        InputError: for unreadable config or log files.
    """
    defaults = load_defaults()
    arch, pre = load_architecture(opts.config, opts.preset)
    dtype = normalize_dtype(opts.dtype)
    tp = int(opts.tensor_parallel)
    check_tensor_parallel(arch, tp)
    warnings: list[str] = []
    if opts.fp4_scales and dtype != "fp4":
        raise ConfigError("--fp4-scales applies only to --dtype fp4")
    kvb = kv_bytes_per_token(arch, dtype, fp4_scales=opts.fp4_scales, tensor_parallel=tp)
    kvb_model = kv_bytes_per_token(arch, dtype, fp4_scales=opts.fp4_scales)
    if kvb != kvb_model:
        warnings.append(f"--tensor-parallel {tp}: each GPU holds "
                        + ("the whole MLA latent" if arch.attention == "mla" else
                           f"{arch.kv_heads_per_gpu(tp)} of {arch.kv_heads} KV heads (replicated)")
                        + f", so the group stores {kvb:,} bytes per token instead of {kvb_model:,}")
    if arch.sliding_window and (arch.max_position or 0) > arch.sliding_window:
        warnings.append(f"{arch.name}: sliding_window {arch.sliding_window} is not applied: full attention is "
                        "assumed (an upper bound on KV per sequence)")
    bits = kvb_model * 8 / arch.kv_elements_per_token

    wdtype = normalize_dtype(opts.weights_dtype or (pre.weights_dtype if pre and pre.weights_dtype else "bf16"))
    params: ParamCount | None = None
    no_estimate = ""  # why the weights cannot be estimated (bytes per token need none of it)
    try:
        params = estimate_params(arch)
    except ConfigError as e:
        no_estimate = str(e).split(": ", 1)[-1].split(" (", 1)[0]  # "config lacks 'vocab_size'"
    wbytes: int | None = None
    if opts.weights_gb is not None:
        if opts.weights_gb < 0:
            raise ConfigError("--weights-gb must not be negative")
        wbytes = round(opts.weights_gb * GiB)
        wsource = "--weights-gb"
    elif params is not None:
        wbytes = weights_bytes(params.total, wdtype)
        wsource = "estimate"
    else:
        wsource = "unknown"
        warnings.append(f"{arch.name}: {no_estimate}, which the weight estimate needs: the weights (and what "
                        "fits beside them) need --weights-gb (GiB over all GPUs); bytes per token need none of it")

    context = opts.context_tokens if opts.context_tokens is not None else arch.max_position
    util = opts.gpu_utilization if opts.gpu_utilization is not None else defaults.gpu_memory_utilization.value
    memory = None
    if opts.gpu_memory_gb is not None and wbytes is None:
        pass  # no weights, no budget: the warning above says what to give
    elif opts.gpu_memory_gb is not None:
        if opts.reserved_gb is None or opts.reserved_gb < 0:
            raise ConfigError("--reserved-gb must not be negative")
        memory = plan_memory(kv_bytes_per_token=kvb, weights=wbytes or 0, gpu_memory_bytes=round(opts.gpu_memory_gb * GiB),
                             utilization=util, gpus=tp, reserved_bytes_per_gpu=round(opts.reserved_gb * GiB),
                             context_tokens=context)
        if context and memory.max_contexts == 0:
            warnings.append(f"not even one {context:,}-token context fits ({memory.max_tokens:,} tokens); "
                            "shorten --context-tokens")
    elif (opts.cpu_tier or opts.ssd_tier) and opts.gpu_memory_gb is None:
        raise ConfigError("--cpu-tier/--ssd-tier need --gpu-memory-gb (the GPU tier is what fits after the weights)")

    tier_specs = [parse_tier(s, n) for s, n in ((opts.cpu_tier, "cpu"), (opts.ssd_tier, "ssd")) if s]
    flops = tflops = mfu = None
    if tier_specs:
        tflops = opts.gpu_tflops if opts.gpu_tflops is not None else defaults.gpu_tflops.value
        mfu = opts.mfu if opts.mfu is not None else defaults.mfu.value
        if not tflops > 0 or not 0 < mfu <= 1:
            raise ConfigError("--gpu-tflops must be positive and --mfu in (0, 1]")
        flops = tflops * 1e12 * mfu * tp

    sweep = None
    shares: list[TierShare] = []
    bes: list[BreakEven] = []
    tier_caps: list[tuple[str, int]] = []
    if memory is not None and tier_specs:
        tier_caps = [("gpu", memory.max_tokens)] + [(t.name, t.capacity_bytes // kvb) for t in tier_specs]
    if opts.logs:
        cum, extra = 0, []
        for _, cap in tier_caps:
            cum += cap
            extra.append(cum)
        if memory is not None and memory.max_tokens > 0:
            extra.append(memory.max_tokens)
        extra = [c for c in extra if c > 0]
        sweep = sweep_logs(opts.logs, opts.capacities, engine=opts.cache_model, block_size=opts.block_size,
                           tokenizer=opts.tokenizer, hash_block_size=opts.hash_block_size,
                           input_format=opts.input_format, strict=opts.strict, extra_capacities=extra,
                           progress=progress)
        warnings.extend(sweep.warnings)
        if tier_caps:
            cached = {p.capacity_tokens: p.cached_tokens for p in sweep.points}
            shares = split_hits(tier_caps, cached, sweep.prompt_tokens)
            if any(s.hit_tokens < 0 for s in shares):
                warnings.append("a tier shows negative hits: this engine's eviction is not a pure LRU stack "
                                "(SGLang evicts whole radix nodes), so the tier split is approximate")
    elif opts.capacities is not None:
        raise ConfigError("--capacity-sweep needs request logs (LOG...)")
    if tier_specs and params is not None and flops is not None:
        for t in tier_specs:
            if t.bandwidth_bytes_per_s is not None:
                bes.append(break_even(arch, params, kvb, tier=t.name, bandwidth_bytes_per_s=t.bandwidth_bytes_per_s,
                                      flops_per_s=flops))
    return KvReport(arch=arch, preset=pre, dtype=dtype, bits_per_value=bits, kv_bytes_per_token=kvb,
                    kv_bytes_per_token_model=kvb_model, params=params, weights_dtype=wdtype, weights_bytes=wbytes,
                    weights_source=wsource, memory=memory, context_tokens=context, sweep=sweep, tiers=shares,
                    break_even=bes, flops_per_s=flops, gpu_tflops=tflops, mfu=mfu, defaults=defaults, options=opts, warnings=warnings)


def kv_record(r: KvReport) -> dict[str, Any]:
    """The ``promptcache.kv/v1`` JSON record (bytes, tokens, seconds; ratios in [0, 1])."""
    a = r.arch
    m = r.memory
    rec: dict[str, Any] = {
        "schema": "promptcache.kv/v1",
        "model": {
            "name": r.preset.name if r.preset else a.name, "preset": r.preset.id if r.preset else None,
            "source": r.preset.source if r.preset else a.name, "checked": r.preset.checked if r.preset else None,
            "model_type": a.model_type, "layers": a.layers, "hidden_size": a.hidden, "heads": a.heads,
            "kv_heads": a.kv_heads, "head_dim": a.head_dim, "kv_lora_rank": a.kv_lora_rank or None,
            "qk_rope_head_dim": a.qk_rope_head_dim or None, "max_position_embeddings": a.max_position,
            "sliding_window": a.sliding_window,
        },
        "attention": a.attention,
        "dtype": r.dtype,
        "bits_per_value": r.bits_per_value,
        "tensor_parallel": r.options.tensor_parallel,
        "kv_bytes_per_token": r.kv_bytes_per_token,
        "kv_bytes_per_token_per_gpu": r.kv_bytes_per_token // max(1, r.options.tensor_parallel),
        "kv_bytes_per_token_model": r.kv_bytes_per_token_model,
        "params": None if r.params is None else {"total": r.params.total, "active": r.params.active,
                                                 "embedding": r.params.embedding, "active_layers": r.params.active_layers,
                                                 "estimated": True},
        "weights_dtype": r.weights_dtype,
        "weights_bytes": r.weights_bytes,
        "weights_source": r.weights_source,
        "budget": None if m is None else {
            "gpu_memory_bytes": m.gpu_memory_bytes, "gpus": m.gpus, "gpu_utilization": m.utilization,
            "usable_bytes": m.usable_bytes, "reserved_bytes": m.reserved_bytes, "kv_cache_bytes": m.kv_cache_bytes,
            "gpu_utilization_source": r.defaults.gpu_memory_utilization.source
            if r.options.gpu_utilization is None else "--gpu-utilization",
        },
        "context_tokens": r.context_tokens,
        "max_tokens": m.max_tokens if m else None,
        "max_contexts": m.max_contexts if m else None,
    }
    s = r.sweep
    if s is not None:
        ctx = r.context_tokens
        rec["sweep"] = {
            "cache_model": s.engine, "block_size": s.rules.granularity, "requests": s.requests,
            "prompt_tokens": s.prompt_tokens, "distinct_tokens": s.distinct_tokens,
            "distinct_bytes": s.distinct_tokens * r.kv_bytes_per_token,
            "unbounded_cached_tokens": s.unbounded_cached_tokens, "unbounded_hit_ratio": s.unbounded_hit_ratio,
            "points": [{"capacity_tokens": p.capacity_tokens, "capacity_bytes": p.capacity_tokens * r.kv_bytes_per_token,
                        "capacity_contexts": p.capacity_tokens / ctx if ctx else None,
                        "cached_tokens": p.cached_tokens, "hit_ratio": p.hit_ratio} for p in s.points],
        }
    if r.tiers or r.break_even:
        bw = {b.tier: b for b in r.break_even}
        specs = {t: getattr(r.options, f"{t}_tier") for t in ("cpu", "ssd")}
        rec["tiers"] = {
            "model": "exclusive LRU hierarchy (evicted GPU blocks move down, hits move up): tier hits are differences "
                     "of the sweep at cumulative capacities",
            "gpu_tflops": r.gpu_tflops,
            "mfu": r.mfu,
            "effective_flops_per_s": r.flops_per_s,
            "tiers": [],
        }
        names = [t.name for t in r.tiers] or ["gpu", *[k for k, v in specs.items() if v]]
        for name in names:
            share = next((t for t in r.tiers if t.name == name), None)
            b = bw.get(name)
            rec["tiers"]["tiers"].append({
                "name": name,
                "capacity_tokens": share.capacity_tokens if share else None,
                "capacity_bytes": share.capacity_tokens * r.kv_bytes_per_token if share else None,
                "cumulative_tokens": share.cumulative_tokens if share else None,
                "hit_tokens": share.hit_tokens if share else None,
                "hit_ratio": share.hit_ratio if share else None,
                "bandwidth_bytes_per_s": b.bandwidth_bytes_per_s if b else None,
                "break_even_tokens": b.break_even_tokens if b else None,
                "table": [{"prefix_tokens": x.prefix_tokens, "recompute_s": x.recompute_s, "load_s": x.load_s,
                           "faster": x.faster} for x in b.rows] if b else [],
            })
        if r.tiers and r.sweep is not None:
            rec["tiers"]["miss_tokens"] = r.sweep.prompt_tokens - sum(t.hit_tokens for t in r.tiers)
    rec["warnings"] = r.warnings
    return rec
