"""The audit end to end: CLI, JSON shape, exit codes, samples."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from promptcache.pipeline import AuditOptions, audit
from promptcache.cli import app
from promptcache.tokenize.tiktoken_backend import load_encoding

from conftest import SAMPLES

runner = CliRunner()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptcache", *args], capture_output=True, text=True)


def test_json_report_shape():
    p = run_cli("audit", str(SAMPLES / "well_structured.jsonl"), "--format", "json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["schema"] == "promptcache.audit/v1"
    assert d["inputs"][0]["format"] == "openai-chat" and d["inputs"][0]["requests"] == 120
    s = d["summary"]
    assert s["tokenizer"] == {"name": "o200k_base", "exact": True, "notes": []}
    for name in ("no_cache", "simulated", "ideal"):
        sc = s["scenarios"][name]
        assert sc["cached_tokens"] + sc["cache_write_tokens"] + sc["uncached_tokens"] == sc["prompt_tokens"]
        assert sc["hit_ratio"] == round(sc["cached_tokens"] / sc["prompt_tokens"], 6)
    assert s["scenarios"]["no_cache"]["cost_usd"] > s["scenarios"]["simulated"]["cost_usd"] >= s["scenarios"]["ideal"]["cost_usd"]
    r = d["requests"][1]
    assert set(r) >= {"id", "line", "prompt_tokens", "cached_tokens", "shared_prefix_tokens", "divergence"}
    assert r["divergence"]["segment"] == "messages[1].content"  # the question differs, nothing before it


def test_identical_requests_count_and_cache(tmp_log):
    enc = load_encoding("o200k_base")
    system = "You are a careful assistant. " * 200
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": system}, {"role": "user", "content": "Hi there"}]}
    res = audit([tmp_log([{"timestamp": 0, **body}, {"timestamp": 1, **body}])], AuditOptions())
    # harmony framing: <|start|> role <|message|> ... <|end|> per message, then <|start|>assistant
    n = (1 + len(enc.encode_ordinary("system")) + 1 + len(enc.encode_ordinary(system)) + 1) \
        + (1 + len(enc.encode_ordinary("user")) + 1 + len(enc.encode_ordinary("Hi there")) + 1) \
        + (1 + len(enc.encode_ordinary("assistant")))
    a, b = res.outcomes
    assert a.prompt_tokens == b.prompt_tokens == n
    assert a.cached_tokens == 0 and b.cached_tokens == n // 128 * 128 and b.shared_prefix_tokens == n
    assert b.divergence is None


def test_malformed_sample_reports_each_bad_line():
    p = run_cli("audit", str(SAMPLES / "malformed.jsonl"))
    assert p.returncode == 0
    assert "skipped 3 line(s)" in p.stdout
    for ln in (2, 4, 7):
        assert f"malformed.jsonl:{ln}:" in p.stdout
    p = run_cli("audit", str(SAMPLES / "malformed.jsonl"), "--strict")
    assert p.returncode == 2 and "malformed.jsonl:2: invalid JSON" in p.stderr


def test_unknown_model_gives_token_only_report(tmp_log):
    body = {"model": "gpt-99-ultra", "messages": [{"role": "user", "content": "hi " * 1500}]}
    res = audit([tmp_log([body, body])], AuditOptions())
    assert res.scenarios["simulated"].cost is None and res.scenarios["simulated"].cached_tokens > 0
    assert any("no price for model(s) gpt-99-ultra" in w for w in res.warnings)


@pytest.mark.parametrize("args,msg", [
    (["audit", "nope.jsonl"], "nope.jsonl: cannot open"),
    (["audit", str(SAMPLES / "support_bot.jsonl"), "--cache-model", "foo"], "unknown cache model 'foo'"),
    (["audit", str(SAMPLES / "support_bot.jsonl"), "--tokenizer", "xyz"], "unknown tokenizer 'xyz'"),
])
def test_usage_errors_exit_2_with_one_line(args, msg):
    p = run_cli(*args)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_hashed_trace_needs_cache_model(tmp_log):
    p = run_cli("audit", str(tmp_log([{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}])))
    assert p.returncode == 2 and "--cache-model" in p.stderr


@pytest.mark.parametrize("name", ["agent_timestamp", "support_bot", "rag_app", "well_structured", "anthropic_app"])
def test_samples_audit(name):
    res = audit([SAMPLES / f"{name}.jsonl"], AuditOptions())
    assert res.inputs[0].skipped_lines == 0 and len(res.outcomes) > 50
    sim, ideal = res.scenarios["simulated"], res.scenarios["ideal"]
    assert sim.cached_tokens <= ideal.cached_tokens


def test_planted_problems_show_in_the_numbers():
    agent = audit([SAMPLES / "agent_timestamp.jsonl"], AuditOptions())
    good = audit([SAMPLES / "well_structured.jsonl"], AuditOptions())
    assert agent.scenarios["simulated"].hit_ratio == 0          # the timestamp breaks every prefix
    assert agent.scenarios["reported"].requests == len(agent.outcomes)
    assert good.scenarios["simulated"].hit_ratio > 0.9
    anth = audit([SAMPLES / "anthropic_app.jsonl"], AuditOptions())
    assert not anth.tokenizer_exact and anth.scenarios["simulated"].cache_write_tokens > 0
    assert any(o.miss_reason == "expired" for o in anth.outcomes)   # users pausing past 5 minutes


def test_cli_runner_text_report():
    r = runner.invoke(app, ["audit", str(SAMPLES / "support_bot.jsonl")])
    assert r.exit_code == 0
    assert "Cost by scenario" in r.output and "Left on the table" in r.output


def test_reports_are_written_with_ordinary_permissions(tmp_path):
    import os
    import stat

    from promptcache.fileio import write_atomic

    umask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "r.json", "{}")
        assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o644
        os.chmod(tmp_path / "r.json", 0o640)
        write_atomic(tmp_path / "r.json", "{}")  # replacing keeps the file's mode
        assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o640
        write_atomic(tmp_path / "salt", "x", mode=0o600)
        assert stat.S_IMODE(os.stat(tmp_path / "salt").st_mode) == 0o600
    finally:
        os.umask(umask)


@pytest.mark.parametrize("args, says", [
    (["audit", str(SAMPLES / "agent_timestamp.jsonl"), "--fail-on", "critical"], "Invalid value for '--fail-on'"),
    (["audit", str(SAMPLES / "agent_timestamp.jsonl"), "--no-such-option"], "No such option"),
    (["audit"], "Missing argument"),
    (["no-such-command"], "No such command"),
])
def test_usage_errors_exit_2_without_traceback(args, says):
    p = run_cli(*args)
    assert p.returncode == 2, p.stderr
    assert says in p.stderr and "Traceback" not in p.stderr and "internal error" not in p.stderr


def test_error_messages_keep_their_brackets(monkeypatch, capsys):
    """Install hints like ``pip install 'promptcache[data]'`` are printed as written, not eaten
    as Rich markup."""
    import promptcache.cli as cli
    from promptcache.errors import ConfigError

    def boom(*a, **k):
        raise ConfigError("Parquet output needs pyarrow: pip install 'promptcache[data]'")
    monkeypatch.setattr(cli, "app", boom)
    monkeypatch.setattr(sys, "argv", ["promptcache", "audit"])
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code == 2
    assert "pip install 'promptcache[data]'" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_closed_output_pipe_is_not_a_finding(fmt):
    """``promptcache audit LOG | head -1``: exit 141 (the shell's SIGPIPE convention), not 1
    (findings at or above --fail-on), and nothing on stderr. The reader closes before the
    report is written (the audit takes a second), so the first write fails."""
    proc = subprocess.Popen([sys.executable, "-m", "promptcache", "audit", str(SAMPLES / "agent_timestamp.jsonl"),
                             "--format", fmt], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 141, err
    assert err == ""


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_output_pipe_closed_mid_report_is_not_success(tmp_path, unbuffered):
    """``promptcache audit LOG --format csv | head -c 100`` with a report larger than a pipe
    holds (130 KB against 64 KiB): exit 141, also under PYTHONUNBUFFERED, where Python's text
    layer drops what a partial write left and reports success."""
    import os

    log = tmp_path / "big.jsonl"
    # four copies, each under its own ids: the same ids, prompts and times would be one call logged four times
    text = (SAMPLES / "support_bot.jsonl").read_text()
    log.write_text("".join(text.replace('"id": "chatreq-', f'"id": "copy{k}-chatreq-') for k in range(4)))
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    cmd = f"{sys.executable} -m promptcache audit {log} --format csv | head -c 100 >/dev/null; exit ${{PIPESTATUS[0]}}"
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env)
    assert p.returncode == 141, p.stderr


def test_outputs_never_overwrite_inputs(tmp_path):
    """``--write-proposed`` or ``-o`` naming an input (directly or through a link) fails before
    any work, and the input is byte-for-byte unchanged; a link to another file is written
    through (the link stays a link)."""
    log = tmp_path / "a.jsonl"
    log.write_bytes((SAMPLES / "agent_timestamp.jsonl").read_bytes())
    before = log.read_bytes()
    (tmp_path / "link.jsonl").symlink_to("a.jsonl")
    for args in (["audit", str(log), "--propose", "--write-proposed", str(log)],
                 ["propose", str(log), "--write-proposed", str(tmp_path / "link.jsonl")],
                 ["audit", str(log), "-f", "json", "-o", str(tmp_path / "link.jsonl")],
                 ["export", str(log), "-o", str(log)]):
        p = run_cli(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert "is one of the inputs" in p.stderr
    assert log.read_bytes() == before
    (tmp_path / "report.json").write_text("old")
    (tmp_path / "rlink.json").symlink_to("report.json")
    p = run_cli("audit", str(log), "-f", "json", "-o", str(tmp_path / "rlink.json"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "rlink.json").is_symlink()
    assert json.loads((tmp_path / "report.json").read_text())["schema"] == "promptcache.audit/v1"


def test_top_prefix_served_counts_what_the_rules_served(tmp_path):
    """Three identical ~2,000-token prompts under OpenAI's rules (1,024-token minimum, then
    128-token steps): requests 2 and 3 are each served 1,024 + 128·k tokens of their n; the top
    prefix is that served stretch (reused by 2, served 2, nothing left on the table), and the
    n - served tail after it is reused by 2 and served by none."""
    body = {"model": "gpt-4.1", "messages": [
        {"role": "system", "content": " ".join(f"policy clause {i} applies to every account." for i in range(300))},
        {"role": "user", "content": "What applies to my account?"}]}
    log = tmp_path / "same.jsonl"
    log.write_text("".join(json.dumps({"timestamp": 1_790_000_000 + i, "request": body}) + "\n" for i in range(3)))
    res = audit([log], AuditOptions())
    n = res.outcomes[0].prompt_tokens
    served = 1024 + 128 * ((n - 1024) // 128)
    assert [o.cached_tokens for o in res.outcomes] == [0, served, served]
    top, tail = res.top_prefixes[0], res.top_prefixes[1]
    assert (top.start_token, top.tokens, top.reused_by, top.served) == (0, served, 2, 2)
    assert top.lost_usd == 0
    assert (tail.start_token, tail.tokens, tail.reused_by, tail.served) == (served, n - served, 2, 0)
    # gpt-4.1: $2.00 input, $0.50 cached input per million tokens
    assert float(tail.lost_usd) == pytest.approx((n - served) * 2 * 1.5 / 1e6)


def test_options_are_validated_and_empty_logs_are_said(tmp_path):
    from promptcache.errors import ConfigError

    for bad in ({"ttl": -5}, {"ttl": "abc"}, {"top": -1}, {"capacity_tokens": 0}, {"block_size": 0}):
        with pytest.raises(ConfigError):
            AuditOptions(**bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    from promptcache.errors import InputError

    with pytest.raises(InputError, match="empty.jsonl: empty"):  # nothing to audit is an input error (exit 2)
        audit([empty], AuditOptions())


def test_a_run_that_ends_the_process_leaves_its_state_to_the_exit(monkeypatch):
    """The command line's audit exits without tearing the interpreter down: the run's pipeline
    and diagnoser are left to the exit, not freed object by object, and the result is the same."""
    import promptcache.pipeline as pipeline_mod
    from promptcache.diagnose.engine import Diagnoser
    from promptcache.report.audit_records import audit_record

    log = [SAMPLES / "agent_timestamp.jsonl"]
    freed = audit_record(audit(log, AuditOptions(workers=1)))
    kept: list = []
    monkeypatch.setattr(pipeline_mod, "KEPT_TO_EXIT", kept)
    left = audit_record(audit(log, AuditOptions(workers=1)))
    assert [type(x) for x in kept] == [pipeline_mod.Pipeline, Diagnoser]
    assert kept[0].state.sim.ideal  # the ideal caches (prefix trees), still held
    freed.pop("elapsed_s", None), left.pop("elapsed_s", None)
    assert left == freed
    # a subprocess run (os._exit at the end) writes the same report
    p = run_cli("audit", str(log[0]), "--format", "json", "--workers", "1")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    out.pop("elapsed_s", None)
    assert out["summary"] == json.loads(json.dumps(left["summary"], default=str))


def test_file_and_line_print_as_given_not_as_emoji_codes(tmp_path):
    """Rich reads ``:100:`` as an emoji code (💯): a bad line 100 must still print as ``log:100:``."""
    log = tmp_path / "l100.jsonl"
    lines = (SAMPLES / "rag_app.jsonl").read_text().splitlines()[:99]
    log.write_text("\n".join(lines + ["{bad"]) + "\n")
    p = run_cli("audit", str(log), "--strict")
    assert p.returncode == 2
    assert f"{log}:100: invalid JSON" in p.stderr.replace("\n", "")
    p = run_cli("audit", str(log))
    assert p.returncode == 0, p.stderr
    assert f"{log}:100: invalid JSON" in p.stdout.replace("\n", "")


def test_an_interrupt_says_so_and_exits_130(monkeypatch, capsys):
    """Ctrl-C inside a command: typer hands the interrupt back as exit code 130, silently."""
    import promptcache.cli.audit as audit_cli
    from promptcache.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(audit_cli, "audit", interrupted)
    monkeypatch.setattr(sys, "argv", ["promptcache", "audit", str(SAMPLES / "agent_timestamp.jsonl")])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 130
    assert "interrupted" in capsys.readouterr().err
