"""What is left between a template's simulated cache reads after its plan and the ideal after
its plan, by cause.

This is the one place that explains the remaining gap, from what the simulation and the
diagnosis say of the proposed log today: the tokens the ideal cache shares that the simulated
rules do not read (``shared_prefix_tokens - cached_tokens``), grouped by the outcome's miss
reason (:func:`explain`), and the findings the diagnosis still makes on the template's proposed
requests (:func:`remaining_findings`). The diagnosis's exact loss accounting per cause is meant
to replace both (same inputs, same shape).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..simulate import Outcome
from ..simulate.rules import CacheRules

#: What each miss reason means after a plan, for reports.
REASONS = {
    "after_last_breakpoint": "after the last breakpoint (the newest turn's own text, and the part of it that the next "
                             "request happens to share)",
    "granularity": "inside a partial cache block (hits count in whole blocks)",
    "below_min": "below the model's minimum cacheable length",
    "expired": "the cache entry expired (TTL) before the request came",
    "lookback": "beyond the breakpoints' lookback window",
    "no_breakpoint": "in requests without any breakpoint",
    "evicted": "evicted by the cache's capacity",
    "namespace": "in another cache namespace (a cache key splits the traffic)",
    "no_unit": "not yet a whole cache prefix unit (DeepSeek persists a common prefix only once two requests share it)",
    None: "not attributed by the simulation",
}


@dataclass(frozen=True)
class GapPart:
    """Tokens of the remaining gap with one cause.

    Attributes:
        reason: the simulation's miss reason (``None``: the simulation gave none).
        tokens: tokens the ideal reads and the simulated rules do not.
        requests: requests that lose them.
    """

    reason: str | None
    tokens: int
    requests: int

    @property
    def description(self) -> str:
        """What the reason means."""
        return REASONS.get(self.reason, self.reason or "")


def explain(outcomes: Iterable[Outcome]) -> list[GapPart]:
    """The remaining gap of a template's requests, by cause, largest first.

    Args:
        outcomes: the re-simulated outcomes of the template's requests after its plan.
    """
    acc: dict[str | None, list[int]] = {}
    for o in outcomes:
        lost = o.shared_prefix_tokens - o.cached_tokens
        if lost <= 0:
            continue
        a = acc.setdefault(o.miss_reason, [0, 0])
        a[0] += lost
        a[1] += 1
    return sorted((GapPart(r, t, n) for r, (t, n) in acc.items()), key=lambda g: -g.tokens)


def attainable(outcomes: Iterable[Outcome], rules: Mapping[str, CacheRules]) -> int:
    """The ideal's cache reads within the provider's own limits, tokens: a shared prefix
    shorter than the model's minimum reads nothing, and a prefix cache reads whole hit blocks
    (``granularity``) short of the tokens it always recomputes (``max_hit_offset``), and DeepSeek
    reads only whole cache prefix units (a shared prefix that is no unit yet, miss reason
    ``no_unit``, reads what the simulation read), and an entry that expired where the model offers
    no longer lifetime (:meth:`CacheRules.longer_lifetimes`: gpt-4o-mini has in_memory only) is
    lost to the provider's rules. What no change to the prompts can recover lies between this and
    the ideal."""
    total = 0
    for o in outcomes:
        r = rules.get(o.namespace)
        shared = o.shared_prefix_tokens
        if r is None:
            total += shared
            continue
        if r.mode == "prefix":
            g = max(1, r.granularity)
            shared = (min(shared, max(0, o.prompt_tokens - r.max_hit_offset)) // g) * g
        elif o.miss_reason == "no_unit":  # DeepSeek reads whole units only: the rest is a unit from now on
            shared = o.cached_tokens
        if o.miss_reason == "expired" and not r.longer_lifetimes():  # no longer lifetime to ask for
            shared = min(shared, o.cached_tokens)
        total += shared if shared >= r.min_tokens else 0
    return total


def remaining_findings(findings: Iterable[Any], indices: set[int]) -> list[Any]:
    """The diagnosis's findings on the proposed log whose first affected request is one of the
    template's (``indices``: arrival indices in the proposed log's audit) and that lose tokens,
    largest loss first (as the diagnosis ranks them)."""
    return [f for f in findings if f.first_request in indices and f.tokens_lost > 0]
