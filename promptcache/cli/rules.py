"""``promptcache rules``: list the rules; ``promptcache rules show ID``: one rule's documentation."""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer
from ..report.terminal import console
from rich.markup import escape
from rich.table import Table

from ..errors import ExitCode
from .common import report_console

app = typer.Typer(help="List the rules, or show one rule's documentation.", no_args_is_help=False,
                  invoke_without_command=True, add_completion=False)


def _applies(rule) -> str:  # type: ignore[no-untyped-def]
    from ..lint.checks import lint_capable

    audit = bool((rule.examples.get("logs") or {}).get("bad"))
    return "/".join(x for x, on in (("audit", audit), ("lint", lint_capable(rule))) if on)


@app.callback()
def rules_list(ctx: typer.Context,
               fmt: str = typer.Option("text", "--format", "-f", help="text or json.")) -> Optional[int]:
    """List every rule: code, id, severity, where it applies, summary."""
    if ctx.invoked_subcommand is not None:
        return None
    from ..diagnose.rules import load_rules

    rules = load_rules()
    if fmt == "json":
        sys.stdout.write(json.dumps([{"code": r.code, "id": r.id, "severity": r.severity, "kind": r.kind,
                                      "applies_to": _applies(r).split("/"), "summary": r.summary} for r in rules],
                                    indent=1) + "\n")
        return int(ExitCode.OK)
    table = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("code", "id", "severity", "applies to", "summary"):
        table.add_column(col, overflow="fold")
    for r in rules:
        table.add_row(r.code, r.id, r.severity, _applies(r), r.summary)
    report_console(160).print(table)
    return int(ExitCode.OK)


def rule_doc(rule) -> str:  # type: ignore[no-untyped-def]
    """The full documentation of a rule, as Markdown (the rule file is its source)."""
    lines = [f"# {rule.code} {rule.id}", "", f"{rule.summary}.", "",
             f"Severity: {rule.severity}. Kind: {rule.kind}. Applies to: {_applies(rule)}. Since {rule.since}."]
    if rule.aliases:
        lines.append(f"Aliases: {', '.join(rule.aliases)}.")
    lines += ["", "## Why", "", rule.why.strip(), "", "## Message", "", rule.message]
    if rule.options.get("template_message"):
        lines += ["", "In `promptcache lint`:", "", str(rule.options["template_message"])]
    lines += ["", "## Fix", "", f"{rule.fix.get('description')} (safety: {rule.fix.get('safety')})"]
    tmpl = rule.examples.get("templates") or {}
    for label, key in (("Bad", "bad"), ("Good", "good")):
        for case in tmpl.get(key) or []:
            lines += ["", f"## {label} template example (`{case['file']}`)", "", "```", case["content"].rstrip("\n"), "```"]
            if case.get("expect"):
                lines.append(f"Reported at {', '.join(case['expect'])}.")
    logs = rule.examples.get("logs") or {}
    if logs.get("bad"):
        lines += ["", "## Log examples", "",
                  f"{len(logs.get('bad') or [])} bad and {len(logs.get('good') or [])} good request logs in `{rule.path}`."]
    if rule.references:
        lines += ["", "## References", ""] + [f"- {u}" for u in rule.references]
    return "\n".join(lines) + "\n"


@app.command("show")
def rules_show(name: str = typer.Argument(..., help="Code, id or alias, e.g. PC101 or timestamp-in-prefix.")) -> int:
    """Print one rule's full documentation (why, fix, examples, references)."""
    from ..diagnose.rules import resolve

    rule = resolve(name)
    console(soft_wrap=True, highlight=False).print(escape(rule_doc(rule)), markup=True)
    return int(ExitCode.OK)
