"""``promptcache lint PATHS...``: check prompt templates before they ship."""

from __future__ import annotations

import io
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from ..report.terminal import console

from ..errors import ExitCode
from ..fileio import refuse_inputs, write_atomic


class Format(str, Enum):
    auto = "auto"
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class Severity(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"


def _codes(values: Optional[list[str]]) -> Optional[list[str]]:
    if not values:
        return None
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def lint_cmd(
    paths: Optional[list[Path]] = typer.Argument(None, help="Template files and directories (default: the current directory).", show_default=False),
    fmt: Format = typer.Option(Format.auto, "--format", "-f", help="Report format; auto = github under GitHub Actions, else text."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file (the terminal still gets the text report)."),
    config: Optional[Path] = typer.Option(None, "--config", help="Use this config file instead of discovering one."),
    select: Optional[list[str]] = typer.Option(None, "--select", help="Rules to run (codes, ids, globs; comma-separated or repeated)."),
    extend_select: Optional[list[str]] = typer.Option(None, "--extend-select", help="Rules to add to the selection."),
    ignore: Optional[list[str]] = typer.Option(None, "--ignore", help="Rules to leave out."),
    provider: Optional[str] = typer.Option(None, "--provider", help="Cache rules for prompts that name no model (openai, anthropic, gemini, deepseek)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model for prompts that name none (its minimum cacheable length applies)."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="o200k_base, cl100k_base, approx, or a tokenizer path."),
    fail_on: Optional[Severity] = typer.Option(None, "--fail-on", help="Exit 1 on an unsuppressed finding at or above this severity (default: error)."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when findings reach --fail-on (errors still exit 2)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="A previous --format json report; its findings are suppressed."),
    lockfile: Optional[Path] = typer.Option(None, "--lockfile", help="Prefix lockfile to compare against (default: promptcache-lock.json beside the config, when it exists)."),
    no_lockfile: bool = typer.Option(False, "--no-lockfile", help="Do not compare against a lockfile."),
    requests_per_day: Optional[float] = typer.Option(None, "--requests-per-day", help="Request rate lockfile costs are stated at."),
    fix: bool = typer.Option(False, "--fix", help="Apply safe mechanical fixes, then report what remains."),
    unsafe_fixes: bool = typer.Option(False, "--unsafe-fixes", help="With --fix, apply unsafe fixes too."),
    no_suppress: bool = typer.Option(False, "--no-suppress", help="Ignore inline directives, per-file ignores and the baseline."),
) -> int:
    """Check prompt templates (Jinja2, Prompty, Mustache/Handlebars, Go templates, Liquid, text, Markdown, YAML/JSON bodies and workflow exports, Python, TypeScript/JavaScript, Go) for what defeats prompt caching."""
    from ..lint import LintOptions, lint_paths
    from ..report.lint_records import auto_format, printable, reporter

    err = console(stderr=True)
    overrides: dict = {}
    for key, val in (("select", _codes(select)), ("extend-select", _codes(extend_select)), ("ignore", _codes(ignore)),
                     ("provider", provider), ("model", model), ("tokenizer", tokenizer),
                     ("fail-on", fail_on.value if fail_on else None), ("requests-per-day", requests_per_day)):
        if val is not None:
            overrides[key] = val
    if baseline is not None:
        overrides["baseline"] = str(baseline.resolve())
    if lockfile is not None:
        overrides["lockfile"] = str(lockfile.resolve())
    opts = LintOptions(config=config, overrides=overrides, no_suppress=no_suppress, fix=fix or unsafe_fixes,
                       unsafe_fixes=unsafe_fixes, use_lockfile=not no_lockfile)
    if output is not None:
        from ..lint.engine import files_read

        read = files_read(paths or [Path(".")], opts)
        refuse_inputs({"--output": output}, [config, tokenizer, *(p for ps in read.values() for p in ps)])
    run = lint_paths(paths or [Path(".")], opts)
    name = auto_format(sys.stdout.isatty()) if fmt is Format.auto else fmt.value
    if output is not None:  # the chosen format to the file; the terminal gets the text report
        buf = io.StringIO()
        reporter(name)(run, buf)
        write_atomic(output, buf.getvalue())
        reporter("text")(run, sys.stdout)
    else:
        reporter(name)(run, sys.stdout)  # text gets colour on a terminal
    sys.stdout.flush()
    if run.fixed:
        err.print(f"fixed {run.fixed} finding{'s' if run.fixed != 1 else ''}")
    if output is None and name != "text":  # the text report says these already; other formats hold them
        for p, m in (*run.errors, *run.internal):  # in their own way, and a person reads stderr
            err.print(f"[red]error:[/] {escape(printable(p))}: {escape(printable(m))}", highlight=False)
    if run.internal:
        return int(ExitCode.INTERNAL)
    if run.errors:
        return int(ExitCode.USAGE)
    if run.failed() and not exit_zero:
        return int(ExitCode.FINDINGS)
    return int(ExitCode.OK)
