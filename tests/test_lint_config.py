"""Config discovery and precedence, suppression directives (each form), unused and invalid
suppressions, per-file ignores, baselines, --no-suppress."""

from __future__ import annotations

import codecs
import json

import pytest

from promptcache.errors import ConfigError
from promptcache.lint import LintOptions, lint_paths
from promptcache.lint.config import discover, glob_match

FILLER = " ".join(["Answer from the handbook and cite the section you rely on."] * 12)
VOLATILE = "Time: {{ now() }}. " + FILLER + "\n"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def codes(run, active=True):
    return [(f.code, f.span.line) for f in (run.active if active else run.findings)]


def test_closest_config_wins_and_stops_at_repo_root(repo):
    (repo / "pyproject.toml").write_text('[tool.promptcache]\nignore = ["PC101"]\n', encoding="utf-8")
    sub = repo / "prompts" / "v2"
    sub.mkdir(parents=True)
    (sub / "a.j2").write_text(VOLATILE, encoding="utf-8")
    assert discover(sub) == repo / "pyproject.toml"
    assert lint_paths([sub / "a.j2"]).findings == []
    # a closer .promptcache.toml replaces it (no cascade)
    (repo / "prompts" / ".promptcache.toml").write_text('fail-on = "warning"\n', encoding="utf-8")
    discover.cache_clear()
    run = lint_paths([sub / "a.j2"])
    assert codes(run) == [("PC101", 1)] and run.fail_on == "warning"
    # a pyproject.toml without [tool.promptcache] is skipped; the walk stops at the .git root
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    discover.cache_clear()
    assert discover(sub) == repo / "prompts" / ".promptcache.toml"
    inner = repo / "nested"
    inner.mkdir()
    (inner / ".git").mkdir()
    assert discover(inner) is None


def test_flags_beat_files(repo):
    (repo / ".promptcache.toml").write_text('ignore = ["PC101"]\n', encoding="utf-8")
    (repo / "a.j2").write_text(VOLATILE, encoding="utf-8")
    assert lint_paths([repo / "a.j2"]).findings == []
    run = lint_paths([repo / "a.j2"], LintOptions(overrides={"ignore": []}))
    assert codes(run) == [("PC101", 1)]
    run = lint_paths([repo / "a.j2"], LintOptions(overrides={"select": ["PC2*"], "ignore": []}))
    assert run.findings == []


@pytest.mark.parametrize("text,msg", [
    ('selct = ["PC101"]\n', "unknown key 'selct'"),
    ('fail-on = "fatal"\n', "fail-on must be one of"),
    ('select = ["PC999"]\n', "no rule 'PC999'"),
    ('provider = "acme"\n', "provider 'acme' unknown"),
    ('requests-per-day = -5\n', "requests-per-day must be a positive number"),
])
def test_bad_config_is_one_line_error_naming_file_and_key(repo, text, msg):
    (repo / ".promptcache.toml").write_text(text, encoding="utf-8")
    (repo / "a.j2").write_text("Hi\n", encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        lint_paths([repo / "a.j2"])
    assert msg in str(e.value) and ".promptcache.toml" in str(e.value) and "\n" not in str(e.value)


def test_an_unknown_key_is_placed_in_the_table_the_file_holds(repo):
    """``.promptcache.toml`` holds its keys at the top level; only ``pyproject.toml`` has a
    ``[tool.promptcache]`` table (the message named that table for both)."""
    (repo / ".promptcache.toml").write_text('selct = ["PC101"]\n', encoding="utf-8")
    (repo / "a.j2").write_text("Hi\n", encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        lint_paths([repo / "a.j2"])
    assert "unknown key 'selct' at the top level;" in str(e.value) and "[tool.promptcache]" not in str(e.value)
    sub = repo / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[tool.promptcache]\nselct = ["PC101"]\n', encoding="utf-8")
    (sub / "a.j2").write_text("Hi\n", encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        lint_paths([sub / "a.j2"])
    assert "unknown key 'selct' in [tool.promptcache];" in str(e.value)


def test_glob_match():
    assert glob_match("legacy/**", "legacy/a/b.j2")
    assert glob_match("*.txt", "deep/dir/x.txt")
    assert not glob_match("legacy/*.j2", "legacy/a/b.j2")
    assert glob_match("legacy/", "legacy/b.j2") and not glob_match("legacy/", "other/legacy.j2")


def test_directive_forms(repo):
    p = repo / "a.j2"
    # same line, next line (comment alone), a range, and a file-wide ignore
    p.write_text("Time: {{ now() }} {# promptcache: ignore[PC101] #}. " + FILLER + "\n"
                 "{# promptcache: ignore[timestamp-in-prefix] #}\n"
                 "\n"
                 "Time: {{ now() }}. " + FILLER + "\n"
                 "{# promptcache: disable[PC1*] #}\n"
                 "Time: {{ now() }}. " + FILLER + "\n"
                 "{# promptcache: enable[PC1*] #}\n"
                 "Time: {{ now() }}. " + FILLER + "\n", encoding="utf-8")
    run = lint_paths([p])
    assert [(f.code, f.span.line, f.suppressed_by) for f in run.findings] == [
        ("PC101", 1, "inline"), ("PC101", 4, "inline"), ("PC101", 6, "inline"), ("PC101", 8, None)]
    p.write_text("{# promptcache: file-ignore[PC101] #}\n" + VOLATILE + VOLATILE, encoding="utf-8")
    run = lint_paths([p])
    assert [f.suppressed_by for f in run.findings] == ["inline", "inline"] and not run.active
    # --no-suppress shows everything for an audit
    run = lint_paths([p], LintOptions(no_suppress=True))
    assert codes(run) == [("PC101", 2), ("PC101", 3)]


def test_unused_and_invalid_suppressions(repo):
    p = repo / "a.j2"
    p.write_text("{# promptcache: ignore[PC103] #}\n"       # unused: nothing on line 2 is PC103
                 + VOLATILE +
                 "{# promptcache: ignor[PC101] #}\n"        # malformed action
                 "{# promptcache: ignore[PC777] #}\n"       # no such rule
                 "{# promptcache: ignore #}\n", encoding="utf-8")  # no codes
    run = lint_paths([p])
    assert codes(run) == [("PC901", 1), ("PC101", 2), ("PC002", 3), ("PC002", 4), ("PC002", 5)]
    msgs = {f.span.line: f.message for f in run.findings}
    assert "unknown action `ignor`" in msgs[3] and "no rule `PC777`" in msgs[4] and "needs the codes" in msgs[5]
    # a directive for a rule that did not run is not reported as unused
    run = lint_paths([p], LintOptions(overrides={"ignore": ["PC103"]}))
    assert ("PC901", 1) not in codes(run)


def test_plain_text_refuses_inline_directives(repo):
    p = repo / "prompt.md"
    p.write_text("<!-- promptcache: ignore[PC101] -->\nTime: {now}. " + FILLER + "\n", encoding="utf-8")
    run = lint_paths([p])
    assert codes(run) == [("PC002", 1), ("PC101", 2)]
    assert "sent to the model" in run.findings[0].message


def test_per_file_ignores_and_baseline(repo):
    (repo / "legacy").mkdir()
    (repo / "legacy" / "old.j2").write_text(VOLATILE, encoding="utf-8")
    (repo / "new.j2").write_text(VOLATILE, encoding="utf-8")
    (repo / ".promptcache.toml").write_text('[per-file-ignores]\n"legacy/**" = ["timestamp-in-prefix"]\n',
                                            encoding="utf-8")
    run = lint_paths([repo])
    assert [(f.span.path, f.suppressed_by) for f in run.findings] == [("legacy/old.j2", "config"), ("new.j2", None)]
    # baseline: a previous JSON report; matching is by fingerprint, so a moved line stays baselined
    from promptcache.report.lint_json import render
    import io

    buf = io.StringIO()
    render(run, buf)
    (repo / "baseline.json").write_text(buf.getvalue(), encoding="utf-8")
    (repo / "new.j2").write_text("\n\n" + VOLATILE, encoding="utf-8")
    run = lint_paths([repo], LintOptions(overrides={"baseline": str(repo / "baseline.json")}))
    assert [(f.span.path, f.span.line, f.suppressed_by) for f in run.findings] == [
        ("legacy/old.j2", 1, "config"), ("new.j2", 3, "baseline")]
    assert not run.failed()
    (repo / "new.j2").write_text(VOLATILE + "Req {{ request_id }}. " + FILLER + "\n", encoding="utf-8")
    run = lint_paths([repo], LintOptions(overrides={"baseline": str(repo / "baseline.json")}))
    assert [(f.code, f.suppressed_by) for f in run.findings if f.span.path == "new.j2"] == [
        ("PC101", "baseline"), ("PC104", None)]


def test_directory_walk_skips_hidden_vendored_and_excluded(repo):
    for rel in ("prompts/a.j2", ".venv/b.j2", "node_modules/c.j2", "prompts/skip/d.j2", "prompts/notes.rst"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(VOLATILE, encoding="utf-8")
    (repo / ".promptcache.toml").write_text('exclude = ["prompts/skip/"]\n', encoding="utf-8")
    run = lint_paths([repo])
    assert run.files == 1 and [f.span.path for f in run.findings] == ["prompts/a.j2"]


def test_unreadable_file_is_an_error_not_a_crash(repo):
    (repo / "bin.txt").write_bytes(b"ok\nab\x80\x81bad")
    (repo / "a.j2").write_text(VOLATILE, encoding="utf-8")
    run = lint_paths([repo / "bin.txt", repo / "a.j2"])
    assert run.errors == [("bin.txt", "not UTF-8 text: invalid start byte at line 2, column 3 (byte 5); save it as "
                                      "UTF-8, or declare its encoding (a byte order mark; in Python, a coding line)")]
    assert codes(run) == [("PC101", 1)]
    json.dumps(run.errors)


def test_a_file_is_read_in_the_encoding_it_declares(repo):
    """UTF-16 with a byte order mark, UTF-8 with one, and a Python file with a PEP 263 coding
    line (latin-1) are read in their encodings (each was "not UTF-8 text", exit 2); the mark is
    not a character, so columns on line 1 are an editor's; ``--fix`` writes the file back in
    its encoding, mark kept."""
    body = "Caf\u00e9 note. Today is {{ now }}.\n" + "Keep every answer short and cite the handbook. " * 4
    (repo / "u16.j2").write_bytes(codecs.BOM_UTF16_LE + body.encode("utf-16-le"))
    (repo / "u8.j2").write_bytes(codecs.BOM_UTF8 + body.encode("utf-8"))
    (repo / "l1.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport json\n"
                                 b"SYSTEM_PROMPT = \"Caf\xe9 \" + json.dumps({\"b\": 1, \"a\": 2})\n")
    run = lint_paths([repo / "u16.j2", repo / "u8.j2", repo / "l1.py"])
    assert run.errors == []
    got = {(f.span.path, f.code, f.span.line, f.span.col) for f in run.findings}
    assert ("u16.j2", "PC101", 1, 21) in got and ("u8.j2", "PC101", 1, 21) in got
    assert ("l1.py", "PC203", 3, 27) in got  # json.dumps, at its column in characters (é is one)
    lint_paths([repo / "l1.py"], LintOptions(fix=True))
    assert (repo / "l1.py").read_bytes() == (b"# -*- coding: latin-1 -*-\nimport json\n"
                                             b"SYSTEM_PROMPT = \"Caf\xe9 \" + json.dumps({\"b\": 1, \"a\": 2}, sort_keys=True)\n")


def test_directory_walk_takes_plain_text_only_from_prompt_directories(repo):
    for rel in ("docs/guide.md", "prompts/review.txt", "prompts/README.md", "app/templates/note.md"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(VOLATILE, encoding="utf-8")
    run = lint_paths([repo])
    assert sorted({f.span.path for f in run.findings}) == ["app/templates/note.md", "prompts/review.txt"]
    assert [f.span.path for f in lint_paths([repo / "docs" / "guide.md"]).findings] == ["docs/guide.md"]
