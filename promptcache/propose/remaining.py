"""What is left after a template's plan, explained by the diagnosis's loss accounting
(:mod:`promptcache.diagnose.accounting`) of the proposed log's audit, on the template's own
requests.

The audit of the proposed log attributes every token its cache could have served and did not to
exactly one cause, per request (the diagnoser's candidates). Restricted to a template's
requests and grouped the way the accounting groups them (:func:`~promptcache.diagnose.accounting.build`):

- ``rules``: the ideal after the plan minus the simulated after the plan, exactly (each
  request's ``shared_prefix_tokens - cached_tokens``, claimed whole by one cause: the model's
  minimum, whole cache blocks, the TTL, a breakpoint placement ... or ``unexplained``, with the
  simulation's miss reasons as its evidence);
- ``content``: causes still in the proposed prompts (the ideal itself would serve more had they
  been undone: a change the plan could not make);
- ``reported``: on records the plan left as they were (they keep their reported usage), what the
  simulation serves and the log reports as uncached.

Each cause is described for the template's own cache rules: "after the last breakpoint" means
something only where the provider caches at breakpoints; on a provider that keeps cache units
at message endings (``mode: boundaries``, DeepSeek's "cache prefix units") the same miss reason
is the tokens after the last unit the simulated rules keep.

:func:`attainable` gives what no change to the prompts can recover: the part of the ideal that
the provider's minimum, hit granularity or longest cacheable prefix hold back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable, Mapping, Sequence

from ..diagnose.accounting import GAPS, UNEXPLAINED, Accounting, build
from ..simulate import Outcome
from ..simulate.rules import CacheRules


def _reason(reason: str, rules: CacheRules | None) -> str:
    """What a simulated miss reason means for a request under ``rules``."""
    mode = rules.mode if rules is not None else None
    who = rules.provider if rules is not None else "the provider"
    if reason == "no_unit":
        return ("not yet a whole cache prefix unit (DeepSeek persists a common prefix as a unit only once two "
                "requests share it; later requests read it)")
    if reason in ("after_last_breakpoint", "lookback", "no_breakpoint") and mode in ("boundaries", "units"):
        ends = ", ".join(rules.endings) if rules is not None else "message"
        return (f"after the last cache unit the simulated {who} rules keep (units end with each {ends} message; a "
                f"prefix that ends elsewhere is not read; rules/providers/{who}.yaml says what is not modelled)")
    if reason == "after_last_breakpoint" and mode == "slots":
        return f"after the prompt {who}'s slot holds (one cached prompt per slot)"
    return {
        "after_last_breakpoint": "after the last breakpoint the requests carry (the newest turn's own text, and "
                                 "what the next request happens to share of it)",
        "lookback": "beyond the breakpoints' lookback window",
        "no_breakpoint": "in requests that carry no breakpoint",
        "granularity": "inside a partial cache block (hits count in whole blocks)",
        "below_min": "below the model's minimum cacheable length",
        "expired": "in entries that expired (TTL) before the request came",
        "evicted": "evicted by the cache's capacity",
        "namespace": "in another cache namespace (a cache key or an upstream splits the traffic)",
        "reported below simulated": "that the log reports uncached where the simulation serves them",
        "none": "that the simulation gives no reason for",
    }.get(reason, reason.replace("_", " "))


@dataclass(frozen=True)
class Cause:
    """Tokens of one gap with one cause, on one template's proposed requests.

    Attributes:
        gap: ``rules``, ``content`` or ``reported`` (see the module docstring).
        rule: the cause's rule id, or ``unexplained``.
        tokens: tokens attributed to it.
        requests: requests that lose them.
        cost_usd: what those tokens cost at the simulated prices, or ``None``.
        description: what the cause means under the template's cache rules.
        evidence: for ``unexplained``, the simulation's miss reasons and their counts.
    """

    gap: str
    rule: str
    tokens: int
    requests: int
    cost_usd: Decimal | None
    description: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        """JSON record (``remaining.causes`` of ``promptcache.propose/v1``)."""
        return {"gap": self.gap, "cause": self.rule, "tokens": self.tokens, "requests": self.requests,
                "cost_usd": None if self.cost_usd is None else float(round(self.cost_usd, 6)),
                "description": self.description, **({"evidence": self.evidence} if self.evidence else {})}


@dataclass(frozen=True)
class Held:
    """Tokens of the ideal that the provider's own rules hold back (no prompt change recovers them).

    Attributes:
        limit: ``minimum`` (a shared prefix shorter than the model's minimum cacheable length),
            ``granularity`` (hits in whole blocks, short of the tokens an engine always
            recomputes) or ``longest`` (the longest cacheable prefix).
        tokens: tokens it holds back.
        requests: requests it holds back.
    """

    limit: str
    tokens: int
    requests: int


@dataclass
class Remaining:
    """What is left after a template's plan.

    Attributes:
        gaps: tokens per gap (``rules``, ``content``, ``reported``) on the template's requests;
            ``gaps["rules"]`` is its ideal after minus its simulated after, exactly.
        causes: the causes, by gap then tokens (``unexplained`` last in its gap); each gap's
            causes add up to it.
        attainable: the ideal's cache reads within the provider's limits (:func:`attainable`).
        held: what those limits hold back of the ideal, by limit.
    """

    gaps: dict[str, int]
    causes: list[Cause]
    attainable: int
    held: list[Held] = field(default_factory=list)

    def of(self, gap: str) -> list[Cause]:
        """The causes of one gap."""
        return [c for c in self.causes if c.gap == gap]

    def to_record(self) -> dict[str, Any]:
        """JSON record (``remaining`` of ``promptcache.propose/v1``): ``gaps``, ``causes``,
        ``attainable_tokens``, ``held_back`` (``[{limit, tokens, requests}]``)."""
        return {"gaps": dict(self.gaps), "causes": [c.to_record() for c in self.causes],
                "attainable_tokens": self.attainable,
                "held_back": [{"limit": h.limit, "tokens": h.tokens, "requests": h.requests} for h in self.held]}


def explain(candidates: Iterable[Any], outcomes: Sequence[Outcome], rules: Mapping[str, CacheRules]) -> Remaining:
    """The remaining gaps of a template's proposed requests, by cause.

    Args:
        candidates: the diagnoser's cause instances on the proposed log
            (:class:`~promptcache.diagnose.findings.Candidate`; the audit's ``accounting`` is
            built from them); those of other requests are ignored.
        outcomes: the template's outcomes in the proposed log's audit.
        rules: the proposed log's cache rules by namespace.
    """
    mine = {o.index for o in outcomes}
    cands = [c for c in candidates if c.index in mine]
    acc: Accounting = build(cands)
    named = {c.rule.id: c.rule for c in cands}
    modes: dict[str, int] = {}
    for o in outcomes:
        modes[o.namespace] = modes.get(o.namespace, 0) + 1
    ns = max(modes, key=lambda k: modes[k]) if modes else None
    r = rules.get(ns) if ns is not None else None
    causes = []
    for row in acc.rows:
        if row.rule == UNEXPLAINED.id:
            reasons = row.evidence.get("miss_reasons") or {}
            text = "no rule explains: " + "; ".join(
                f"{n:,} request{'' if n == 1 else 's'} {_reason(k, r)}" for k, n in reasons.items())
        else:
            rule = named.get(row.rule)
            text = rule.summary if rule is not None else row.rule
        causes.append(Cause(row.gap, row.rule, row.tokens, row.requests, row.cost_usd, text, dict(row.evidence)))
    got, held = attainable(outcomes, rules)
    return Remaining({g: acc.gaps[g] for g in GAPS}, causes, got, held)


def attainable(outcomes: Iterable[Outcome], rules: Mapping[str, CacheRules]) -> tuple[int, list[Held]]:
    """The ideal's cache reads within the provider's own limits, tokens, and what those limits
    hold back: a shared prefix shorter than the model's minimum reads nothing (``minimum``), a
    prefix cache reads whole hit blocks (``granularity``) short of the tokens it always
    recomputes (``max_hit_offset``), and no cache reads past its longest cacheable prefix
    (``longest``: Amazon Nova's 32K), DeepSeek reads only whole cache prefix units (a shared
    prefix that is no unit yet, miss reason ``no_unit``, reads what the simulation read:
    ``units``), and an entry that expired where the model offers no longer lifetime
    (:meth:`~promptcache.simulate.rules.CacheRules.longer_lifetimes`: gpt-4o-mini has in_memory
    only) is lost to the provider's rules (``lifetime``). Each outcome's shortfall goes to the
    first limit that applies. What no change to the prompts can recover lies between this and the
    ideal."""
    total = 0
    held: dict[str, list[int]] = {}

    def hold(limit: str, n: int) -> None:
        if n > 0:
            h = held.setdefault(limit, [0, 0])
            h[0] += n
            h[1] += 1

    for o in outcomes:
        r = rules.get(o.namespace)
        shared = o.shared_prefix_tokens
        if r is None or shared <= 0:
            total += max(0, shared)
            continue
        if r.max_cached_tokens is not None and shared > r.max_cached_tokens:
            hold("longest", shared - r.max_cached_tokens)
            shared = r.max_cached_tokens
        if r.mode == "prefix":
            g = max(1, r.granularity)
            whole = (min(shared, max(0, o.prompt_tokens - r.max_hit_offset)) // g) * g
            hold("granularity", shared - whole)
            shared = whole
        elif o.miss_reason == "no_unit":  # DeepSeek reads whole units only: the rest is a unit from now on
            hold("units", shared - o.cached_tokens)
            shared = o.cached_tokens
        if o.miss_reason == "expired" and not r.longer_lifetimes():  # no longer lifetime to ask for
            hold("lifetime", shared - min(shared, o.cached_tokens))
            shared = min(shared, o.cached_tokens)
        if shared < r.min_tokens:
            hold("minimum", shared)
            shared = 0
        total += shared
    return total, [Held(k, v[0], v[1]) for k, v in sorted(held.items(), key=lambda kv: -kv[1][0])]


#: What each limit is, for reports.
LIMITS = {"minimum": "the model's minimum cacheable length", "granularity": "whole cache blocks",
          "longest": "the longest cacheable prefix", "units": "whole cache prefix units (DeepSeek)",
          "lifetime": "the longest lifetime the model offers"}


def remaining_findings(findings: Iterable[Any], indices: set[int]) -> list[Any]:
    """The diagnosis's findings on the proposed log whose first affected request is one of the
    template's (``indices``: arrival indices in the proposed log's audit) and that lose tokens,
    largest loss first (as the diagnosis ranks them)."""
    return [f for f in findings if f.first_request in indices and f.tokens_lost > 0]
