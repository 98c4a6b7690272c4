"""``promptcache formats [FILE...]``: the log formats promptcache reads, and for a file which
format each of its first records matched and why the others did not."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table
from rich.text import Text

from ..errors import BadRecord, ExitCode
from .common import report_console

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _safe(s: Any) -> str:
    """Text without control characters (escaped as ``\\xNN``): reasons may quote record values."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(s))


def catalog() -> list[dict[str, Any]]:
    """Every reader as a record: ``--input-format`` name, producer, shapes, what detection
    looks for, and the kind of records it takes."""
    from ..ingest.registry import READERS

    return [{"input_format": r.name, "producer": r.producer, "shapes": r.shapes, "detected_by": r.looks_for,
             "records": r.records, "responses_only": r.responses_only} for r in READERS]


def explain_file(path: Path, records: int) -> dict[str, Any]:
    """What the first ``records`` records of a file matched (and why every other reader did
    not), and what reading the whole file gives (its per-file counts)."""
    from ..ingest import InputStats, ReadOptions, read_inputs
    from ..ingest.jsonio import CsvRow, TextLine, iter_records
    from ..ingest.registry import explain

    firsts = []
    for line, rec in iter_records(path):
        if len(firsts) >= records:
            break
        kind = "text line" if isinstance(rec, TextLine) else "CSV row" if isinstance(rec, CsvRow) else "JSON"
        if isinstance(rec, BadRecord):
            firsts.append({"line": line, "kind": "malformed", "error": str(rec), "matched": [], "others": []})
            continue
        got = explain(rec)
        firsts.append({"line": line, "kind": kind,
                       "matched": [{"input_format": r.name, "why": why} for r, ok, why in got if ok],
                       "others": [{"input_format": r.name, "why_not": why} for r, ok, why in got if not ok]})
    st = InputStats(str(path))
    try:
        for _ in read_inputs([path], [st], ReadOptions()):
            pass
        error = None
    except Exception as e:  # noqa: BLE001 - an input error is part of what the file says
        error = str(e)
    whole = st.record()
    whole["notes"] = st.notes()
    if error:
        whole["error"] = error
    return {"path": str(path), "first_records": firsts, "read": whole}


def formats_cmd(
    files: Optional[list[Path]] = typer.Argument(None, help="Log files to explain (default: list every format).",
                                                 show_default=False),
    records: int = typer.Option(3, "--records", "-n", min=1, help="How many of each file's first records to explain."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> int:
    """List the log formats promptcache reads (with the --input-format that forces each), or say
    for each FILE which format its first records matched, why the others did not, and what each
    of its records ended as."""
    out = report_console(160)
    if not files:
        cat = catalog()
        if fmt == "json":
            out.file.write(json.dumps(cat, indent=1) + "\n")
            return int(ExitCode.OK)
        t = Table(title="Log formats (detected per record; --input-format NAME forces one)", title_justify="left")
        for col in ("--input-format", "producer", "shapes", "detected by"):
            t.add_column(col, overflow="fold")
        for c in cat:
            t.add_row(c["input_format"], c["producer"], c["shapes"], c["detected_by"])
        out.print(t)
        return int(ExitCode.OK)
    from ..errors import InputError

    reports = []
    for f in files:
        try:
            reports.append(explain_file(f, records))
        except InputError as e:
            raise InputError(str(e).split(": ", 1)[-1], path=str(f)) from None
    if fmt == "json":
        out.file.write(json.dumps(reports, indent=1, ensure_ascii=False) + "\n")
        return int(ExitCode.OK)
    for rep in reports:
        out.print(Text.assemble((_safe(rep["path"]), "bold")))
        for r in rep["first_records"]:
            head = f"  line {r['line']} ({r['kind']}): "
            if r["kind"] == "malformed":
                out.print(Text(head + "malformed: " + _safe(r["error"]), style="yellow"))
                continue
            if not r["matched"]:
                out.print(Text(head + "no format matched", style="yellow"))
            for m in r["matched"]:
                out.print(Text.assemble(head, (m["input_format"], "green"), " - " + _safe(m["why"])))
            for o in r["others"]:
                out.print(Text(f"      not {o['input_format']}: {_safe(o['why_not'])}", style="dim"))
        w = rep["read"]
        out.print(Text(f"  read as {', '.join(w['formats']) or 'nothing'}: {w['records']:,} records; {w['requests']:,} "
                       f"requests, {w['usage_only']:,} usage-only, {w['joined']:,} joined, {w['duplicates']:,} "
                       f"duplicates, {sum(w['skipped'].values()):,} skipped, {w['skipped_lines']:,} malformed"))
        for n in w["notes"]:
            out.print(Text("  note: " + _safe(n), style="yellow"))
        if w.get("error"):
            out.print(Text("  error: " + _safe(w["error"]), style="red"))
    return int(ExitCode.OK)
