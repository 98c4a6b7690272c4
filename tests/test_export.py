"""``promptcache export``: anonymised hashed traces that replay like the original log."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from promptcache.api import audit as api_audit, export_trace
from promptcache.pipeline import Pipeline
from promptcache.export.mooncake import chain_hashes, load_salt

from conftest import ROOT, SAMPLES, write_jsonl

MOONCAKE = ROOT / "tests" / "data" / "mooncake_conversation_trace.jsonl.gz"
SALT = bytes(range(32))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptcache", *args], capture_output=True, text=True)


def _sim(path: Path, block: int, **kw) -> list[tuple[int, int]]:
    res = api_audit(path, cache_model="vllm", block_size=block, diagnose=False, **kw)
    return [(o.prompt_tokens, o.cached_tokens) for o in res.outcomes]


@pytest.mark.parametrize("name", ["support_bot", "rag_app", "anthropic_app"])
def test_exported_trace_caches_like_the_log(name, tmp_path):
    """Why the numbers must agree: vLLM caches whole blocks, each keyed by the hash of its
    tokens and its parent's hash, and serves the longest chain of stored blocks (never the
    block holding the last prompt token). The export keys block i by a chained hash of the
    same tokens, so two exported prompts share block i exactly when the logged prompts share
    every token up to the end of block i (and their namespace). Remapping hashes to integers
    keeps that equality. So under vLLM rules with the export's block size and no capacity
    limit, every request reads the same number of tokens from the trace as from the log: the
    ideal hit ratio at block granularity is the same, request by request."""
    log = SAMPLES / f"{name}.jsonl"
    out = tmp_path / "trace.jsonl"
    exp = export_trace(log, out, salt=SALT, cache_model="vllm")
    assert exp.block_tokens == 512 and len(exp.records) == len(json.loads("[" + ",".join(out.read_text().splitlines()) + "]"))
    original = _sim(log, 512)
    replayed = _sim(out, 512)
    assert replayed == original
    assert sum(c for _, c in original) > 0  # the check is not vacuous: the log does share blocks
    # and the same at Bailian's 16-token blocks
    out16 = tmp_path / "trace16.jsonl"
    export_trace(log, out16, to="bailian", salt=SALT, cache_model="vllm")
    assert _sim(out16, 16) == _sim(log, 16)


def test_reexported_mooncake_trace_is_the_same_trace(tmp_path):
    out = tmp_path / "re.jsonl.gz"
    exp = export_trace(MOONCAKE, out, salt=SALT, cache_model="vllm")
    src = [json.loads(line) for line in gzip.open(MOONCAKE, "rt")]
    got = [json.loads(line) for line in gzip.open(out, "rt")]
    assert len(got) == len(src) == len(exp.records)
    assert [g["input_length"] for g in got] == [s["input_length"] for s in src]
    assert [g["output_length"] for g in got] == [s["output_length"] for s in src]
    assert [g["timestamp"] for g in got] == [s["timestamp"] - src[0]["timestamp"] for s in src]
    # the id mapping is one-to-one at every (position, chain): equal prefixes stay equal, unequal stay unequal
    seen: dict[tuple[int, ...], int] = {}
    back: dict[int, tuple[int, ...]] = {}
    for g, s in zip(got, src):
        for i, new in enumerate(g["hash_ids"]):
            key = tuple(s["hash_ids"][:i + 1])
            assert seen.setdefault(key, new) == new and back.setdefault(new, key) == key
    # first-seen numbering
    top = -1
    for g in got:
        for h in g["hash_ids"]:
            assert h <= top + 1
            top = max(top, h)
    assert top + 1 == exp.distinct_blocks
    a = api_audit(MOONCAKE, cache_model="vllm", diagnose=False)
    b = api_audit(out, cache_model="vllm", diagnose=False)
    for s in ("simulated", "ideal"):
        assert b.scenarios[s].cached_tokens == a.scenarios[s].cached_tokens


def _words(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return {w for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]{4,}", text)}


def test_export_holds_no_text_and_no_raw_hashes(tmp_path):
    log = SAMPLES / "support_bot.jsonl"
    before = log.read_bytes()
    out = tmp_path / "trace.jsonl"
    export_trace(log, out, salt=SALT)
    assert log.read_bytes() == before  # the input is never touched
    text = out.read_text()
    recs = [json.loads(line) for line in text.splitlines()]
    assert all(set(r) == {"timestamp", "input_length", "output_length", "hash_ids"} for r in recs)
    words = {w.lower() for w in _words(log)}
    assert words and not words & {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]{4,}", text)}
    raw = set()
    for step in Pipeline([log]).steps():
        for d in chain_hashes(step.prompt.units, 4, 512, SALT, step.outcome.namespace):
            raw.add(d.hex())
            raw.add(str(int.from_bytes(d[:8], "little")))
            raw.add(str(int.from_bytes(d[:8], "big")))
    assert len(raw) > 100
    numbers = set(re.findall(r"[0-9a-f]{16,}|\d{6,}", text))
    assert not numbers & raw
    assert max(max(r["hash_ids"]) for r in recs) < len(recs) * 8  # small integers, not hashes


def test_salted_chain_hash():
    ids = np.arange(40, dtype="<u4")
    units = ids.tobytes()
    a = chain_hashes(units, 4, 8, SALT)
    assert len(a) == 5 and len(set(a)) == 5
    assert chain_hashes(units, 4, 8, SALT) == a  # deterministic for one salt
    other = chain_hashes(units, 4, 8, bytes(32))
    assert all(x != y for x, y in zip(a, other))  # another salt: every block hash differs
    unsalted = hashlib.blake2b(units[:32], digest_size=16).digest()
    assert unsalted not in a
    # chained: changing token 9 (block 1) keeps block 0 and changes every later block
    ids2 = ids.copy()
    ids2[9] = 999
    b = chain_hashes(ids2.tobytes(), 4, 8, SALT)
    assert b[0] == a[0] and all(x != y for x, y in zip(a[1:], b[1:]))
    # a namespace (another model, another cache salt) shares nothing
    assert not set(chain_hashes(units, 4, 8, SALT, "vllm/other-model")) & set(a)
    # the last block may be partial: 41 tokens make a sixth block
    assert len(chain_hashes(np.arange(41, dtype="<u4").tobytes(), 4, 8, SALT)) == 6
    with pytest.raises(Exception, match="16 bytes"):
        chain_hashes(units, 4, 8, b"short")


def test_ids_do_not_depend_on_the_salt(tmp_path):
    """Ids are first-seen integers, so exports with two salts are identical: the salt protects
    the hashes, which are never written."""
    log = SAMPLES / "rag_app.jsonl"
    a = export_trace(log, salt=SALT).records
    b = export_trace(log, salt=bytes(32)).records
    assert a == b


def test_cli_salt_file_is_private_and_reused(tmp_path):
    salt = tmp_path / "salt.hex"
    out = tmp_path / "t.jsonl"
    p = run_cli("export", str(SAMPLES / "support_bot.jsonl"), "--to", "mooncake", "-o", str(out), "--salt-file", str(salt))
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(salt.stat().st_mode) == 0o600
    key = salt.read_text().strip()
    assert len(bytes.fromhex(key)) == 32
    assert key not in p.stdout + p.stderr and "exported 160 requests" in p.stderr
    assert load_salt(salt) == bytes.fromhex(key)
    p2 = run_cli("export", str(SAMPLES / "support_bot.jsonl"), "--salt-file", str(salt))
    assert p2.returncode == 0 and salt.read_text().strip() == key
    assert p2.stdout == out.read_text()  # stdout without --output
    bad = tmp_path / "bad.hex"
    bad.write_text("zz")
    p3 = run_cli("export", str(SAMPLES / "support_bot.jsonl"), "--salt-file", str(bad))
    assert p3.returncode == 2 and "not a salt file" in p3.stderr


def test_bailian_sessions_and_block_size_errors(tmp_path):
    system = "You are a helpful travel agent. " * 40
    recs = []
    for turn in range(3):
        for user in ("ann", "bob"):
            msgs = [{"role": "system", "content": system}]
            for k in range(turn + 1):
                msgs += [{"role": "user", "content": f"{user} question {k}"}, {"role": "assistant", "content": f"answer {k}"}]
            recs.append({"timestamp": 1_790_000_000 + 60 * turn + (user == "bob"), "model": "gpt-4o", "user": user,
                         "messages": msgs[:-1]})
    log = write_jsonl(tmp_path / "chat.jsonl", recs)
    exp = export_trace(log, to="bailian", salt=SALT)
    r = exp.records
    assert [x["chat_id"] for x in r] == list(range(6))
    assert [x["turn"] for x in r] == [1, 1, 2, 2, 3, 3]
    assert [x["parent_chat_id"] for x in r] == [-1, -1, 0, 1, 2, 3]
    assert [x["timestamp"] for x in r] == [0.0, 1.0, 60.0, 61.0, 120.0, 121.0]
    assert exp.block_tokens == 16 and all(len(x["hash_ids"]) == -(-x["input_length"] // 16) for x in r)
    assert "ann" not in json.dumps(r) and "bob" not in json.dumps(r)
    p = run_cli("export", str(MOONCAKE), "--cache-model", "vllm", "--block-size", "16")
    assert p.returncode == 2 and "512-token blocks" in p.stderr
