"""Run a rule's ``examples.templates`` cases through ``promptcache lint``: each ``bad`` case
must produce the rule at exactly its ``expect`` positions (``"line:col"``), no ``good`` case may
produce it. Used by the test suite.

A case is ``{file, content}``; optional keys: ``expect`` (bad cases), ``before`` (content to
``promptcache lock`` first, for the lockfile rules), ``select`` (rules to run; default the rule
alone), ``settings`` (config keys, e.g. ``{model: claude-opus-4-5}``). ``<<filler N>>`` expands
to N words of fixed filler text (:func:`promptcache.diagnose.examples.filler`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from ..diagnose.examples import expand
from ..diagnose.rules import Rule


def _toml(settings: dict[str, Any]) -> str:
    import json

    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())


def run_case(rule: Rule, case: dict[str, Any]) -> list[str]:
    """``line:col`` of each finding of ``rule`` on one case."""
    from .engine import LintOptions, lint_paths, lock_paths
    from .lockfile import render

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        settings = {"select": list(case.get("select") or [rule.code]), **(case.get("settings") or {})}
        (root / ".promptcache.toml").write_text(_toml(settings), encoding="utf-8")
        f = root / case["file"]
        f.parent.mkdir(parents=True, exist_ok=True)
        old = Path.cwd()
        os.chdir(root)
        try:
            if "before" in case:
                f.write_text(expand(case["before"]), encoding="utf-8")
                lp, entries = lock_paths([f])
                lp.write_text(render(entries), encoding="utf-8")
            f.write_text(expand(case["content"]), encoding="utf-8")
            run = lint_paths([f], LintOptions())
        finally:
            os.chdir(old)
    return [f"{x.span.line}:{x.span.col}" for x in run.findings if x.rule_id == rule.id and x.suppressed_by is None]


def check_template_examples(rule: Rule) -> list[str]:
    """Problems with a rule's template examples (empty when every case behaves). A rule lint
    runs with no ``bad`` case, no ``good`` case, or a ``bad`` case without ``expect`` is a
    problem: an example run that checks nothing must not pass."""
    ex = rule.examples.get("templates") or {}
    problems = []
    if not ex.get("bad"):
        problems.append(f"{rule.path}: no examples.templates.bad case: lint runs {rule.id}, so it needs one")
    if not ex.get("good"):
        problems.append(f"{rule.path}: no examples.templates.good case: lint runs {rule.id}, so it needs one")
    for k, case in enumerate(ex.get("bad") or []):
        if not case.get("expect"):
            problems.append(f"{rule.path}: examples.templates.bad[{k}] ({case.get('file')}) has no `expect` positions")
    for k, case in enumerate(ex.get("bad") or []):
        got = run_case(rule, case)
        want = list(case.get("expect") or [])
        if sorted(got) != sorted(want):
            problems.append(f"{rule.path}: examples.templates.bad[{k}] ({case['file']}): expected {rule.id} at "
                            f"{want}, got {got}")
    for k, case in enumerate(ex.get("good") or []):
        got = run_case(rule, case)
        if got:
            problems.append(f"{rule.path}: examples.templates.good[{k}] ({case['file']}) produces {rule.id} at {got}")
    return problems
