"""Hostile input for ``promptcache lint`` (issue 18, item 7, and the lint half of the hostile-input
harness), and the rule-example runner that must not pass on rules without examples.

The hand cases, each of which crashed or hung before: JSON and YAML nested 10,000 deep and a
Python string built from 100,000 concatenations (a RecursionError, exit 3) are a
``template-syntax`` finding; a FIFO in a linted directory (``read()`` blocked forever) is
skipped, and a FIFO named on the command line is an input error (exit 2).

The property tests generate hostile files in every source kind lint reads (deep nesting,
invalid and unusual Unicode, control characters, huge lines) and check, for the text, JSON,
SARIF and GitHub formats: the exit code is 0, 1 or 2, never 3; the file's bytes are unchanged;
nothing printed holds a control character that could start a terminal sequence.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from promptcache.cli import app
from promptcache.errors import PromptcacheError

#: What a terminal could read as the start of a control sequence: C0 controls but tab and
#: newline, DEL, and C1 controls (ESC is 0x1b; 0x9b is the 8-bit CSI).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def lint(path: Path, *args: str) -> tuple[int, str, str]:
    """``promptcache lint PATH ARGS`` in-process: (exit code as the CLI's main gives it, stdout,
    stderr).

    An exception the CLI turns into a one-line error (:class:`PromptcacheError`) is its exit
    code; any other exception is an internal error, exit 3."""
    res = CliRunner().invoke(app, ["lint", str(path), "--no-lockfile", *args], catch_exceptions=True,
                             standalone_mode=False)  # as the CLI's main runs it: the command's return is the exit code
    out = res.stdout
    err = res.stderr if res.stderr_bytes is not None else ""
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        if isinstance(res.exception, PromptcacheError):
            return int(res.exception.exit_code), out, err + str(res.exception)
        return 3, out, err + repr(res.exception)
    return int(res.return_value if res.return_value is not None else res.exit_code), out, err


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".promptcache.toml").write_text("", encoding="utf-8")
    return tmp_path


# ----------------------------------------------------------------------------- issue 18, item 7

RULES = "Keep every answer short and cite the handbook section you rely on. "
DEEP = 10_000


@pytest.mark.parametrize("name,content,where", [
    ("deep.json", '{"x": ' + "[" * DEEP + "]" * DEEP + ', "messages": [{"role": "system", "content": "Today {{ now }}. '
     + RULES * 4 + '"}]}', "{{ now"),
    ("deep.yaml", "x: " + "[" * 1_500 + "]" * 1_500 + "\nmessages:\n- role: system\n  content: \"Today {{ now }}. "
     + RULES * 4 + '"\n', "{{ now"),
    ("concat.py", "from datetime import datetime\nSYSTEM_PROMPT = f\"{datetime.now()}\" + "
     + " + ".join([f'"{RULES}"'] * 20_000) + "\n", "datetime.now()"),
    ("deep.j2", "Today {{ now }}. " + RULES * 4 + "{{ " + "(" * DEEP + "x" + ")" * DEEP + " }}", "{{ now"),
    ("deep_block.yaml", "messages:\n- role: system\n  content: \"Today {{ now }}. " + RULES * 4 + '"\nx:\n'
     + "".join("  " * k + "- \n" for k in range(1, 2_000)), "{{ now"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_deep_nesting_is_read_like_any_other_file(workspace, name, content, where):
    """JSON nested 10,000 deep, YAML past libyaml's 1,000 levels, a string of 20,000 concatenations and a Jinja
    expression in 10,000 parentheses are read, and the value in them found where it is (each was
    a RecursionError, then a `template-syntax` finding saying nothing was checked, before)."""
    p = workspace / name
    p.write_text(content, encoding="utf-8")
    code, out, err = lint(p, "--format", "json")
    assert code == 1, err[-2000:]
    doc = json.loads(out)
    assert doc["errors"] == []
    got = [(f["code"], f["location"]["line"], f["location"]["col"]) for f in doc["findings"]]
    at = content.index(where)  # where the value is written
    line, col = content.count("\n", 0, at) + 1, at - (content.rfind("\n", 0, at) + 1) + 1
    assert ("PC101", line, col) in got, got
    assert not any(c == "PC001" for c, *_ in got), got


@pytest.mark.slow
def test_a_string_of_100000_concatenations_is_read_and_counted(workspace):
    """The docs' promise: 100,000 concatenations (a RecursionError before); the value keeps
    its place and the static tokens after it are counted through the whole chain."""
    from promptcache.tokenize import resolve_tokenizer

    p = workspace / "concat.py"
    p.write_text("from datetime import datetime\nSYSTEM_PROMPT = f\"{datetime.now()}\" + "
                 + " + ".join([f'"{RULES}"'] * 100_000) + "\n", encoding="utf-8")
    code, out, err = lint(p, "--format", "json")
    assert code == 1, err[-2000:]
    (f,) = json.loads(out)["findings"]
    tok = resolve_tokenizer("o200k_base", default=None, model=None)
    assert (f["code"], f["location"]["line"], f["location"]["col"]) == ("PC101", 2, 20)
    assert f["tokens_at_risk"] == len(tok.encode_batch([RULES * 100_000])[0])


@pytest.mark.parametrize("name,content", [
    ("deep.mustache", "{{#a}}" * 10_000 + "x" + "{{/a}}" * 10_000),
    ("deep.ts", "const SYSTEM_PROMPT = " + "(" * 10_000 + '"x"' + ")" * 10_000 + ";"),
    ("deep.go", "package p\nconst systemPrompt = " + " + ".join(['"a"'] * 20_000) + "\n"),
], ids=lambda v: v if len(v) < 20 else None)
def test_deep_nesting_is_not_a_crash(workspace, name, content):
    p = workspace / name
    p.write_text(content, encoding="utf-8")
    code, out, err = lint(p, "--format", "json")
    assert code in (0, 1), err[-2000:]
    doc = json.loads(out)
    assert doc["errors"] == []
    assert {f["code"] for f in doc["findings"]} <= {"PC111", "PC304"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_in_a_directory_is_skipped_and_a_named_fifo_is_an_input_error(workspace):
    d = workspace / "prompts"
    d.mkdir()
    (d / "ok.j2").write_text("Hello {{ name }}.\n", encoding="utf-8")
    os.mkfifo(d / "pipe.j2")
    # in a subprocess, with a timeout: before, reading the FIFO blocked forever
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", str(d), "--format", "json"], cwd=workspace,
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"]["files"] == 1 and doc["errors"] == []
    r = subprocess.run([sys.executable, "-m", "promptcache", "lint", str(d / "pipe.j2")], cwd=workspace,
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and "not a regular file" in r.stderr


def test_a_template_never_writes_a_terminal_sequence(workspace):
    p = workspace / "system.j2"
    p.write_text("Hi \x1b]0;owned\x07\x1b[2J {{ now() \x9b }}.\n" + "Answer from the handbook. " * 40,
                 encoding="utf-8")
    for fmt in ("text", "json", "sarif", "github"):
        code, out, err = lint(p, "--format", fmt)
        assert code in (0, 1, 2), err
        assert not CONTROL.search(out + err), (fmt, out[:500])
        if fmt in ("json", "sarif"):
            json.loads(out)


# ----------------------------------------------------------------------------- the example runner

def test_example_runner_fails_a_rule_without_template_examples():
    from dataclasses import replace

    from promptcache.diagnose.rules import resolve
    from promptcache.lint.examples import check_template_examples

    rule = resolve("timestamp-in-prefix")
    problems = check_template_examples(replace(rule, examples={"logs": rule.examples.get("logs")}))
    assert any("no examples.templates.bad" in p for p in problems)
    assert any("no examples.templates.good" in p for p in problems)
    bad = dict(rule.examples["templates"])
    bad["bad"] = [{k: v for k, v in c.items() if k != "expect"} for c in bad["bad"]]
    problems = check_template_examples(replace(rule, examples={"templates": bad}))
    assert any("has no `expect`" in p for p in problems)


# ----------------------------------------------------------------------------- the property harness

#: A well-formed template per source kind, with ``@@`` where hostile text goes.
BASES = {
    "t.j2": "You are Helper @@ {{ now() }}.\n{% if x %}@@{% else %}b{% endif %}\n" + "Rule one. " * 30,
    "t.mustache": "Hi {{name}} @@\n{{#if a}}@@{{else}}b{{/if}}\n" + "Rule one. " * 30,
    "t.hbs": "{{#each docs}}@@{{this}}{{/each}}\n" + "Rule one. " * 30,
    "t.prompty": "---\nname: t\nmodel:\n  configuration:\n    name: gpt-4o\n---\nsystem:\n@@ {{ request_id }}\n"
                 + "Rule one. " * 30 + "\n\nuser:\n{{ q }}\n",
    "prompts/t.txt": "Date {current_date} @@ {session_id}\n" + "Rule one. " * 30,
    "prompts/t.md": "---\nmodel: gpt-4o\n---\n@@ {{ x }} $ARGUMENTS !`git status`\n" + "Rule one. " * 30,
    "t.yaml": "messages:\n  - role: system\n    content: \"@@ {{ now() }} " + "Rule one. " * 30 + "\"\n"
              "  - role: user\n    content: \"{{ q }}\"\n",
    "t.json": '{"model": "gpt-4o", "messages": [{"role": "system", "content": "@@ {{ now() }} ' + "Rule one. " * 30
              + '"}, {"role": "user", "content": "{{ q }}"}]}',
    "n8n.json": '{"nodes": [{"name": "A", "type": "@n8n/n8n-nodes-langchain.agent", "parameters": {"text": "={{ $json.q }}",'
                ' "options": {"systemMessage": "=@@ {{ $now }} ' + "Rule one. " * 30 + '"}}}], "connections": {}}',
    "dify.yml": "app:\n  mode: workflow\nworkflow:\n  graph:\n    nodes:\n    - data:\n        type: llm\n"
                "        prompt_template:\n        - role: system\n          text: '@@ {{#sys.query#}} " + "Rule one. " * 30 + "'\n",
    "flowise.json": '{"nodes": [{"data": {"label": "A", "inputs": {"systemMessage": "@@ {{$flow.sessionId}} '
                    + "Rule one. " * 30 + '"}}}], "edges": []}',
    "sk.yaml": "name: x\ntemplate: |\n  <message role=\"system\">@@ {{$today}} " + "Rule one. " * 30
               + "</message>\ntemplate_format: semantic-kernel\n",
    "skprompt.txt": "TODAY {{time.Date}} @@\n" + "Rule one. " * 30 + "\n{{$input}}\n",
    "t.py": "from datetime import datetime\nSYSTEM_PROMPT = f\"@@ {datetime.now()} " + "Rule one. " * 30 + "\"\n",
    "lc.py": "from langchain_core.prompts import ChatPromptTemplate\np = ChatPromptTemplate.from_messages("
             "[(\"system\", \"@@ {date} " + "Rule one. " * 30 + "\"), (\"human\", \"{q}\")])\n",
    "t.ts": "const SYSTEM_PROMPT = `@@ ${new Date().toISOString()} " + "Rule one. " * 30 + "`;\n",
    "t.js": "export const system = '@@ ' + sessionId + '" + "Rule one. " * 30 + "';\n",
    "t.go": "package p\nimport \"fmt\"\nfunc systemPrompt(id string) string {\n\treturn fmt.Sprintf(`@@ %s "
            + "Rule one. " * 30 + "`, id)\n}\n",
    "t.tmpl": "{{ if .A }}@@{{ else }}b{{ end }} {{ .CurrentDate }}\n" + "Rule one. " * 30,
    "t.liquid": "{% if a %}@@{% endif %} {{ 'now' | date: '%Y' }}\n" + "Rule one. " * 30,
}

_hostile_piece = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x9f), max_size=30),  # C0, C1 controls
    st.sampled_from(["\x1b[2J", "\x1b]0;title\x07", "\x9b31m", "\x00", "\r", "\u202e", "\u200d", "\ufeff", "\uffff",
                     "\U0010ffff", "e\u0301" * 50, "{{", "}}", "{%", "%}", "{#", "${", "`", "\"", "'", "\\", "]]",
                     "{{#a}}", "{{/a}}", "{{ end }}", "{% endif %}", "*/", "/*", "---\n", "- - -", ": :",
                     "\\ud800", "\\uDC00", "\\ud83d", "\\udc00\\ud800"]),  # lone surrogate escapes (exit 3 before)
    st.builds(lambda c, n: c * n, st.sampled_from(["[", "{", "(", "{{#a}}", "{% if x %}", "{{ if .A }}", "- ",
                                                   "{\"a\":", "\"a\" + "]),
              st.integers(min_value=50, max_value=3000)),
    st.builds(lambda n: "x" * n, st.integers(min_value=10_000, max_value=300_000)),  # a huge line
    st.text(max_size=40),  # any Unicode, lone surrogates included
)
_hostile = st.lists(_hostile_piece, min_size=1, max_size=4).map("".join)


def _content(base: str, fill: str, raw: bool) -> bytes:
    text = base.replace("@@", fill)
    if raw:  # bytes that are not UTF-8 at all
        return text.encode("utf-8", "surrogatepass")[:50] + b"\xff\xfe\xc3(" + text.encode("utf-8", "surrogatepass")[50:]
    return text.encode("utf-8", "surrogatepass")


def _check(root: Path, name: str, fill: str, raw: bool, fmt: str) -> None:
    p = root / name
    p.parent.mkdir(parents=True, exist_ok=True)
    data = _content(BASES[name], fill, raw)
    p.write_bytes(data)
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    code, out, err = lint(p, "--format", fmt)
    assert code in (0, 1, 2), (name, fmt, err[-3000:])
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before, (name, "the input file changed")
    assert not CONTROL.search(out + err), (name, fmt, CONTROL.search(out + err), (out + err)[:1000])
    if fmt in ("json", "sarif"):
        json.loads(out)  # valid JSON on stdout even when a file could not be read (exit 2)


@pytest.mark.parametrize("name", sorted(BASES))
def test_hostile_smoke_every_kind(workspace, name):
    """One fixed hostile filling per source kind, every format (fast; the property test below
    explores)."""
    fill = "\x1b[2J\x9b\\udc00" + "[" * 3000 + "{{#a}}" * 500 + "\u202e" + "y" * 100_000
    for fmt in ("text", "json", "sarif", "github"):
        _check(workspace, name, fill, False, fmt)
    _check(workspace, name, "ok", True, "text")


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow, HealthCheck.data_too_large])
@given(name=st.sampled_from(sorted(BASES)), fill=_hostile, raw=st.booleans(),
       fmt=st.sampled_from(["text", "json", "sarif", "github"]))
def test_hostile_files_never_crash_change_or_escape(workspace, name, fill, raw, fmt):
    _check(workspace, name, fill, raw, fmt)


def test_a_missing_grammar_is_an_input_error_not_a_crash(workspace, monkeypatch):
    """Where tree-sitter's wheels could not be installed, a TypeScript or Go file is an input
    error naming what to install (exit 2), and the other files are still linted."""
    from promptcache.lint.sources import treesitter

    def missing(grammar):
        raise ImportError(f"No module named 'tree_sitter_{grammar}'")
    monkeypatch.setattr(treesitter, "parser", missing)
    (workspace / "agent.ts").write_text("const SYSTEM_PROMPT = `Hi ${now}`;\n", encoding="utf-8")
    (workspace / "t.j2").write_text("Hi {{ name }}\n", encoding="utf-8")
    code, out, err = lint(workspace, "--format", "json")
    assert code == 2
    doc = json.loads(out)
    assert doc["summary"]["files"] == 2
    (e,) = doc["errors"]
    assert e["path"] == "agent.ts" and "tree-sitter" in e["message"]


# ----------------------------------------------------------------------------- the second trial

@pytest.mark.parametrize("name,content", [
    ("lone.py", 'SYSTEM_PROMPT = "\\ud800 Today {session_id}. ' + RULES * 4 + '"\n'),
    ("lone.ts", "const systemPrompt = `\\uD800 Today ${new Date()}. " + RULES * 4 + "`;\n"),
    ("lone.json", '{"model": "gpt-4o", "messages": [{"role": "system", "content": "\\udc00 Today {{ now }}. '
     + RULES * 4 + '"}]}'),
    ("lone_n8n.json", '{"nodes": [{"name": "A", "type": "@n8n/n8n-nodes-langchain.agent", "parameters": {"options": '
     '{"systemMessage": "=\\ud83d Today is {{ $now }}. ' + RULES * 4 + '"}}}], "connections": {}}'),
])
@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_lone_surrogate_escape_is_one_replacement_character_not_a_crash(workspace, name, content, fmt):
    """A ``"\\udc00"`` escape in a TypeScript, Python or JSON string decodes to a lone
    surrogate, which no UTF-8 holds: the tokenizer refused it and the whole run exited 3. It is
    tokenized as U+FFFD (as the audit's reader makes it): one token before the value."""
    from promptcache.tokenize import resolve_tokenizer

    p = workspace / name
    p.write_text(content, encoding="utf-8")
    code, out, err = lint(p, "--format", fmt)
    assert code == 1, err[-2000:]
    if fmt == "json":
        (f,) = json.loads(out)["findings"]
        tok = resolve_tokenizer("o200k_base", default=None, model=None)
        lead = "\ufffd Today is " if name == "lone_n8n.json" else "\ufffd Today "
        assert f["token_index"] == len(tok.encode_batch([lead])[0])


def test_one_file_that_raises_never_loses_the_others(workspace, monkeypatch):
    """An internal error while linting one file is reported for that file (exit 3, the
    internal-error code), and every other file's findings are still reported."""
    from promptcache.lint import sources

    (workspace / "a.j2").write_text("Today {{ now }}. " + RULES * 4, encoding="utf-8")
    (workspace / "b.liquid").write_text("x", encoding="utf-8")
    (workspace / "c.j2").write_text("Session {{ session_id }}. " + RULES * 4, encoding="utf-8")
    real = dict(sources.PARSERS)

    def boom(path, text):
        raise TypeError("a bug")
    monkeypatch.setitem(sources.PARSERS, ".liquid", (real[".liquid"][0], boom))
    code, out, err = lint(workspace, "--format", "json")
    assert code == 3, err
    doc = json.loads(out)
    assert sorted(f["code"] for f in doc["findings"]) == ["PC101", "PC109"]
    assert doc["summary"]["files"] == 3
    (e,) = doc["internal_errors"]
    assert e["path"] == "b.liquid" and "TypeError: a bug" in e["message"]


def test_lone_carriage_returns_end_lines(workspace):
    """Old Mac line endings (a lone CR) end lines, as Python, Jinja, YAML and editors count
    them: each finding is on the line the value is on (line 1 before, for every value)."""
    (workspace / "a.j2").write_bytes(("Hello.\rSecond line.\r\rToday {{ now }}.\r" + RULES * 3 + "\r").encode())
    (workspace / "a.py").write_bytes(('from datetime import datetime\r\rSYSTEM_PROMPT = (\r    "You are kind. "\r'
                                      '    f"Time: {datetime.now()}. "\r    "' + RULES * 3 + '"\r)\r').encode())
    (workspace / "a.ts").write_bytes(("// x\rconst systemPrompt = `Hello.\rToday ${new Date()}.\r" + RULES * 3
                                      + "`;\r").encode())
    (workspace / "b.yaml").write_bytes(('model: gpt-4o\rmessages:\r- role: system\r  content: "Hi.\r\r    Today '
                                        '{{ now }}. ' + RULES * 3 + '"\r').encode())
    (workspace / "c.j2").write_bytes(("A.\r\nB.\r\nToday {{ now }}.\r\n" + RULES * 3).encode())
    code, out, err = lint(workspace, "--format", "json")
    got = sorted((f["location"]["path"], f["location"]["line"], f["location"]["col"]) for f in json.loads(out)["findings"])
    assert got == [("a.j2", 4, 7), ("a.py", 5, 14), ("a.ts", 3, 9), ("b.yaml", 6, 11), ("c.j2", 3, 7)]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_linked_directory_is_followed_and_reported_where_the_user_sees_it(workspace):
    """A directory reached through a symbolic link (a shared ``.claude/commands``) is walked,
    its findings reported at the path through the link; a link back up the tree is not
    followed round (a note says so)."""
    shared = workspace / "shared" / "commands"
    shared.mkdir(parents=True)
    (shared / "x.j2").write_text("Session {{ session_id }}. " + RULES * 4, encoding="utf-8")
    proj = workspace / "proj" / ".claude"
    proj.mkdir(parents=True)
    os.symlink("../../shared/commands", proj / "commands")
    os.symlink("../..", proj / "up")
    code, out, err = lint(workspace / "proj", "--format", "json")
    doc = json.loads(out)
    assert [(f["location"]["path"], f["code"]) for f in doc["findings"]] == [("proj/.claude/commands/x.j2", "PC109")]
    assert doc["summary"]["files"] == 1  # `up` leads back to proj: not walked again
    assert any(n["path"] == "proj/.claude/up" for n in doc["notes"])


@pytest.mark.parametrize("depth", [150, 192, 199])
def test_python_parser_memory_error_is_a_syntax_finding(workspace, depth):
    """CPython's parser raises MemoryError, not SyntaxError, on 192 brackets after a quote in an
    f-string (found by the property test below): a ``template-syntax`` finding, exit 1, not an
    internal error."""
    p = workspace / "deep.py"
    p.write_text('SYSTEM_PROMPT = f"' + '"' + "[" * depth + ' Rule one."\n', encoding="utf-8")
    code, out, err = lint(p, "--format", "json")
    assert code in (1, 2), err
    findings = json.loads(out)["findings"]
    assert [f["rule"] for f in findings] == ["template-syntax"], findings
