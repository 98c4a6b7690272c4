"""Options shared by the commands that read logs (audit, propose, replay): one definition each."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, Annotated, Callable, Optional, TypeVar

import typer
from rich.console import Console

from ..errors import OutputClosed
from ..pipeline import AuditOptions
from ..ingest import ReadOptions, available_formats
from ..report.terminal import SafeConsole, console

T = TypeVar("T")

Logs = Annotated[list[Path], typer.Argument(
    help="Request logs: JSONL, JSON arrays or .gz (OpenAI, Anthropic, Gemini bodies, gateway and observability "
         "exports, OpenTelemetry spans, Mooncake/Bailian traces; see docs/formats.md).", show_default=False)]
CacheModel = Annotated[Optional[str], typer.Option(
    "--cache-model", help="Cache rules to apply (a file id from `promptcache rules providers`: openai, "
                          "anthropic, bedrock, vertex-claude, vertex-gemini, azure, gemini, deepseek, xai, mistral, qwen, "
                          "kimi, groq, fireworks, together, vllm, sglang); default: from each request's model and provider.")]
InputFormat = Annotated[Optional[str], typer.Option("--input-format", help=f"Force the log format ({', '.join(available_formats())}).")]
TokenizerOpt = Annotated[Optional[str], typer.Option(
    "--tokenizer", help="o200k_base, cl100k_base, approx, or a path to a model directory, tokenizer.json or .gguf file.")]
TTL = Annotated[Optional[float], typer.Option("--ttl", help="Override the cache TTL in seconds (0: never expire).")]
Capacity = Annotated[Optional[int], typer.Option("--capacity-tokens", help="LRU capacity per cache namespace, in tokens (engines).")]
BlockSize = Annotated[Optional[int], typer.Option("--block-size", help="Engine block size in tokens (vLLM default 16).")]
HashBlock = Annotated[Optional[int], typer.Option("--hash-block-size", help="Tokens per block in hashed traces (Mooncake 512, Bailian 16).")]
Prices = Annotated[Optional[Path], typer.Option("--prices", help="YAML of custom or negotiated prices (USD per million tokens).")]
Model = Annotated[Optional[str], typer.Option("--model", help="Model name for logs that carry none (hashed traces), for prices and rules.")]
Strict = Annotated[bool, typer.Option("--strict", help="Stop at the first malformed line (exit 2).")]
RulesOverlay = Annotated[Optional[Path], typer.Option(
    "--rules-overlay", help="A rules overlay written by --write-overlay: its calibrated minimums, granularities and "
                            "TTLs replace the documented ones where it matches.")]
ShowText = Annotated[bool, typer.Option("--show-text", help="Quote prompt values as they are. By default secrets and keys "
                                        "are masked, and names, account ids, e-mail addresses and phone numbers shown as "
                                        "their kind and a salted fingerprint (<name #3fa2c1d0>), so a report can be shared.")]
Workers = Annotated[Optional[int], typer.Option(
    "--workers", min=1, help="Processes for one audit: 1 runs it all in one; 2 reads, renders and tokenizes in a "
    "forked second process while this one simulates and diagnoses (same results; about 30% faster on fleet-size "
    "logs). Default: 2 on machines with 2+ cores for logs of 128 MB or more. More than 2 counts as 2: use --dask "
    "to scale out.")]


class Severity(str, Enum):
    """Finding severities, for ``--fail-on``."""

    info = "info"
    warning = "warning"
    error = "error"


class ReportFormat(str, Enum):
    """``--format`` of the audit and propose reports."""

    text = "text"
    json = "json"
    html = "html"
    markdown = "markdown"
    csv = "csv"
    parquet = "parquet"


class ReportTable(str, Enum):
    """``--table`` of ``--format csv|parquet``: one row per request, finding or proposal."""

    requests = "requests"
    findings = "findings"
    proposals = "proposals"


def audit_options(*, cache_model: str | None, tokenizer: str | None, ttl: float | None, capacity_tokens: int | None,
                  block_size: int | None, prices: Path | None, model: str | None, input_format: str | None,
                  hash_block_size: int | None, strict: bool, show_text: bool = False, top: int = 5,
                  workers: int | None = None, calibrate: bool = False,
                  rules_overlay: Path | None = None) -> AuditOptions:
    """The :class:`AuditOptions` for the shared options."""
    return AuditOptions(cache_model=cache_model, tokenizer=tokenizer, ttl=ttl, capacity_tokens=capacity_tokens,
                        block_size=block_size, prices_file=str(prices) if prices else None, model=model, top=top,
                        show_text=show_text, workers=workers, calibrate=calibrate,
                        rules_overlay=str(rules_overlay) if rules_overlay else None,
                        read=ReadOptions(input_format=input_format, hash_block_tokens=hash_block_size, strict=strict))


def with_progress(label: str, fn: Callable[[Callable[[int], None] | None], T]) -> T:
    """Run ``fn(progress)`` with a spinner on stderr when it is a terminal (none when piped)."""
    err = console(stderr=True)
    if not err.is_terminal:
        return fn(None)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task(label, total=None)
        return fn(lambda k: bar.update(task, description=f"{label}: {k:,} requests"))


def with_replay_progress(fn: Callable[[Callable[[Any], None] | None, Callable[[str, int | None], None] | None], T]) -> T:
    """Run ``fn(step, variant)`` with a progress bar on stderr when it is a terminal (none when
    piped): "loading the model" until the first variant starts, then, per variant, a bar of
    its requests with the count, the time spent and the time left (``step`` after each
    request, ``variant(name, total)`` as each starts: :func:`promptcache.replay.verify`'s
    ``progress`` and ``on_variant``)."""
    err = console(stderr=True)
    if not err.is_terminal:
        return fn(None, None)
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(), console=err, transient=True) as bar:
        task = bar.add_task("loading the model", total=None)

        def variant(name: str, total: int | None) -> None:
            bar.reset(task, total=total, description=f"replaying the {name} requests")
            bar.refresh()  # at once: a request takes seconds

        def step(_rec: Any) -> None:
            bar.advance(task)
            bar.refresh()

        return fn(step, variant)


class _ReportConsole(SafeConsole):
    """A console whose closed output pipe (``promptcache audit LOG | head``) surfaces as
    :class:`~promptcache.errors.OutputClosed` (exit 141), not Rich's exit 1, which would read
    as "findings at or above --fail-on"."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise OutputClosed


def report_console(width: int = 130, **kwargs: Any) -> Console:
    """The console for text reports on stdout: the terminal's width, or ``width`` columns when
    piped; control characters in the text escaped (:class:`~promptcache.report.terminal.SafeConsole`);
    extra keyword arguments go to :class:`rich.console.Console`."""
    kwargs.setdefault("soft_wrap", False)
    kwargs.setdefault("emoji", False)  # see report.terminal.console
    out = _ReportConsole(**kwargs)
    return out if out.is_terminal else _ReportConsole(width=width, **kwargs)
