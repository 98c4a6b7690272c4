"""Terminal rendering of proposals: each template's plan, before and after, simulated after the
plan beside the ideal after it (and what is left between them, by cause), and its cache
lifetime."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from ..plurals import counted
from ..diagnose.redact import redact
from ..propose.engine import ProposeResult
from .audit_text import per_day
from .numbers import duration, pct, usd
from .proposal_lines import gap_lines, headline, held_line, unaddressed_lines


def render_proposals(res: ProposeResult, console: Console, *, show_text: bool = False) -> None:
    """Print every proposal (templates with changes), the lifetime analysis of the other
    templates, then the totals before and after."""
    from .audit_records import proposals_record, unaddressed_record

    span = res.before.span_seconds
    acc = res.before.accounting
    head, left = unaddressed_lines(bool(res.proposals), unaddressed_record(res),
                                   acc.unexplained_tokens if acc is not None else 0)
    if not res.proposals:
        console.print(Text(head, style="yellow" if left else "green"))
        for line in left:
            console.print("  " + line, markup=False, highlight=False)
    else:
        console.print(Text("Proposals (each plan applied to every request of its template and re-simulated together)",
                           style="bold"))

    for p, rec in zip(res.proposals, proposals_record(res)):
        t = p.plan.template
        console.print(Text.assemble((t.id, "bold"), f"  {t.namespace}  {counted(p.requests, 'request')}"
                                    + (f" ({p.unmatched:,} did not match the template and were left as they are)"
                                       if p.unmatched else "")))
        for c in p.plan.changes:
            tag = "" if c.applied else (" [dim](withdrawn)[/]" if c.withdrawn else " [dim](advice, not simulated)[/]")
            console.print(f"  [cyan]{c.kind}[/] {c.where}{tag}")
            before = c.before if show_text else redact(c.before)
            after = c.after if show_text else redact(c.after)
            console.print(f"    before: {before}", markup=False, highlight=False)
            console.print(f"    after:  {after}", markup=False, highlight=False)
            console.print(f"    {c.rationale}", markup=False, highlight=False)
        b, a = p.before, p.after
        line = (f"  hit ratio {pct(b['simulated'].hit_ratio)} → {pct(a['simulated'].hit_ratio)}; "
                f"cost {usd(b['simulated'].cost)} → {usd(a['simulated'].cost)}")
        if p.savings_usd is not None:
            line += f": saves {usd(p.savings_usd)}{per_day(p.savings_usd, span)}"
        console.print(line, highlight=False)
        for line in against_ideal(rec):
            console.print(line, markup=False, highlight=False)
        if p.lifetime is not None:
            console.print(_lifetime_line(p.lifetime), markup=False, highlight=False)
    if res.proposals and left:
        console.print(Text(head, style="bold"))
        for line in left:
            console.print("  " + line, markup=False, highlight=False)
    others = {tid: c for tid, c in res.lifetimes.items()
              if tid not in {p.plan.template.id for p in res.proposals}}
    if others:
        console.print(Text("Cache lifetime of the other templates", style="bold"))
        for tid, c in others.items():
            console.print(f"  {tid}: " + _lifetime_line(c).strip(), markup=False, highlight=False)
    b, a = res.before.scenarios, res.after.scenarios
    total = None if b["simulated"].cost is None or a["simulated"].cost is None else b["simulated"].cost - a["simulated"].cost
    console.print(Text.assemble(("All traffic: ", "bold"),
                                f"hit ratio {pct(b['simulated'].hit_ratio)} → {pct(a['simulated'].hit_ratio)} "
                                f"(ideal after: {pct(a['ideal'].hit_ratio)}); cost {usd(b['simulated'].cost)} → "
                                f"{usd(a['simulated'].cost)}" + (f": saves {usd(total)}{per_day(total, span)}" if total is not None else "")))
    if res.written:
        console.print(f"Proposed log written to {res.written} (audit or replay it to check).")


def against_ideal(rec: dict[str, Any]) -> list[str]:
    """Simulated after the plan beside the ideal after it; the tokens between them, and those
    still in the prompts, by cause (the proposed log's loss accounting); what the provider's
    limits hold back."""
    out = ["  " + headline(rec)]
    held = held_line(rec)
    if held:
        out.append("    " + held)
    for head, lines in gap_lines(rec):
        out.append("    " + head + ":")
        out += ["      " + x for x in lines]
    return out


def _lifetime_line(c: Any) -> str:
    """The lifetime optimiser's answer in one line."""
    cur, best = c.current, c.best
    if best is cur:
        nxt = next((r for r in c.ranked if r.policy.name != cur.policy.name), None)
        out = f"  cache lifetime: {cur.policy.name} is the cheapest ({usd(cur.total)})"
        if nxt is not None:
            out += f"; next {nxt.policy.name} {usd(nxt.total)}"
    else:
        out = (f"  cache lifetime: {best.policy.name} instead of {cur.policy.name}: {usd(cur.total)} → {usd(best.total)}"
               + (f" ({usd(c.per_day)}/day)" if c.per_day is not None else ""))
        if best.pings:
            out += f", {best.pings:,} keep-alive requests"
        if c.wins_on:
            lo, hi, level = c.wins_on
            where = "in a conversation" if level == "conversation" else "between the template's requests"
            out += f"; pays on pauses {where} from {duration(lo)} to {duration(hi)} (break-even gap {duration(hi)})"
        if c.losing:
            out += f"; costs more on {len(c.losing):,} request{'' if len(c.losing) == 1 else 's'}"
    for name, gaps in (("in conversations", c.gaps), ("between requests", c.template_gaps)):
        if gaps:
            g = sorted(gaps)
            out += f"; pauses {name} {duration(g[0])} to {duration(g[-1])}, median {duration(g[len(g) // 2])}"
    return out


