"""``promptcache propose LOG...``: the templates behind the traffic, stable-first versions of
them, and what they save on this very traffic."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..report.jsontext import dumps
from ..errors import ConfigError
from .common import (BlockSize, CacheModel, Capacity, HashBlock, InputFormat, Logs, Model, Prices, ShowText, Workers,
                     Strict, TTL, TokenizerOpt, audit_options, report_console, with_progress,
                     ReportFormat as Format, ReportTable as Table)
from ..fileio import emit, refuse_inputs


def propose_cmd(
    logs: Logs,
    cache_model: CacheModel = None,
    input_format: InputFormat = None,
    tokenizer: TokenizerOpt = None,
    ttl: TTL = None,
    capacity_tokens: Capacity = None,
    block_size: BlockSize = None,
    hash_block_size: HashBlock = None,
    prices: Prices = None,
    model: Model = None,
    strict: Strict = False,
    show_text: ShowText = False,
    workers: Workers = None,
    write_proposed: Optional[Path] = typer.Option(None, "--write-proposed", help="Write the proposed log here: the input's own records, rewritten, as JSONL (gzipped for .gz); never over an input."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Report format: text, json, html, markdown, csv or "
                               "parquet (a table, see --table)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the --format report to this file (JSON with "
                                          "--format text). Required for parquet."),
    table: Table = typer.Option(Table.proposals, "--table", help="Table for --format csv/parquet: one row per proposal, "
                                "or per request / finding of the log as it is."),
) -> int:
    """Propose stable-first templates, apply them to every logged request and re-price them."""
    from ..propose.engine import propose

    refuse_inputs({"--output": output, "--write-proposed": write_proposed}, [*logs, prices, tokenizer])
    if fmt is Format.parquet and output is None:
        raise ConfigError("--format parquet writes a binary file: give it --output FILE")
    opts = audit_options(cache_model=cache_model, tokenizer=tokenizer, ttl=ttl, capacity_tokens=capacity_tokens,
                         block_size=block_size, prices=prices, model=model, input_format=input_format,
                         hash_block_size=hash_block_size, strict=strict, show_text=show_text, workers=workers)
    res = with_progress("proposing", lambda p: propose(logs, opts, write=write_proposed, progress=p))
    if fmt in (Format.html, Format.markdown, Format.csv, Format.parquet):
        from ..report.formats import emit_report

        emit_report(fmt.value, res.before, res, output, table=table.value)
        if output is None:
            return 0
    elif fmt is Format.json or output is not None:
        from ..report.audit_records import lifetimes_record, proposals_record, scenario_record, unaddressed_record

        rec = {"schema": "promptcache.propose/v1",
               "before": {k: scenario_record(v) for k, v in res.before.scenarios.items() if k != "reported"},
               "after": {k: scenario_record(v) for k, v in res.after.scenarios.items() if k != "reported"},
               "proposals": proposals_record(res), "unaddressed": unaddressed_record(res),
               "lifetimes": lifetimes_record(res), "written": res.written}
        emit(dumps(rec), output)
        if output is None:
            return 0
    from ..report.proposal_text import render_proposals

    render_proposals(res, report_console(), show_text=show_text)
    return 0
