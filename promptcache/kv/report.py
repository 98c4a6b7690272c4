"""The terminal report of ``promptcache kv`` (Rich). Sizes print in GiB (2**30 bytes) and
bandwidths in GB/s (10**9 bytes/s); the JSON record carries bytes."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..plurals import counted
from .memory import GiB
from .plan import KvReport


def _gib(b: float | None) -> str:
    return "-" if b is None else f"{b / GiB:,.2f} GiB"


def _tokens(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:,.0f}"


def _secs(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} µs"


def render_kv(r: KvReport, out: Console) -> None:
    """Print the report: model, KV bytes per token, budget, sweep, tiers, recompute vs load."""
    a = r.arch
    o = r.options
    title = r.preset.name if r.preset else a.name
    out.print(f"[bold]KV cache: {title}[/]")
    if r.preset:
        out.print(f"[dim]{r.preset.source} (checked {r.preset.checked})[/]")
    out.print(a.describe())
    scale = " incl. NVFP4 block scales" if o.fp4_scales else ""
    line = f"[bold]{r.kv_bytes_per_token:,}[/] bytes per token in {r.dtype} ({r.bits_per_value:g} bits per value{scale})"
    if o.tensor_parallel > 1:
        line += f" over {o.tensor_parallel} GPUs ({r.kv_bytes_per_token // o.tensor_parallel:,} per GPU)"
    out.print(line)
    if r.params is not None:
        act = f", {r.params.active / 1e9:.1f} B active per token" if r.params.active != r.params.total else ""
        out.print(f"parameters (estimated): {r.params.total / 1e9:.2f} B{act}")
    if r.weights_bytes is not None:
        src = f"{r.weights_dtype} estimate" if r.weights_source == "estimate" else r.weights_source
        out.print(f"weights: {_gib(r.weights_bytes)} ({src})")

    m = r.memory
    if m is not None:
        out.print("[bold]GPU memory budget[/]")
        t = Table(show_header=False)
        t.add_column("item")
        t.add_column("value", justify="right")
        t.add_row(f"{m.gpus} × {m.gpu_memory_bytes / GiB:g} GiB × utilization {m.utilization:g}", _gib(m.usable_bytes))
        t.add_row("− weights", _gib(m.weights_bytes))
        if m.reserved_bytes:
            t.add_row("− reserved (activations)", _gib(m.reserved_bytes))
        t.add_row("= KV cache", _gib(m.kv_cache_bytes))
        t.add_row("[bold]max tokens[/]", f"[bold]{m.max_tokens:,}[/]")
        if m.context_tokens:
            t.add_row(f"[bold]max contexts[/] of {m.context_tokens:,} tokens", f"[bold]{m.max_contexts:,}[/]")
        out.print(t)
    elif r.context_tokens:
        out.print(f"one {r.context_tokens:,}-token context: {_gib(r.kv_bytes_per_token * r.context_tokens)} "
                  "(give --gpu-memory-gb for what fits)")

    s = r.sweep
    if s is not None:
        ctx = r.context_tokens
        out.print(f"[bold]Hit ratio against KV capacity[/] ({s.engine}, {s.rules.granularity}-token blocks, LRU; "
                  f"{counted(s.requests, 'request')}, {counted(s.prompt_tokens, 'prompt token')})")
        t = Table()
        t.add_column("capacity (tokens)", justify="right")
        t.add_column("memory", justify="right")
        if ctx:
            t.add_column(f"× {_tokens(ctx)} contexts", justify="right")
        t.add_column("hit ratio", justify="right")
        gpu = m.max_tokens if m is not None else None
        for p in s.points:
            mark = " (GPU)" if gpu is not None and p.capacity_tokens == gpu else ""
            row = [f"{p.capacity_tokens:,}{mark}", _gib(p.capacity_tokens * r.kv_bytes_per_token)]
            if ctx:
                row.append(f"{p.capacity_tokens / ctx:,.1f}")
            row.append(f"{p.hit_ratio:.1%}")
            t.add_row(*row)
        row = ["unbounded", f"{_gib(s.distinct_tokens * r.kv_bytes_per_token)} working set"]
        if ctx:
            row.append("")
        row.append(f"{s.unbounded_hit_ratio:.1%}")
        t.add_row(*row, style="bold")
        out.print(t)

    if r.tiers:
        out.print("[bold]Where hits are served[/] (exclusive LRU tiers: sweep differences at cumulative capacities)")
        t = Table()
        for c in ("tier", "capacity (tokens)", "memory", "hit tokens", "of prompt tokens"):
            t.add_column(c, justify="right" if c != "tier" else "left")
        for sh in r.tiers:
            t.add_row(sh.name, f"{sh.capacity_tokens:,}", _gib(sh.capacity_tokens * r.kv_bytes_per_token),
                      f"{sh.hit_tokens:,}", f"{sh.hit_ratio:.1%}")
        if s is not None:
            miss = s.prompt_tokens - sum(sh.hit_tokens for sh in r.tiers)
            t.add_row("miss", "", "", f"{miss:,}", f"{miss / s.prompt_tokens:.1%}" if s.prompt_tokens else "-")
        out.print(t)

    for b in r.break_even:
        be = ("loading is faster at every length" if b.break_even_tokens == 0
              else f"loading beats recomputing from {b.break_even_tokens:,} tokens on")
        out.print(f"[bold]{b.tier} tier at {b.bandwidth_bytes_per_s / 1e9:g} GB/s[/] vs recompute at "
                  f"{r.gpu_tflops:g} TFLOP/s × MFU {r.mfu:g} × {o.tensor_parallel} GPU: {be}")
        t = Table()
        for c in ("prefix tokens", "recompute", "load", "faster"):
            t.add_column(c, justify="right")
        for x in b.rows:
            t.add_row(f"{x.prefix_tokens:,}", _secs(x.recompute_s), _secs(x.load_s), x.faster)
        out.print(t)
    if r.break_even:
        out.print("[dim]recompute = (2 × active layer params × L + layers × heads × (d_qk + d_v) × L²) / FLOP/s "
                  "(causal attention is quadratic in L); load = KV bytes per token × L / bandwidth[/]")
    for w in r.warnings:
        out.print(f"[yellow]warning:[/] {w}", highlight=False)
