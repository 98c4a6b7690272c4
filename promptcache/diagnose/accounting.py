"""Loss accounting: every token a cache could have served and did not, attributed to exactly one
cause, with what no cause explains shown as ``unexplained``.

Per request there are three gaps, each between two levels of what a cache serves (tokens):

- ``content``: what the request would share with its predecessor if the cause the diagnosis
  located in the prompt text (a timestamp, tools in another order, a history window that moved
  ...) were undone, beyond what it shares with any earlier request as logged (the ideal cache);
- ``rules``: what the ideal cache serves (the longest prefix shared with any earlier request of
  the model: no minimum, no TTL, no breakpoints) and the simulated provider or engine does not;
- ``reported``: what the simulation serves and the log's reported usage says was not read from
  the cache.

The diagnoser claims each request's ``rules`` and ``reported`` gap whole, for one cause each, and
records what it cannot explain under :data:`UNEXPLAINED`; a ``content`` loss exists only where a
cause was located. So each gap's rows add up to it exactly (``tests/test_corpus.py`` checks it on
every case and sample against the outcomes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable, Sequence

from .rules import Rule

GAPS = ("content", "rules", "reported")
#: What each gap means, for reports.
GAP_TITLES = {
    "content": "prompt changes (tokens the predecessor would have served had the change not been made)",
    "rules": "cache rules (tokens an ideal cache serves that the simulated rules do not)",
    "reported": "reported usage (tokens the simulation serves that the log reports as uncached)",
}

#: The row for tokens no cause explains. Not a rule file: it names no cause and has no fix.
UNEXPLAINED = Rule(id="unexplained", code="PC000", kind="accounting", severity="warning",
                   summary="Tokens lost that no rule explains",
                   message="{requests} requests lost {tokens_lost} tokens that no rule explains",
                   why="The simulation or the reported usage shows a loss that none of the checks accounts for.",
                   fix={"description": "Look at the evidence; report the pattern so a rule can name it", "safety": "unsafe"})


@dataclass
class Row:
    """One line of the accounting table.

    Attributes:
        gap: ``content``, ``rules`` or ``reported``.
        rule: the cause's rule id, or ``unexplained``.
        tokens: tokens attributed to it (over the log).
        cost_usd: money those tokens cost at the simulated rules' prices, or ``None``.
        requests: requests contributing.
        path, line: log file and line of the first of them.
        evidence: for ``unexplained``, what is known (miss reasons and their counts).
    """

    gap: str
    rule: str
    tokens: int
    cost_usd: Decimal | None
    requests: int
    path: str
    line: int
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        """JSON record (``accounting.rows`` of ``promptcache.audit/v1``)."""
        return {"gap": self.gap, "cause": self.rule, "tokens": self.tokens,
                "cost_usd": None if self.cost_usd is None else float(round(self.cost_usd, 6)),
                "requests": self.requests, "first": {"path": self.path, "line": self.line},
                **({"evidence": self.evidence} if self.evidence else {})}


@dataclass
class Accounting:
    """The gaps and their rows.

    Attributes:
        gaps: tokens per gap (:data:`GAPS`) over the log.
        cost: money per gap, or ``None`` when nothing in it was priced.
        rows: the rows, by gap then tokens (largest first); ``unexplained`` last in its gap.
    """

    gaps: dict[str, int]
    cost: dict[str, Decimal | None]
    rows: list[Row]

    @property
    def unexplained_tokens(self) -> int:
        """Tokens no cause explains, over every gap."""
        return sum(r.tokens for r in self.rows if r.rule == UNEXPLAINED.id)

    @property
    def total_tokens(self) -> int:
        """Tokens lost over every gap."""
        return sum(self.gaps.values())

    def to_record(self) -> dict[str, Any]:
        """JSON record (``accounting`` of ``promptcache.audit/v1``)."""
        return {"gaps": {g: {"tokens": self.gaps[g],
                             "cost_usd": None if self.cost[g] is None else float(round(self.cost[g], 6))}
                         for g in GAPS},
                "rows": [r.to_record() for r in self.rows]}


def build(cands: Iterable[Any]) -> Accounting:
    """Group candidates (:class:`~.findings.Candidate`) with a ``gap`` into rows.

    Unexplained candidates carry their miss reason in ``values["reason"]``; the row's evidence
    counts them per reason.
    """
    groups: dict[tuple[str, str], list[Any]] = {}
    for c in cands:
        if c.gap is None or c.tokens_lost <= 0:
            continue
        groups.setdefault((c.gap, c.rule.id), []).append(c)
    rows: list[Row] = []
    gaps = {g: 0 for g in GAPS}
    cost: dict[str, Decimal | None] = {g: None for g in GAPS}
    for (gap, rule), cs in groups.items():
        cs.sort(key=lambda c: c.index)
        tokens = sum(c.tokens_lost for c in cs)
        priced = [c.cost_lost for c in cs if c.cost_lost is not None]
        money = sum(priced, Decimal(0)) if priced else None
        ev: dict[str, Any] = {}
        if rule == UNEXPLAINED.id:
            reasons: dict[str, int] = {}
            for c in cs:
                why = str(c.values.get("reason") or "none")
                reasons[why] = reasons.get(why, 0) + 1
            ev = {"miss_reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1]))}
            if gap == "reported":
                ev.update(_reported_evidence(cs))
        rows.append(Row(gap, rule, tokens, money, len({c.index for c in cs}), cs[0].path, cs[0].line, ev))
        gaps[gap] += tokens
        if money is not None:
            cost[gap] = (cost[gap] or Decimal(0)) + money
    rows.sort(key=lambda r: (GAPS.index(r.gap), r.rule == UNEXPLAINED.id, -r.tokens, r.rule))
    return Accounting(gaps, cost, rows)


def _reported_evidence(cs: Sequence[Any]) -> dict[str, Any]:
    """What is known about an unexplained reported gap: the models, the prompt size band of the
    affected requests (smallest to largest prompt, tokens), how many only append to the request
    before them (``prefix_unchanged_requests``: nothing in the prompt explains the miss) and how
    many the log reports as reading nothing at all (``reported_zero_requests``)."""
    sizes = [int(c.values["prompt_tokens"]) for c in cs if c.values.get("prompt_tokens") is not None]
    if not sizes:
        return {}
    lo, hi = min(sizes), max(sizes)
    return {"models": sorted({str(c.values.get("model") or "-") for c in cs}),
            "prompt_tokens_band": f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}",
            "prefix_unchanged_requests": sum(1 for c in cs if c.values.get("prefix_unchanged")),
            "reported_zero_requests": sum(1 for c in cs if c.values.get("reported_zero"))}


def rows_for(acc: Accounting, rule: str) -> Sequence[Row]:
    """The rows of one cause."""
    return [r for r in acc.rows if r.rule == rule]
