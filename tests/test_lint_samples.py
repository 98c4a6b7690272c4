"""``promptcache lint`` on the sample template sets: every planted problem where it is, nothing
in the clean set, token counts as tiktoken counts them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from promptcache.lint import lint_paths
from promptcache.tokenize.tiktoken_backend import load_encoding

from conftest import ROOT, SAMPLES

BAD = SAMPLES / "templates" / "bad"
GOOD = SAMPLES / "templates" / "good"

# (file, line, col, code, text the location points at) — worked out by hand from the samples.
EXPECTED = [
    ("agent.py", 44, 73, "PC101", "datetime.now()"),        # f"...Current time: {datetime.now()...
    ("agent.py", 45, 23, "PC107", "json.dumps("),           # the workspace snapshot itself (environment)
    ("agent.py", 45, 23, "PC203", "json.dumps("),           # f"Workspace: {json.dumps(workspace)}
    ("agent.py", 51, 38, "PC201", "set(enabled_tools)"),    # for name in set(enabled_tools)
    ("agent.py", 55, 68, "PC502", '"cache_control"'),       # breakpoint on the block with the time
    ("anthropic_request.yaml", 7, 5, "PC506", "cache_control"),  # breakpoint after a 1-line block
    ("classify.j2", 1, 1, "PC901", "{# promptcache: ignore[PC101]"),  # stale suppression
    ("classify.j2", 2, 30, "PC304", "{{ product }}"),       # 8-token static prefix, then a variable
    ("code_review.txt", 1, 20, "PC107", "{cwd}"),
    ("code_review.txt", 3, 1, "PC107", "{git_status}"),
    ("faq_chat.yaml", 4, 14, "PC102", "{{ current_date }}"),
    ("onboarding.mustache", 2, 6, "PC106", "{{step_number}}"),
    ("support_system.j2", 3, 15, "PC101", "{{ now() }}"),
    ("support_system.j2", 4, 23, "PC108", "{{ user.name }}"),
    ("triage.prompty", 16, 9, "PC104", "{{ request_id }}"),
]


@pytest.fixture(scope="module")
def bad_run():
    return lint_paths([BAD])


def test_bad_set_findings_are_exactly_the_planted_ones(bad_run):
    got = [(f.span.path.rsplit("/", 1)[-1], f.span.line, f.span.col, f.code) for f in bad_run.active]
    assert got == [(f, ln, c, code) for f, ln, c, code, _ in EXPECTED]


@pytest.mark.parametrize("name,line,col,code,text", EXPECTED, ids=[f"{e[0]}:{e[1]}:{e[2]}" for e in EXPECTED])
def test_each_location_points_at_the_offending_text(name, line, col, code, text):
    src = (BAD / name).read_text(encoding="utf-8").split("\n")[line - 1]
    assert src[col - 1:].startswith(text)


def test_good_set_has_no_findings():
    run = lint_paths([GOOD])
    assert run.files == 8 and run.prompts == 8
    assert run.findings == []
    assert not run.failed()


def test_token_counts_are_tiktoken_counts(bad_run):
    enc = load_encoding("o200k_base")
    text = (BAD / "support_system.j2").read_text(encoding="utf-8")
    # Jinja drops the comment and one trailing newline; the static runs around the two slots:
    body = text.split("#}", 1)[1][:-1]
    before, rest = body.split("{{ now() }}")
    between, after = rest.split("{{ user.name }}")
    f = next(x for x in bad_run.findings if x.code == "PC101" and x.span.path.endswith("support_system.j2"))
    assert f.token_index == len(enc.encode_ordinary(before))
    assert f.tokens_at_risk == len(enc.encode_ordinary(between)) + len(enc.encode_ordinary(after))
    g = next(x for x in bad_run.findings if x.code == "PC108")
    assert g.token_index == len(enc.encode_ordinary(before)) + len(enc.encode_ordinary(between))
    assert g.tokens_at_risk == len(enc.encode_ordinary(after))


def test_static_prefix_below_minimum_counts(bad_run):
    enc = load_encoding("o200k_base")
    text = (BAD / "classify.j2").read_text(encoding="utf-8")
    body = text.split("#}", 1)[1][:-1]
    before, after = body.split("{{ product }}")
    f = next(x for x in bad_run.findings if x.code == "PC304")
    assert f.values["prefix_tokens"] == len(enc.encode_ordinary(before)) < 1024
    assert f.values["static_tokens"] == len(enc.encode_ordinary(before)) + len(enc.encode_ordinary(after)) >= 1024
    assert f.values["min_tokens"] == 1024


def test_anthropic_breakpoint_uses_the_approximate_tokenizer(bad_run):
    enc = load_encoding("cl100k_base")  # Anthropic publishes no tokenizer: cl100k_base approximates
    f = next(x for x in bad_run.findings if x.code == "PC506")
    assert f.values["prefix_tokens"] == len(enc.encode_ordinary("You are Aria, the support assistant of Northwind Bank."))
    assert f.values["model"] == "claude-sonnet-4-5"


def test_cli_exit_codes_on_the_samples():
    bad = subprocess.run([sys.executable, "-m", "promptcache", "lint", str(BAD), "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 1, bad.stderr
    d = json.loads(bad.stdout)
    assert d["schema"] == "promptcache.lint/v1" and d["summary"]["findings"] == len(EXPECTED)
    good = subprocess.run([sys.executable, "-m", "promptcache", "lint", str(GOOD)], capture_output=True, text=True,
                          cwd=ROOT)
    assert good.returncode == 0, good.stdout + good.stderr
    zero = subprocess.run([sys.executable, "-m", "promptcache", "lint", str(BAD), "--exit-zero"],
                          capture_output=True, text=True, cwd=ROOT)
    assert zero.returncode == 0
    # warnings only do not fail at the default threshold; they do with --fail-on warning
    warn = [sys.executable, "-m", "promptcache", "lint", str(BAD / "code_review.txt")]
    assert subprocess.run(warn, capture_output=True, cwd=ROOT).returncode == 0
    assert subprocess.run(warn + ["--fail-on", "warning"], capture_output=True, cwd=ROOT).returncode == 1
