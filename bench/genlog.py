#!/usr/bin/env python3
"""Generate fleet-size benchmark logs: agent sessions behind a gateway.

    python bench/genlog.py --requests 100000 [--out bench/out/agents_100000.jsonl] [--csv]

What is in them (deterministic for a given --seed):

- four agent apps, each with a long system prompt (about 2-4k tokens) and its own tool list
  (6-14 tools); OpenAI Chat Completions (gpt-4.1, gpt-4o-mini) and Anthropic Messages
  (claude-sonnet-4-5) bodies in gateway records with a timestamp;
- sessions whose history grows turn by turn (user message, tool call, tool result, reply);
- a share of sessions (``--volatile``, default 0.2) with the current time to the second in the
  system prompt, and some with the user's name before the shared instructions;
- prompt_cache_key per app, per user or absent; arrival times over a day with pauses.

Sizes: about 10k prompt tokens per request on average, so 100k requests hold on the order of a
billion prompt tokens (about 4 GB of JSON). ``--csv`` also writes the llmtrafficlens gateway CSV
(``request_json``, ``timestamp``) of the same requests.
"""

from __future__ import annotations

import argparse
import csv
import heapq
import random
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent


def vocabulary(rng: random.Random, n: int = 6000) -> list[str]:
    """Common English words: the lower-case whole-word tokens of o200k_base (ranks 2k-40k), so
    text tokenizes like prose (about one token per word)."""
    sys.path.insert(0, str(HERE.parent))
    from promptcache.tokenize.tiktoken_backend import load_encoding

    enc = load_encoding("o200k_base")
    words = []
    for rank in range(2000, 40000):
        w = enc.decode_single_token_bytes(rank)
        if w.startswith(b" ") and w[1:].isalpha() and w[1:].islower() and 3 <= len(w) - 1 <= 11:
            words.append(w[1:].decode())
    rng.shuffle(words)
    return sorted(words[:n])


class Text:
    """Fast pseudo-English: random words in sentences."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.words = vocabulary(rng)

    def words_(self, n: int) -> str:
        w = self.rng.choices(self.words, k=n)
        out = []
        for i in range(0, n, 12):
            s = " ".join(w[i:i + 12])
            out.append(s[:1].upper() + s[1:] + ".")
        return " ".join(out)

    def code(self, lines: int) -> str:
        r = self.rng
        return "\n".join(f"{i + 1:4d}  " + " ".join(r.choices(self.words, k=r.randint(2, 8))) + r.choice([":", "()", " = 0", ""])
                         for i in range(lines))


def make_apps(t: Text) -> list[dict]:
    r = t.rng
    apps = []
    for a in range(4):
        tools = []
        for k in range(r.randint(6, 14)):
            props = {f"p{j}": {"type": "string", "description": t.words_(r.randint(8, 20))} for j in range(r.randint(1, 4))}
            tools.append({"name": f"tool_{a}_{k}", "description": t.words_(r.randint(30, 90)),
                          "parameters": {"type": "object", "properties": props, "required": list(props)[:1]}})
        apps.append({
            "id": a, "system": f"# Agent {a} instructions\n\n" + t.words_(r.randint(1800, 3200)),
            "tools": tools,
            "model": ["gpt-4.1", "gpt-4o-mini", "gpt-4.1", "claude-sonnet-4-5"][a],
            "key_mode": ["app", "user", "none", "none"][a],
        })
    return apps


def session_requests(t: Text, app: dict, sid: int, start: float, volatile: str | None, user: str) -> list[tuple[float, dict]]:
    r = t.rng
    anthropic = app["model"].startswith("claude")
    turns = max(1, int(r.expovariate(1 / 9)) + 1)
    turns = min(turns, 40)
    history: list[dict] = []
    out = []
    now = start
    for turn in range(turns):
        system = app["system"]
        if volatile == "time":
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
            system = f"Current time: {stamp}.\n" + system
        elif volatile == "user":
            system = f"You are assisting {user}.\n" + system
        history.append({"role": "user", "content": t.words_(r.randint(10, 60))})
        if anthropic:
            tools = [{"name": x["name"], "description": x["description"], "input_schema": x["parameters"]} for x in app["tools"]]
            body = {"model": app["model"], "max_tokens": 1024, "tools": tools,
                    "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                    "messages": _anthropic_messages(history)}
        else:
            tools = [{"type": "function", "function": x} for x in app["tools"]]
            body = {"model": app["model"], "messages": [{"role": "system", "content": system}] + history, "tools": tools}
            if app["key_mode"] == "app":
                body["prompt_cache_key"] = f"app-{app['id']}"
            elif app["key_mode"] == "user":
                body["prompt_cache_key"] = user
        out.append((now, {"timestamp": round(now * 1000), "request_id": f"r{app['id']}-{sid}-{turn}",
                          "session_id": f"s{sid}", "request": body}))
        call = f"call_{sid}_{turn}"
        history.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call, "type": "function", "function": {"name": r.choice(app["tools"])["name"], "arguments": '{"p0": "x"}'}}]})
        history.append({"role": "tool", "tool_call_id": call, "content": t.code(r.randint(20, 90))})
        history.append({"role": "assistant", "content": t.words_(r.randint(20, 80))})
        now += r.choice([r.uniform(3, 60)] * 9 + [r.uniform(300, 1800)])
    return out


def _anthropic_messages(history: list[dict]) -> list[dict]:
    msgs: list[dict] = []
    for m in history:
        if m["role"] == "tool":
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}]})
        elif m["role"] == "assistant" and m.get("tool_calls"):
            tc = m["tool_calls"][0]
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": tc["id"], "name": tc["function"]["name"], "input": {"p0": "x"}}]})
        else:
            msgs.append({"role": m["role"], "content": m["content"]})
    return msgs


def generate(n: int, out: Path, *, seed: int = 7, volatile: float = 0.2, write_csv: bool = False) -> Path:
    """Write ``n`` requests (arrival order) to ``out``; returns the path."""
    rng = random.Random(seed)
    t = Text(rng)
    apps = make_apps(t)
    out.parent.mkdir(parents=True, exist_ok=True)
    heap: list[tuple[float, int, dict]] = []
    written = 0
    sid = 0
    span = 86400 * n / 100_000  # a day of traffic at 100k requests
    rate = (n / 9.5) / span  # session starts per second (about 9.5 requests per session)
    seq = 0
    clock = 1_793_000_000.0
    tmp = out.with_suffix(out.suffix + ".tmp")
    cfh = None
    cw = None
    if write_csv:
        cfh = open(out.with_suffix(".csv"), "w", newline="")
        cw = csv.writer(cfh)
        cw.writerow(["timestamp", "request_json", "model_name"])

    def emit(fh, rec: dict) -> None:
        fh.write(orjson.dumps(rec) + b"\n")
        if cw:
            cw.writerow([rec["timestamp"], orjson.dumps(rec["request"]).decode(), rec["request"]["model"]])

    with open(tmp, "wb") as fh:
        while written < n:
            clock += rng.expovariate(rate)  # sessions start in time order (a Poisson process)
            while heap and heap[0][0] < clock and written < n:
                emit(fh, heapq.heappop(heap)[2])
                written += 1
            app = apps[rng.randrange(len(apps))]
            x = rng.random()
            kind = "time" if x < volatile else "user" if x < volatile * 1.25 else None
            for when, rec in session_requests(t, app, sid, clock, kind, f"user-{rng.randrange(5000)}"):
                heapq.heappush(heap, (when, seq, rec))
                seq += 1
            sid += 1
        while heap and written < n:
            emit(fh, heapq.heappop(heap)[2])
            written += 1
    if cfh:
        cfh.close()
    tmp.replace(out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--volatile", type=float, default=0.2)
    ap.add_argument("--csv", action="store_true", help="also write the llmtrafficlens gateway CSV")
    a = ap.parse_args()
    out = a.out or HERE / "out" / f"agents_{a.requests}.jsonl"
    t0 = time.time()
    generate(a.requests, out, seed=a.seed, volatile=a.volatile, write_csv=a.csv)
    print(f"wrote {out} ({out.stat().st_size / 1e6:,.0f} MB) in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
