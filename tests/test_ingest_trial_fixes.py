"""Reading-side defects a fresh-user trial found (issue 19, trial of 25 producer logs), each on a
record of the producer's real shape with invented content and a value worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

from promptcache.ingest.usage import normalize_usage
from promptcache.model import Usage
from promptcache.pipeline import AuditOptions, audit

FILLER = "\n".join(f"Rule {k}: answer the customer about parcel {k} in two short sentences and quote the depot code."
                   for k in range(1, 121))


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ------------------------------------------------------------------ 1. cache writes in OpenAI-shaped usage

def test_copilot_usage_reads_nested_anthropic_cache_writes():
    """VS Code Copilot's chat log for a Claude model (jher7/tokenyst-copilot issue 16): OpenAI
    usage, prompt_tokens the total, Anthropic's write count nested in prompt_tokens_details."""
    u = {"prompt_tokens": 57768, "completion_tokens": 210, "total_tokens": 57978,
         "prompt_tokens_details": {"cached_tokens": 57029, "cache_creation_input_tokens": 738,
                                   "anthropic_cache_creation": {"ephemeral_1h_input_tokens": 0,
                                                                "ephemeral_5m_input_tokens": 738}}}
    assert normalize_usage(u) == Usage(57768, 210, 57029, 738, 0)
    # the 1-hour share from the same nesting
    u["prompt_tokens_details"]["anthropic_cache_creation"] = {"ephemeral_1h_input_tokens": 700, "ephemeral_5m_input_tokens": 38}
    assert normalize_usage(u) == Usage(57768, 210, 57029, 738, 700)


def test_litellm_usage_object_anthropic_counts_beside_prompt_tokens():
    """LiteLLM's ``Usage`` for an Anthropic call: prompt_tokens is the whole prompt (reads and
    writes added in), with Anthropic's counts at the top level and LiteLLM's own nested names.
    Read as Anthropic's meaning it would be 1500 + 505 = 2,005 prompt tokens, the uncached 1
    lost; the total is prompt_tokens, 2,006."""
    u = {"prompt_tokens": 2006, "completion_tokens": 12, "total_tokens": 2018,
         "cache_read_input_tokens": 1500, "cache_creation_input_tokens": 505,
         "prompt_tokens_details": {"cached_tokens": 1500, "cache_creation_tokens": 505}}
    assert normalize_usage(u) == Usage(2006, 12, 1500, 505, 0)
    # mozilla-ai any-llm (PR 896): the write count nested under Anthropic's name, no top-level one
    assert normalize_usage({"prompt_tokens": 900, "completion_tokens": 3,
                            "prompt_tokens_details": {"cached_tokens": 0, "cache_creation_input_tokens": 880}}) \
        == Usage(900, 3, 0, 880, 0)
    # Anthropic's own usage still reads as the uncached remainder plus the cache parts
    assert normalize_usage({"input_tokens": 6, "cache_read_input_tokens": 1500, "cache_creation_input_tokens": 500,
                            "output_tokens": 4}) == Usage(2006, 4, 1500, 500, 0)


def copilot_rows(n: int) -> list[dict]:
    """Gateway records {timestamp, request, response} of Copilot chat completions for a Claude
    model: no cache_control in the logged body (the client adds breakpoints after logging), the
    usage shows the previous prompt read from the cache and the rest written."""
    msgs = [{"role": "system", "content": FILLER}, {"role": "user", "content": "Where is parcel 1?"}]
    rows = []
    for k in range(n):
        read = 0 if k == 0 else 3000 + 20 * (k - 1)
        total = 3000 + 20 * k + 10
        rows.append({"timestamp": f"2026-07-18T18:4{k}:00Z", "request_id": f"req-{k}", "session_id": "chat-1",
                     "request": {"model": "claude-sonnet-4.5", "messages": json.loads(json.dumps(msgs)), "stream": True},
                     "response": {"id": f"msg_{k:04d}", "object": "chat.completion", "model": "claude-sonnet-4.5",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "(reply)"}}],
                                  "usage": {"prompt_tokens": total, "completion_tokens": 40, "total_tokens": total + 40,
                                            "prompt_tokens_details": {"cached_tokens": read,
                                                                      "cache_creation_input_tokens": total - read - 1}}}})
        msgs += [{"role": "assistant", "content": f"Parcel {k + 1} is at the depot."},
                 {"role": "user", "content": f"Where is parcel {k + 2}?"}]
    return rows


def test_reported_reads_without_logged_breakpoints_book_no_breakpoint_missing(tmp_path):
    """Reads in the bill and no breakpoint in the body: caching was applied outside the logged
    body. No PC501 loss; PC512 names it at $0 and a warning gives the reported hit ratio.
    By hand: reads 0 + 3000 + 3020 = 6,020 of prompts 3010 + 3030 + 3050 = 9,090 (66.2%); the 2
    later requests are PC512's, their reported ratio (3000 + 3020) / (3030 + 3050) = 99.0%."""
    log = write_jsonl(tmp_path / "copilot.jsonl", copilot_rows(3))
    res = audit([str(log)], AuditOptions())
    # writes are prompt - read - 1: 3009, 3030 - 3000 - 1 = 29, 3050 - 3020 - 1 = 29
    assert sum(o.usage.cache_write_tokens for o in res.outcomes) == 3009 + 29 + 29
    assert sum(o.usage.cache_read_tokens for o in res.outcomes) == 6020
    ids = [f.rule.id for f in res.findings]
    assert "breakpoint-missing" not in ids
    got = next(f for f in res.findings if f.rule.id == "breakpoint-outside-log")
    assert got.requests == 2 and got.cost_usd_lost == 0
    assert any("6,020 of 6,080 prompt tokens read from the cache (99.0%)" in w for w in res.warnings), res.warnings
    # the accounting still adds up: the rules gap's tokens are this row's, at no cost
    rows = [r for r in res.accounting.rows if r.gap == "rules"]
    assert [r.rule for r in rows] == ["breakpoint-outside-log"] and rows[0].cost_usd == 0


def test_no_reported_reads_still_books_breakpoint_missing(tmp_path):
    """The same traffic with nothing read in the bill: the breakpoint really is missing."""
    rows = copilot_rows(3)
    for r in rows:
        d = r["response"]["usage"]["prompt_tokens_details"]
        d["cached_tokens"], d["cache_creation_input_tokens"] = 0, 0
    res = audit([str(write_jsonl(tmp_path / "copilot.jsonl", rows))], AuditOptions())
    ids = [f.rule.id for f in res.findings]
    assert "breakpoint-missing" in ids and "breakpoint-outside-log" not in ids
