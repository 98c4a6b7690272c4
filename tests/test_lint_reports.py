"""Lint reports: one record structure, four renderers; SARIF 2.1.0 validated against the OASIS
schema; fingerprints that survive line moves; suppressed findings kept as suppressed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import jsonschema
import pytest

from promptcache.lint import lint_paths
from promptcache.report.lint_records import auto_format, reporter

from conftest import ROOT, SAMPLES

SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
FILLER = " ".join(["Answer from the handbook and cite the section you rely on."] * 12)


def render(run, fmt: str) -> str:
    buf = io.StringIO()
    reporter(fmt)(run, buf)
    return buf.getvalue()


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".promptcache.toml").write_text("", encoding="utf-8")
    return tmp_path


def validate(doc: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)


def test_sarif_of_the_bad_samples_validates(monkeypatch):
    monkeypatch.chdir(ROOT)
    run = lint_paths([SAMPLES / "templates" / "bad"])
    doc = json.loads(render(run, "sarif"))
    validate(doc)
    (r,) = doc["runs"]
    rules = r["tool"]["driver"]["rules"]
    assert [x["id"] for x in rules] == [x.code for x in run.rules]
    for x in rules:
        assert x["help"]["text"] and x["helpUri"].endswith(f"rules/lint/{x['name']}.yaml")
    res = r["results"]
    assert len(res) == len(run.findings) == 15
    first = res[0]
    assert first["ruleId"] == "PC101" and rules[first["ruleIndex"]]["id"] == "PC101"
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "samples/templates/bad/agent.py", "uriBaseId": "%SRCROOT%"}
    assert (loc["region"]["startLine"], loc["region"]["startColumn"]) == (44, 73)
    # the mechanical fix travels as a SARIF fix
    pc203 = next(x for x in res if x["ruleId"] == "PC203")
    (rep,) = pc203["fixes"][0]["artifactChanges"][0]["replacements"]
    assert rep["insertedContent"]["text"] == ", sort_keys=True"


def test_fingerprints_survive_line_moves_and_suppressions_are_kept(workspace):
    p = workspace / "system.j2"
    p.write_text("You are Helper. Time: {{ now() }}. " + FILLER + "\n", encoding="utf-8")
    before = lint_paths([p])
    p.write_text("\n\n\nYou are Helper. Time: {{ now() }}. " + FILLER + "\n", encoding="utf-8")
    moved = lint_paths([p])
    (a,), (b,) = before.findings, moved.findings
    assert (a.span.line, b.span.line) == (1, 4)
    assert a.fingerprint == b.fingerprint
    p.write_text("{# promptcache: ignore[PC101] #}\nYou are Helper. Time: {{ now() }}. " + FILLER + "\n",
                 encoding="utf-8")
    run = lint_paths([p])
    (f,) = run.findings
    assert f.suppressed_by == "inline" and not run.failed()
    doc = json.loads(render(run, "sarif"))
    validate(doc)
    (res,) = doc["runs"][0]["results"]
    assert res["suppressions"] == [{"kind": "inSource", "justification": "suppressed by inline"}]
    assert res["partialFingerprints"]["promptcache/v1"] == a.fingerprint
    assert render(run, "github") == ""  # suppressed findings are not annotated


def test_json_record_shape(workspace):
    p = workspace / "system.j2"
    p.write_text("Hi {{ user.name }}. " + FILLER + "\n", encoding="utf-8")
    d = json.loads(render(lint_paths([p]), "json"))
    assert d["schema"] == "promptcache.lint/v1"
    (f,) = d["findings"]
    assert f["rule"] == "user-data-before-shared" and f["code"] == "PC108" and f["severity"] == "error"
    assert f["location"] == {"path": "system.j2", "line": 1, "col": 4, "end_line": 1, "end_col": 19}
    assert f["fix"]["safety"] == "unsafe" and f["fix"]["applicable"] is False
    assert f["suppressed_by"] is None and len(f["fingerprint"]) == 32
    assert d["summary"] == {"files": 1, "prompts": 1, "findings": 1, "suppressed": 0, "error": 1, "warning": 0,
                            "info": 0, "fixable": 0, "fixed": 0, "fail_on": "error", "failed": True}


def test_github_annotations(workspace):
    p = workspace / "a,b.j2"
    p.write_text("Time: {{ now() }}. 100% " + FILLER + "\n", encoding="utf-8")
    out = render(lint_paths([p]), "github").splitlines()
    assert out[0] == "::group::a,b.j2" and out[-1] == "::endgroup::"
    (line,) = out[1:-1]
    assert line.startswith("::error file=a%2Cb.j2,line=1,col=7,endLine=1,endColumn=18,"
                           "title=promptcache PC101 (timestamp-in-prefix)::")
    assert "%0AFix: " in line and "\n" not in line


def test_format_auto(monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert auto_format(False) == "github"
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert auto_format(False) == "text"


def test_cli_auto_is_github_under_actions_and_output_file(workspace):
    p = workspace / "system.j2"
    p.write_text("Time: {{ now() }}. " + FILLER + "\n", encoding="utf-8")
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", str(p)], capture_output=True, text=True,
                       env=env, cwd=workspace)
    assert r.returncode == 1 and r.stdout.startswith("::group::")
    env.pop("GITHUB_ACTIONS")
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", str(p), "--format", "sarif", "-o", "out.sarif"],
                       capture_output=True, text=True, env=env, cwd=workspace)
    assert r.returncode == 1
    assert "PC101" in r.stdout and "1 finding" in r.stdout  # the terminal still gets text
    validate(json.loads((workspace / "out.sarif").read_text(encoding="utf-8")))


def test_output_file_in_text_format_still_reports_on_the_terminal(workspace):
    """``-o FILE`` writes the chosen format to the file and the terminal gets the text report,
    text format included (it printed nothing there); an error is printed once (the text report
    and stderr both printed it)."""
    p = workspace / "system.j2"
    p.write_text("Time: {{ now() }}. " + FILLER + "\n", encoding="utf-8")
    (workspace / "bad.j2").write_bytes(b"caf\xe9 {{ x }}")
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", "system.j2", "bad.j2", "--format", "text", "-o",
                        "out.txt"], capture_output=True, text=True, cwd=workspace)
    assert r.returncode == 2
    assert "system.j2:1:7: PC101" in r.stdout and "1 finding" in r.stdout
    assert (workspace / "out.txt").read_text(encoding="utf-8") == r.stdout
    assert (r.stdout + r.stderr).count("not UTF-8 text") == 1
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", "system.j2", "bad.j2"], capture_output=True,
                       text=True, cwd=workspace)
    assert (r.stdout + r.stderr).count("not UTF-8 text") == 1
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", "system.j2", "bad.j2", "--format", "json"],
                       capture_output=True, text=True, cwd=workspace)
    assert r.stderr.count("not UTF-8 text") == 1 and json.loads(r.stdout)["errors"][0]["path"] == "bad.j2"


def test_exit_code_2_for_missing_paths_and_bad_config(workspace):
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", "nope.j2"], capture_output=True, text=True,
                       cwd=workspace)
    assert r.returncode == 2 and "nope.j2" in r.stderr
    (workspace / ".promptcache.toml").write_text('selct = ["PC101"]\n', encoding="utf-8")
    (workspace / "a.j2").write_text("Hi\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", "a.j2"], capture_output=True, text=True,
                       cwd=workspace)
    assert r.returncode == 2
    assert "unknown key 'selct'" in r.stderr and ".promptcache.toml" in r.stderr
    assert r.stdout == ""


def test_sarif_uris_are_percent_encoded():
    from promptcache.report.lint_sarif import _uri

    assert _uri("prompts/café ünï.j2") == "prompts/caf%C3%A9%20%C3%BCn%C3%AF.j2"
    assert _uri("a/b.yaml") == "a/b.yaml"


def test_sarif_and_github_on_every_source_kind(monkeypatch):
    """The corpus (TypeScript, Go, n8n, Dify, Flowise, LangChain Python, Semantic Kernel, Markdown,
    Jinja, Handlebars, text) as SARIF validates against the schema, with each result's region
    at its finding's line and column; the JSON and GitHub formats carry the same locations."""
    corpus = ROOT / "tests" / "data" / "lint_corpus"
    entries = json.loads((corpus / "corpus.json").read_text(encoding="utf-8"))
    monkeypatch.chdir(corpus)
    from promptcache.lint import LintOptions

    run = lint_paths([e["file"] for e in entries], LintOptions(config=corpus / "corpus.toml"))
    doc = json.loads(render(run, "sarif"))
    validate(doc)
    results = doc["runs"][0]["results"]
    assert len(results) == len(run.findings) >= 50
    kinds = {e["file"]: e["kind"] for e in entries}
    seen = set()
    for f, res in zip(run.findings, results):
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].endswith(f.span.path.replace(" ", "%20"))
        assert (loc["region"]["startLine"], loc["region"]["startColumn"]) == (f.span.line, f.span.col)
        seen.add(kinds[f.span.path])
    assert {"typescript", "go", "n8n", "dify", "flowise", "langchain-python", "semantic-kernel", "markdown"} <= seen
    js = json.loads(render(run, "json"))
    assert [(x["location"]["line"], x["location"]["col"]) for x in js["findings"]] == \
        [(f.span.line, f.span.col) for f in run.findings]
    gh = render(run, "github")
    for f in run.findings:
        assert f"file={f.span.path},line={f.span.line}" in gh
