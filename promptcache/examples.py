"""Run the diagnosis rules' log examples through a whole audit: every ``bad`` case must produce
the rule, no ``good`` case may (the test suite runs every diagnosis rule's examples).

A case is a list of request records (any log format the reader accepts; ``<<filler N>>`` expands
to N words of filler, :func:`promptcache.diagnose.examples.expand`). ``examples.logs.options``
sets audit options (``cache_model``, ``ttl``, ``capacity_tokens``, ``block_size``).

This runner sits above the pipeline (it runs audits); the diagnosis stage it checks does not
import the pipeline.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from .diagnose.examples import expand
from .diagnose.rules import Rule
from .pipeline import AuditOptions, audit


def fired(rule: Rule, case: list[dict[str, Any]], options: dict[str, Any] | None = None) -> list[str]:
    """Rule ids the diagnosis reports on one example case."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{rule.id}.jsonl"
        path.write_text("".join(json.dumps(expand(r)) + "\n" for r in case), encoding="utf-8")
        res = audit([path], AuditOptions(**(options or {})))
    got = [f.rule.id for f in res.findings]
    if rule.options.get("accounting_only"):  # a row of the loss accounting, not a finding
        got += [r.rule for r in res.accounting.rows]
    return got


def check_examples(rule: Rule) -> list[str]:
    """Problems with a rule's log examples (empty when every case behaves).

    A rule with no ``bad`` or no ``good`` log example is a problem: a runner that finds nothing
    to run must not pass. ``template`` rules are lint's (:mod:`promptcache.lint.examples`) and
    are refused here.
    """
    if rule.kind == "template":
        return [f"{rule.path}: a template rule has no log examples to run (lint runs its template examples)"]
    logs = rule.examples.get("logs") or {}
    opts = dict(logs.get("options") or {})
    tok = opts.get("tokenizer")
    if tok and not Path(tok).is_absolute() and (Path(rule.path).parent / tok).exists():
        opts["tokenizer"] = str(Path(rule.path).parent / tok)  # a fixture beside the rule file
    problems = []
    for side in ("bad", "good"):
        if not logs.get(side):
            problems.append(f"{rule.path}: examples.logs.{side} is empty: nothing checks this rule on traffic")
    for k, case in enumerate(logs.get("bad") or []):
        if rule.id not in fired(rule, case, opts):
            problems.append(f"{rule.path}: examples.logs.bad[{k}] does not produce {rule.id}")
    for k, case in enumerate(logs.get("good") or []):
        got = fired(rule, case, opts)
        if rule.id in got:
            problems.append(f"{rule.path}: examples.logs.good[{k}] produces {rule.id}")
    return problems
