"""The inputs section of the reports: per file, what each record ended as (text, Markdown, JSON
``inputs[]``), the warning for files that are mostly not requests, and the one for requests that
report far more input tokens than their rendered prompt."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from promptcache.pipeline import AuditOptions, audit
from promptcache.report.audit_records import audit_record
from promptcache.report.audit_text import render_audit
from promptcache.report.markdown import render_markdown

FORMATS = Path(__file__).parent / "data" / "formats"


def test_inputs_in_json_text_and_markdown():
    res = audit([FORMATS / "langfuse_observations_export.jsonl"], AuditOptions(workers=1))
    (i,) = audit_record(res)["inputs"]
    assert (i["format"], i["records"], i["requests"], i["duplicates"], i["usage_only"], i["joined"]) == (
        "langfuse", 17, 7, 4, 0, 0)
    assert i["skipped"] == {"Langfuse SPAN observation (not an LLM call)": 3, "Langfuse TOOL observation (not an LLM call)": 3}
    out = Console(width=200, record=True, file=open("/dev/null", "w"))
    render_audit(res, out)
    text = out.export_text()
    assert "Inputs: what each record ended as" in text and "langfuse" in text
    rows = [[c.strip() for c in ln.split("│")] for ln in text.splitlines() if ln.count("│") == 10]
    row = next(r for r in rows if r[2] == "langfuse")
    assert row[1].endswith("langfuse_observations_export.jsonl") and row[3:10] == ["17", "7", "0", "0", "4", "6", "0"]
    mdtext = render_markdown(audit_record(res))
    assert "| langfuse\\_observations\\_export.jsonl | langfuse | 17 | 7 | 0 | 0 | 4 | 6 | 0 |" in mdtext


def test_a_file_mostly_not_requests_is_said(tmp_path):
    res = audit([FORMATS / "vllm_request_log.txt"], AuditOptions(workers=1, cache_model="vllm", tokenizer="o200k_base"))
    assert len(res.outcomes) == 7
    assert not any("no request with a prompt" in w for w in res.warnings)  # 7 of 14 skipped: half, not most
    # a log of 1 request and 6 other lines:
    lines = (FORMATS / "vllm_request_log.txt").read_text().splitlines()
    p = tmp_path / "vllm.log"
    p.write_text("\n".join(lines[:2] + [lines[1]] * 5) + "\n")  # 1 request, 6 other lines
    res = audit([p], AuditOptions(workers=1, cache_model="vllm", tokenizer="o200k_base"))
    assert any("6 of its 7 record(s) are no request with a prompt" in w for w in res.warnings)


def test_reported_input_far_above_the_rendered_prompt_is_said(tmp_path):
    rec = {"timestamp": "2026-03-02T09:00:00Z", "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
           "response": {"usage": {"prompt_tokens": 5000, "completion_tokens": 3}}}
    p = tmp_path / "log.jsonl"
    p.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "timestamp": "2026-03-02T09:00:05Z",
                                                      "response": {"usage": {"prompt_tokens": 9, "completion_tokens": 3}}}) + "\n")
    res = audit([p], AuditOptions(workers=1))
    (st,) = res.inputs
    rendered = res.outcomes[0].prompt_tokens
    assert rendered < 20 and st.over_reported == 1 and st.over_reported_example == (1, 5000, rendered)
    assert any("report more than 20% more input tokens than their rendered prompt" in w and "line 1: 5,000 reported" in w
               for w in res.warnings)
    assert audit_record(res)["inputs"][0]["over_reported"] == 1
