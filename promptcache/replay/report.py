"""Replay reports: the ``promptcache.replay/v1`` JSON record and the terminal text."""

from __future__ import annotations

from typing import Any

from ..plurals import counted
from ..report.numbers import speed
from .verify import ReplayRecord, ReplayResult, Summary

SCHEMA = "promptcache.replay/v1"


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(x, nd)


def summary_record(s: Summary) -> dict[str, Any]:
    """JSON of a :class:`Summary` (tokens; seconds; ratios)."""
    return {
        "requests": s.requests, "prompt_tokens": s.prompt_tokens,
        "cached_tokens_simulated": s.cached_tokens_simulated, "cached_tokens_measured": s.cached_tokens_measured,
        "agreeing_requests": s.agreeing_requests,
        "prefill_s": _r(s.prefill_s), "prefill_s_uncached": _r(s.prefill_s_uncached),
        "ttft_s": _r(s.ttft_s), "ttft_s_uncached": _r(s.ttft_s_uncached),
        "prefill_speedup": _r(s.prefill_speedup, 4), "ideal_speedup": _r(s.ideal_speedup, 4),
        "speedup_ratio": _r(s.speedup_ratio, 4), "outputs_match_ratio": _r(s.outputs_match_ratio, 4),
        "max_logits_diff": s.max_logits_diff,
    }


def request_record(r: ReplayRecord) -> dict[str, Any]:
    """JSON of one replayed request."""
    d: dict[str, Any] = {
        "id": r.id, "variant": r.variant, "path": r.path, "line": r.line, "namespace": r.namespace,
        "prompt_tokens": r.prompt_tokens, "cached_tokens_simulated": r.cached_tokens_simulated,
        "cached_tokens_measured": r.cached_tokens_measured, "prefill_s": _r(r.prefill_s),
        "prefill_s_uncached": _r(r.prefill_s_uncached), "ttft_s": _r(r.ttft_s), "ttft_s_uncached": _r(r.ttft_s_uncached),
        "outputs_match": r.outputs_match, "logits_max_abs_diff": r.logits_max_abs_diff, "output_ids": r.output_ids,
    }
    if r.variant == "proposed":
        d["output_same_as_original"] = r.output_same_as_original
        d["output_common_prefix_tokens"] = r.output_common_prefix_tokens
    return d


def replay_record(res: ReplayResult, *, include_requests: bool = True) -> dict[str, Any]:
    """The ``promptcache.replay/v1`` JSON document of a result.

    Keys: ``schema``, ``engine``, ``model``, ``block_size``, ``device``, ``exact``,
    ``capacity_tokens``, ``inputs``, ``info``, ``requests`` (per request: ``id``, ``variant``,
    ``prompt_tokens``, ``cached_tokens_simulated``, ``cached_tokens_measured``, ``prefill_s``,
    ``prefill_s_uncached``, ``outputs_match`` and more), ``summary`` (all requests:
    ``cached_tokens_simulated``, ``cached_tokens_measured``, ``prefill_speedup``,
    ``ideal_speedup``, ``outputs_match_ratio`` and more), ``variants`` (the same per variant),
    ``proposal`` (output changes, or ``null``), ``ok``, ``warnings``.
    """
    prop = res.proposal
    out: dict[str, Any] = {
        "schema": SCHEMA, "engine": res.engine, "model": res.model, "block_size": res.block_size,
        "device": res.device, "exact": res.exact, "capacity_tokens": res.capacity_tokens,
        "decode_tokens": res.decode_tokens, "inputs": res.inputs, "info": res.info,
    }
    if include_requests:
        out["requests"] = [request_record(r) for r in res.records]
    out["summary"] = summary_record(res.summary())
    out["variants"] = {v: summary_record(res.summary(v)) for v in res.inputs}
    out["proposal"] = None if prop is None else {
        "compared": prop.compared, "outputs_changed": prop.changed, "outputs_changed_ratio": _r(prop.changed_ratio, 4),
        "mean_common_prefix_tokens": _r(prop.mean_common_prefix_tokens, 3), "decode_tokens": prop.decode_tokens}
    out["ok"] = res.ok
    out["warnings"] = list(res.warnings)
    return out


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}×"


def _s(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f} s"


def render_replay(res: ReplayResult, console: Any, *, per_request: bool | None = None) -> None:
    """Print a replay result on a Rich console.

    Args:
        res: the result.
        console: a ``rich.console.Console``.
        per_request: print the per-request table (default: when at most 40 requests).
    """
    from rich.table import Table

    info = res.info
    cap = f"{res.capacity_tokens:,} tokens" if res.capacity_tokens is not None else "unbounded"
    console.print(f"[bold]promptcache replay[/]  engine [bold]{res.engine}[/]  model {res.model}  device {res.device}"
                  + (f" ({info['dtype']})" if info.get("dtype") else ""), highlight=False)
    budget = info.get("kv_budget_bytes")
    console.print(f"Prefix cache: {res.block_size}-token blocks, capacity {cap}"
                  + (f" (KV budget {budget:,} bytes at {info['kv_bytes_per_token']:,} bytes/token)" if budget else "")
                  + f"; {res.decode_tokens} greedy tokens per request", highlight=False)
    for v, paths in res.inputs.items():
        console.print(f"{v}: {', '.join(paths)}", highlight=False)
    if per_request is None:
        per_request = len(res.records) <= 40
    if per_request and res.records:
        t = Table(title="Per request", title_justify="left")
        for col, j in (("variant", "left"), ("id", "left"), ("prompt", "right"), ("cached sim", "right"),
                       ("cached meas", "right"), ("prefill cached", "right"), ("prefill uncached", "right"),
                       ("speedup", "right"), ("ideal", "right"), ("outputs", "left")):
            t.add_column(col, justify=j)  # type: ignore[arg-type]
        for r in res.records:
            sp = r.prefill_s_uncached / r.prefill_s if r.prefill_s_uncached is not None and r.prefill_s > 0 else None
            rest = r.prompt_tokens - r.cached_tokens_measured
            ideal = r.prompt_tokens / rest if rest > 0 else None
            meas = f"{r.cached_tokens_measured:,}" if r.agree else f"[red]{r.cached_tokens_measured:,}[/]"
            outs = {None: "–", True: "match", False: "[red]DIFFER[/]"}[r.outputs_match]
            if r.variant == "proposed" and r.output_same_as_original is not None:
                outs += "; = original" if r.output_same_as_original else "; ≠ original"
            t.add_row(r.variant, r.id, f"{r.prompt_tokens:,}", f"{r.cached_tokens_simulated:,}", meas,
                      _s(r.prefill_s), _s(r.prefill_s_uncached), _x(sp), _x(ideal), outs)
        console.print(t)
    t = Table(title="Summary", title_justify="left")
    for col in ("variant", "requests", "prompt tokens", "cached sim", "cached meas", "agree",
                "prefill cached", "prefill uncached", "speedup", "ideal", "of ideal", "outputs match"):
        t.add_column(col, justify="left" if col == "variant" else "right")
    rows = [(v, res.summary(v)) for v in res.inputs]
    if len(rows) > 1:
        rows.append(("all", res.summary()))
    for name, s in rows:
        omr = s.outputs_match_ratio
        t.add_row(name, f"{s.requests:,}", f"{s.prompt_tokens:,}", f"{s.cached_tokens_simulated:,}",
                  f"{s.cached_tokens_measured:,}", f"{s.agreeing_requests}/{s.requests}", _s(s.prefill_s),
                  _s(s.prefill_s_uncached), _x(s.prefill_speedup), _x(s.ideal_speedup),
                  "–" if s.speedup_ratio is None else f"{s.speedup_ratio:.2f}",
                  "–" if omr is None else f"{omr:.0%}")
    console.print(t)
    s = res.summary()
    if res.exact:
        bad = res.disagreements
        if bad:
            console.print(f"[red]Simulated and measured cached tokens DISAGREE on {len(bad)} of {s.requests} request(s)[/] "
                          f"(first: {bad[0].variant} {bad[0].id}: simulated {bad[0].cached_tokens_simulated:,}, "
                          f"measured {bad[0].cached_tokens_measured:,}): a bug in the engine or the simulator.",
                          highlight=False)
        else:
            console.print(f"Simulated and measured cached tokens agree exactly on all {s.requests} request(s).",
                          highlight=False)
    else:
        console.print(f"Measured {s.cached_tokens_measured:,} cached tokens vs {s.cached_tokens_simulated:,} simulated "
                      f"({s.agreeing_requests}/{counted(s.requests, 'request')} equal; the {res.engine} engine's own capacity and "
                      "scheduling are not modelled exactly).", highlight=False)
    if s.outputs_compared:
        mism = res.mismatched_outputs
        diff = f" (largest last-token logit difference {s.max_logits_diff:.2e})" if s.max_logits_diff is not None else ""
        if mism:
            dtype = str(info.get("dtype") or "")
            why = (f"{dtype} rounding alone flips near-tied tokens (cached and uncached prefills run different "
                   "kernels): rerun with --dtype float32 to tell a wrong cache from rounding"
                   if dtype in ("bfloat16", "float16") else "the cache is wrong (or the numerics of this device are)")
            console.print(f"[red]Greedy tokens with and without the cache DIFFER on {len(mism)} of {s.outputs_compared} "
                          f"request(s)[/]{diff}: {why}.", highlight=False)
        else:
            console.print(f"Greedy tokens with and without the cache are identical on all {s.outputs_compared} "
                          f"request(s){diff}.", highlight=False)
    for name, vs in rows:
        if vs.prefill_speedup is not None and vs.ideal_speedup is not None:
            console.print(f"{name}: prefill {speed(vs.prefill_speedup)} with the cache; the cached fraction "
                          f"({vs.cached_tokens_measured / vs.prompt_tokens:.1%}) implies {vs.ideal_speedup:.2f}× "
                          f"→ {vs.speedup_ratio:.2f} of ideal.", highlight=False)
    prop = res.proposal
    if prop is not None and prop.compared:
        console.print(f"Proposal: greedy output changed on {prop.changed} of {prop.compared} request(s) "
                      f"(mean {prop.mean_common_prefix_tokens:.1f} of {prop.decode_tokens} leading tokens unchanged).",
                      highlight=False)
    for w in res.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
