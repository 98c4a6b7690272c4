"""``promptcache lint --format sarif``: SARIF 2.1.0 (OASIS), for GitHub code scanning.

- ``tool.driver.rules``: every rule that ran, ``id`` = code, ``name`` = rule id, short and full
  descriptions, ``help`` (text and Markdown: why, fix, fix safety), ``helpUri`` (the rule file),
  default level;
- results: ``ruleId``/``ruleIndex``, level (``info`` → ``note``), the message, a region with
  1-based lines and columns (``columnKind: unicodeCodePoints``) under ``uriBaseId: %SRCROOT%``,
  ``partialFingerprints`` from the line-independent fingerprint, ``fixes`` for mechanical edits;
- suppressed findings are kept, with ``suppressions``: ``inSource`` for inline directives,
  ``external`` for per-file ignores and the baseline.

https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from ..diagnose.rules import Rule
from ..lint.engine import LintRun
from .jsontext import escape_controls
from ..lint.model import LintFinding
from .lint_records import RULE_DOCS

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "promptcache/v1"


def _uri(path: str) -> str:
    """A relative path as an RFC 3986 URI reference (SARIF's ``artifactLocation.uri``):
    ``prompts/café.j2`` → ``prompts/caf%C3%A9.j2``."""
    from urllib.parse import quote

    return quote(Path(path).as_posix(), safe="/")


def _help(rule: Rule) -> dict[str, str]:
    fix = rule.fix.get("description", "")
    safety = rule.fix.get("safety", "unsafe")
    text = f"{rule.summary}\n\n{rule.why}\n\nFix ({safety}): {fix}"
    md = f"**{rule.summary}** (`{rule.code}` {rule.id})\n\n{rule.why}\n\n**Fix** ({safety}): {fix}"
    if rule.references:
        md += "\n\nReferences: " + ", ".join(f"<{u}>" for u in rule.references)
    return {"text": text, "markdown": md}


def rule_descriptor(rule: Rule) -> dict[str, Any]:
    """A ``reportingDescriptor`` for one rule."""
    return {
        "id": rule.code,
        "name": rule.id,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": _help(rule),
        "helpUri": RULE_DOCS.format(id=rule.id),
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": ["prompt-caching", rule.kind], "fixSafety": rule.fix.get("safety", "unsafe")},
    }


def _region(line: int, col: int, end_line: int, end_col: int) -> dict[str, int]:
    return {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": max(end_col, col)}


def result(f: LintFinding, index: int) -> dict[str, Any]:
    """A ``result`` for one finding."""
    s = f.span
    loc = {"uri": _uri(s.path), "uriBaseId": "%SRCROOT%"}
    out: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": index,
        "level": LEVEL[f.severity],
        "message": {"text": f.message},
        "locations": [{"physicalLocation": {"artifactLocation": loc,
                                            "region": _region(s.line, s.col, s.end_line, s.end_col)}}],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        "properties": {"rule": f.rule_id, "prompt": f.doc, "part": f.part, "tokenIndex": f.token_index,
                       "tokensAtRisk": f.tokens_at_risk, "fix": f.fix_description, "fixSafety": f.fix_safety},
    }
    if f.edits:
        out["fixes"] = [{
            "description": {"text": f.fix_description},
            "artifactChanges": [{"artifactLocation": loc, "replacements": [
                {"deletedRegion": _region(e.span.line, e.span.col, e.span.end_line, e.span.end_col),
                 "insertedContent": {"text": e.text}} for e in f.edits]}],
        }]
    if f.suppressed_by is not None:
        kind = "inSource" if f.suppressed_by == "inline" else "external"
        out["suppressions"] = [{"kind": kind, "justification": f"suppressed by {f.suppressed_by}"}]
    return out


def sarif(run: LintRun) -> dict[str, Any]:
    """The SARIF log."""
    index = {r.code: k for k, r in enumerate(run.rules)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "promptcache",
                "version": run.tool_version,
                "semanticVersion": run.tool_version,
                "informationUri": "https://github.com/promptcache/promptcache",
                "rules": [rule_descriptor(r) for r in run.rules],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": [result(f, index[f.code]) for f in run.findings],
            "invocations": [{
                "executionSuccessful": not run.errors and not run.internal,
                "toolExecutionNotifications": [
                    {"level": level, "message": {"text": m},
                     "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(p),
                                                                               "uriBaseId": "%SRCROOT%"}}}]}
                    for level, entries in (("error", run.errors), ("error", run.internal), ("note", run.notes))
                    for p, m in entries],
            }],
        }],
    }


def render(run: LintRun, out: TextIO) -> None:
    """Write the SARIF log."""
    out.write(escape_controls(json.dumps(sarif(run), indent=1, ensure_ascii=False)) + "\n")
