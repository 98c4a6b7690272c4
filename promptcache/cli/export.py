"""``promptcache export LOG... --to mooncake``: the log's traffic shape as an anonymised,
replayable hashed trace (no text)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from ..plurals import counted
from ..report.terminal import console

from .common import (CacheModel, HashBlock, InputFormat, Logs, Model, Strict, TokenizerOpt, audit_options,
                     with_progress)


class TraceFormat(str, Enum):
    mooncake = "mooncake"
    bailian = "bailian"


def export_cmd(
    logs: Logs,
    to: TraceFormat = typer.Option(TraceFormat.mooncake, "--to", help="Trace format: mooncake (ms, 512-token blocks) "
                                   "or bailian (seconds, 16-token blocks, sessions)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the trace here (JSONL; gzipped for .gz); default stdout."),
    block_size: Optional[int] = typer.Option(None, "--block-size", help="Tokens per hashed block (default: 512 for mooncake, 16 for bailian)."),
    salt_file: Optional[Path] = typer.Option(None, "--salt-file", help="Hash key (hex); created with mode 0600 if missing. "
                                             "Without it a fresh random salt is used and not kept."),
    cache_model: CacheModel = None,
    input_format: InputFormat = None,
    tokenizer: TokenizerOpt = None,
    hash_block_size: HashBlock = None,
    model: Model = None,
    strict: Strict = False,
) -> int:
    """Export an anonymised trace: salted chained block hashes (remapped to small integers),
    lengths and arrival times, so a team can share its traffic shape without its text."""
    from ..export.mooncake import dumps, export, load_salt, write_trace
    from ..fileio import refuse_inputs

    created = salt_file if salt_file is not None and not salt_file.exists() else None  # else read
    refuse_inputs({"--output": output, "--salt-file": created}, [*logs, tokenizer, salt_file])

    opts = audit_options(cache_model=cache_model, tokenizer=tokenizer, ttl=None, capacity_tokens=None,
                         block_size=None, prices=None, model=model, input_format=input_format,
                         hash_block_size=hash_block_size, strict=strict)
    opts.diagnose = False
    salt = load_salt(salt_file)
    res = with_progress("exporting", lambda p: export(logs, opts, to=to.value, block_tokens=block_size, salt=salt, progress=p))
    err = console(stderr=True)
    if output is not None:
        write_trace(output, res.records, logs)
    else:
        import sys

        sys.stdout.write(dumps(res.records))
        sys.stdout.flush()
    err.print(f"exported {counted(len(res.records), 'request')}, "
              f"{counted(res.distinct_blocks, f'distinct {res.block_tokens}-token block')}"
              + (f" to {output}" if output is not None else ""), highlight=False)
    for w in res.warnings:
        err.print(f"[yellow]warning:[/] {w}", highlight=False)
    return 0
