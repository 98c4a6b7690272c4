"""Lint rules as data: every rule lint implements has template examples, and they behave (each
bad case reports the rule at exactly the line:col written in the rule file, no good case does)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from promptcache.cli import app
from promptcache.diagnose.rules import load_rules
from promptcache.lint.checks import lint_capable
from promptcache.lint.examples import check_template_examples

LINT_RULES = [r for r in load_rules() if lint_capable(r)]


def test_lint_rule_set():
    codes = {r.code for r in LINT_RULES}
    # input/template errors, volatile values, code patterns, thresholds, lockfile, breakpoints, meta
    assert {"PC001", "PC002", "PC101", "PC108", "PC201", "PC203", "PC304", "PC305", "PC502", "PC503",
            "PC506", "PC507", "PC901"} <= codes
    for r in LINT_RULES:
        t = r.examples.get("templates") or {}
        assert t.get("bad") and t.get("good"), f"{r.id}: needs bad and good template examples"
        assert all(c.get("expect") for c in t["bad"]), f"{r.id}: bad cases need expected positions"
        assert r.references and r.why and r.fix.get("description"), r.id
    # template-kind rules are lint-only: the traffic diagnosis has no log examples for them
    for r in load_rules():
        if r.kind == "template":
            assert not r.examples.get("logs"), r.id


@pytest.mark.parametrize("rule", LINT_RULES, ids=[r.id for r in LINT_RULES])
def test_template_examples(rule):
    assert check_template_examples(rule) == []


def test_rules_list_and_show():
    runner = CliRunner()
    res = runner.invoke(app, ["rules"])
    assert res.exit_code == 0
    for r in load_rules():
        assert r.code in res.output and r.id in res.output
    res = runner.invoke(app, ["rules", "show", "timestamp-in-prefix"])
    assert res.exit_code == 0
    out = res.output
    assert out.startswith("# PC101 timestamp-in-prefix")
    for section in ("## Why", "## Fix", "## Bad template example", "## References"):
        assert section in out
    assert "Prompt caches reuse only an exact token prefix" in out  # the rule's `why`, verbatim
    assert runner.invoke(app, ["rules", "show", "PC101"]).output == out  # codes resolve like ids
