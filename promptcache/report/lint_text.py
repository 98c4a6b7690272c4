"""``promptcache lint`` in the terminal: ``path:line:col: CODE message``, the fix, a summary."""

from __future__ import annotations

from typing import TextIO

from .terminal import console
from rich.markup import escape

from ..lint.engine import LintRun
from .lint_records import printable

STYLE = {"error": "red", "warning": "yellow", "info": "blue"}


def render(run: LintRun, out: TextIO) -> None:
    """Write the text report (colour only on a terminal)."""
    con = console(file=out, highlight=False, soft_wrap=True)
    for f in run.active:
        s = f.span
        fixable = " [dim][*][/]" if f.edits else ""
        con.print(f"[bold]{escape(printable(s.path))}:{s.line}:{s.col}:[/] [{STYLE[f.severity]}]{f.code}[/]{fixable} "
                  f"{escape(printable(f.message))} [dim]({f.rule_id})[/]")
        con.print(f"  [dim]fix ({f.fix_safety}):[/] {escape(printable(f.fix_description))}")
    for path, msg in (*run.errors, *run.internal):
        con.print(f"[bold]{escape(printable(path))}:[/] [red]error:[/] {escape(printable(msg))}")
    for path, msg in run.notes:
        con.print(f"[bold]{escape(printable(path))}:[/] [blue]note:[/] {escape(printable(msg))}")
    active = run.active
    n = len(active)
    sev = {k: sum(1 for f in active if f.severity == k) for k in ("error", "warning", "info")}
    parts = [f"{v} {k}{'s' if v != 1 else ''}" for k, v in sev.items() if v]
    line = f"{n} finding{'s' if n != 1 else ''}" + (f" ({', '.join(parts)})" if parts else "") + \
        f" in {run.files} file{'s' if run.files != 1 else ''}, {run.prompts} prompt{'s' if run.prompts != 1 else ''}"
    suppressed = len(run.findings) - n
    if suppressed:
        line += f"; {suppressed} suppressed"
    fixable = sum(1 for f in active if f.edits)
    if fixable:
        line += f"; {fixable} fixable with `--fix` [*]"
    if run.fixed:
        line += f"; fixed {run.fixed}"
    con.print(("[green]" if not n else "[bold]") + escape(line) + "[/]")
