"""The registry of readers: every record of every fixture, sample and case log is claimed by
exactly one reader (two claiming one record is a bug, not a silent choice), every reader
claims some fixture, records made of any mix of the keys readers look at are claimed by at most
one, and ``promptcache formats`` says which shape each record matched and why the others did not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from promptcache.cli import app
from promptcache.ingest import PARSERS, detect
from promptcache.ingest.jsonio import iter_records
from promptcache.ingest.reader import FOREIGN
from promptcache.ingest.registry import READERS, claimants, explain

ROOT = Path(__file__).parent.parent
CORPORA = [ROOT / "tests" / "data" / "formats", ROOT / "tests" / "data" / "producers", ROOT / "tests" / "fixtures" / "logs",
           ROOT / "samples", ROOT / "tests" / "data" / "cases"]
LOGS = sorted(p for d in CORPORA for p in d.iterdir()
              if p.is_file() and p.suffix not in (".py", ".md") and not p.name.endswith("expected.json"))
#: lines of the fixtures that are malformed on purpose (tests/fixtures/logs README, samples/malformed.jsonl)
BROKEN = {"malformed.jsonl", "litellm.jsonl", "langfuse.jsonl", "helicone.jsonl", "otel.jsonl", "gemini.jsonl",
          "openai_batch.jsonl", "sharegpt.jsonl", "prompts.jsonl", "bailian.jsonl"}


def records(path: Path):
    for line, rec in iter_records(path):
        if not isinstance(rec, Exception):
            yield line, rec


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_record_has_one_reader(path):
    for line, rec in records(path):
        got = [r.name for r, _ in claimants(rec)]
        assert len(got) <= 1, f"{path.name}:{line} claimed by {got}"
        if path.name not in BROKEN:
            assert len(got) == 1, f"{path.name}:{line} claimed by none"


def test_every_reader_claims_a_fixture():
    seen = {r.name for p in LOGS for _, rec in records(p) for r, _ in claimants(rec)}
    assert seen == {r.name for r in READERS}
    assert sorted(PARSERS) == sorted(r.name for r in READERS)


def _keys() -> list[str]:
    """Every key a reader's claim looks at, and the usual body keys."""
    return sorted(FOREIGN | {"messages", "input", "instructions", "contents", "prompt", "model", "max_tokens", "system",
                             "request", "response", "body", "custom_id", "url", "method", "data", "result", "trace",
                             "event", "attributes", "context", "type", "usage", "id", "output", "category",
                             "operationName", "columns", "rows", "status_code", "error", "key", "request_body",
                             "request_json", "hash_ids", "input_length", "turn", "parent_chat_id", "startTime"})


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(_keys()), kids, max_size=4),
                    max_leaves=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_keys()), JSON, max_size=6))
def test_no_record_is_claimed_twice(rec):
    got = [r.name for r, _ in claimants(rec)]
    assert len(got) <= 1, (got, rec)
    assert detect(rec) == (got[0] if got else None)


def test_explain_names_the_match_and_every_other_reader():
    rec = json.loads((ROOT / "tests" / "data" / "formats" / "braintrust_logs.jsonl").read_text().splitlines()[0])
    got = explain(rec)
    assert [r.name for r, ok, _ in got if ok] == ["braintrust"]
    why = {r.name: w for r, ok, w in got}
    assert why["braintrust"] == "span_attributes with a span id (a Braintrust log row)"
    # the Responses reader read this row before the registry (it has "input"): now it says why not
    assert why["openai-responses"] == "holds '_xact_id', 'root_span_id', 'span_attributes', which another producer writes"
    assert why["langfuse"].startswith("needs traceId")


def test_formats_command_lists_and_explains():
    runner = CliRunner()
    res = runner.invoke(app, ["formats", "--format", "json"])
    assert res.exit_code == 0
    cat = json.loads(res.stdout)
    assert [c["input_format"] for c in cat] == [r.name for r in READERS] and all(c["producer"] for c in cat)
    f = ROOT / "tests" / "data" / "formats" / "sglang_request_log.jsonl"
    res = runner.invoke(app, ["formats", str(f), "-n", "2", "--format", "json"])
    assert res.exit_code == 0
    (rep,) = json.loads(res.stdout)
    assert [r["matched"][0]["input_format"] for r in rep["first_records"]] == ["sglang-log", "sglang-log"]
    assert len(rep["first_records"][0]["others"]) == len(READERS) - 1
    assert (rep["read"]["requests"], rep["read"]["joined"], rep["read"]["records"]) == (7, 7, 14)
    res = runner.invoke(app, ["formats", str(f), "-n", "1"])
    assert res.exit_code == 0 and "line 1 (JSON): sglang-log - an SGLang 'request.received' event" in res.stdout
    assert "not openai-chat: holds 'rid', which another producer writes" in res.stdout
