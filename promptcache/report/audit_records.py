"""One serialization of an :class:`~promptcache.audit.AuditResult`: the ``promptcache.audit/v1``
record every machine format (JSON, CSV, ...) is built from."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..pipeline import SCENARIOS, AuditResult, ScenarioTotals
from .numbers import usd

SCHEMA = "promptcache.audit/v1"


def money(v: Decimal | None) -> float | None:
    """USD as a JSON number rounded to 1e-6 (``None`` stays ``None``)."""
    return None if v is None else float(round(v, 6))


def scenario_record(t: ScenarioTotals) -> dict[str, Any]:
    """A scenario block: tokens, hit ratios and cost."""
    return {
        "requests": t.requests,
        "prompt_tokens": t.prompt_tokens,
        "cached_tokens": t.cached_tokens,
        "cache_write_tokens": t.cache_write_tokens,
        "uncached_tokens": t.uncached_tokens,
        "hit_ratio": round(t.hit_ratio, 6),
        "request_hit_ratio": round(t.request_hit_ratio, 6),
        "cost_usd": money(t.cost),
        "priced_requests": t.priced_requests,
    }


def cache_rules_cost(res: AuditResult) -> Decimal | None:
    """What the cache rules keep from the ideal cache, in USD: the accounting's ``rules`` gap (the
    sum of its rows, each request's tokens priced as reads instead of what the simulation billed
    for them), so the headline and the accounting table give one amount. Without an accounting,
    the simulated scenario's cost minus the ideal's. ``None`` when unpriced."""
    sim, ideal = res.scenarios["simulated"].cost, res.scenarios["ideal"].cost
    if sim is None or ideal is None:
        return None
    if res.accounting is None:
        return sim - ideal
    return res.accounting.cost.get("rules") or Decimal(0)


def left_on_table(res: AuditResult) -> Decimal | None:
    """What the log could save, in USD: the accounting's ``rules`` gap (:func:`cache_rules_cost`)
    plus its ``content`` gap (what the prompt changes the diagnosis located cost: the same traffic
    without them). The two gaps are disjoint by construction
    (:mod:`promptcache.diagnose.accounting`), so the headline is the sum of the table's rows in
    those gaps. ``None`` when unpriced."""
    rules = cache_rules_cost(res)
    if rules is None:
        return None
    content = res.accounting.cost.get("content") if res.accounting is not None else None
    return rules + (content or Decimal(0))


def reported_headline(res: AuditResult) -> str:
    """The headline's sentence on the reported-usage gap (what the simulation serves and the
    log's usage reports as uncached, which 'left on the table' does not count), or ``""`` when
    there is none."""
    acc = res.accounting
    if acc is None or not acc.gaps.get("reported"):
        return ""
    c = acc.cost.get("reported")
    unexplained = sum(r.tokens for r in acc.rows if r.gap == "reported" and r.rule == "unexplained")
    return (f" The log's usage reports {acc.gaps['reported']:,} tokens uncached that the simulation serves"
            + (f" ({usd(c)} more billed)" if c is not None else "")
            + (f", {unexplained:,} of them unexplained" if unexplained else "") + ": the reported-usage gap.")


def reported_evidence(ev: dict[str, Any]) -> str:
    """An unexplained reported gap's evidence (:func:`promptcache.diagnose.accounting.build`) in
    words: the models, the prompt size band, and how many requests only append to their
    predecessor or read nothing."""
    return (f"{', '.join(ev.get('models') or ['-'])}, prompts of {ev['prompt_tokens_band']} tokens, "
            f"prefix unchanged on {ev.get('prefix_unchanged_requests', 0)}, reported 0 cached on "
            f"{ev.get('reported_zero_requests', 0)}")


def _savings(res: AuditResult) -> dict[str, Any]:
    sim, nc, ideal = res.scenarios["simulated"], res.scenarios["no_cache"], res.scenarios["ideal"]
    acc = res.accounting
    left = left_on_table(res)
    rules = cache_rules_cost(res)
    return {
        "simulated_vs_no_cache": money(nc.cost - sim.cost) if nc.cost is not None and sim.cost is not None else None,
        "left_on_table": money(left) if left is not None else None,
        "cache_rules": money(rules) if rules is not None else None,
        # the scenario table's difference: it also counts the cache writes each scenario makes
        # on other requests, so it is not what the rules gap's rows add up to
        "simulated_vs_ideal": money(sim.cost - ideal.cost) if sim.cost is not None and ideal.cost is not None else None,
        "prompt_changes": money(acc.cost["content"]) if acc is not None and acc.cost.get("content") is not None else None,
        # what the simulation serves and the log reports as uncached (not in left_on_table)
        "reported_gap": money(acc.cost["reported"]) if acc is not None and acc.cost.get("reported") is not None else None,
    }


def audit_record(res: AuditResult, *, include_requests: bool = True, detail: bool = False) -> dict[str, Any]:
    """The whole audit as plain JSON-able data (schema ``promptcache.audit/v1``).

    Args:
        res: the audit.
        include_requests: add the per-request array.
        detail: also add what the HTML, Markdown and table reports draw: ``series`` (the time
            series of :func:`~promptcache.report.series.time_series`) and, per request,
            ``index``, ``provider``, ``output_tokens`` and ``cost_usd`` (USD per scenario,
            ``None`` when unpriced), and ``summary.savings_usd.left_on_table_per_day`` (at the
            log's rate; ``None`` for spans under a minute). ``--format json`` leaves them out.
    """
    sc = {name: scenario_record(t) for name, t in res.scenarios.items() if name != "reported" or t.requests}
    sim, nc, ideal = res.scenarios["simulated"], res.scenarios["no_cache"], res.scenarios["ideal"]
    summary: dict[str, Any] = {
        "requests": len(res.outcomes),
        "prompt_tokens": sum(o.prompt_tokens for o in res.outcomes),
        "tokenizer": {
            "name": ", ".join(res.tokenizers) or None,
            "exact": res.tokenizer_exact,
            "notes": [n for _, n in res.tokenizers.values() if n],
        },
        "scenarios": sc,
        "savings_usd": _savings(res),
        "span_seconds": res.span_seconds,
        "prices": res.prices_source,
        "unpriced_models": res.unknown_models,
        "miss_reasons": _reasons(res),
        "upper_bound_note": "automatic provider caches route best-effort: simulated hits are an upper bound",
    }
    rec: dict[str, Any] = {
        "schema": SCHEMA,
        "inputs": [st.record() for st in res.inputs],
        "summary": summary,
        "rules": {ns: {"provider": r.provider, "mode": r.mode, "min_tokens": r.min_tokens, "granularity": r.granularity,
                       "ttl_seconds": r.ttl_seconds, "capacity_tokens": r.capacity_tokens, "bills_writes": r.bills_writes,
                       "source": r.source, "checked": r.checked} for ns, r in res.rules.items()},
        "namespaces": [{"namespace": ns, **{k: scenario_record(v) for k, v in per.items()}} for ns, per in res.namespaces.items()],
        "top_prefixes": [{"namespace": p.namespace, "start_token": p.start_token, "tokens": p.tokens,
                          "reused_by": p.reused_by, "served_by_simulated": p.served,
                          "first_segment": p.first_segment, "last_segment": p.last_segment,
                          "example": {"id": p.example_id, "path": p.example_path, "line": p.example_line},
                          "value_usd": money(p.value_usd), "realized_usd": money(p.realized_usd),
                          "lost_usd": money(p.lost_usd)} for p in res.top_prefixes],
        "warnings": res.warnings,
        "findings": [f.to_record() if hasattr(f, "to_record") else f for f in res.findings],
        "accounting": res.accounting.to_record() if res.accounting is not None else None,
    }
    costs = None
    if detail:
        from .series import per_request_costs, time_series

        costs = per_request_costs(res)
        rec["series"] = time_series(res, costs=costs)
        span = res.span_seconds
        left = left_on_table(res)
        summary["savings_usd"]["left_on_table_per_day"] = (
            money(left * Decimal(86400) / Decimal(str(span))) if left is not None and span and span >= 60 else None)
    if include_requests:
        rec["requests"] = [_request(o) for o in res.outcomes]
        if costs is not None:
            for r, o, c in zip(rec["requests"], res.outcomes, costs):
                r["index"] = o.index
                r["provider"] = o.provider
                r["output_tokens"] = o.output_tokens
                r["cost_usd"] = {s: (None if v[3] is None else float(round(v[3], 9))) for s, v in c.items()}
    return rec


def _reasons(res: AuditResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in res.outcomes:
        if o.miss_reason:
            out[o.miss_reason] = out.get(o.miss_reason, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _request(o: Any) -> dict[str, Any]:
    d = o.divergence
    rec = {
        "id": o.id, "path": o.path, "line": o.line, "namespace": o.namespace, "model": o.model,
        "arrival": o.arrival, "prompt_tokens": o.prompt_tokens, "cached_tokens": o.cached_tokens,
        "cache_write_tokens": o.write_tokens, "shared_prefix_tokens": o.shared_prefix_tokens,
        "divergence": None if d is None else {"segment": d.segment, "char_offset": d.char_offset, "token_index": d.token_index},
        "diverged_from": o.diverged_from, "miss_reason": o.miss_reason,
    }
    if o.usage is not None:
        rec["reported"] = {"input_tokens": o.usage.input_tokens, "cached_tokens": o.usage.cache_read_tokens,
                           "cache_write_tokens": o.usage.cache_write_tokens}
    if o.flags:
        rec["flags"] = list(o.flags)
    return rec


def proposals_record(res: Any) -> list[dict[str, Any]]:
    """The ``proposals`` array: one item per template with changes (``ProposeResult``).

    Each item: ``template_id``, ``namespace``, ``requests``, ``unmatched_requests``, ``changes``,
    ``before`` and ``after`` (scenario blocks; ``after`` simulates the proposed log, keep-alive
    requests included), ``savings_usd`` and ``savings_usd_per_day``, ``after_ideal_share``
    (simulated cached tokens after the plan over the ideal's after it), ``attainable_tokens``
    (the ideal's within the provider's minimum and hit granularity), ``remaining`` (what is left
    after the plan: the loss accounting of the proposed log on the template's requests, each
    gap's causes adding up to it; :meth:`~promptcache.propose.remaining.Remaining.to_record`),
    ``lifetime`` (:func:`lifetime_record`, or ``None``) and ``remaining_findings`` (what
    the diagnosis still finds on the template's proposed requests).
    """
    span = res.before.span_seconds
    out = []
    for p in res.proposals:
        sav = p.savings_usd
        out.append({
            "template_id": p.plan.template.id,
            "namespace": p.plan.template.namespace,
            "requests": p.requests,
            "unmatched_requests": p.unmatched,
            "changes": [c.to_record() for c in p.plan.changes],
            "before": {k: scenario_record(v) for k, v in p.before.items() if k != "reported"},
            "after": {k: scenario_record(v) for k, v in p.after.items() if k != "reported"},
            "savings_usd": money(sav),
            "savings_usd_per_day": money(sav * Decimal(86400) / Decimal(str(span))) if sav is not None and span and span >= 60 else None,
            "after_ideal_share": None if p.ideal_share is None else round(p.ideal_share, 6),
            "attainable_tokens": p.attainable_tokens,
            "remaining": p.remaining.to_record(),
            "lifetime": lifetime_record(p.lifetime),
            "remaining_findings": [{"rule": f.rule.id, "message": f.message, "requests": f.requests,
                                    "tokens_lost": f.tokens_lost, "cost_usd_lost": money(f.cost_usd_lost)}
                                   for f in p.findings_after],
        })
    return out


def unaddressed_record(res: Any) -> list[dict[str, Any]]:
    """The ``unaddressed`` array: the findings of the log as it is that lose tokens and that no
    proposal addresses (``ProposeResult.unaddressed``), largest loss first; each item
    :meth:`~promptcache.propose.unaddressed.Unaddressed.to_record`."""
    return [u.to_record() for u in res.unaddressed]


def lifetime_record(choice: Any) -> dict[str, Any] | None:
    """A template's cache-lifetime analysis (:class:`~promptcache.propose.lifetime.Choice`):
    ``current`` and ``best`` (``policy``, ``cost_usd``, ``keepalive_requests``), ``ranked``
    (the five cheapest), ``saves_usd``, ``saves_usd_per_day``, ``wins_on_seconds`` (the pauses
    ``[from, to]`` on which the best policy serves a cached token more cheaply),
    ``wins_at`` (``conversation`` or ``anchor``: which entries it keeps alive), ``break_even_gap_seconds``
    (``to``), ``losing_requests`` and ``losing_lines`` (the first 20 lines of the input log
    where it costs more), ``gaps_seconds`` and ``template_gaps_seconds`` (``min``, ``median``,
    ``max`` of the pauses in conversations and between the template's requests), or ``None``."""
    if choice is None:
        return None

    def one(c: Any) -> dict[str, Any]:
        return {"policy": c.policy.name, "cost_usd": money(c.total), "keepalive_requests": c.pings}

    def spread(xs: list[float]) -> dict[str, float] | None:
        g = sorted(xs)
        return {"min": g[0], "median": g[len(g) // 2], "max": g[-1]} if g else None

    return {
        "current": one(choice.current),
        "best": one(choice.best),
        "ranked": [one(c) for c in choice.ranked[:5]],
        "saves_usd": money(choice.saves),
        "saves_usd_per_day": money(choice.per_day),
        "wins_on_seconds": list(choice.wins_on[:2]) if choice.wins_on else None,
        "wins_at": choice.wins_on[2] if choice.wins_on else None,
        "break_even_gap_seconds": choice.wins_on[1] if choice.wins_on else None,
        "losing_requests": len(choice.losing),
        "losing_lines": [choice.visit_lines[i] for i in choice.losing[:20]],
        "gaps_seconds": spread(choice.gaps),
        "template_gaps_seconds": spread(choice.template_gaps),
    }


def lifetimes_record(res: Any) -> list[dict[str, Any]]:
    """The ``lifetimes`` array: every template the lifetime optimiser weighed, with its id."""
    return [{"template_id": tid, **(lifetime_record(c) or {})} for tid, c in res.lifetimes.items()]
