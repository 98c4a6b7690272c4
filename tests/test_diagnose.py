"""Diagnosis: every rule's examples, the samples' planted causes, localisation and money."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from promptcache.pipeline import AuditOptions, audit
from promptcache.diagnose.examples import expand
from promptcache.examples import check_examples
from promptcache.diagnose.rules import KINDS, load_rules
from promptcache.tokenize.tiktoken_backend import load_encoding

from conftest import SAMPLES

RULES = load_rules()


TRAFFIC_KINDS = {"value-pattern", "structural-diff", "parameter-diff", "length-threshold", "timing", "key-usage", "breakpoint"}


def test_rule_files_are_complete():
    assert len(RULES) >= 20
    assert {r.kind for r in RULES} >= TRAFFIC_KINDS and {r.kind for r in RULES} <= set(KINDS)
    for r in RULES:
        logs = r.examples.get("logs") or {}
        templates = r.examples.get("templates") or {}
        assert (logs.get("bad") and logs.get("good")) or (templates.get("bad") and templates.get("good")), \
            f"{r.id}: needs bad and good examples"
        if r.kind in TRAFFIC_KINDS and r.id not in ("breakpoint-below-minimum",):
            assert logs.get("bad") and logs.get("good"), f"{r.id}: a traffic rule needs log examples"
        assert r.references, r.id


DIAGNOSIS_RULES = [r for r in RULES if r.kind != "template"]


@pytest.mark.parametrize("rule", DIAGNOSIS_RULES, ids=[r.id for r in DIAGNOSIS_RULES])
def test_rule_examples(rule):
    assert check_examples(rule) == []


def test_the_example_runner_fails_on_a_rule_with_nothing_to_run():
    """A rule without log examples (or a template rule) is a problem, not a pass."""
    from dataclasses import replace

    rule = next(r for r in RULES if r.id == "timestamp-in-prefix")
    assert any("examples.logs.bad is empty" in p for p in check_examples(replace(rule, examples={})))
    no_good = replace(rule, examples={"logs": {"bad": rule.examples["logs"]["bad"]}})
    assert check_examples(no_good) == [f"{rule.path}: examples.logs.good is empty: nothing checks this rule on traffic"]
    template = next(r for r in RULES if r.kind == "template")
    assert check_examples(template) != []


@pytest.mark.parametrize("sample,rule,segment,offset", [
    ("agent_timestamp", "timestamp-in-prefix", "messages[0].content",
     len("You are CodePilot, an autonomous coding agent. Current time: ")),
    ("support_bot", "user-data-before-shared", "messages[0].content",
     len("You are Aria, the support assistant of Northwind Bank. You are speaking with ")),
    ("rag_app", "documents-reordered", "input[0].content[0]", len("Context documents:\n\n")),
    ("anthropic_app", "ttl-expired", None, None),
])
def test_planted_cause_is_the_top_finding(sample, rule, segment, offset):
    res = audit([SAMPLES / f"{sample}.jsonl"], AuditOptions())
    top = res.findings[0]
    assert (top.rule.id, top.segment, top.char_offset) == (rule, segment, offset)
    assert top.tokens_lost > 0 and top.cost_usd_lost > 0


def test_well_structured_sample_has_no_findings():
    assert audit([SAMPLES / "well_structured.jsonl"], AuditOptions()).findings == []


def test_timestamp_only_difference_is_named_and_priced(tmp_log):
    enc = load_encoding("o200k_base")
    rest = " You are Helper. " + "Answer from the handbook and cite its sections. " * 30
    sys_a = "Current time: 2026-11-02T09:12:07Z." + rest
    sys_b = "Current time: 2026-11-02T09:12:41Z." + rest
    body = lambda s: {"model": "gpt-4o", "messages": [{"role": "system", "content": s}, {"role": "user", "content": "Hi"}]}
    res = audit([tmp_log([{"timestamp": 0, **body(sys_a)}, {"timestamp": 20, **body(sys_b)}])],
                AuditOptions(cache_model="sglang", tokenizer="o200k_base"))
    a, b = enc.encode_ordinary(sys_a), enc.encode_ordinary(sys_b)
    common = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    head = 1 + len(enc.encode_ordinary("system")) + 1                # <|start|>system<|message|>
    d = head + common                                                  # tokens shared by the two prompts
    n = res.outcomes[1].prompt_tokens
    assert res.outcomes[1].cached_tokens == d                          # SGLang: token-level, nothing lost
    (f,) = res.findings
    assert f.rule.id == "timestamp-in-prefix" and f.segment == "messages[0].content"
    assert f.char_offset == len("Current time: ") and f.evidence["value"] == "2026-11-02T09:12:41Z"
    assert f.token_index == d
    # without the timestamp the second prompt would share all of the first (the ideal cache's
    # content gap; SGLang would serve all but its last token)
    assert f.tokens_lost == n - d


def test_evidence_is_redacted_unless_asked(tmp_log):
    # long enough (about 1,200 tokens) that, with the e-mail moved, gpt-4o's 1,024-token
    # minimum is met: the cause then costs money and ranks first
    shared = "Refunds go to the original payment method within five business days. " * 90
    recs = [{"timestamp": t, "model": "gpt-4o", "messages": [
        {"role": "system", "content": f"Customer e-mail: {mail}. " + shared}, {"role": "user", "content": "Refund?"}]}
        for t, mail in ((0, "ana.silva@example.com"), (5, "ben.okafor@example.com"))]
    path = tmp_log(recs)
    f = audit([path], AuditOptions()).findings[0]
    assert f.rule.id == "user-data-before-shared"
    assert "example.com" not in json.dumps(f.evidence) and "<email #" in f.evidence["after"]
    f = audit([path], AuditOptions(show_text=True)).findings[0]
    assert "ben.okafor@example.com" in f.evidence["after"]


@pytest.mark.parametrize("secret", ["Authorization: Bearer abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP{:02d}",
                                    "password=Hunter2SuperSecretValue{:02d}"])
def test_a_value_marked_secret_by_its_neighbours_is_masked(tmp_log, secret):
    """The random id is only the token after ``Bearer`` (or ``password=``): quoted alone, no
    redaction rule would see it as a secret, so the value and the message mask it whole."""
    rest = "\nRules: " + "Read files before editing them. " * 60
    recs = [{"timestamp": t, "model": "gpt-4.1", "user": "u1", "messages": [
        {"role": "system", "content": secret.format(t) + rest}, {"role": "user", "content": "q"}]} for t in range(9, 13)]
    path = tmp_log(recs)
    (f,) = [f for f in audit([path], AuditOptions()).findings if f.segment == "messages[0].content"]
    text = json.dumps(f.evidence) + f.message
    assert f.evidence["value"] == "<secret>" and "<secret>" in f.evidence["after"]
    assert "SuperSecret" not in text and "abcdefghijklmnop" not in text
    (f,) = [f for f in audit([path], AuditOptions(show_text=True)).findings if f.segment == "messages[0].content"]
    assert f.evidence["value"] != "<secret>" and any(f.evidence["value"] in secret.format(t) for t in range(9, 13))


def test_json_findings_shape_and_fail_on():
    p = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(SAMPLES / "agent_timestamp.jsonl"),
                        "--format", "json", "--fail-on", "error"], capture_output=True, text=True)
    assert p.returncode == 1
    f = json.loads(p.stdout)["findings"][0]
    assert set(f) >= {"rule", "code", "severity", "message", "location", "evidence", "requests", "tokens_lost",
                      "cost_usd_lost", "fix"}
    assert set(f["location"]) >= {"line", "segment", "char_offset", "token_index"}
    assert f["rule"] == "timestamp-in-prefix" and f["cause"] == "content"
    p = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(SAMPLES / "well_structured.jsonl"),
                        "--fail-on", "info"], capture_output=True, text=True)
    assert p.returncode == 0


def test_non_content_causes_are_named_as_such():
    res = audit([SAMPLES / "anthropic_app.jsonl"], AuditOptions())
    rec = res.findings[0].to_record()
    assert rec["cause"] == "timing" and "not visible in the prompt text" in rec["message"]


def test_filler_expands_to_n_words_deterministically():
    got = expand({"a": ["<<filler 7>> x"]})["a"][0]
    assert len(got.split()) == 8 and got.endswith(" x") and got == expand("<<filler 7>> x")
