"""One serialization of a :class:`~promptcache.lint.engine.LintRun`: the ``promptcache.lint/v1``
record every lint format is built from, and the registry of lint reporters.

| format | module | suppressed findings |
|---|---|---|
| ``text`` | :mod:`.lint_text` | counted, not listed |
| ``json`` | :mod:`.lint_json` | listed with ``suppressed_by`` |
| ``sarif`` | :mod:`.lint_sarif` | listed with ``suppressions`` (SARIF 2.1.0) |
| ``github`` | :mod:`.lint_github` | left out |
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Any, Callable, TextIO

from ..lint.engine import LintRun
from ..lint.model import LintFinding
from .terminal import safe

SCHEMA = "promptcache.lint/v1"
#: Where each rule's documentation lives (the rule file is the documentation).
RULE_DOCS = "https://github.com/promptcache/promptcache/blob/main/rules/lint/{id}.yaml"

#: Format name → module with ``render(run, out)``.
REPORTERS = {"text": "lint_text", "json": "lint_json", "sarif": "lint_sarif", "github": "lint_github"}


def printable(s: str) -> str:
    """One line of a report: ``s`` as :func:`~promptcache.report.terminal.safe` writes it, with
    a newline written as ``\\n`` too, so a template, a file name or a message quoting one stays
    on its line and never sends a terminal sequence (clear screen, window title, cursor moves)."""
    return safe(s).replace("\n", "\\n")


def reporter(name: str) -> Callable[[LintRun, TextIO], None]:
    """The ``render`` function of a format.

    Raises:
        ValueError: ``unknown format 'x'; available: ...``.
    """
    if name not in REPORTERS:
        raise ValueError(f"unknown format {name!r}; available: {', '.join(REPORTERS)}")
    return import_module(f"{__package__}.{REPORTERS[name]}").render  # type: ignore[no-any-return]


def auto_format(is_terminal: bool) -> str:
    """``--format auto``: ``github`` under GitHub Actions, else ``text``."""
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


def finding_record(f: LintFinding) -> dict[str, Any]:
    """One finding as JSON."""
    s = f.span
    return {
        "rule": f.rule_id,
        "code": f.code,
        "severity": f.severity,
        "message": f.message,
        "location": {"path": s.path, "line": s.line, "col": s.col, "end_line": s.end_line, "end_col": s.end_col},
        "prompt": f.doc,
        "part": f.part,
        "token_index": f.token_index,
        "tokens_at_risk": f.tokens_at_risk,
        "fix": {"description": f.fix_description, "safety": f.fix_safety, "applicable": bool(f.edits),
                "edits": [{"location": {"line": e.span.line, "col": e.span.col, "end_line": e.span.end_line,
                                        "end_col": e.span.end_col}, "text": e.text} for e in f.edits]},
        "facts": {k: v for k, v in f.values.items()
                  if k != "match" and (v is None or isinstance(v, (str, int, float, bool)))},
        "fingerprint": f.fingerprint,
        "suppressed_by": f.suppressed_by,
    }


def records(run: LintRun) -> dict[str, Any]:
    """The ``promptcache.lint/v1`` record."""
    active = run.active
    by_sev = {s: sum(1 for f in active if f.severity == s) for s in ("error", "warning", "info")}
    return {
        "schema": SCHEMA,
        "tool": {"name": "promptcache", "version": run.tool_version},
        "config_sources": run.config_sources,
        "rules": [{"id": r.id, "code": r.code, "severity": r.severity, "summary": r.summary} for r in run.rules],
        "findings": [finding_record(f) for f in run.findings],
        "errors": [{"path": p, "message": m} for p, m in run.errors],
        "internal_errors": [{"path": p, "message": m} for p, m in run.internal],
        "notes": [{"path": p, "message": m} for p, m in run.notes],
        "summary": {"files": run.files, "prompts": run.prompts, "findings": len(active),
                    "suppressed": len(run.findings) - len(active), **by_sev,
                    "fixable": sum(1 for f in active if f.edits), "fixed": run.fixed, "fail_on": run.fail_on,
                    "failed": run.failed()},
    }
