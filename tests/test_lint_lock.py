"""The prefix lockfile: `promptcache lock` records stable prefixes; `lint` fails when a change
shrinks one or moves a breakpoint, and prices the change at the stated request rate."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal

import pytest

from promptcache.lint import LintOptions, lint_paths
from promptcache.pricing import PriceBook
from promptcache.tokenize.tiktoken_backend import load_encoding

from conftest import SAMPLES

GOOD = (SAMPLES / "templates" / "good" / "classify.j2").read_text(encoding="utf-8")


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "promptcache", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".promptcache.toml").write_text('model = "gpt-4o"\nrequests-per-day = 20000\n', encoding="utf-8")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "classify.j2").write_text(GOOD, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_lock_records_stable_prefix(repo):
    r = cli("lock", "prompts", cwd=repo)
    assert r.returncode == 0, r.stderr
    lock = json.loads((repo / "promptcache-lock.json").read_text(encoding="utf-8"))
    assert lock["schema"] == "promptcache.lock/v1"
    e = lock["prompts"]["prompts/classify.j2::template"]
    enc = load_encoding("o200k_base")
    stable = GOOD.split("{{ product }}")[0]
    assert e["stable_prefix"]["tokens"] == len(enc.encode_ordinary(stable))
    import hashlib
    assert e["stable_prefix"]["sha256"] == hashlib.sha256(stable.encode()).hexdigest()
    assert (e["provider"], e["model"], e["tokenizer"]) == ("openai", "gpt-4o", "o200k_base")
    # an unchanged template passes
    assert cli("lint", "prompts", cwd=repo).returncode == 0


def test_shrunk_prefix_fails_with_its_cost(repo):
    assert cli("lock", "prompts", cwd=repo).returncode == 0
    p = repo / "prompts" / "classify.j2"
    moved = "This ticket is for the {{ product }} team.\n" + GOOD.replace("\nThis ticket is for the {{ product }} team.\n", "")
    p.write_text(moved, encoding="utf-8")
    r = cli("lint", "prompts", "--format", "json", "--select", "PC305", cwd=repo)
    assert r.returncode == 1, r.stderr
    (f,) = json.loads(r.stdout)["findings"]
    enc = load_encoding("o200k_base")
    locked = len(enc.encode_ordinary(GOOD.split("{{ product }}")[0]))
    now = len(enc.encode_ordinary("This ticket is for the "))
    assert f["code"] == "PC305" and (f["location"]["line"], f["location"]["col"]) == (1, 24)
    assert f["facts"]["locked_tokens"] == locked and f["facts"]["current_tokens"] == now
    lost = locked // 128 * 128  # OpenAI caches in 128-token steps from 1,024; the new prefix caches nothing
    assert f["facts"]["tokens_lost"] == lost
    rates = PriceBook().rates("openai", "gpt-4o")
    per_request = (rates.base("input") - rates.base("cache_read")) * lost / Decimal(1_000_000)
    assert f["facts"]["cost_usd_per_day"] == pytest.approx(float(per_request * 20000))
    assert f"${per_request * 20000:,.2f}/day at 20,000 requests/day" in f["message"]
    # accepting the change: lock again, and lint passes
    assert cli("lock", "prompts", cwd=repo).returncode == 0
    assert cli("lint", "prompts", "--select", "PC305", cwd=repo).returncode == 0


def test_moved_breakpoint_fails(repo):
    body = ("model: claude-sonnet-4-5\nsystem:\n  - type: text\n    text: |\n{policy}\n"
            "    cache_control: {{type: ephemeral}}\n  - type: text\n    text: Be brief.\n{bp2}"
            "messages:\n  - {{role: user, content: \"{{{{ question }}}}\"}}\n")
    policy = "\n".join("      " + line for line in GOOD.split("{{")[0].splitlines() if line.strip())
    p = repo / "prompts" / "request.yaml"
    p.write_text(body.format(policy=policy, bp2=""), encoding="utf-8")
    assert cli("lock", "prompts", cwd=repo).returncode == 0
    lock = json.loads((repo / "promptcache-lock.json").read_text(encoding="utf-8"))
    (bp,) = lock["prompts"]["prompts/request.yaml::body"]["breakpoints"]
    assert bp["part"] == "system[0]" and bp["exact"]
    # move the breakpoint from the policy block to the short block after it
    text = body.format(policy=policy, bp2="    cache_control: {type: ephemeral}\n").replace(
        "    cache_control: {type: ephemeral}\n  - type: text\n    text: Be brief.",
        "  - type: text\n    text: Be brief.", 1)
    p.write_text(text, encoding="utf-8")
    r = cli("lint", "prompts", "--format", "json", "--select", "PC507", cwd=repo)
    assert r.returncode == 1
    (f,) = json.loads(r.stdout)["findings"]
    assert f["facts"]["locked_part"] == "system[0]" and f["facts"]["current_part"] == "system[1]"
    line = text.splitlines().index("    cache_control: {type: ephemeral}") + 1
    assert (f["location"]["line"], f["location"]["col"]) == (line, 5)
    # --no-lockfile skips the comparison
    assert cli("lint", "prompts", "--select", "PC507", "--no-lockfile", cwd=repo).returncode == 0


def test_lint_never_writes_without_being_asked(repo):
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    lint_paths([repo / "prompts"], LintOptions())
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert before == after


def test_relock_drops_stale_entries_and_keeps_other_files(repo):
    other = repo / "other"
    other.mkdir()
    (other / "a.j2").write_text("Hello {{ x }}\n", encoding="utf-8")
    assert cli("lock", "prompts", "other", cwd=repo).returncode == 0
    (repo / "prompts" / "classify.j2").unlink()
    (repo / "prompts" / "new.j2").write_text("Hi {{ y }}\n", encoding="utf-8")
    assert cli("lock", "prompts", cwd=repo).returncode == 0
    keys = sorted(json.loads((repo / "promptcache-lock.json").read_text(encoding="utf-8"))["prompts"])
    # prompts/ was locked again: the deleted classify.j2 drops out, new.j2 comes in; other/ is kept
    assert keys == ["other/a.j2::template", "prompts/new.j2::template"]
    (other / "a.j2").write_text("No variables now\n", encoding="utf-8")
    assert cli("lock", "other", cwd=repo).returncode == 0
    lock = json.loads((repo / "promptcache-lock.json").read_text(encoding="utf-8"))["prompts"]
    assert lock["other/a.j2::template"]["stable_prefix"]["tokens"] == len(
        load_encoding("o200k_base").encode_ordinary("No variables now"))
