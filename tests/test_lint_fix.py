"""``--fix``: safe mechanical fixes applied atomically, unsafe ones only when asked, and nothing
touched without the flag."""

from __future__ import annotations

import shutil

import pytest

from promptcache.lint import LintOptions, lint_paths

from conftest import SAMPLES

FILLER = " ".join(["Answer from the handbook and cite the section you rely on."] * 12)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".promptcache.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_fix_agent_sample(repo):
    p = repo / "agent.py"
    shutil.copy(SAMPLES / "templates" / "bad" / "agent.py", p)
    original = p.read_text(encoding="utf-8")
    run = lint_paths([p])
    assert sorted(f.code for f in run.active) == ["PC101", "PC107", "PC201", "PC203", "PC502"]
    assert p.read_text(encoding="utf-8") == original  # linting alone writes nothing
    run = lint_paths([p], LintOptions(fix=True))
    assert run.fixed == 2
    fixed = p.read_text(encoding="utf-8")
    assert "json.dumps(workspace, sort_keys=True)" in fixed
    assert "for name in sorted(set(enabled_tools))" in fixed
    # not mechanical: left to a person (the time, the workspace snapshot, the breakpoint on them)
    assert sorted(f.code for f in run.active) == ["PC101", "PC107", "PC502"]
    assert fixed.replace(", sort_keys=True", "").replace("sorted(set(enabled_tools))", "set(enabled_tools)") == original
    compile(fixed, "agent.py", "exec")


def test_fix_replaces_false_sort_keys_and_removes_unused_directive(repo):
    p = repo / "app.py"
    p.write_text("import json\n\n"
                 "def ask(client, ctx, q):  # promptcache: ignore[PC101]\n"
                 "    # promptcache: ignore[PC105]\n"
                 "    system = 'Context: ' + json.dumps(ctx, sort_keys=False)\n"
                 "    return client.chat.completions.create(model='gpt-4o', messages=[\n"
                 "        {'role': 'system', 'content': system}, {'role': 'user', 'content': q}])\n", encoding="utf-8")
    run = lint_paths([p])
    assert [(f.code, f.span.line) for f in run.active] == [("PC901", 3), ("PC901", 4), ("PC203", 5)]
    run = lint_paths([p], LintOptions(fix=True))
    assert run.active == [] and run.fixed == 3
    assert p.read_text(encoding="utf-8") == (
        "import json\n\n"
        "def ask(client, ctx, q):\n"
        "    system = 'Context: ' + json.dumps(ctx, sort_keys=True)\n"
        "    return client.chat.completions.create(model='gpt-4o', messages=[\n"
        "        {'role': 'system', 'content': system}, {'role': 'user', 'content': q}])\n")


def test_unsafe_fixes_need_the_flag():
    from promptcache.lint.fixes import plan
    from promptcache.lint.model import Edit, LintFinding, Span

    def f(safety, suppressed=None):
        s = Span("a.py", 1, 1, 1, 1)
        return LintFinding("r", "PC999", "error", "m", s, None, None, "x", "d", safety, (Edit(s, safety),),
                           suppressed_by=suppressed)
    found = [f("safe"), f("unsafe"), f("safe", suppressed="inline")]
    assert [e.text for e in plan(found)["a.py"]] == ["safe"]
    assert [e.text for e in plan(found, unsafe=True)["a.py"]] == ["safe", "unsafe"]


def test_crlf_files_keep_their_line_endings(repo):
    p = repo / "app.py"
    p.write_bytes(b"import json\r\nSYSTEM_PROMPT = 'Data: ' + json.dumps(DATA)\r\n")
    run = lint_paths([p], LintOptions(fix=True))
    assert run.fixed == 1
    assert p.read_bytes() == b"import json\r\nSYSTEM_PROMPT = 'Data: ' + json.dumps(DATA, sort_keys=True)\r\n"
