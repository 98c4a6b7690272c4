"""The Markdown report: a compact GitHub-flavoured summary for pull-request comments, rendered
from the audit record and, when there are any, the proposals record.

Log-derived text (paths, segments, models, messages, evidence, fixes) goes through :func:`md`,
so a value cannot break a table, open a code span, inject HTML or mention a user.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from ..plurals import counted
from .numbers import pct, usd
from .terminal import safe

LABELS = {"no_cache": "no cache", "reported": "reported (log usage)", "simulated": "simulated rules",
          "ideal": "ideal (unbounded, no minimum)"}
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md(v: Any, width: int | None = None) -> str:
    """Escape a value for Markdown text and table cells: backslash-escapes Markdown
    punctuation (``|``, backticks, ``*``, ``_``, brackets ...), turns ``<``/``&`` into entities,
    line breaks into ``⏎``, control characters into their escapes (``\\x1b``:
    :func:`~promptcache.report.terminal.safe`, the report is read in terminals too) and ``@``
    into ``@`` + zero-width space (no mentions). Long text is cut to ``width`` characters."""
    if v is None:
        return ""
    s = safe(str(v).replace("\r\n", "\n").replace("\r", "\n").replace("\n", "⏎"))
    if width is not None and len(s) > width:
        s = s[:width - 1] + "…"
    s = s.replace("&", "&amp;").replace("<", "&lt;")
    s = _SPECIAL.sub(r"\\\1", s)
    return s.replace("@", "@\u200b")


GAPS = {"content": "prompt changes", "rules": "cache rules", "reported": "reported usage"}


def inputs_table(inputs: list[dict[str, Any]]) -> list[str]:
    """The inputs table (what each record ended as, per file) as Markdown lines, when any file
    holds more than requests; empty otherwise."""
    if all(i.get("records", i["requests"]) == i["requests"] and not i.get("duplicate_of") for i in inputs):
        return []
    out = ["", "| file | format | records | requests | usage only | joined | duplicates | skipped | malformed |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for i in inputs:
        fmts = ", ".join(md(f) for f in i.get("formats") or ()) or md(i.get("format") or "-")
        out.append(f"| {md(Path(i['path']).name)} | {fmts} | {i.get('records', 0):,} | {i['requests']:,} | "
                   f"{i.get('usage_only', 0):,} | {i.get('joined', 0):,} | {i.get('duplicates', 0):,} | "
                   f"{sum((i.get('skipped') or {}).values()):,} | {i['skipped_lines']:,} |")
    return out


def render_markdown(rec: dict[str, Any], proposals: Sequence[dict[str, Any]] | None = None, *,
                    after: dict[str, Any] | None = None, findings: int = 5,
                    unaddressed: Sequence[dict[str, Any]] = ()) -> str:
    """The summary: scenarios, savings, the top findings with location and fix, proposals.

    Args:
        rec: the audit record (``audit_record``; ``detail`` adds the per-day figure).
        proposals: ``proposals_record(...)``, or ``None`` when proposals were not asked for.
        after: scenario records of the proposed log.
        findings: how many findings to list.
        unaddressed: ``unaddressed_record(...)``: findings no proposal addresses.

    Returns:
        Markdown text ending in a newline.
    """
    s = rec["summary"]
    sc = s["scenarios"]
    files = ", ".join(md(Path(st["path"]).name) for st in rec["inputs"])
    out = [f"### promptcache audit: {files}", ""]
    tok = s["tokenizer"]
    skipped = sum(st["skipped_lines"] for st in rec["inputs"])
    out.append(f"{counted(s['requests'], 'request')}, {counted(s['prompt_tokens'], 'prompt token')}; tokenizer {md(tok['name'] or '-')} "
               f"({'exact' if tok['exact'] else 'approximate'})" + (f"; {skipped:,} malformed line(s) skipped" if skipped else "")
               + ".")
    out += ["", "| scenario | cached tokens | hit ratio | cache writes | cost |", "|---|--:|--:|--:|--:|"]
    for n in ("no_cache", "reported", "simulated", "ideal"):
        if n in sc:
            v = sc[n]
            out.append(f"| {LABELS[n]} | {v['cached_tokens']:,} | {pct(v['hit_ratio'])} | {v['cache_write_tokens']:,} | "
                       f"{usd(v['cost_usd'])} |")
    sav = s["savings_usd"]
    out.append("")
    if sav["simulated_vs_no_cache"] is not None:
        per_day = sav.get("left_on_table_per_day")
        out.append(f"Caching saves **{usd(sav['simulated_vs_no_cache'])}** against no cache; "
                   f"**{usd(sav['left_on_table'])}** is left on the table"
                   + (f" (≈ {usd(per_day)}/day at this log's rate)" if per_day is not None else "")
                   + (f": {usd(sav['prompt_changes'])} to prompt changes that end the shared prefix, "
                      f"{usd(sav['cache_rules'])} to the cache rules (the simulated rules against an ideal cache)."
                      if sav.get("prompt_changes") else " — the gap between the simulated rules and an ideal cache.")
                   + (f" (The scenario costs differ by {usd(sav['simulated_vs_ideal'])}, simulated against ideal: they "
                      "also count the cache writes each scenario makes on other requests.)"
                      if sav.get("simulated_vs_ideal") is not None and sav.get("cache_rules") is not None
                      and round(sav["simulated_vs_ideal"], 4) != round(sav["cache_rules"], 4) else "")
                   + (f" The log's usage reports {rec['accounting']['gaps']['reported']['tokens']:,} tokens uncached that "
                      f"the simulation serves ({usd(sav['reported_gap'])} more billed): the reported-usage gap."
                      if sav.get("reported_gap") and rec.get("accounting") else ""))
    else:
        out.append("No prices for these models: token counts only.")
    out += inputs_table(rec["inputs"])
    fs = rec.get("findings") or []
    out += ["", f"#### What breaks the cache ({len(fs)} finding{'s' if len(fs) != 1 else ''})", ""]
    if fs:
        out += ["| # | rule | where | lost | fix |", "|--:|---|---|--:|---|"]
        for k, f in enumerate(fs[:findings], 1):
            loc = f["location"]
            where = f"{md(Path(loc['path']).name)}:{loc['line']}"
            if loc.get("segment"):
                where += f" {md(loc['segment'])}"
                if loc.get("char_offset") is not None:
                    where += f" @ char {loc['char_offset']:,}"
            lost = f"{f['tokens_lost']:,} tokens, {usd(f['cost_usd_lost'])}"
            ev = f.get("evidence") or {}
            said = ""
            if ev.get("provider_verdict"):
                said = f" Provider says: {md(ev['provider_verdict'], 120)}" + (
                    f"; disagrees: {md(ev['provider_disagrees'], 200)}" if ev.get("provider_disagrees") else
                    "; agrees" if ev.get("provider_agrees") else "") + "."
            out.append(f"| {k} | **{md(f['code'])}** {md(f['rule'])} ({md(f['severity'])}): {md(f['message'], 200)}{said} | "
                       f"{where} | {lost} | {md(f['fix']['description'], 160)} |")
        if len(fs) > findings:
            out.append(f"\n… {len(fs) - findings} more in the full report.")
    acc = rec.get("accounting")
    total = sum(g["tokens"] for g in acc["gaps"].values()) if acc else 0
    if not fs:
        out.append(f"No rule names a cause for {total:,} lost tokens: see the accounting below." if total
                   else "No cache-breaking causes found.")
    if total:
        out += ["", "#### Where the lost tokens go", "", "| gap | cause | tokens | money | requests | first |",
                "|---|---|--:|--:|--:|---|"]
        for gap in ("content", "rules", "reported"):
            g = acc["gaps"][gap]
            if not g["tokens"]:
                continue
            out.append(f"| **{GAPS[gap]}** | | **{g['tokens']:,}** | **{usd(g['cost_usd'])}** | | |")
            for r in (x for x in acc["rows"] if x["gap"] == gap):
                cause = md(r["cause"])
                if r.get("evidence", {}).get("miss_reasons"):
                    cause += " (" + ", ".join(f"{md(k)}: {v}" for k, v in r["evidence"]["miss_reasons"].items()) + ")"
                out.append(f"| | {cause} | {r['tokens']:,} | {usd(r['cost_usd'])} | {r['requests']:,} | "
                           f"{md(Path(r['first']['path']).name)}:{r['first']['line']} |")
    if proposals is not None:
        out += ["", "#### Proposals", ""]
        from .proposal_lines import unaddressed_lines, unexplained_of

        head, left = unaddressed_lines(bool(proposals), list(unaddressed), unexplained_of(rec))
        if not proposals:
            out.append(md(head))
            out += [f"- {md(x)}" for x in left]
        else:
            out += ["| template | requests | changes | hit ratio | cost | saves | simulated / ideal after | lifetime |",
                    "|---|--:|---|--:|--:|--:|--:|---|"]
            for p in proposals:
                b, a = p["before"]["simulated"], p["after"]["simulated"]
                kinds = ", ".join(md(c["kind"]) + ("" if c["applied"] else (" (withdrawn)" if c.get("withdrawn")
                                                                             else " (advice)")) for c in p["changes"])
                ideal = p["after"]["ideal"]["cached_tokens"]
                vs = f"{a['cached_tokens']:,} / {ideal:,} ({pct(p.get('after_ideal_share'))})"
                lt = p.get("lifetime")
                life = "" if not lt else (md(lt["best"]["policy"]) + ("" if lt["best"]["policy"] == lt["current"]["policy"]
                                                                     else f" (was {md(lt['current']['policy'])})"))
                out.append(f"| {md(p['template_id'])} | {p['requests']:,} | {kinds} | {pct(b['hit_ratio'])} → "
                           f"{pct(a['hit_ratio'])} | {usd(b['cost_usd'])} → {usd(a['cost_usd'])} | {usd(p['savings_usd'])} "
                           f"| {vs} | {life} |")
            from .proposal_lines import gap_lines, held_line

            for p in proposals:
                held = held_line(p)
                parts = gap_lines(p)
                if not (held or parts):
                    continue
                out += ["", f"##### {md(p['template_id'])}: what is left after the plan", ""]
                if held:
                    out.append(f"- {md(held.capitalize())}")
                for head, lines in parts:
                    out.append(f"- {md(head.capitalize())}:")
                    out += [f"  - {md(x)}" for x in lines]
            if left:
                out += ["", md(head), ""] + [f"- {md(x)}" for x in left]
            if after is not None:
                b, a = sc["simulated"], after["simulated"]
                out.append(f"\nAll traffic: hit ratio {pct(b['hit_ratio'])} → {pct(a['hit_ratio'])}, "
                           f"cost {usd(b['cost_usd'])} → {usd(a['cost_usd'])}.")
    out += ["", f"<sub>{md(s.get('upper_bound_note', '')).capitalize()}. Prices: {md(s.get('prices'))}.</sub>", ""]
    return "\n".join(out)
