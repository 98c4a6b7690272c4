"""The calibration section of the audit report (``--calibrate``): per namespace, what the log's
reported usage shows next to the documented rules, and where they disagree."""

from __future__ import annotations

from typing import Any, Sequence

from rich.markup import escape
from rich.table import Table


def _fig(f: Any, unit: str) -> str:
    if f.value is None:
        return f.note or "not enough data"
    if f.low is not None and f.high is not None and f.low != f.high:
        lo = "" if f.low is None else f"{f.low:,.0f}"
        return f"{f.value:,.0f} {unit} ({lo}-{f.high:,.0f}; {f.requests} req.)"
    return f"{f.value:,.0f} {unit} ({f.requests} req.)"


def _doc(v: Any, unit: str) -> str:
    return "—" if v is None else f"{v:,.0f} {unit}"


def render_calibration(results: Sequence[Any], out: Any) -> None:
    """Print the calibration table and the disagreements."""
    out.print()
    out.print("[bold]Calibration: what the reported usage shows[/] (observed, with the requests behind each figure, "
              "against the documented rules)")
    if not results:
        out.print("  no requests")
        return
    t = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("namespace", "requests", "min_tokens", "granularity", "ttl_seconds", "documented"):
        t.add_column(col, overflow="fold")
    for c in results:
        d = c.documented
        ttl = c.ttl_seconds
        if ttl.value is None:
            ttl_s = ttl.note or "not enough data"
        else:
            ttl_s = f"{ttl.low:,.0f}-{ttl.high:,.0f} s ({ttl.requests} req.)"
        t.add_row(escape(c.namespace), f"{c.with_usage}/{c.requests}", escape(_fig(c.min_tokens, "tok")),
                  escape(_fig(c.granularity, "tok")), escape(ttl_s),
                  f"min {_doc(d.get('min_tokens'), 'tok')}, step {_doc(d.get('granularity'), 'tok')}, "
                  f"TTL {_doc(d.get('ttl_seconds'), 's')}")
    out.print(t)
    lines = [(c.namespace, x) for c in results for x in c.disagreements]
    if lines:
        out.print("[bold]The documented rules disagree with the log:[/]")
        for ns, x in lines:
            out.print(f"  {escape(ns)}: {escape(x)}")
    else:
        out.print("The documented rules agree with what the log shows (where it can tell).")
