"""Nothing a log or template holds reaches a terminal as a control sequence: every command's text
output shows C0/C1 controls, DEL and bidirectional overrides as escapes (report.terminal.safe)."""

from __future__ import annotations

import json
import re
import sys

import pytest
from hypothesis import given, settings, strategies as st
from rich.text import Text

from promptcache.report.terminal import CONTROL, SafeConsole, console, safe, safe_text

#: Clear screen, a window title (OSC 0, BEL), an 8-bit CSI, a carriage return, a right-to-left override.
HOSTILE = "\x1b[2J\x1b]0;owned\x07 \x9b31m\r\u202e"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    from promptcache.cli import main

    monkeypatch.setattr(sys, "argv", ["promptcache", *args])
    with pytest.raises(SystemExit) as e:
        main()
    got = capsys.readouterr()
    return int(e.value.code or 0), got.out, got.err


@pytest.fixture
def hostile_log(tmp_path):
    """An agent whose system prompt starts with the time and holds escape sequences, a user whose
    name holds them, an unknown model whose name holds them, in a file whose name holds them."""
    policy = "Follow the refund policy in full and cite the section you rely on. " * 120
    recs = []
    for i in range(6):
        system = f"Current time: 2026-11-02T09:0{i}:00Z {HOSTILE} Customer: Ann{HOSTILE}{i}. " + policy
        recs.append({"timestamp": f"2026-11-02T09:0{i}:00Z", "id": f"req-{i}{HOSTILE}",
                     "request": {"model": "gpt-4.1" if i < 5 else f"gpt-x{HOSTILE}",
                                 "messages": [{"role": "system", "content": system},
                                              {"role": "user", "content": f"Question {i}{HOSTILE}"}]}})
    log = tmp_path / f"log{HOSTILE.replace(chr(0), '')[:12]}.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs) + "not json " + HOSTILE + "\n")
    return log


def test_audit_and_propose_text_reports_escape_controls(hostile_log, monkeypatch, capsys):
    for args in (["audit", str(hostile_log)], ["audit", str(hostile_log), "--propose", "--show-text"],
                 ["propose", str(hostile_log), "--show-text"], ["audit", str(hostile_log), "-f", "markdown"]):
        code, out, err = run_main(monkeypatch, capsys, *args)
        assert code == 0, err
        assert not RAW.search(out), (args, RAW.search(out))
        assert not RAW.search(err), (args, RAW.search(err))
        assert "\\x1b[2J" in out or "\\\\x1b\\[2J" in out, args  # shown, escaped (Markdown escapes the bracket)


def test_reports_on_a_terminal_escape_controls(hostile_log, monkeypatch, capsys):
    """CSV and HTML to stdout hold values as they are; on a terminal they are escaped."""
    import promptcache.fileio as fileio

    monkeypatch.setattr(fileio, "_is_terminal", lambda stream: True)
    for fmt in ("csv", "html", "json"):
        code, out, err = run_main(monkeypatch, capsys, "audit", str(hostile_log), "-f", fmt)
        assert code == 0, err
        assert not RAW.search(out), (fmt, RAW.search(out))


def test_json_reports_escape_controls_losslessly(hostile_log, monkeypatch, capsys):
    """JSON writers escape C0 controls; C1 controls and bidirectional overrides are escaped too,
    and the value read back is the same."""
    code, out, err = run_main(monkeypatch, capsys, "audit", str(hostile_log), "-f", "json", "--show-text")
    assert code == 0, err
    assert not RAW.search(out)
    ids = [r["id"] for r in json.loads(out)["requests"]]
    assert f"req-0{HOSTILE}" in ids


def test_lint_reports_escape_controls(tmp_path, monkeypatch, capsys):
    d = tmp_path / "prompts"
    d.mkdir()
    (d / f"sys{HOSTILE[:4]}.j2").write_text("Current date: {{ now }}" + HOSTILE + "\nYou are a support agent. " * 50)
    for fmt in ("text", "json", "sarif", "github"):
        code, out, err = run_main(monkeypatch, capsys, "lint", str(d), "--format", fmt, "--exit-zero")
        assert code == 0, (fmt, err)
        assert not RAW.search(out), (fmt, RAW.search(out))
        assert fmt not in ("text", "github") or "x1b" in out, fmt


def test_errors_on_stderr_escape_controls(tmp_path, monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, "audit", str(tmp_path / f"missing{HOSTILE}.jsonl"))
    assert code == 2
    assert not RAW.search(err) and "missing\\x1b[2J" in err


def test_colours_pass_and_text_controls_do_not():
    """On a terminal, Rich's own colour codes pass; the text's do not, in strings, markup and
    styled Text alike, and each style stays on its characters."""
    import io

    buf = io.StringIO()
    con = console(file=buf, force_terminal=True, color_system="standard", width=200)
    con.print("[red]alert[/] " + HOSTILE)
    con.print(Text.assemble(("bold" + HOSTILE, "bold"), " tail"))
    out = buf.getvalue()
    assert "\x1b[31malert" in out and "\x1b[1mbold" in out  # Rich's SGR codes
    assert "\x1b[2J" not in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    t = safe_text(Text.assemble(("a\x1bb", "bold"), ("c", "red")))
    assert t.plain == "a\\x1bbc"
    assert [(s.start, s.end, str(s.style)) for s in t.spans] == [(0, 6, "bold"), (6, 7, "red")]
    assert isinstance(con, SafeConsole)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=["Cs"]) | st.sampled_from(
    list("\x1b\x07\x9b\x9d\r\b\x7f\u202e\u2066\n\t[]"))))
def test_safe_leaves_no_control_and_keeps_everything_else(text):
    """Against a literal reference, character by character; and the console prints any text
    without a raw control character."""
    def ref(c: str) -> str:
        if CONTROL.fullmatch(c):
            return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
        return c

    got = safe(text)
    assert got == "".join(map(ref, text))
    assert not CONTROL.search(got)
    import io

    buf = io.StringIO()
    console(file=buf, width=80, soft_wrap=True, markup=False, highlight=False).print(text)
    assert not RAW.search(buf.getvalue())
