"""A proposal's figures against the ideal, in words, from its JSON record
(:func:`~.audit_records.proposals_record`): the text, Markdown and HTML reports say the same.

- simulated cached tokens after the plan beside the ideal's after it;
- the tokens between them by cause (the ``rules`` gap of the proposed log's loss accounting on
  the template's requests: the rows add up to it exactly);
- what the provider's own limits hold back of the ideal (no prompt change recovers it);
- causes still in the proposed prompts (``content``) and, on records left as they were, in
  their reported usage (``reported``).
"""

from __future__ import annotations

from typing import Any

from .numbers import pct

#: What each gap of the remaining accounting is, after a plan.
GAP_LINES = {
    "rules": "between them",
    "content": "still in the proposed prompts (the ideal would serve this much more had they been undone)",
    "reported": "reported uncached by the records left as they were, where the simulation serves them",
}
#: What each limit holds back.
LIMITS = {"minimum": "the model's minimum cacheable length", "granularity": "whole cache blocks",
          "longest": "the longest cacheable prefix"}


def _n(k: int, what: str) -> str:
    return f"{k:,} {what}{'' if k == 1 else 's'}"


def headline(p: dict[str, Any]) -> str:
    """``after the plan: simulated N cached tokens beside the ideal's M (x% of it)``."""
    sim, ideal = p["after"]["simulated"]["cached_tokens"], p["after"]["ideal"]["cached_tokens"]
    share = f" ({pct(p['after_ideal_share'])} of it)" if p.get("after_ideal_share") is not None else ""
    return f"after the plan: simulated {sim:,} cached tokens beside the ideal's {ideal:,}{share}"


def held_line(p: dict[str, Any]) -> str | None:
    """What the provider's limits hold back of the ideal, or ``None`` when nothing."""
    rem = p.get("remaining") or {}
    held = [h for h in rem.get("held_back") or [] if h["tokens"]]
    if not held:
        return None
    return (f"the provider's rules allow {rem['attainable_tokens']:,} of the ideal's: "
            + "; ".join(f"{h['tokens']:,} held back by {LIMITS.get(h['limit'], h['limit'])} ({_n(h['requests'], 'request')})"
                        for h in held))


def gap_lines(p: dict[str, Any], limit: int = 6) -> list[tuple[str, list[str]]]:
    """Per non-empty gap: its heading and one line per cause (``tokens  cause: description``)."""
    rem = p.get("remaining") or {}
    out = []
    for gap in ("rules", "content", "reported"):
        total = (rem.get("gaps") or {}).get(gap, 0)
        if not total:
            continue
        rows = [c for c in rem.get("causes") or [] if c["gap"] == gap]
        lines = [f"{c['tokens']:,} tokens, {c['cause']} ({_n(c['requests'], 'request')}): {c['description']}"
                 for c in rows[:limit]]
        if len(rows) > limit:
            lines.append(f"… {len(rows) - limit} more in --format json")
        out.append((f"the {total:,} tokens {GAP_LINES[gap]}, by cause", lines))
    return out


def unaddressed_lines(proposed: bool, left: list[dict[str, Any]], unexplained: int = 0) -> tuple[str, list[str]]:
    """The proposals' opening line and the findings no proposal addresses, one line each, from
    :func:`~.audit_records.unaddressed_record`: ``(head, lines)``.

    With no proposal the head never says the templates are fine while a finding loses tokens:
    it says how many findings no proposal addresses, and each line says why; ``unexplained``
    (tokens the accounting attributes to no cause) is named too, as no proposal can address
    what no rule explains.
    """
    from .numbers import usd

    lines = [f"{x['code']} {x['rule']}" + (f" at {x['segment']}" if x.get("segment") else "")
             + f": {x['tokens_lost']:,} tokens" + (f" ({usd(x['cost_usd_lost'])})" if x.get("cost_usd_lost") is not None
                                                    else "") + f" over {_n(x['requests'], 'request')}: {x['reason']}"
             for x in left]
    n = len(left)
    if unexplained:
        lines.append(f"{unexplained:,} tokens that no rule explains (the accounting's unexplained rows): no proposal "
                     "can address a cause no rule names")
    if proposed:
        head = f"Not addressed by any proposal ({_n(n, 'finding')}):" if n else (
            "Not addressed by any proposal:" if unexplained else "")
    elif n:
        head = f"No proposals, though {_n(n, 'finding')} {'loses' if n == 1 else 'lose'} tokens; no proposal addresses:"
    elif unexplained:
        head = "No proposals: no finding names a cause the proposals could address:"
    else:
        head = "No proposals: no finding loses tokens, and the templates behind this traffic keep their stable content first."
    return head, lines


def unexplained_of(rec: dict[str, Any]) -> int:
    """Tokens the audit record's accounting attributes to no cause (its ``unexplained`` rows)."""
    acc = rec.get("accounting")
    return sum(r["tokens"] for r in acc["rows"] if r["cause"] == "unexplained") if acc else 0
