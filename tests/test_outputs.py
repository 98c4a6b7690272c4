"""Every command that writes a file refuses its inputs as the output (directly, through symbolic
and hard links, inside an input directory), exit 2 before any work; every write is atomic."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from promptcache.errors import ConfigError
from promptcache.fileio import create_atomic, refuse_inputs, write_atomic

from conftest import SAMPLES

TEMPLATES = SAMPLES / "templates" / "bad"


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """``promptcache ARGS`` in this process (its own exit-code mapping); (exit code, stderr)."""
    from promptcache.cli import main

    monkeypatch.setattr(sys, "argv", ["promptcache", *args])
    with pytest.raises(SystemExit) as e:
        main()
    return int(e.value.code or 0), capsys.readouterr().err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def work(tmp_path):
    """A log, a prices file, a template tree and links to them."""
    log = tmp_path / "a.jsonl"
    shutil.copy(SAMPLES / "agent_timestamp.jsonl", log)
    prompts = tmp_path / "prompts"
    shutil.copytree(TEMPLATES, prompts)
    (tmp_path / "prices.yaml").write_text("models:\n  gpt-4.1:\n    input: 2.0\n    cache_read: 0.5\n")
    (tmp_path / "sym.jsonl").symlink_to("a.jsonl")
    os.link(log, tmp_path / "hard.jsonl")
    return tmp_path


def template_in(d: Path) -> Path:
    return sorted(p for p in d.rglob("*.j2"))[0]


def test_lint_refuses_the_template_it_lints_as_its_report(work, monkeypatch, capsys):
    """``promptcache lint X --format json -o X`` wrote the report over the template; so did a
    directory walk that takes the file, a hard link to it, and the config file lint read."""
    prompts = work / "prompts"
    tmpl = template_in(prompts)
    os.link(tmpl, work / "hard.j2")
    (work / "sym.j2").symlink_to(tmpl)
    (prompts / ".promptcache.toml").write_text("[tool.promptcache]\n")
    before = {p: digest(p) for p in prompts.rglob("*") if p.is_file()}
    for paths, out in (([tmpl], tmpl), ([prompts], tmpl), ([tmpl], work / "hard.j2"), ([tmpl], work / "sym.j2"),
                       ([prompts], prompts / ".promptcache.toml")):
        code, err = run_main(monkeypatch, capsys, "lint", *map(str, paths), "--format", "json", "-o", str(out))
        assert code == 2, (paths, out, err)
        assert "is one of the inputs" in err and "--output must name another file" in err
    assert {p: digest(p) for p in prompts.rglob("*") if p.is_file()} == before
    # a report beside the templates, not one lint reads, is written
    code, err = run_main(monkeypatch, capsys, "lint", str(prompts), "--format", "json", "-o", str(work / "lint.json"))
    assert code in (0, 1), err
    assert json.loads((work / "lint.json").read_text())


def test_lock_refuses_a_template_as_its_lockfile(work, monkeypatch, capsys):
    prompts = work / "prompts"
    tmpl = template_in(prompts)
    before = digest(tmpl)
    code, err = run_main(monkeypatch, capsys, "lock", str(prompts), "--lockfile", str(tmpl))
    assert code == 2 and "is one of the inputs" in err and "--lockfile" in err, err
    assert digest(tmpl) == before
    code, err = run_main(monkeypatch, capsys, "lock", str(prompts), "--lockfile", str(work / "lock.json"))
    assert code == 0, err
    assert json.loads((work / "lock.json").read_text())
    # the lockfile is read and rewritten: that is the command, not an input overwritten
    code, err = run_main(monkeypatch, capsys, "lock", str(prompts), "--lockfile", str(work / "lock.json"))
    assert code == 0, err


def test_kv_refuses_its_log_and_its_config_as_the_output(work, monkeypatch, capsys):
    """``promptcache kv ... LOG --output LOG`` replaced the log with the report."""
    log = work / "a.jsonl"
    before = digest(log)
    cfg = work / "config.json"
    from promptcache.kv.presets import preset

    cfg.write_text(json.dumps(preset("llama-3-8b").config))
    cfg_before = digest(cfg)
    for args in (["--preset", "llama-3-8b", str(log), "--output", str(log)],
                 ["--preset", "llama-3-8b", str(log), "--output", str(work / "hard.jsonl")],
                 ["--config", str(cfg), "-o", str(cfg)],
                 ["--config", str(work), "-o", str(cfg)]):  # a model directory holding the config
        code, err = run_main(monkeypatch, capsys, "kv", *args)
        assert code == 2, (args, err)
        assert "is one of the inputs" in err or "is inside the input directory" in err, err
    assert digest(log) == before and digest(cfg) == cfg_before


def test_audit_and_propose_refuse_every_input_not_only_the_logs(work, monkeypatch, capsys):
    """The prices file, a tokenizer file, a hard link to a log; and two outputs naming one file."""
    log, prices = work / "a.jsonl", work / "prices.yaml"
    tok = work / "tokenizer.json"
    tok.write_text("{}")
    before = {p: digest(p) for p in (log, prices, tok)}
    cases = [["audit", str(log), "--prices", str(prices), "-f", "json", "-o", str(prices)],
             ["audit", str(log), "-f", "json", "-o", str(work / "hard.jsonl")],
             ["propose", str(log), "--tokenizer", str(tok), "-o", str(tok)],
             ["propose", str(log), "--prices", str(prices), "--write-proposed", str(prices)]]
    for args in cases:
        code, err = run_main(monkeypatch, capsys, *args)
        assert code == 2 and "is one of the inputs" in err, (args, err)
    assert {p: digest(p) for p in before} == before
    code, err = run_main(monkeypatch, capsys, "audit", str(log), "--write-proposed", str(work / "x.jsonl"),
                         "-f", "json", "-o", str(work / "x.jsonl"))
    assert code == 2 and "named by both --output and --write-proposed" in err, err
    assert not (work / "x.jsonl").exists()


def test_export_refuses_its_salt_file_as_the_trace(work, monkeypatch, capsys):
    log, salt = work / "a.jsonl", work / "salt.hex"
    salt.write_text("ab" * 32 + "\n")
    code, err = run_main(monkeypatch, capsys, "export", str(log), "--salt-file", str(salt), "-o", str(salt))
    assert code == 2 and "is one of the inputs" in err, err
    assert salt.read_text() == "ab" * 32 + "\n"
    fresh = work / "new.hex"  # created by this run: not the trace's file either
    code, err = run_main(monkeypatch, capsys, "export", str(log), "--salt-file", str(fresh), "-o", str(fresh))
    assert code == 2 and "named by both --output and --salt-file" in err, err
    assert not fresh.exists()


def test_replay_refuses_a_file_of_its_model_directory(work, monkeypatch, capsys):
    """A file inside the model (or tokenizer) directory is an input: refused before the model loads."""
    model = work / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    code, err = run_main(monkeypatch, capsys, "replay", str(work / "a.jsonl"), "--model", str(model),
                         "-o", str(model / "config.json"))
    assert code == 2 and "is inside the input directory" in err, err
    assert (model / "config.json").read_text() == "{}"


def test_refuse_inputs_finds_the_same_file_however_it_is_named(tmp_path, monkeypatch):
    a = tmp_path / "a.jsonl"
    a.write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "up").symlink_to(tmp_path)
    monkeypatch.chdir(tmp_path)
    for same in ("a.jsonl", "./a.jsonl", str(a), "d/../a.jsonl", "d/up/a.jsonl"):
        with pytest.raises(ConfigError, match="is one of the inputs"):
            refuse_inputs({"--output": same}, ["a.jsonl"])
    refuse_inputs({"--output": "b.jsonl"}, ["a.jsonl", None, "-", "o200k_base"])  # no clash, skipped entries
    refuse_inputs({"--output": "-"}, ["a.jsonl"])
    with pytest.raises(ConfigError, match="named by both -o and --write-proposed"):
        refuse_inputs({"-o": "new.jsonl", "--write-proposed": "./new.jsonl"}, [])


def test_write_atomic_leaves_the_old_file_whole_when_a_write_fails(tmp_path, monkeypatch):
    """A write that fails half-way (a full disk) leaves the file as it was and no temporary file
    beside it, and is a one-line error (exit 2), not an internal error."""
    out = tmp_path / "report.json"
    out.write_text("old report")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ConfigError, match="report.json: cannot write: No space left on device"):
        write_atomic(out, "new report " * 1000)
    assert out.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_write_atomic_errors_and_special_files(tmp_path):
    """A directory, or a path under a file, is a one-line error; a named pipe is written in
    place (it cannot be renamed over); a new file gets the umask's mode, a replaced one keeps its own."""
    with pytest.raises(ConfigError, match="is a directory"):
        write_atomic(tmp_path, "x")
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="cannot write"):
        write_atomic(tmp_path / "f" / "report.json", "x")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomic(fifo, "through the pipe")
        assert os.read(r, 100) == b"through the pipe"
    finally:
        os.close(r)
    assert fifo.is_fifo()
    keep = tmp_path / "keep"
    keep.write_text("x")
    keep.chmod(0o640)
    write_atomic(keep, "y")
    assert (keep.stat().st_mode & 0o777) == 0o640 and keep.read_text() == "y"


def test_create_atomic_never_replaces_a_file(tmp_path):
    p = tmp_path / "salt.hex"
    assert create_atomic(p, "first\n") is True
    assert create_atomic(p, "second\n") is False
    assert p.read_text() == "first\n" and (p.stat().st_mode & 0o777) == 0o600
    assert sorted(x.name for x in tmp_path.iterdir()) == ["salt.hex"]


def test_api_html_report_never_over_an_input(work):
    import promptcache

    log = work / "a.jsonl"
    before = digest(log)
    res = promptcache.audit([log], diagnose=False)
    with pytest.raises(ConfigError, match="is one of the inputs"):
        res.to_html(work / "hard.jsonl")
    assert digest(log) == before
    res.to_html(work / "report.html")
    assert (work / "report.html").read_text().startswith("<!")
