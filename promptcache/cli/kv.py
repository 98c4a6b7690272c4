"""``promptcache kv``: KV-cache capacity planning, from a model config or preset and,
optionally, request logs."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from ..report.terminal import console

from ..report.jsontext import dumps
from ..errors import ConfigError
from .common import report_console
from ..fileio import emit, refuse_inputs


class Format(str, Enum):
    text = "text"
    json = "json"


def _capacities(spec: Optional[str]) -> Optional[list[int]]:
    """``1e5,1e6,2.5e7`` → token counts."""
    if spec is None:
        return None
    out = []
    for part in spec.split(","):
        part = part.strip().replace("_", "")
        try:
            v = float(part)
        except ValueError:
            raise ConfigError(f"--capacity-sweep takes comma-separated token counts (1e5,1e6), got {part!r}") from None
        if not v >= 1 or v != v or v == float("inf"):
            raise ConfigError(f"--capacity-sweep: capacities must be at least 1 token, got {part!r}")
        out.append(int(round(v)))
    return out


def _list_presets(value: bool) -> None:
    if not value:
        return
    from ..kv.presets import load_presets

    for p in load_presets().values():
        typer.echo(f"{p.id:24} {p.name}  ({p.source}, checked {p.checked})")
    raise typer.Exit()


def kv_cmd(
    logs: Optional[list[Path]] = typer.Argument(None, help="Request logs for a capacity sweep (anything `promptcache audit` reads; Mooncake traces).", show_default=False),
    config: Optional[Path] = typer.Option(None, "--config", help="A Hugging Face config.json (or a model directory holding one)."),
    preset: Optional[str] = typer.Option(None, "--preset", help="A named model from rules/models (see --list-presets)."),
    list_presets: bool = typer.Option(False, "--list-presets", callback=_list_presets, is_eager=True, help="List the presets and exit."),
    dtype: str = typer.Option("bf16", "--dtype", help="KV cache dtype: bf16, fp16, fp8, fp4."),
    fp4_scales: bool = typer.Option(False, "--fp4-scales", help="With --dtype fp4: count NVFP4's FP8 scale per 16 values (4.5 bits per value)."),
    gpu_memory_gb: Optional[float] = typer.Option(None, "--gpu-memory-gb", help="Memory of one GPU in GiB (an 80 GB H100/A100: 80)."),
    gpu_utilization: Optional[float] = typer.Option(None, "--gpu-utilization", help="Fraction of each GPU the engine uses (default: vLLM's gpu_memory_utilization, rules/kv.yaml)."),
    reserved_gb: float = typer.Option(0.0, "--reserved-gb", help="GiB per GPU kept for activations and other non-KV memory."),
    tensor_parallel: int = typer.Option(1, "--tensor-parallel", "-tp", help="GPUs holding one model copy."),
    weights_gb: Optional[float] = typer.Option(None, "--weights-gb", help="Weight memory over all GPUs in GiB (default: estimated from the config)."),
    weights_dtype: Optional[str] = typer.Option(None, "--weights-dtype", help="Dtype of the estimated weights (default: the preset's, else bf16)."),
    context_tokens: Optional[int] = typer.Option(None, "--context-tokens", help="Tokens per context for max_contexts (default: max_position_embeddings)."),
    capacity_sweep: Optional[str] = typer.Option(None, "--capacity-sweep", help="KV capacities in tokens, comma-separated (1e5,1e6,1e7); default: log-spaced up to the log's distinct tokens."),
    cache_model: str = typer.Option("vllm", "--cache-model", help="Engine rules for the sweep: vllm or sglang."),
    block_size: Optional[int] = typer.Option(None, "--block-size", help="Engine block size in tokens (vLLM default 16)."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="Tokenizer for text logs (as for `promptcache audit`)."),
    hash_block_size: Optional[int] = typer.Option(None, "--hash-block-size", help="Tokens per block in hashed traces (Mooncake: 512)."),
    input_format: Optional[str] = typer.Option(None, "--input-format", help="Force the log format."),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first malformed log line (exit 2)."),
    cpu_tier: Optional[str] = typer.Option(None, "--cpu-tier", help="CPU-memory offload tier: GiB[:GB/s], e.g. 512:50."),
    ssd_tier: Optional[str] = typer.Option(None, "--ssd-tier", help="SSD offload tier: GiB[:GB/s], e.g. 4000:6."),
    gpu_tflops: Optional[float] = typer.Option(None, "--gpu-tflops", help="Peak dense TFLOP/s of one GPU for recomputation (default: H100 SXM BF16, 989.4)."),
    mfu: Optional[float] = typer.Option(None, "--mfu", help="Fraction of peak FLOP/s a prefill reaches (default 0.5, an assumption)."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Report format."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the JSON report to this file."),
) -> int:
    """KV-cache capacity planning: bytes per token, tokens and contexts that fit, hit ratio against capacity."""
    from ..kv.plan import KvOptions, kv_record, run_kv

    refuse_inputs({"--output": output}, [*(logs or []), config, tokenizer])
    opts = KvOptions(config=config, preset=preset, dtype=dtype, fp4_scales=fp4_scales, weights_gb=weights_gb,
                     weights_dtype=weights_dtype, gpu_memory_gb=gpu_memory_gb, gpu_utilization=gpu_utilization,
                     reserved_gb=reserved_gb, tensor_parallel=tensor_parallel, context_tokens=context_tokens,
                     logs=list(logs or []), capacities=_capacities(capacity_sweep), cache_model=cache_model,
                     block_size=block_size, tokenizer=tokenizer, hash_block_size=hash_block_size,
                     input_format=input_format, strict=strict, cpu_tier=cpu_tier, ssd_tier=ssd_tier,
                     gpu_tflops=gpu_tflops, mfu=mfu)
    err = console(stderr=True)
    if opts.logs and err.is_terminal:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                      console=err, transient=True) as bar:
            task = bar.add_task("sweeping", total=None)
            report = run_kv(opts, progress=lambda k: bar.update(task, description=f"sweeping: {k:,} requests"))
    else:
        report = run_kv(opts)
    if fmt is Format.json or output is not None:
        emit(dumps(kv_record(report)), output)
        if output is None:
            return 0
    from ..kv.report import render_kv

    out = report_console(130)
    render_kv(report, out)
    return 0
