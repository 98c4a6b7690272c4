"""The terminal report of an audit (Rich)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..plurals import counted
from ..pipeline import AuditResult
from .audit_records import cache_rules_cost, left_on_table, reported_evidence, reported_headline
from .numbers import duration, miss_reason, pct, usd


def per_day(v: Decimal | None, span: float | None) -> str:
    """``≈ $x/day`` at the log's rate, or ``""`` when the span is too short to say."""
    if v is None or not span or span < 60:
        return ""
    return f" (≈ {usd(v * Decimal(86400) / Decimal(str(span)))}/day at this log's rate)"


def render_audit(res: AuditResult, console: Console, *, top: int = 10) -> None:
    """Print the audit summary: scenarios, savings, miss reasons, top prefixes, namespaces."""
    n = len(res.outcomes)
    skipped = sum(st.skipped_lines for st in res.inputs)
    prompt = res.scenarios["no_cache"].prompt_tokens
    files = ", ".join(f"{st.path} ({st.format or 'no requests'})" for st in res.inputs)
    console.print(Text.assemble(("promptcache audit", "bold"), f"  {files}"))
    console.print(f"{counted(n, 'request')}, {counted(prompt, 'prompt token')}, {duration(res.span_seconds)}"
                  + (f"; [yellow]{skipped:,} malformed line(s) skipped[/]" if skipped else ""))
    for name, (exact, note) in res.tokenizers.items():
        label = "[green]exact[/]" if exact else "[yellow]approximate[/]"
        console.print(f"Tokenizer: {name} ({label}{': ' + note if note else ''})")
    for ns, r in list(res.rules.items())[:6]:
        console.print(f"Rules {ns}: {r.describe()}  [dim]{r.source} (checked {r.checked})[/]")
    if len(res.rules) > 6:
        console.print(f"[dim]… and {len(res.rules) - 6} more namespaces[/]")

    t = Table(title="Cost by scenario (input side; output tokens cost the same in every scenario)", title_justify="left")
    t.add_column("Scenario")
    t.add_column("Cached tokens", justify="right")
    t.add_column("Hit ratio (tokens)", justify="right")
    t.add_column("Hit ratio (requests)", justify="right")
    t.add_column("Cache writes", justify="right")
    t.add_column("Cost", justify="right")
    desc = {"no_cache": "no cache", "reported": "reported (log usage)", "simulated": "simulated rules",
            "ideal": "ideal (unbounded, no minimum)"}
    for name in ("no_cache", "reported", "simulated", "ideal"):
        s = res.scenarios[name]
        if name == "reported" and not s.requests:
            continue
        extra = f" ({s.requests:,} req.)" if name == "reported" and s.requests != n else ""
        t.add_row(desc[name] + extra, f"{s.cached_tokens:,}", pct(s.hit_ratio), pct(s.request_hit_ratio),
                  f"{s.cache_write_tokens:,}", usd(s.cost))
    console.print(t)
    nc, sim, ideal = res.scenarios["no_cache"].cost, res.scenarios["simulated"].cost, res.scenarios["ideal"].cost
    if nc is not None and sim is not None and ideal is not None:
        saved = nc - sim
        lost = left_on_table(res)
        rules = cache_rules_cost(res)
        content = res.accounting.cost.get("content") if res.accounting is not None else None
        split = (f": {usd(content)} to prompt changes that end the shared prefix, {usd(rules)} to the cache "
                 "rules (the simulated rules against the ideal cache)" if content else
                 " — the gap between the simulated rules and the ideal cache")
        note = ""
        if rules is not None and round(sim - ideal, 4) != round(rules, 4):
            note = (f" [dim](The scenario costs differ by {usd(sim - ideal)}, simulated against ideal: they also count"
                    " the cache writes each scenario makes on other requests.)[/]")
        console.print(f"Caching saves {usd(saved)} ({pct(float(saved / nc)) if nc else '0%'}) against no cache."
                      f" [bold]Left on the table: {usd(lost)}[/]{per_day(lost, res.span_seconds)}{split}.{note}"
                      + reported_headline(res))
    else:
        console.print("[yellow]No prices for these requests: token counts only (add prices with --prices FILE).[/]")
    if any(r.kind == "provider" and r.mode == "prefix" for r in res.rules.values()):
        console.print("[dim]Automatic provider caches route best-effort: simulated hits are an upper bound.[/]")

    reasons: dict[str, list[int]] = {}
    for o in res.outcomes:
        if o.miss_reason:
            acc = reasons.setdefault(o.miss_reason, [0, 0])
            acc[0] += o.shared_prefix_tokens - o.cached_tokens
            acc[1] += 1
    if reasons:
        console.print("Shared tokens the simulated rules do not serve, by reason: " + "; ".join(
            f"{miss_reason(k)}: {counted(v[0], 'token')} in {counted(v[1], 'request')}"
            for k, v in sorted(reasons.items(), key=lambda kv: -kv[1][0])))

    if res.top_prefixes:
        t = Table(title="Top shared prefixes, by what caching them is worth", title_justify="left")
        for col, j in (("#", "right"), ("Namespace", "left"), ("Tokens", "right"), ("Starts at", "left"),
                       ("Reused by", "right"), ("Served", "right"), ("Worth", "right"), ("Left on table", "right"),
                       ("First seen", "left")):
            t.add_column(col, justify=j)  # type: ignore[arg-type]
        for i, p in enumerate(res.top_prefixes[:top], 1):
            where = p.first_segment or "-"
            if p.last_segment and p.last_segment != p.first_segment:
                where += f" … {p.last_segment}"
            t.add_row(str(i), p.namespace, f"{p.tokens:,}", f"token {p.start_token:,}: {where}", f"{p.reused_by:,}",
                      f"{p.served:,}", usd(p.value_usd), usd(p.lost_usd), f"{Path(p.example_path).name}:{p.example_line}")
        console.print(t)

    if len(res.namespaces) > 1:
        t = Table(title="By model / namespace", title_justify="left")
        for col in ("Namespace", "Requests", "Prompt tokens", "Simulated hit", "Ideal hit", "Simulated cost", "Ideal cost"):
            t.add_column(col, justify="left" if col == "Namespace" else "right")
        rows = sorted(res.namespaces.items(), key=lambda kv: -(kv[1]["no_cache"].prompt_tokens))
        for ns, per in rows[:20]:
            t.add_row(ns, f"{per['no_cache'].requests:,}", f"{per['no_cache'].prompt_tokens:,}",
                      pct(per["simulated"].hit_ratio), pct(per["ideal"].hit_ratio), usd(per["simulated"].cost),
                      usd(per["ideal"].cost))
        if len(rows) > 20:
            t.caption = f"… {len(rows) - 20} more namespaces in --format json"
        console.print(t)

    render_inputs(res, console)
    for st in res.inputs:
        if st.skipped_lines:
            shown = "; ".join(f"{st.path}:{ln}: {r}" for ln, r in st.errors[:5])
            more = f" (and {st.skipped_lines - 5} more)" if st.skipped_lines > 5 else ""
            console.print(f"[yellow]skipped {st.skipped_lines} line(s): {shown}{more}[/]")
    for w in res.warnings:
        console.print(f"[yellow]warning:[/] {w}")


SHORT = {"content": "prompt changes", "rules": "cache rules", "reported": "reported usage"}


def render_accounting(res: AuditResult, console: Console) -> None:
    """Print where every lost token goes: per gap (prompt changes, cache rules, reported usage),
    each cause's tokens, money, requests and first log line, ``unexplained`` with its evidence."""
    acc = res.accounting
    if acc is None or not acc.total_tokens:
        return
    t = Table(title="Where the lost tokens go (each token to one cause; the rows add up to each gap)",
              title_justify="left",
              caption="prompt changes: what each request's predecessor would have served without the change; cache "
                      "rules: what an ideal cache serves and the simulated rules do not; reported usage: what the "
                      "simulation serves and the log reports as uncached", caption_justify="left")
    for col, j in (("Gap", "left"), ("Cause", "left"), ("Tokens", "right"), ("Money", "right"),
                   ("Requests", "right"), ("First", "left")):
        t.add_column(col, justify=j)  # type: ignore[arg-type]
    for gap in ("content", "rules", "reported"):
        rows = [r for r in acc.rows if r.gap == gap]
        if not rows:
            continue
        t.add_row(Text(SHORT[gap], style="bold"), "", f"{acc.gaps[gap]:,}", usd(acc.cost[gap]), "", "")
        for r in rows:
            cause = r.rule
            if r.evidence.get("miss_reasons"):
                cause += " (" + ", ".join(f"{miss_reason(k)}: {v}" for k, v in r.evidence["miss_reasons"].items()) + ")"
            if r.evidence.get("prompt_tokens_band"):
                cause += "; " + reported_evidence(r.evidence)
            t.add_row("", Text(cause, style="yellow" if r.rule == "unexplained" else ""), f"{r.tokens:,}",
                      usd(r.cost_usd), f"{r.requests:,}", f"{Path(r.path).name}:{r.line}")
    console.print(t)


def render_inputs(res: AuditResult, console: Console) -> None:
    """The inputs table: per file, its format(s) and what each of its records ended as
    (requests, usage-only, joined to another record's request, duplicates, skipped, malformed).
    Printed when any file holds more than requests, or more than one file was read."""
    rows = res.inputs
    if len(rows) == 1 and rows[0].records == rows[0].requests and rows[0].duplicate_of is None:
        return
    t = Table(title="Inputs: what each record ended as", title_justify="left")
    for col in ("File", "Format", "Records", "Requests", "Usage only", "Joined", "Duplicates", "Skipped", "Malformed"):
        t.add_column(col, justify="left" if col in ("File", "Format") else "right")
    for st in rows:
        fmts = ", ".join(st.formats) if st.formats else (st.format or ("same file as " + st.duplicate_of
                                                                      if st.duplicate_of else "-"))
        t.add_row(Text(st.path), Text(fmts), f"{st.records:,}", f"{st.requests:,}", f"{st.usage_only:,}", f"{st.joined:,}",
                  f"{st.duplicates:,}", f"{sum(st.skipped.values()):,}", f"{st.skipped_lines:,}")
    console.print(t)


def verdict_lines(ev: dict) -> list[str]:
    """The provider's own cache verdict beside a finding, and whether it agrees (the
    ``provider_*`` evidence of :func:`promptcache.diagnose.findings.verdicts`), as lines."""
    if "provider_verdict" not in ev:
        return []
    n = ev.get("provider_verdict_requests")
    out = [f"provider says: {ev['provider_verdict']}" + (f" (verdicts on {n:,} of the requests)" if n else "")]
    for text, k in (ev.get("provider_verdicts") or {}).items():
        if text != ev["provider_verdict"]:
            out.append(f"  also: {text} ({counted(k, 'request')})")
    if ev.get("provider_compared_with"):
        out.append(f"  compared with {ev['provider_compared_with']}, not the request the cause was located against")
    if ev.get("provider_disagrees"):
        out.append(f"  disagrees: {ev['provider_disagrees']}")
    elif ev.get("provider_agrees"):
        out.append("  agrees with the located cause")
    return out


def render_findings(res: AuditResult, console: Console, *, limit: int = 20) -> None:
    """Print the findings, ranked by money lost, each with where, what, how much and the fix,
    then the loss accounting."""
    acc = res.accounting
    if not res.findings:
        if acc is not None and acc.total_tokens:
            console.print(f"[yellow]No rule names a cause for {acc.total_tokens:,} lost tokens: see the "
                          "accounting below for the evidence there is.[/]")
            render_accounting(res, console)
        else:
            console.print("[green]No cache-breaking causes found.[/]")
        return
    console.print(Text("What breaks the cache (ranked by money lost under the simulated rules)", style="bold"))
    console.print("[dim]Each token lost goes to one cause: a change in the prompt (what the request's predecessor "
                  "would have served without it), a cache rule (what an ideal cache serves and the simulated rules "
                  "do not), or the reported usage (what the simulation serves and the log reports as uncached).[/]")
    colour = {"error": "red", "warning": "yellow", "info": "cyan"}
    for k, f in enumerate(res.findings[:limit], 1):
        where = f"{Path(f.path).name}:{f.line}"
        if f.segment:
            where += f"  {f.segment}"
            if f.char_offset is not None:
                where += f" @ char {f.char_offset}"
            if f.token_index is not None:
                where += f" (token {f.token_index:,})"
        console.print(Text.assemble(f"{k:>2}. ", (f.rule.code, "bold"), f" {f.rule.id} ",
                                    (f"[{f.severity}]", colour.get(f.severity, "")), f"  {where}"))
        console.print(f"    {f.message}", highlight=False)
        for side in ("before", "after"):
            if side in f.evidence:
                console.print(f"    {side + ':':7} {f.evidence[side]}", highlight=False, markup=False)
        for line in verdict_lines(f.evidence):
            console.print(f"    {line}", highlight=False, markup=False)
        if f.tokens_lost or f.cost_usd_lost:
            console.print(f"    lost: {counted(f.tokens_lost, 'token')}, {usd(f.cost_usd_lost)} over {counted(f.requests, 'request')}")
        else:
            console.print(f"    lost: no tokens of its own ({counted(f.requests, 'request')}): another cause claims them, or none are lost")
        console.print(f"    fix: {f.rule.fix.get('description')} [dim]({f.rule.fix.get('safety')})[/]")
    if len(res.findings) > limit:
        console.print(f"[dim]… {len(res.findings) - limit} more in --format json[/]")
    render_accounting(res, console)
