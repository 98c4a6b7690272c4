"""Breakpoints written into Amazon Bedrock bodies: ``cachePoint`` blocks in Converse bodies and
``cache_control`` in InvokeModel Anthropic bodies, within Bedrock's limits (at most 4
checkpoints; TTLs not increasing from tools to system to messages: rules/providers/bedrock.yaml,
https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html), re-simulated, and the
written log audited.

The log is Bedrock's model invocation log (tests/data/formats/bedrock_invocation_logs.json.gz:
the shape AWS documents, Converse bodies with a ``cachePoint`` after the system prompt), with
its checkpoints removed and a clock line added to the system prompt, the way an app that sets
no checkpoint and renders the time would log it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from promptcache.ingest import InputStats, read_requests
from promptcache.pipeline import AuditOptions, audit
from promptcache.propose import edits
from promptcache.propose.engine import propose
from promptcache.propose.rewrite import converse_caches_tools

FIXTURE = Path(__file__).parent / "data" / "formats" / "bedrock_invocation_logs.json.gz"


def _records() -> list[dict]:
    return [json.loads(x) for x in gzip.decompress(FIXTURE.read_bytes()).decode().splitlines()]


def _no_checkpoints_with_a_clock(tmp_path: Path) -> Path:
    out = []
    for i, r in enumerate(_records()):
        body = r["input"]["inputBodyJson"]
        body["system"] = [b for b in body["system"] if "cachePoint" not in b]
        body["system"][0]["text"] = f"Current time: 2026-03-02T09:{i:02d}:{17 * i % 60:02d}Z.\n" + body["system"][0]["text"]
        for m in body["messages"]:
            m["content"] = [b for b in m["content"] if "cachePoint" not in b]
        out.append(r)
    p = tmp_path / "bedrock.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in out))
    return p


def _checkpoints(body: dict) -> list[tuple[str, int]]:
    """Where a Converse body's cachePoint blocks sit: (section, index of the block before)."""
    out = [("system", i - 1) for i, b in enumerate(body.get("system") or []) if "cachePoint" in b]
    for k, m in enumerate(body.get("messages") or []):
        out += [(f"messages[{k}]", i - 1) for i, b in enumerate(m["content"]) if "cachePoint" in b]
    return out


def test_converse_bodies_get_checkpoints(tmp_path):
    log = _no_checkpoints_with_a_clock(tmp_path)
    before = audit([log], AuditOptions())
    assert before.scenarios["simulated"].cached_tokens == 0  # Bedrock caches only at checkpoints
    dest = tmp_path / "proposed.jsonl"
    res = propose([log], AuditOptions(), write=dest)
    (p,) = res.proposals
    kinds = {c.kind: c for c in p.plan.changes if c.applied}
    assert {"move-slots", "add-breakpoints"} <= set(kinds)
    assert kinds["add-breakpoints"].where == "cachePoint"
    written = [json.loads(x) for x in dest.read_text().splitlines()]
    for rec in written:
        body = rec["input"]["inputBodyJson"]
        # the clock left the system prompt and ends the newest user turn, as a block without a type
        assert not body["system"][0]["text"].startswith("Current time")
        cps = _checkpoints(body)
        assert 1 <= len(cps) <= 4
        assert cps[0] == ("system", 0)  # the anchor closes the system prompt
        cp_blocks = [b for b in body["system"] if "cachePoint" in b]
        assert cp_blocks == [{"cachePoint": {"type": "default"}}]
        last = body["messages"][-1]["content"]
        assert last[-1] == {"cachePoint": {"type": "default"}}  # the newest block, the moved clock included
        assert last[-2]["text"].startswith("Current time") and "type" not in last[-2]
        assert "inputTokenCount" not in rec["input"] and "cacheReadInputTokenCount" not in rec["input"]
    # multi-turn requests carry the anchor and the newest marker: two checkpoints
    assert [len(_checkpoints(r["input"]["inputBodyJson"])) for r in written] == [2] * len(written)
    again = audit([dest], AuditOptions())
    for name in ("no_cache", "simulated", "ideal"):
        a, b = res.after.scenarios[name], again.scenarios[name]
        assert (a.prompt_tokens, a.cached_tokens, a.cache_write_tokens, a.cost) == \
               (b.prompt_tokens, b.cached_tokens, b.cache_write_tokens, b.cost)
    sim, ideal = again.scenarios["simulated"].cached_tokens, again.scenarios["ideal"].cached_tokens
    assert sim >= 0.95 * ideal > 0
    assert [r.format for r in read_requests(dest, InputStats("b"))] == ["bedrock"] * len(written)


def test_invoke_model_anthropic_bodies_get_cache_control(tmp_path):
    """InvokeModel with an Anthropic Messages body (``anthropic_version``): ``cache_control``
    on the system prompt and the newest block, as on Anthropic's own API."""
    out = []
    for i, r in enumerate(_records()):
        conv = r["input"]["inputBodyJson"]
        system = "".join(b["text"] for b in conv["system"] if "text" in b)
        msgs = [{"role": m["role"], "content": "".join(b.get("text", "") for b in m["content"])} for m in conv["messages"]]
        r["operation"] = "InvokeModel"
        r["input"]["inputBodyJson"] = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 512,
                                       "system": system, "messages": msgs}
        out.append(r)
    log = tmp_path / "invoke.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in out))
    dest = tmp_path / "proposed.jsonl"
    res = propose([log], AuditOptions(), write=dest)
    assert any(c.kind == "add-breakpoints" and c.where == "cache_control" and c.applied
               for p in res.proposals for c in p.plan.changes)
    for line in dest.read_text().splitlines():
        body = json.loads(line)["input"]["inputBodyJson"]
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert sum("cache_control" in b for m in body["messages"] if isinstance(m["content"], list)
                   for b in m["content"]) <= 3
    again = audit([dest], AuditOptions())
    assert again.scenarios["simulated"].cached_tokens == res.after.scenarios["simulated"].cached_tokens > 0


def test_converse_checkpoints_are_replaced_where_asked():
    """Old checkpoints go; new ones follow the blocks named (paths resolved before any block
    moves), with their TTL where one is asked."""
    body = {"toolConfig": {"tools": [{"toolSpec": {"name": "a"}}, {"cachePoint": {"type": "default"}}]},
            "system": [{"text": "s0"}, {"cachePoint": {"type": "default"}}, {"text": "s1"}],
            "messages": [{"role": "user", "content": [{"text": "u0"}, {"cachePoint": {"type": "default"}}]},
                         {"role": "user", "content": [{"text": "u1"}, {"image": {"format": "png"}}]}]}
    n = edits.converse_checkpoints(body, [("system[2]", "1h"), ("messages[1].content[1]", None)])
    assert n == 2
    assert body["toolConfig"]["tools"] == [{"toolSpec": {"name": "a"}}]
    assert body["system"] == [{"text": "s0"}, {"text": "s1"}, {"cachePoint": {"type": "default", "ttl": "1h"}}]
    assert body["messages"][0]["content"] == [{"text": "u0"}]
    assert body["messages"][1]["content"][-1] == {"cachePoint": {"type": "default"}}
    assert edits.converse_set_ttl(body, "messages", "1h") == 1
    assert body["messages"][1]["content"][-1]["cachePoint"]["ttl"] == "1h"


def test_what_takes_a_checkpoint():
    body = {"toolConfig": {"tools": [{"toolSpec": {"name": "a"}}]},
            "messages": [{"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "t"}}},
                                                           {"text": ""}, {"text": "x"}]}]}
    assert not edits.converse_markable(body, "messages[0].content[0]")  # reasoning
    assert not edits.converse_markable(body, "messages[0].content[1]")  # empty text
    assert edits.converse_markable(body, "messages[0].content[2]")
    assert edits.converse_markable(body, "toolConfig.tools[0]", tools=True)
    assert not edits.converse_markable(body, "toolConfig.tools[0]", tools=False)
    # Amazon Nova caches no tools; Claude on Bedrock does
    assert not converse_caches_tools("us.amazon.nova-pro-v1:0")
    assert converse_caches_tools("us.anthropic.claude-sonnet-4-5-20250929-v1:0")


def test_which_sections_take_a_checkpoint_is_the_rules_files(tmp_path):
    """Amazon Nova's "tools not cacheable" lives in rules/providers/bedrock.yaml
    (``checkpoint_sections``), not in code: the shipped file says it, and a file that says
    something the APIs have no section for is refused with its path."""
    import yaml

    from promptcache.errors import ConfigError
    from promptcache.simulate.rules import RULES_DIR, load_providers, parse_provider_file

    bedrock = load_providers()["bedrock"]
    assert bedrock.rules_for("us.amazon.nova-pro-v1:0").checkpoint_sections == ("system", "messages")
    assert bedrock.rules_for("us.anthropic.claude-sonnet-4-5-20250929-v1:0").checkpoint_sections == ("tools", "system", "messages")
    d = yaml.safe_load((Path(RULES_DIR) / "providers" / "bedrock.yaml").read_text(encoding="utf-8"))
    d["models"][0]["checkpoint_sections"] = ["toolConfig"]
    bad = tmp_path / "bedrock.yaml"
    bad.write_text(yaml.safe_dump(d), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bedrock.yaml: models\[0\]: 'checkpoint_sections'"):
        parse_provider_file(bad)
