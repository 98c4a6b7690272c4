"""``promptcache rules``: list the rules; ``promptcache rules show ID``: one rule's documentation."""

from __future__ import annotations

import json
import sys
from pathlib import Path
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
    out = report_console(160)
    out.print(table)
    from ..simulate.rules import load_providers

    out.print()
    out.print("Cache rules (rules/providers), with the date their facts were checked "
              "(`promptcache rules providers [LOG]` for sources, and staleness against a log):")
    prov = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("provider", "kind", "checked", "name"):
        prov.add_column(col, overflow="fold")
    for pf in load_providers().values():
        prov.add_row(pf.id, pf.kind, str(pf.checked), pf.name)
    out.print(prov)
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


@app.command("providers")
def rules_providers(logs: Optional[list[Path]] = typer.Argument(None, help="Logs whose newest request the checked "
                                                                      "dates are compared with (optional)."),
                    fmt: str = typer.Option("text", "--format", "-f", help="text or json.")) -> int:
    """List every provider and engine cache rules file with the date its facts were checked; with
    logs, warn about files checked more than 90 days before the logs' newest request."""
    from ..simulate.rules import STALE_DAYS, load_providers, stale

    provs = load_providers()
    newest = _newest_arrival(logs or [])
    warnings = stale(provs.values(), newest)
    if fmt == "json":
        sys.stdout.write(json.dumps({"providers": [
            {"id": pf.id, "kind": pf.kind, "name": pf.name, "checked": str(pf.checked), "source": pf.source,
             "models": len(pf.models), "prefixes": list(pf.route.get("prefixes", ())),
             "aliases": list(pf.route.get("aliases", ()))} for pf in provs.values()],
            "newest_request": newest, "stale_after_days": STALE_DAYS, "warnings": warnings}, indent=1) + "\n")
        return int(ExitCode.OK)
    table = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("id", "kind", "checked", "routes", "source"):
        table.add_column(col, overflow="fold")
    for pf in provs.values():
        routes = ", ".join([f"{p}/..." for p in pf.route.get("prefixes", ())][:3])
        table.add_row(pf.id, pf.kind, str(pf.checked), routes, pf.source)
    out = report_console(160)
    out.print(table)
    err = console(stderr=True)
    for w in warnings:
        err.print(f"[yellow]warning:[/] {escape(w)}")
    return int(ExitCode.OK)


def _newest_arrival(logs: list[Path]) -> float | None:
    """The newest arrival time in the logs (UTC seconds), or ``None``."""
    if not logs:
        return None
    from ..ingest import InputStats, ReadOptions, read_requests

    newest = None
    for p in logs:
        for req in read_requests(p, InputStats(str(p)), ReadOptions()):
            if req.arrival is not None and (newest is None or req.arrival > newest):
                newest = req.arrival
    return newest
