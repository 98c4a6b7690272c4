"""Terminal rendering of proposals: each template before and after, with its re-simulated price."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ..plurals import counted
from ..diagnose.redact import redact
from ..propose.engine import ProposeResult
from .audit_text import per_day
from .numbers import pct, usd


def render_proposals(res: ProposeResult, console: Console, *, show_text: bool = False) -> None:
    """Print every proposal (templates with changes), then the totals before and after."""
    span = res.before.span_seconds
    if not res.proposals:
        console.print("[green]No proposals: the templates behind this traffic already keep their stable content first.[/]")
        return
    console.print(Text("Proposals (each applied to every request of its template and re-simulated)", style="bold"))
    for p in res.proposals:
        t = p.plan.template
        console.print(Text.assemble((t.id, "bold"), f"  {t.namespace}  {counted(p.requests, 'request')}"
                                    + (f" ({p.unmatched:,} did not match the template and were left as they are)"
                                       if p.unmatched else "")))
        for c in p.plan.changes:
            tag = "" if c.applied else " [dim](advice, not simulated)[/]"
            console.print(f"  [cyan]{c.kind}[/] {c.where}{tag}")
            before = c.before if show_text else redact(c.before)
            after = c.after if show_text else redact(c.after)
            console.print(f"    before: {before}", markup=False, highlight=False)
            console.print(f"    after:  {after}", markup=False, highlight=False)
            console.print(f"    {c.rationale}", markup=False, highlight=False)
        b, a = p.before, p.after
        line = (f"  hit ratio {pct(b['simulated'].hit_ratio)} → {pct(a['simulated'].hit_ratio)} "
                f"(ideal after: {pct(a['ideal'].hit_ratio)}); cost {usd(b['simulated'].cost)} → {usd(a['simulated'].cost)}")
        if p.savings_usd is not None:
            line += f": saves {usd(p.savings_usd)}{per_day(p.savings_usd, span)}"
        console.print(line)
    b, a = res.before.scenarios, res.after.scenarios
    total = None if b["simulated"].cost is None or a["simulated"].cost is None else b["simulated"].cost - a["simulated"].cost
    console.print(Text.assemble(("All traffic: ", "bold"),
                                f"hit ratio {pct(b['simulated'].hit_ratio)} → {pct(a['simulated'].hit_ratio)} "
                                f"(ideal after: {pct(a['ideal'].hit_ratio)}); cost {usd(b['simulated'].cost)} → "
                                f"{usd(a['simulated'].cost)}" + (f": saves {usd(total)}{per_day(total, span)}" if total is not None else "")))
    if res.written:
        console.print(f"Proposed log written to {res.written} (audit or replay it to check).")
