"""Every rule's message, filled from the evidence the engine produces, in every report format:
no placeholder left unfilled, no Python repr of a quote, no quote of a whole multi-KB value."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from promptcache.diagnose.examples import expand
from promptcache.diagnose.rules import load_rules
from promptcache.pipeline import AuditOptions, audit
from promptcache.report.audit_records import audit_record
from promptcache.report.audit_text import render_audit, render_findings
from promptcache.report.markdown import render_markdown

_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")
_REPR = re.compile(r"Excerpt\(|Personal\(|\{'text':|\"text\": \"")


def _options(rule) -> dict:
    logs = rule.examples.get("logs") or {}
    opts = dict(logs.get("options") or {})
    tok = opts.get("tokenizer")
    if tok and not Path(tok).is_absolute() and (Path(rule.path).parent / tok).exists():
        opts["tokenizer"] = str(Path(rule.path).parent / tok)
    return opts


def _formats(res) -> dict[str, str]:
    """The audit as text, JSON and Markdown."""
    buf = io.StringIO()
    con = Console(file=buf, width=200, color_system=None)
    render_audit(res, con)
    render_findings(res, con)
    rec = audit_record(res, include_requests=False)
    return {"text": buf.getvalue(), "json": json.dumps(rec, default=str), "markdown": render_markdown(rec, findings=50)}


TRAFFIC = [r for r in load_rules() if r.kind != "template"]


@pytest.mark.parametrize("rule", TRAFFIC, ids=lambda r: r.id)
def test_every_message_is_filled_in_every_format(rule, tmp_path):
    """Each bad example of each traffic rule runs through an audit (each fires its rule, as
    test_rule_examples checks); every finding's message has its placeholders filled, and no
    format shows an Excerpt's repr."""
    for k, case in enumerate(rule.examples["logs"]["bad"]):
        p = tmp_path / f"{rule.id}-{k}.jsonl"
        p.write_text("".join(json.dumps(expand(r)) + "\n" for r in case), encoding="utf-8")
        res = audit([p], AuditOptions(**_options(rule)))
        for f in res.findings:
            assert not _PLACEHOLDER.search(f.message), (rule.id, k, f.rule.id, f.message)
        for name, out in _formats(res).items():
            assert not _REPR.search(out), (rule.id, k, name, _REPR.search(out).group(0))
            for f in res.findings:
                assert f.rule.code in out, (rule.id, name, f.rule.code)


def test_items_reordered_quotes_the_first_item_out_of_place_only(tmp_path):
    """A skills manifest of 4 long items (each ~2 KB) sent in two orders: the finding names the
    first item out of place, cut to 48 characters, on both sides, not the manifest.

    Order A: alpha, beta, gamma, delta; order B: alpha, gamma, beta, delta. alpha and delta are
    in place, so the reordered run is 2 items (beta, gamma) starting where beta started: the
    quote is `<skill name="beta">` + 29 characters of its body before, `<skill name="gamma">` +
    28 after (48 each, then ``…``)."""
    body = {n: f"<skill name=\"{n}\">" + " ".join(f"{n}-step-{i} does the {n} thing." for i in range(90))
            for n in ("alpha", "beta", "gamma", "delta")}
    head = "You are Helper. Tools and skills follow.\n<available_skills>\n"
    tail = "\n</available_skills>\n" + "Answer briefly and cite the skill you used. " * 30

    def rec(t, order, q):
        return {"timestamp": t, "model": "gpt-4o", "messages": [
            {"role": "system", "content": head + "\n".join(body[n] for n in order) + tail},
            {"role": "user", "content": q}]}
    a, b = ("alpha", "beta", "gamma", "delta"), ("alpha", "gamma", "beta", "delta")
    p = tmp_path / "skills.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in (rec(0, a, "Plan a trip."), rec(5, b, "Plan a trip."))))
    res = audit([p], AuditOptions())
    f = next(f for f in res.findings if f.rule.id == "items-reordered")
    assert f.evidence["before"] == body["beta"][:48] + "…"
    assert f.evidence["after"] == body["gamma"][:48] + "…"
    assert f.evidence["items"] == 2
    assert "(first `<skill name=\"beta\">beta-step-0 does the beta thi…`, now `<skill name=\"gamma\">" in f.message
    assert f.char_offset == len(head) + len(body["alpha"]) + 1  # where beta starts in the system prompt
    for out in _formats(res).values():
        assert "beta-step-50" not in out and "{before}" not in out
