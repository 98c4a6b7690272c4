"""The HTML report: one self-contained file (inline CSS, inline SVG charts drawn here, no
script, no network), rendered from the audit record (``audit_record(res, detail=True)``) and,
when there are any, the proposals record.

Every string that can come from a log (ids, paths, models, namespaces, segment paths, evidence,
messages) goes through :func:`html.escape`; a Content-Security-Policy forbids scripts and any
network fetch as a second line of defence. Numbers are the record's, only formatted here.
"""

from __future__ import annotations

import html as _html
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from ..plurals import counted
from .numbers import duration, miss_reason, pct, usd

COLORS = {"no_cache": "#8c959f", "reported": "#a371f7", "simulated": "#0969da", "ideal": "#1a7f37"}
LABELS = {"no_cache": "No cache", "reported": "Reported (log usage)", "simulated": "Simulated rules",
          "ideal": "Ideal cache"}
#: Line width and opacity per scenario: drawn in this order, equal lines stay visible as bands.
STROKE = {"no_cache": (6.0, 0.45), "reported": (4.2, 0.6), "simulated": (2.6, 1.0), "ideal": (1.4, 1.0)}
SEVERITY = {"error": "#cf222e", "warning": "#9a6700", "info": "#0969da"}


def esc(v: Any) -> str:
    """Escape any value for HTML text or a quoted attribute (``None`` → ``""``)."""
    return "" if v is None else _html.escape(str(v), quote=True)


# ---------------------------------------------------------------- charts (inline SVG)

def _nice(lo: float, hi: float, n: int = 4) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _x_label(x: float, start: float, axis: str) -> str:
    if axis == "request":
        return f"#{int(x) + 1:,}"
    d = x - start
    if d < 120:
        return f"+{d:.0f}s"
    if d < 7200:
        return f"+{d / 60:.0f}m"
    if d < 172800:
        return f"+{d / 3600:.1f}h".replace(".0h", "h")
    return f"+{d / 86400:.1f}d".replace(".0d", "d")


def line_chart(chart_id: str, series: Sequence[tuple[str, list[tuple[float, float | None, str]]]], *,
               x_lo: float, x_hi: float, axis: str, y_fmt: Any, y_max: float | None = None,
               width: int = 540, height: int = 240) -> str:
    """An SVG line chart: one polyline per series (gaps where a value is ``None``), a marker
    with a tooltip per point, y grid and x labels.

    Args:
        chart_id: the ``id`` of the ``<svg>``.
        series: ``(scenario, [(x, y or None, tooltip)])``; the scenario names the colour.
        x_lo, x_hi: the x range; ``axis`` says whether x is time (seconds) or a request index.
        y_fmt: formats a y tick.
        y_max: the top of the y axis (default: the largest value).
    """
    ml, mr, mt, mb = 64, 12, 12, 28
    pw, ph = width - ml - mr, height - mt - mb
    ys = [y for _, pts in series for _, y, _ in pts if y is not None]
    top = y_max if y_max is not None else (max(ys) if ys else 1.0)
    ticks = _nice(0.0, top if top > 0 else 1.0)
    y_hi = ticks[-1]
    span = (x_hi - x_lo) or 1.0

    def X(x: float) -> float:
        return ml + (x - x_lo) / span * pw

    def Y(y: float) -> float:
        return mt + ph - (y / y_hi) * ph

    out = [f'<svg id="{esc(chart_id)}" class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'role="img" xmlns="http://www.w3.org/2000/svg">']
    for t in ticks:
        y = Y(t)
        out.append(f'<line x1="{ml}" x2="{width - mr}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{ml - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{esc(y_fmt(t))}</text>')
    for k in range(6):
        x = x_lo + span * k / 5
        anchor = "start" if k == 0 else "end" if k == 5 else "middle"
        out.append(f'<text x="{X(x):.1f}" y="{height - 8}" class="tick" text-anchor="{anchor}">'
                   f'{esc(_x_label(x, x_lo, axis))}</text>')
    out.append(f'<line x1="{ml}" x2="{width - mr}" y1="{mt + ph}" y2="{mt + ph}" class="axis"/>')
    for name, pts in series:
        color = COLORS.get(name, "#57606a")
        run: list[str] = []
        runs: list[list[str]] = []
        for x, y, _ in pts:
            if y is None:
                if run:
                    runs.append(run)
                run = []
                continue
            run.append(f"{X(x):.1f},{Y(y):.1f}")
        if run:
            runs.append(run)
        out.append(f'<g class="series" data-series="{esc(name)}">')
        sw, op = STROKE.get(name, (2.0, 1.0))
        for r in runs:
            out.append(f'<polyline points="{" ".join(r)}" fill="none" stroke="{color}" stroke-width="{sw}" '
                       f'stroke-opacity="{op}" stroke-linejoin="round" stroke-linecap="round"/>')
        for x, y, tip in pts:
            if y is not None:
                out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="{max(2.0, sw / 2 + 0.6):.1f}" fill="{color}" '
                           f'fill-opacity="{op}"><title>{esc(tip)}</title></circle>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def hbar_chart(chart_id: str, rows: Sequence[tuple[str, float, str, str]], *, width: int = 720, label_w: int = 170,
               value_w: int = 180, bar_h: int = 20, gap: int = 8, top: float | None = None) -> str:
    """A horizontal bar chart: ``(label, value, colour, value text)`` per bar, scaled to ``top``
    (default: the largest value)."""
    top = top or max((v for _, v, _, _ in rows), default=0.0) or 1.0
    pw = width - label_w - value_w
    height = len(rows) * (bar_h + gap) + gap
    out = [f'<svg id="{esc(chart_id)}" class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'role="img" xmlns="http://www.w3.org/2000/svg">']
    for i, (label, v, color, text) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        w = max(0.0, v / top * pw)
        out.append(f'<text x="{label_w - 8}" y="{y + bar_h / 2 + 4:.1f}" class="lbl" text-anchor="end">{esc(label)}</text>'
                   f'<rect x="{label_w}" y="{y}" width="{pw:.1f}" height="{bar_h}" rx="3" class="track"/>'
                   f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" rx="3" fill="{color}">'
                   f'<title>{esc(label)}: {esc(text)}</title></rect>'
                   f'<text x="{label_w + pw + 8:.1f}" y="{y + bar_h / 2 + 4:.1f}" class="val">{esc(text)}</text>')
    out.append("</svg>")
    return "".join(out)


def _legend(names: Sequence[str]) -> str:
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{COLORS[n]}"></i>{esc(LABELS[n])}</span>' for n in names) + "</div>"


# ---------------------------------------------------------------- sections

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;--accent:#0969da}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",
"Noto Sans",Helvetica,Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 28px 48px}
header h1{font-size:24px;margin:0 0 4px}
header .sub{color:var(--muted);margin:0}
h2{font-size:17px;margin:0 0 4px}
.note{color:var(--muted);font-size:12.5px;margin:2px 0 10px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:18px 20px;margin:16px 0}
.kpis{display:grid;grid-template-columns:repeat(5,1fr);gap:12px;margin:18px 0 0}
.kpi{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.kpi .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.kpi .v{font-size:24px;font-weight:600;margin-top:2px;font-variant-numeric:tabular-nums}
.kpi .s{color:var(--muted);font-size:12.5px}
.kpi.bad .v{color:#cf222e}.kpi.good .v{color:#1a7f37}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.grid2>section{margin:0}
.chart{max-width:100%;height:auto;display:block}
.chart .grid{stroke:#eaeef2}.chart .axis{stroke:#afb8c1}
.chart .tick{fill:#6e7781;font-size:11px}.chart .lbl{fill:var(--fg);font-size:12.5px}
.chart .val{fill:var(--fg);font-size:12.5px;font-variant-numeric:tabular-nums}
.chart .track{fill:#f3f4f6}
.legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12.5px;color:var(--muted);margin:4px 0 6px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{color:var(--muted);font-weight:600;font-size:12px;background:#f6f8fa}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.ev{background:#f6f8fa;border-radius:4px;padding:1px 4px;word-break:break-all}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:11.5px;font-weight:600;color:#fff}
.loc{color:var(--muted);font-size:12px}
.prop{border-top:1px solid #eaeef2;padding:12px 0}
.prop:first-of-type{border-top:0}
.prop h3{font-size:14px;margin:0 0 6px}
section h3{font-size:14px;margin:12px 0 6px}
.prop ul{margin:6px 0 8px 18px;padding:0}
.chg{margin:0 0 6px}
.warn{color:#9a6700}
footer{color:var(--muted);font-size:12px;margin-top:18px}
@media (max-width:900px){.kpis{grid-template-columns:repeat(2,1fr)}.grid2{grid-template-columns:1fr}}
"""


def _kpis(rec: dict[str, Any]) -> str:
    s = rec["summary"]
    sc = s["scenarios"]
    sav = s["savings_usd"]
    sim, ideal, nc = sc["simulated"], sc["ideal"], sc["no_cache"]
    per_day = sav.get("left_on_table_per_day")
    cards = [
        ("kpi-requests", "Requests", f"{s['requests']:,}", f"{s['prompt_tokens']:,} prompt tokens", ""),
        ("kpi-hit-simulated", "Simulated hit ratio", pct(sim["hit_ratio"]), f"ideal {pct(ideal['hit_ratio'])}", ""),
        ("kpi-cost-simulated", "Simulated cost", usd(sim["cost_usd"]), f"no cache {usd(nc['cost_usd'])}", ""),
        ("kpi-saved", "Caching saves", usd(sav["simulated_vs_no_cache"]), "simulated vs no cache", "good"),
        ("kpi-left", "Left on the table", usd(sav["left_on_table"]),
         (f"≈ {usd(per_day)}/day at this log's rate" if per_day is not None else "prompt changes and cache rules")
         + (f"; {usd(sav['prompt_changes'])} to prompt changes" if sav.get("prompt_changes") else ""), "bad"),
    ]
    return '<div class="kpis">' + "".join(
        f'<div class="kpi {cls}"><div class="k">{esc(k)}</div><div class="v" id="{cid}">{esc(v)}</div>'
        f'<div class="s">{esc(sub)}</div></div>' for cid, k, v, sub, cls in cards) + "</div>"


def _scenarios(rec: dict[str, Any]) -> str:
    sc = rec["summary"]["scenarios"]
    names = [n for n in ("no_cache", "reported", "simulated", "ideal") if n in sc]
    priced = any(sc[n]["cost_usd"] is not None for n in names)
    if priced:
        bars = hbar_chart("chart-cost-scenarios", [(LABELS[n], sc[n]["cost_usd"] or 0.0, COLORS[n],
                                                    f"{usd(sc[n]['cost_usd'])} · {pct(sc[n]['hit_ratio'])} hit")
                                                   for n in names], width=1000, label_w=180, value_w=220)
    else:
        bars = hbar_chart("chart-cost-scenarios", [(LABELS[n], float(sc[n]["cached_tokens"]), COLORS[n],
                                                    f"{sc[n]['cached_tokens']:,} cached tokens") for n in names],
                           width=1000, label_w=180, value_w=220)
    rows = "".join(
        f'<tr id="scenario-{n}"><td><i class="dot" style="color:{COLORS[n]}">■</i> {esc(LABELS[n])}</td>'
        f'<td class="n">{sc[n]["requests"]:,}</td><td class="n">{sc[n]["cached_tokens"]:,}</td>'
        f'<td class="n">{sc[n]["cache_write_tokens"]:,}</td><td class="n">{pct(sc[n]["hit_ratio"])}</td>'
        f'<td class="n">{pct(sc[n]["request_hit_ratio"])}</td><td class="n">{esc(usd(sc[n]["cost_usd"]))}</td></tr>'
        for n in names)
    note = ("Input-side cost: output tokens cost the same in every scenario." if priced else
            "No prices for these models: token counts only (add prices with --prices FILE).")
    return (f'<section id="scenarios"><h2>Cost by scenario</h2><p class="note">{esc(note)} '
            f'{esc(rec["summary"].get("upper_bound_note", "")).capitalize()}.</p>{bars}'
            '<table><thead><tr><th>Scenario</th><th class="n">Requests</th><th class="n">Cached tokens</th>'
            '<th class="n">Cache writes</th><th class="n">Hit ratio (tokens)</th><th class="n">Hit ratio (requests)</th>'
            f'<th class="n">Cost</th></tr></thead><tbody>{rows}</tbody></table></section>')


def _over_time(rec: dict[str, Any]) -> str:
    ser = rec.get("series") or {}
    bins = ser.get("bins") or []
    if not bins:
        return ""
    axis = ser["axis"]
    names = list(bins[0]["scenarios"])
    start = ser["start"]
    if axis == "time":
        when = (datetime.fromtimestamp(start, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if start > 1e9
                else "the start of the trace")
        bw = ser["bin_width"]
        width = duration(bw) if bw >= 1 else f"{bw:.2f}s"
        xnote = f"{len(bins)} bins of {width} from {when}"
    else:
        xnote = f"{len(bins)} bins by arrival order (the log has no arrival times)"

    def mid(b: dict[str, Any]) -> float:
        return (b["start"] + b["end"]) / 2

    x_lo, x_hi = ser["start"], ser["end"] if ser["end"] > ser["start"] else ser["start"] + 1
    hit_names = [n for n in names if n != "no_cache"]
    hit = line_chart("chart-hit-time", [(n, [(mid(b), b["scenarios"][n]["hit_ratio"],
                                              f"{LABELS[n]}: {pct(b['scenarios'][n]['hit_ratio'])} of "
                                              f"{b['scenarios'][n]['prompt_tokens']:,} tokens, "
                                              f"{counted(b['scenarios'][n]['requests'], 'request')}") for b in bins])
                                        for n in hit_names],
                     x_lo=x_lo, x_hi=x_hi, axis=axis, y_fmt=lambda t: f"{100 * t:.0f}%", y_max=1.0)
    priced = any(b["scenarios"][n]["cost_usd"] is not None for b in bins for n in names)
    if priced:
        cost = line_chart("chart-cost-time", [(n, [(b["end"], b["scenarios"][n]["cumulative_cost_usd"],
                                                    f"{LABELS[n]}: {usd(b['scenarios'][n]['cumulative_cost_usd'])} so far "
                                                    f"({usd(b['scenarios'][n]['cost_usd'])} in this bin)") for b in bins])
                                              for n in names],
                          x_lo=x_lo, x_hi=x_hi, axis=axis, y_fmt=lambda t: f"${t:,.4g}")
        cost_legend = _legend(names)
    else:
        cost = '<p class="note">No prices for these models: no cost over time.</p>'
        cost_legend = ""
    return ('<div class="grid2">'
            f'<section id="hit-over-time"><h2>Hit ratio over time</h2><p class="note">Cached / prompt tokens per bin; '
            f'{esc(xnote)}.</p>{_legend(hit_names)}{hit}</section>'
            f'<section id="cost-over-time"><h2>Cost over time</h2><p class="note">Cumulative input-side cost; '
            f'{esc(xnote)}.</p>{cost_legend}{cost}</section></div>')


def _prefixes(rec: dict[str, Any]) -> str:
    tops = rec.get("top_prefixes") or []
    if not tops:
        return ""
    priced = any(p["value_usd"] is not None for p in tops)
    if priced:
        chart = hbar_chart("chart-prefixes", [(f"#{i} · {p['tokens']:,} tokens", p["value_usd"] or 0.0, "#0969da",
                                               f"{usd(p['value_usd'])} worth, {usd(p['lost_usd'])} lost")
                                              for i, p in enumerate(tops, 1)], width=1000, label_w=150, value_w=260,
                            bar_h=14, gap=6)
    else:
        chart = hbar_chart("chart-prefixes", [(f"#{i}", float(p["tokens"] * p["reused_by"]), "#0969da",
                                               f"{p['tokens'] * p['reused_by']:,} reusable tokens")
                                              for i, p in enumerate(tops, 1)], width=1000, label_w=80, value_w=260,
                            bar_h=14, gap=6)
    rows = []
    for i, p in enumerate(tops, 1):
        where = p["first_segment"] or "-"
        if p["last_segment"] and p["last_segment"] != p["first_segment"]:
            where += f" … {p['last_segment']}"
        ex = p["example"]
        rows.append(f'<tr><td class="n">{i}</td><td>{esc(p["namespace"])}</td><td class="n">{p["tokens"]:,}</td>'
                    f'<td><span class="mono">token {p["start_token"]:,}</span>: <code>{esc(where)}</code></td>'
                    f'<td class="n">{p["reused_by"]:,}</td><td class="n">{p["served_by_simulated"]:,}</td>'
                    f'<td class="n">{esc(usd(p["value_usd"]))}</td><td class="n">{esc(usd(p["lost_usd"]))}</td>'
                    f'<td class="loc">{esc(Path(ex["path"]).name)}:{esc(ex["line"])}</td></tr>')
    return ('<section id="prefixes"><h2>Top shared prefixes by money</h2><p class="note">What caching each shared '
            'stretch of prompt is worth over the log (reuses × tokens × the input price minus the cache-read price), '
            f'and what the simulated rules leave on the table.</p>{chart}'
            '<table><thead><tr><th class="n">#</th><th>Namespace</th><th class="n">Tokens</th><th>Starts at</th>'
            '<th class="n">Reused by</th><th class="n">Served</th><th class="n">Worth</th><th class="n">Left on table</th>'
            f'<th>First seen</th></tr></thead><tbody>{"".join(rows)}</tbody></table></section>')


def _accounting(rec: dict[str, Any]) -> str:
    acc = rec.get("accounting")
    if not acc or not sum(g["tokens"] for g in acc["gaps"].values()):
        return ""
    titles = {"content": "Prompt changes", "rules": "Cache rules", "reported": "Reported usage"}
    notes = {"content": "what each request's predecessor would have served had the located change not been made",
             "rules": "what an ideal cache serves that the simulated rules do not",
             "reported": "what the simulation serves that the log reports as uncached"}
    rows = []
    for gap in ("content", "rules", "reported"):
        g = acc["gaps"][gap]
        if not g["tokens"]:
            continue
        rows.append(f'<tr class="gap"><td><b>{titles[gap]}</b><div class="loc">{notes[gap]}</div></td><td></td>'
                    f'<td class="n"><b>{g["tokens"]:,}</b></td><td class="n"><b>{esc(usd(g["cost_usd"]))}</b></td>'
                    '<td></td><td></td></tr>')
        for r in (x for x in acc["rows"] if x["gap"] == gap):
            ev = r.get("evidence", {}).get("miss_reasons")
            cause = esc(r["cause"]) + (f'<div class="loc">{esc(", ".join(f"{k}: {v}" for k, v in ev.items()))}</div>'
                                       if ev else "")
            rows.append(f'<tr><td></td><td>{cause}</td><td class="n">{r["tokens"]:,}</td>'
                        f'<td class="n">{esc(usd(r["cost_usd"]))}</td><td class="n">{r["requests"]:,}</td>'
                        f'<td class="loc">{esc(Path(r["first"]["path"]).name)}:{r["first"]["line"]}</td></tr>')
    return ('<section id="accounting"><h2>Where the lost tokens go</h2><p class="note">Every lost token goes to one '
            'cause; the rows add up to each gap exactly, and what no rule explains is shown as unexplained.</p>'
            '<table><thead><tr><th>Gap</th><th>Cause</th><th class="n">Tokens</th><th class="n">Money</th>'
            f'<th class="n">Requests</th><th>First</th></tr></thead><tbody>{"".join(rows)}</tbody></table></section>')


def _findings(rec: dict[str, Any], limit: int = 50) -> str:
    fs = rec.get("findings") or []
    if not fs:
        acc = rec.get("accounting")
        total = sum(g["tokens"] for g in acc["gaps"].values()) if acc else 0
        note = (f"No rule names a cause for {total:,} lost tokens: see where the lost tokens go." if total
                else "No cache-breaking causes found.")
        return f'<section id="findings"><h2>What breaks the cache</h2><p class="note">{esc(note)}</p></section>'

    rows = []
    for k, f in enumerate(fs[:limit], 1):
        loc = f["location"]
        where = f"{Path(loc['path']).name}:{loc['line']}"
        seg = ""
        if loc.get("segment"):
            seg = f"<code>{esc(loc['segment'])}</code>"
            if loc.get("char_offset") is not None:
                seg += f" @ char {loc['char_offset']:,}"
            if loc.get("token_index") is not None:
                seg += f" (token {loc['token_index']:,})"
        ev = f.get("evidence") or {}
        evid = "".join(f'<div><span class="loc">{side}:</span> <span class="ev mono">{esc(ev[side])}</span></div>'
                       for side in ("before", "after") if side in ev)
        if ev.get("provider_verdict"):
            evid += (f'<div><span class="loc">provider says:</span> {esc(ev["provider_verdict"])}'
                     + (f'<br><span class="loc">disagrees:</span> {esc(ev["provider_disagrees"])}' if ev.get("provider_disagrees")
                        else '<br><span class="loc">agrees with the located cause</span>' if ev.get("provider_agrees") else "")
                     + '</div>')
        color = SEVERITY.get(f["severity"], "#57606a")
        rows.append(
            f'<tr class="finding"><td class="n">{k}</td>'
            f'<td><b>{esc(f["code"])}</b><br><span class="loc">{esc(f["rule"])}</span><br>'
            f'<span class="badge" style="background:{color}">{esc(f["severity"])}</span></td>'
            f'<td>{esc(f["message"])}<div class="loc">{esc(where)} {seg}</div>{evid}</td>'
            f'<td class="n">{f["requests"]:,}</td><td class="n">{f["tokens_lost"]:,}</td>'
            f'<td class="n">{esc(usd(f["cost_usd_lost"]))}</td>'
            f'<td>{esc(f["fix"]["description"])}<div class="loc">{esc(f["fix"]["safety"])}</div></td></tr>')
    more = f'<p class="note">… {len(fs) - limit} more in --format json.</p>' if len(fs) > limit else ""
    return ('<section id="findings"><h2>What breaks the cache</h2><p class="note">Ranked by money lost under the '
            'simulated rules. In the values quoted around each break, secrets are masked and names, account ids, e-mail '
            'addresses and phone numbers are shown as their kind and a salted fingerprint (the same value, the same '
            'fingerprint), unless the report was made with --show-text.</p>'
            '<table><thead><tr><th class="n">#</th><th>Rule</th><th>What and where</th><th class="n">Requests</th>'
            '<th class="n">Tokens lost</th><th class="n">Money lost</th><th>Fix</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>{more}</section>')


def _proposals(rec: dict[str, Any], proposals: Sequence[dict[str, Any]] | None, after: dict[str, Any] | None,
               unaddressed: Sequence[dict[str, Any]] = ()) -> str:
    if proposals is None:
        return ('<section id="proposals"><h2>Proposals</h2><p class="note">Run with <code>--propose</code> (or '
                '<code>promptcache propose --format html</code>) to add stable-first templates, re-priced on this '
                'traffic.</p></section>')
    from .proposal_lines import unaddressed_lines, unexplained_of

    head, left = unaddressed_lines(bool(proposals), list(unaddressed), unexplained_of(rec))
    listed = (f'<p class="note">{esc(head)}</p><ul>' + "".join(f"<li>{esc(x)}</li>" for x in left) + "</ul>") if left else ""
    if not proposals:
        return ('<section id="proposals"><h2>Proposals</h2>'
                + (listed or f'<p class="note">{esc(head)}</p>') + '</section>')
    parts = []
    if after is not None:
        b = rec["summary"]["scenarios"]["simulated"]
        a = after["simulated"]
        chart = hbar_chart("chart-proposals-hit", [
            ("Hit ratio before", b["hit_ratio"], COLORS["no_cache"], pct(b["hit_ratio"])),
            ("Hit ratio after", a["hit_ratio"], COLORS["simulated"], pct(a["hit_ratio"]))],
            width=1000, label_w=180, value_w=220, top=1.0)
        if b["cost_usd"] is not None and a["cost_usd"] is not None:
            chart += hbar_chart("chart-proposals-cost", [
                ("Cost before", b["cost_usd"], COLORS["no_cache"], usd(b["cost_usd"])),
                ("Cost after", a["cost_usd"], COLORS["simulated"], usd(a["cost_usd"]))],
                width=1000, label_w=180, value_w=220)
        parts.append(f'<h3>All traffic, simulated before and after</h3>{chart}')
    for i, p in enumerate(proposals, 1):
        b, a = p["before"]["simulated"], p["after"]["simulated"]
        changes = "".join(
            f'<li class="chg"><b>{esc(c["kind"])}</b> <code>{esc(c["where"])}</code>'
            + ("" if c["applied"] else ' <span class="loc">(advice, not simulated)</span>')
            + f'<div><span class="loc">from:</span> <span class="ev mono">{esc(c["from"])}</span></div>'
            f'<div><span class="loc">to:</span> <span class="ev mono">{esc(c["to"])}</span></div>'
            f'<div class="loc">{esc(c["rationale"])}</div></li>' for c in p["changes"])
        sav = p["savings_usd"]
        per_day = p["savings_usd_per_day"]
        chart = hbar_chart(f"chart-proposal-{i}-hit", [
            ("hit ratio before", b["hit_ratio"], COLORS["no_cache"], pct(b["hit_ratio"])),
            ("hit ratio after", a["hit_ratio"], COLORS["simulated"], pct(a["hit_ratio"]))],
            width=520, label_w=120, value_w=90, bar_h=16, gap=6, top=1.0)
        if b["cost_usd"] is not None and a["cost_usd"] is not None:
            chart += hbar_chart(f"chart-proposal-{i}-cost", [
                ("cost before", b["cost_usd"], COLORS["no_cache"], usd(b["cost_usd"])),
                ("cost after", a["cost_usd"], COLORS["simulated"], usd(a["cost_usd"]))],
                width=520, label_w=120, value_w=90, bar_h=16, gap=6)
        saves = (f" · saves <b>{esc(usd(sav))}</b>" + (f" (≈ {esc(usd(per_day))}/day)" if per_day is not None else "")
                 if sav is not None else "")
        unmatched = (f" ({p['unmatched_requests']:,} did not match and were left as they are)"
                     if p["unmatched_requests"] else "")
        chart += hbar_chart(f"chart-proposal-{i}-ideal", [
            ("simulated after", a["cached_tokens"], COLORS["simulated"], f'{a["cached_tokens"]:,} cached'),
            ("ideal after", p["after"]["ideal"]["cached_tokens"], COLORS["ideal"],
             f'{p["after"]["ideal"]["cached_tokens"]:,} cached')], width=520, label_w=120, value_w=110, bar_h=16, gap=6)
        parts.append(f'<div class="prop" id="proposal-{i}"><h3><code>{esc(p["template_id"])}</code> '
                     f'<span class="loc">{esc(p["namespace"])} · {counted(p["requests"], "request")}{esc(unmatched)}</span>'
                     f'{saves}</h3><div class="grid2"><ul>{changes}</ul><div>{chart}{_against_ideal(p)}'
                     f'{_lifetime(p.get("lifetime"))}</div></div></div>')
    return ('<section id="proposals"><h2>Proposals</h2><p class="note">Each applied to every request of its template '
            f'and re-simulated under the same rules and prices.</p>{"".join(parts)}{listed}</section>')


def _against_ideal(p: dict[str, Any]) -> str:
    """Simulated after the plan beside the ideal after it, and what is left, by cause (the loss
    accounting of the proposed log on the template's requests)."""
    from .proposal_lines import gap_lines, headline, held_line

    out = f'<p class="note">{esc(headline(p).capitalize())}.</p>'
    held = held_line(p)
    if held:
        out += f'<p class="note">{esc(held.capitalize())}.</p>'
    for head, lines in gap_lines(p):
        out += (f'<p class="note">{esc(head.capitalize())}:</p><ul class="gap">'
                + "".join(f"<li>{esc(x)}</li>" for x in lines) + "</ul>")
    return out


def _lifetime(lt: dict[str, Any] | None) -> str:
    """A template's cache-lifetime analysis."""
    if not lt:
        return ""
    cur, best = lt["current"], lt["best"]
    if best["policy"] == cur["policy"]:
        head = f'Cache lifetime: <b>{esc(cur["policy"])}</b> is the cheapest ({esc(usd(cur["cost_usd"]))}).'
    else:
        head = (f'Cache lifetime: <b>{esc(best["policy"])}</b> instead of {esc(cur["policy"])}: '
                f'{esc(usd(cur["cost_usd"]))} → {esc(usd(best["cost_usd"]))}'
                + (f' (≈ {esc(usd(lt["saves_usd_per_day"]))}/day)' if lt.get("saves_usd_per_day") is not None else "")
                + (f', {best["keepalive_requests"]:,} keep-alive requests' if best["keepalive_requests"] else "") + ".")
        if lt.get("wins_on_seconds"):
            lo, hi = lt["wins_on_seconds"]
            where = "in a conversation" if lt.get("wins_at") == "conversation" else "between the template's requests"
            head += (f' It pays on pauses {where} from {esc(duration(lo))} to {esc(duration(hi))} (break-even gap '
                     f'{esc(duration(hi))}).')
        if lt.get("losing_requests"):
            head += f' It costs more on {lt["losing_requests"]:,} request(s).'
    rows = "".join(f'<tr><td>{esc(r["policy"])}</td><td class="n">{esc(usd(r["cost_usd"]))}</td>'
                   f'<td class="n">{r["keepalive_requests"]:,}</td></tr>' for r in lt.get("ranked") or [])
    table = ('<table><thead><tr><th>Policy</th><th class="n">Cost</th><th class="n">Keep-alive requests</th></tr>'
             f'</thead><tbody>{rows}</tbody></table>') if rows else ""
    return f'<div class="lifetime"><p class="note">{head}</p>{table}</div>'


def _context(rec: dict[str, Any]) -> str:
    s = rec["summary"]
    reasons = s.get("miss_reasons") or {}
    rtable = ""
    if reasons:
        rtable = ('<h2>Why the simulated rules miss</h2><table><thead><tr><th>Reason</th><th class="n">Requests</th>'
                  '</tr></thead><tbody>' + "".join(f'<tr><td>{esc(miss_reason(k))}</td><td class="n">{v:,}</td></tr>'
                                                   for k, v in reasons.items()) + "</tbody></table>")
    rules = "".join(f'<tr><td>{esc(ns)}</td><td>{esc(r["mode"])}, min {r["min_tokens"]:,}, '
                    f'{r["granularity"]:,}-token steps, TTL {esc(r["ttl_seconds"] if r["ttl_seconds"] is not None else "none")}'
                    f'{", capacity " + format(r["capacity_tokens"], ",") if r["capacity_tokens"] else ""}</td>'
                    f'<td class="loc">{esc(r["source"])} (checked {esc(r["checked"])})</td></tr>'
                    for ns, r in list(rec.get("rules", {}).items())[:12])
    nss = rec.get("namespaces") or []
    ntable = ""
    if len(nss) > 1:
        ntable = ('<h2 style="margin-top:14px">By namespace</h2><table><thead><tr><th>Namespace</th><th class="n">Requests</th>'
                  '<th class="n">Prompt tokens</th><th class="n">Simulated hit</th><th class="n">Ideal hit</th>'
                  '<th class="n">Simulated cost</th><th class="n">Ideal cost</th></tr></thead><tbody>' + "".join(
                      f'<tr><td>{esc(n["namespace"])}</td><td class="n">{n["no_cache"]["requests"]:,}</td>'
                      f'<td class="n">{n["no_cache"]["prompt_tokens"]:,}</td><td class="n">{pct(n["simulated"]["hit_ratio"])}</td>'
                      f'<td class="n">{pct(n["ideal"]["hit_ratio"])}</td><td class="n">{esc(usd(n["simulated"]["cost_usd"]))}</td>'
                      f'<td class="n">{esc(usd(n["ideal"]["cost_usd"]))}</td></tr>' for n in nss[:30]) + "</tbody></table>")
    warn = ""
    skipped = [(st["path"], e) for st in rec["inputs"] for e in st["errors"][:5]]
    if rec.get("warnings") or skipped:
        warn = ('<h2 style="margin-top:14px">Warnings</h2><ul>'
                + "".join(f'<li class="warn">{esc(w)}</li>' for w in rec.get("warnings", []))
                + "".join(f'<li class="warn">skipped {esc(Path(p).name)}:{esc(e["line"])}: {esc(e["reason"])}</li>'
                          for p, e in skipped) + "</ul>")
    return (f'<section id="context">{rtable}<h2 style="margin-top:14px">Cache rules</h2><table><tbody>{rules}</tbody>'
            f'</table>{ntable}{warn}</section>')


def render_html(rec: dict[str, Any], proposals: Sequence[dict[str, Any]] | None = None, *,
                after: dict[str, Any] | None = None, title: str | None = None,
                unaddressed: Sequence[dict[str, Any]] = ()) -> str:
    """The whole report as one HTML document.

    Args:
        rec: ``audit_record(res, detail=True)`` (the ``series`` key draws the time charts).
        proposals: ``proposals_record(...)``, or ``None`` when proposals were not asked for.
        after: scenario records of the proposed log (``promptcache.propose/v1`` ``after``).
        title: the page title (default: the input file names).
        unaddressed: ``unaddressed_record(...)``: findings no proposal addresses.

    Returns:
        UTF-8 HTML text; no script, no external resource.
    """
    s = rec["summary"]
    files = ", ".join(Path(st["path"]).name for st in rec["inputs"])
    title = title or f"promptcache audit — {files}"
    fmts = ", ".join(sorted({st["format"] for st in rec["inputs"] if st["format"]}))
    skipped = sum(st["skipped_lines"] for st in rec["inputs"])
    tok = s["tokenizer"]
    sub = (f"{files} ({fmts or 'no requests'}) · {counted(s['requests'], 'request')} · {counted(s['prompt_tokens'], 'prompt token')} · "
           f"{duration(s['span_seconds'], none='no arrival times')} · tokenizer {tok['name'] or '-'} ({'exact' if tok['exact'] else 'approximate'})"
           + (f" · {skipped:,} malformed line(s) skipped" if skipped else ""))
    body = (f'<header><h1>{esc(title)}</h1><p class="sub">{esc(sub)}</p></header>'
            f"{_kpis(rec)}{_scenarios(rec)}{_over_time(rec)}{_prefixes(rec)}{_findings(rec)}{_accounting(rec)}"
            f"{_proposals(rec, proposals, after, unaddressed)}{_context(rec)}"
            f'<footer>Prices: {esc(s.get("prices"))}. Generated by promptcache ({esc(rec["schema"])}). '
            'Simulated hits under automatic provider caching are an upper bound.</footer>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:; script-src 'none'; base-uri 'none'; form-action 'none'\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<meta name=\"referrer\" content=\"no-referrer\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body><main>{body}</main></body></html>\n")
