#!/usr/bin/env python3
"""Long texts with few or no places to cut: the audit's time against tiktoken's on the same text.

    python bench/long_texts.py [--scale 1.0] [--repeats 3] [--only base64,no-space,...]

A log can hold one huge message: a base64 attachment pasted as text, a text without spaces, a
minified JSON tool result. ``TokenMemo`` tokenizes long texts as chunks cut where tiktoken's
pre-tokenizer cannot join across (:func:`promptcache.tokenize.text_chunks`); such texts have
few or none of those places, and finding the cuts must stay linear in the text's length.

For each text (sizes as users reported them, times ``--scale``):

- ``base64``: a 4 MB base64 string in a user message;
- ``no-space``: a 10 MB text of letters without a space or newline;
- ``minified-json``: a 1.6 MB minified JSON array as a tool result;
- ``prose``: 4 MB of paragraphs of words (many places to cut: the normal case);

it prints

- ``tiktoken``: ``encode_ordinary`` of the text, once (the floor: any tokenizer-exact tool
  encodes it);
- ``chunks``: :func:`~promptcache.tokenize.text_chunks` alone;
- ``memo``: the audit's tokenizing path (``TokenMemo.encode``: cut, encode the chunks with the
  fast encoder, join), with its ratio to tiktoken; the ids are checked against tiktoken's;
- ``audit``: ``promptcache.pipeline.audit`` of a one-request log holding the text, in this
  process (read, render, tokenize, simulate, diagnose, price), with its ratio to tiktoken;
- ``growth``: the audit's time at the full size over its time at half the size (2.0 is linear;
  rescanning to the end of the text at every step of the chunker made it about 4).

Each time is the fastest of ``--repeats`` runs. tiktoken's own time grows faster than linearly
on one long piece without spaces (its byte-pair merge), so on ``no-space`` the ratio falls as
the text grows.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

MB = 1_000_000


def texts(scale: float) -> dict[str, tuple[str, bool]]:
    """name → (text, whether it is a tool result), deterministic."""
    rng = random.Random(0)
    b64 = base64.b64encode(rng.randbytes(int(4 * MB * scale) * 3 // 4)).decode()
    nospace = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=int(10 * MB * scale)))
    rows, size, i = [], 0, 0
    while size < 1.6 * MB * scale:
        row = {"id": i, "sku": f"SKU-{i:06d}", "name": f"item {i}", "tags": ["a", "b"], "price": round(i * 0.37, 2)}
        rows.append(row)
        size += len(json.dumps(row, separators=(",", ":"))) + 1
        i += 1
    minified = json.dumps(rows, separators=(",", ":"))
    words = ["the", "cache", "prefix", "token", "request", "reply", "policy", "customer", "order", "refund"]
    paras, size = [], 0
    while size < 4 * MB * scale:
        p = " ".join(rng.choice(words) for _ in range(rng.randint(20, 80))).capitalize() + "."
        paras.append(p)
        size += len(p) + 2
    return {"base64": (b64, False), "no-space": (nospace, False), "minified-json": (minified, True),
            "prose": ("\n\n".join(paras), False)}


def record(text: str, tool: bool) -> dict:
    """A one-request OpenAI Chat Completions body holding ``text``."""
    system = {"role": "system", "content": "You are a helpful assistant."}
    if not tool:
        return {"model": "gpt-4.1", "messages": [system, {"role": "user", "content": text}]}
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return {"model": "gpt-4.1", "messages": [system, {"role": "user", "content": "Look it up."},
                                             {"role": "assistant", "content": None, "tool_calls": [call]},
                                             {"role": "tool", "tool_call_id": "call_1", "content": text}]}


def fastest(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="Multiply every size (0.1: a quick run).")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default=None, help="Comma-separated text names.")
    args = ap.parse_args()

    from promptcache.pipeline import AuditOptions, audit
    from promptcache.tokenize import TokenMemo, bytes_to_ids, resolve_tokenizer, text_chunks
    from promptcache.tokenize.tiktoken_backend import load_encoding
    from promptcache import _compiled

    enc = load_encoding("o200k_base")
    tok = resolve_tokenizer("o200k_base", default=None, model=None)
    built = _compiled.status()
    print(f"build: {sum(v == 'compiled' for v in built.values())} of {len(built)} compiled modules loaded")
    print(f"{'text':14} {'chars':>11} {'tiktoken':>9} {'chunks':>8} {'memo':>8} {'x':>6} {'audit':>8} {'x':>6} {'growth':>7}")
    with tempfile.TemporaryDirectory(prefix="promptcache-bench-") as tmp:
        warm = Path(tmp) / "warm.jsonl"  # rules, prices and the encoder load once, untimed
        warm.write_text(json.dumps(record("Hello.", False)) + "\n", encoding="utf-8")
        audit([warm], AuditOptions())
        full = texts(args.scale)
        halves = texts(args.scale / 2)
        for name, (text, tool) in full.items():
            if args.only and name not in args.only.split(","):
                continue
            floor = fastest(lambda: enc.encode_ordinary(text), args.repeats)
            cut = fastest(lambda: text_chunks(text), args.repeats)
            memo = fastest(lambda: TokenMemo(tok).encode([text]), args.repeats)
            assert bytes_to_ids(TokenMemo(tok).encode([text])[0]) == enc.encode_ordinary(text), name
            times = []
            for t in (halves[name][0], text):
                log = Path(tmp) / f"{name}.jsonl"
                log.write_text(json.dumps(record(t, tool)) + "\n", encoding="utf-8")
                times.append(fastest(lambda: audit([log], AuditOptions()), args.repeats))
            print(f"{name:14} {len(text):>11,} {floor:>8.3f}s {cut:>7.3f}s {memo:>7.3f}s {memo / floor:>6.2f}"
                  f" {times[1]:>7.3f}s {times[1] / floor:>6.2f} {times[1] / times[0]:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
