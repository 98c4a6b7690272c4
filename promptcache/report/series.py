"""Per-request costs and the time series the charts draw, computed once from an audit result.

Prices come from :func:`promptcache.pipeline.request_costs`, the same function that totals the
scenarios, so a chart and the summary can never disagree about what a request cost.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..pipeline import SCENARIOS, AuditResult, request_costs
from ..pricing import PriceBook

#: Bins of the time series (fewer when the log has fewer requests).
BINS = 50


def per_request_costs(res: AuditResult) -> list[dict[str, tuple[int, int, int, Decimal | None]]]:
    """Every request priced under every scenario, in arrival order.

    Returns:
        One dict per outcome: ``{scenario: (prompt_tokens, cached_tokens, billed_write_tokens,
        cost_usd or None)}`` (``reported`` only for requests whose log has usage).
    """
    book = res.book or PriceBook()
    return [request_costs(o, res.rules, book) for o in res.outcomes]


def time_series(res: AuditResult, bins: int = BINS,
                costs: list[dict[str, tuple[int, int, int, Decimal | None]]] | None = None) -> dict[str, Any]:
    """Bucket the requests by arrival into equal time bins (by arrival index when some request
    has no arrival time), with per-scenario tokens and cost per bin.

    Args:
        res: the audit.
        bins: the most bins (at most one per request).
        costs: :func:`per_request_costs` of ``res`` when already computed.

    Returns:
        ``{"axis": "time"|"request", "start", "end", "bin_width", "bins": [{"start", "end",
        "requests", "scenarios": {name: {"requests", "prompt_tokens", "cached_tokens",
        "hit_ratio" (None for an empty bin), "cost_usd" (float, None when unpriced),
        "cumulative_cost_usd" (cost from the first bin to this one)}}}]}``;
        ``start``/``end`` are UTC epoch seconds on the time axis, arrival indices otherwise.
        Empty bins are kept, so bins are evenly spaced. ``reported`` appears when the log has
        usage.
    """
    outs = res.outcomes
    costs = costs if costs is not None else per_request_costs(res)
    names = [s for s in SCENARIOS if s != "reported" or res.scenarios["reported"].requests]
    n = len(outs)
    if n == 0:
        return {"axis": "request", "start": 0, "end": 0, "bin_width": 0, "bins": []}
    timed = all(o.arrival is not None for o in outs)
    if timed:
        xs = [float(o.arrival) for o in outs]  # type: ignore[arg-type]
        axis = "time"
    else:
        xs = [float(o.index) for o in outs]
        axis = "request"
    lo, hi = min(xs), max(xs)
    k = max(1, min(bins, n))
    if hi <= lo:
        k = 1
    width = (hi - lo) / k if hi > lo else 0.0
    acc = [{s: [0, 0, 0, Decimal(0), 0] for s in names} for _ in range(k)]
    count = [0] * k
    for x, c in zip(xs, costs):
        b = min(int((x - lo) / width), k - 1) if width else 0
        count[b] += 1
        for s in names:
            if s not in c:
                continue
            prompt, cached, _, cost = c[s]
            a = acc[b][s]
            a[0] += 1
            a[1] += prompt
            a[2] += cached
            if cost is not None:
                a[3] += cost
                a[4] += 1
    out = []
    running = {s: Decimal(0) for s in names}
    seen = {s: 0 for s in names}
    for b in range(k):
        sc = {}
        for s in names:
            req, prompt, cached, cost, priced = acc[b][s]
            running[s] += cost
            seen[s] += priced
            sc[s] = {"requests": req, "prompt_tokens": prompt, "cached_tokens": cached,
                     "hit_ratio": round(cached / prompt, 6) if prompt else None,
                     "cost_usd": float(round(cost, 9)) if priced else None,
                     "cumulative_cost_usd": float(round(running[s], 9)) if seen[s] else None}
        out.append({"start": lo + b * width, "end": lo + (b + 1) * width if width else hi,
                    "requests": count[b], "scenarios": sc})
    return {"axis": axis, "start": lo, "end": hi, "bin_width": width, "bins": out}
