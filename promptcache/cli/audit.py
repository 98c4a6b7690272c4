"""``promptcache audit LOG...``: simulate and price prompt caching over request logs."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from ..audit import AuditOptions, audit
from ..errors import ExitCode
from ..ingest import ReadOptions, available_formats
from .output import emit


class Format(str, Enum):
    text = "text"
    json = "json"


class Severity(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"


def audit_cmd(
    logs: list[Path] = typer.Argument(..., help="Request logs: JSONL, JSON arrays or .gz (OpenAI, Anthropic, gateway records, Mooncake traces).", show_default=False),
    cache_model: Optional[str] = typer.Option(None, "--cache-model", help="Cache rules to apply (openai, anthropic, gemini, deepseek, vllm, sglang); default: inferred from each request's model."),
    input_format: Optional[str] = typer.Option(None, "--input-format", help=f"Force the log format ({', '.join(available_formats())})."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="o200k_base, cl100k_base, approx, or a path to a model directory, tokenizer.json or .gguf file."),
    ttl: Optional[float] = typer.Option(None, "--ttl", help="Override the cache TTL in seconds (0: never expire)."),
    capacity_tokens: Optional[int] = typer.Option(None, "--capacity-tokens", help="LRU capacity per cache namespace, in tokens (engines)."),
    block_size: Optional[int] = typer.Option(None, "--block-size", help="Engine block size in tokens (vLLM default 16)."),
    hash_block_size: Optional[int] = typer.Option(None, "--hash-block-size", help="Tokens per block in hashed traces (Mooncake: 512)."),
    prices: Optional[Path] = typer.Option(None, "--prices", help="YAML of custom or negotiated prices (USD per million tokens)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name for logs that carry none (hashed traces), for prices and rules."),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first malformed line (exit 2)."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Report format."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the JSON report to this file (the terminal still gets the text report)."),
    top: int = typer.Option(5, "--top", help="How many shared prefixes to rank."),
    no_requests: bool = typer.Option(False, "--no-requests", help="Leave the per-request array out of the JSON."),
    fail_on: Optional[Severity] = typer.Option(None, "--fail-on", help="Exit 1 when a finding at or above this severity is found."),
    show_text: bool = typer.Option(False, "--show-text", help="Quote prompt values in findings without redacting secrets, e-mails and keys."),
) -> int:
    """Simulate each provider's or engine's prompt cache over request logs and price every scenario."""
    err = Console(stderr=True)
    opts = AuditOptions(cache_model=cache_model, tokenizer=tokenizer, ttl=ttl, capacity_tokens=capacity_tokens,
                        block_size=block_size, prices_file=str(prices) if prices else None, model=model, top=top,
                        show_text=show_text,
                        read=ReadOptions(input_format=input_format, hash_block_tokens=hash_block_size, strict=strict))
    if err.is_terminal:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                      console=err, transient=True) as bar:
            task = bar.add_task("auditing", total=None)
            res = audit(logs, opts, progress=lambda k: bar.update(task, description=f"auditing: {k:,} requests"))
    else:
        res = audit(logs, opts)
    from ..report.audit_records import audit_record

    from ..diagnose.rules import RANK

    failed = fail_on is not None and any(RANK[f.severity] >= RANK[fail_on.value] for f in res.findings)
    code = int(ExitCode.FINDINGS) if failed else 0
    if fmt is Format.json or output is not None:
        data = json.dumps(audit_record(res, include_requests=not no_requests), ensure_ascii=False, indent=1)
        emit(data, output if output is not None else None)
        if output is None:
            return code
    from ..report.audit_text import render_audit, render_findings

    out = Console(soft_wrap=False)
    if not out.is_terminal:
        out = Console(soft_wrap=False, width=130)
    render_audit(res, out, top=top)
    render_findings(res, out)
    return code
