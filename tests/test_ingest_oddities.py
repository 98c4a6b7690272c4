"""Issue 18's ingest items, each found by trying the tool as a new user would, each a test that
failed before the fix:

- item 4: a record the tool cannot use (a timestamp of ``1e300`` or ``"NaN"``, tool parameters
  or a response-format schema nested about 1,000 deep) is left untimed or skipped, counted with
  file, line and reason, and the rest is audited: never exit 3;
- item 5: impossible reported usage (``cached_tokens`` 99,999 of 10 prompt tokens) warns and is
  left out of the ``reported`` scenario: no hit ratio above 100%, no negative cost;
- item 8: a file with no readable line exits 2 like an empty one; the same file given twice is
  read once; duplicate request ids, negative and far-future times, times without a zone and
  requests past the reorder window are said; ``"yesterday"`` leaves the request untimed;
  ``--ttl inf`` means "never expire" and ``--ttl nan`` is a usage error; a lone ``\\ud800`` escape
  is decoded as U+FFFD;
- item 11: ``-`` reads standard input.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from promptcache.errors import ConfigError, InputError
from promptcache.ingest import InputStats, ReadOptions, read_inputs
from promptcache.pipeline import AuditOptions, audit
from promptcache.report.audit_records import audit_record

SYSTEM = "You answer questions about the harbour timetable. " * 40


def line(i: int, **extra) -> str:
    rec = {"timestamp": 1767225600 + i, "request_id": f"r{i}",
           "request": {"model": "gpt-4o", "messages": [{"role": "system", "content": SYSTEM},
                                                       {"role": "user", "content": f"question {i}"}]}}
    rec.update(extra)
    return json.dumps(rec)


def deep(n: int) -> str:
    """A JSON schema nested ``2n`` objects deep, as text (json.dumps cannot write it)."""
    return '{"type":"object","properties":{"x":' * n + '{"type":"string"}' + "}}" * n


def write(tmp_path: Path, lines: list[str], name: str = "log.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def read(*paths: Path, **kw):
    stats = [InputStats(str(p)) for p in paths]
    return list(read_inputs(list(paths), stats, ReadOptions(**kw))), stats


# -- item 4 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value,reason", [
    (1e300, "time out of any calendar's range"), ("NaN", "not a time: nan"), (-1e20, "time out of any calendar's range"),
    ("yesterday", "not a time: 'yesterday'"),  # item 8: untimed, not dropped
])
def test_an_unusable_time_leaves_the_request_untimed(tmp_path, value, reason):
    reqs, (st,) = read(write(tmp_path, [line(0), line(1, timestamp=value), line(2)]))
    assert [r.id for r in reqs] == ["r0", "r1", "r2"] and st.skipped_lines == 0
    assert reqs[1].arrival is None and st.missing_arrival == 1
    assert st.times.unusable == 1 and st.times.unusable_examples[0][0] == 2
    assert st.times.unusable_examples[0][1].startswith(reason)
    res = audit([tmp_path / "log.jsonl"], AuditOptions(workers=1))  # and the audit runs (it exited 3 on 1e300)
    assert len(res.outcomes) == 3 and any("no usable time" in w and "line 2" in w for w in res.warnings)


@pytest.mark.parametrize("where", ["tools", "response_format"])
def test_parameters_nested_a_thousand_deep_skip_their_record_only(tmp_path, where):
    body = json.loads(line(1))
    text = json.dumps(body)
    if where == "tools":  # 980 levels of tool parameters (exit 3 before: RecursionError)
        text = text.replace('"model": "gpt-4o"', '"model": "gpt-4o", "tools": [{"type": "function", "function": '
                                                 '{"name": "f", "parameters": ' + deep(490) + "}}]")
    else:  # a response-format schema 1,000 deep
        text = text.replace('"model": "gpt-4o"', '"model": "gpt-4o", "response_format": {"type": "json_schema", '
                                                 '"json_schema": {"schema": ' + deep(499) + "}}")
    log = write(tmp_path, [line(0), text, line(2)])
    res = audit([log], AuditOptions(workers=1))
    assert [o.id for o in res.outcomes] == ["r0", "r2"]
    (st,) = res.inputs
    assert st.skipped_lines == 1 and st.errors[0][0] == 2 and "nested too deep" in st.errors[0][1]


# -- item 5 ------------------------------------------------------------------------------------

def test_impossible_usage_is_left_out_of_the_reported_scenario(tmp_path):
    bad = line(1, response={"usage": {"prompt_tokens": 10, "completion_tokens": 1,
                                      "prompt_tokens_details": {"cached_tokens": 99_999}}})
    good = line(2, response={"usage": {"prompt_tokens": 900, "completion_tokens": 1,
                                       "prompt_tokens_details": {"cached_tokens": 768}}})
    res = audit([write(tmp_path, [line(0), bad, good])], AuditOptions(workers=1))
    rep = res.scenarios["reported"]
    assert (rep.requests, rep.prompt_tokens, rep.cached_tokens) == (1, 900, 768)  # before: 999,990% and a negative cost
    assert rep.hit_ratio <= 1 and (rep.cost is None or rep.cost >= 0)
    (st,) = res.inputs
    assert st.bad_usage == 1 and st.bad_usage_examples == [(2, "99,999 cached + 0 written of 10 prompt tokens")]
    assert any("impossible usage" in w for w in res.warnings)
    for r in audit_record(res)["requests"]:
        if "reported" in r:
            assert r["reported"]["cached_tokens"] <= r["reported"]["input_tokens"]


def test_a_prompt_count_of_zero_is_impossible_usage(tmp_path):
    """A helper's probe: ``prompt_tokens: 0`` on every record of a ~2,400-token prompt log was
    taken as usage, so the reported scenario billed those prompts $0 and a "reported below
    simulated" gap was blamed on a routing key. Every request reads at least one token: the
    zero goes to bad usage and out of the reported scenario, like any impossible count."""
    zero = line(1, response={"usage": {"prompt_tokens": 0, "completion_tokens": 7}})
    good = line(2, response={"usage": {"prompt_tokens": 900, "completion_tokens": 1,
                                       "prompt_tokens_details": {"cached_tokens": 768}}})
    res = audit([write(tmp_path, [line(0), zero, good])], AuditOptions(workers=1))
    rep = res.scenarios["reported"]
    assert (rep.requests, rep.prompt_tokens, rep.cached_tokens) == (1, 900, 768)
    (st,) = res.inputs
    assert st.bad_usage == 1 and st.bad_usage_examples == [(2, "0 prompt tokens (a request reads at least one)")]
    assert res.outcomes[1].usage is None and res.accounting.gaps["reported"] == 0


# -- item 8 ------------------------------------------------------------------------------------

def test_a_file_with_no_readable_line_is_an_input_error(tmp_path):
    p = write(tmp_path, ["not json", "{also not", "3"])
    with pytest.raises(InputError, match="log.jsonl: 3 unreadable record"):
        audit([p], AuditOptions(workers=1))  # before: a $0 report and exit 0
    with pytest.raises(InputError, match="empty"):
        audit([write(tmp_path, [""], "empty.jsonl")], AuditOptions(workers=1))


def test_one_readable_file_is_enough(tmp_path):
    good = write(tmp_path, [line(0)], "good.jsonl")
    res = audit([write(tmp_path, [""], "empty.jsonl"), good], AuditOptions(workers=1))
    assert len(res.outcomes) == 1 and any("empty.jsonl: no requests found" in w for w in res.warnings)


def test_the_same_file_twice_is_read_once(tmp_path):
    p = write(tmp_path, [line(0), line(1)])
    link = tmp_path / "same.jsonl"
    link.symlink_to(p)
    res = audit([p, link, p], AuditOptions(workers=1))
    assert len(res.outcomes) == 2  # before: 6 (every request three times, each hitting the others' cache)
    assert [st.duplicate_of for st in res.inputs] == [None, str(p), str(p)]
    assert sum("the same file as" in w for w in res.warnings) == 2


def test_duplicate_ids_odd_times_and_the_reorder_window_are_said(tmp_path, monkeypatch):
    import promptcache.ingest as ingest

    monkeypatch.setattr(ingest, "REORDER_WINDOW", 2)
    lines = [line(0), line(5), line(6), line(7), line(1),  # r1 arrives after three later requests: past the window
             json.dumps({**json.loads(line(8)), "request_id": "r0"}),  # the id of line 1 again
             line(9, timestamp=-5), line(10, timestamp=4102444800 * 10),  # 1969; the year 3270 (far future)
             line(11, timestamp="2026-01-01 10:00:00")]  # no zone
    reqs, (st,) = read(write(tmp_path, lines))
    assert len(reqs) == 9
    assert (st.duplicate_ids, st.duplicate_id_example) == (1, ("r0", 6))
    # r1 arrives before requests already passed on beyond the window of 2; the 1969 and 3270
    # requests are untimed (no real arrival), so they keep their place in the file
    assert st.out_of_order == 1 and st.times.negative == 1 and st.times.future == 1
    assert [r.arrival for r in reqs if r.id in ("r9", "r10")] == [None, None] and st.missing_arrival == 2
    assert (st.times.naive, st.times.naive_example) == (1, (9, "2026-01-01 10:00:00"))
    notes = " | ".join(st.notes())
    for said in ("reuse the id of an earlier request", "out of order", "before 1970", "in the future",
                 "carry no time zone"):
        assert said in notes


def test_ttl_inf_never_expires_and_nan_is_refused():
    assert AuditOptions(ttl=float("inf")).ttl == 0  # what --ttl 0 means: never expire (before: a crash)
    with pytest.raises(ConfigError, match="--ttl"):
        AuditOptions(ttl=float("nan"))  # before: read as "no TTL" silently


def test_a_lone_surrogate_escape_is_decoded_as_replacement_character(tmp_path):
    raw = line(1).replace("question 1", "question \\ud800 one")
    reqs, (st,) = read(write(tmp_path, [line(0), raw]))
    assert [r.id for r in reqs] == ["r0", "r1"]  # before: line 2 skipped ("no low surrogate in string")
    assert reqs[1].parts[-1].text == "question \ufffd one"
    assert st.decoding.replaced == 1 and st.decoding.replaced_line == 2


def test_bytes_that_are_not_utf8_are_replaced_not_fatal(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(line(0).encode() + b"\n" + line(1).encode().replace(b"question 1", b"question \xff\xfe") + b"\n")
    reqs, (st,) = read(p)
    assert len(reqs) == 2 and reqs[1].parts[-1].text == "question \ufffd\ufffd" and st.decoding.replaced == 1


# -- item 11 -----------------------------------------------------------------------------------

def test_dash_reads_standard_input(tmp_path, monkeypatch):
    from promptcache.ingest import jsonio

    data = (line(0) + "\n" + line(1) + "\n").encode()
    monkeypatch.setattr(jsonio, "_stdin_copy", None)
    monkeypatch.delenv(jsonio.STDIN_COPY_ENV, raising=False)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    res = audit(["-"], AuditOptions(workers=1))
    assert [o.id for o in res.outcomes] == ["r0", "r1"] and res.inputs[0].path == "-"
    assert res.outcomes[0].path == "-"
