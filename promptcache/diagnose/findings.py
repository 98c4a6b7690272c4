"""Findings: what breaks the cache, where, how often, and what it costs.

A :class:`Candidate` is one request's instance of a cause; :func:`aggregate` groups candidates
by rule and location across the log and ranks them by money lost (tokens when unpriced).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .redact import Evidence
from .rules import RANK, Rule

#: What kind of cause a check kind reports: only ``content`` causes are visible in the prompt text.
CAUSE = {"value-pattern": "content", "structural-diff": "content", "parameter-diff": "parameter",
         "length-threshold": "length", "timing": "timing", "key-usage": "cache key", "breakpoint": "breakpoint",
         "reported-usage": "reported usage", "routing": "routing", "engine": "engine", "capacity": "capacity", "accounting": "unexplained"}


@dataclass(slots=True)
class Candidate:
    """One request's instance of a cause.

    Attributes:
        rule: the rule that explains it.
        key: grouping key within the rule (segment path and value offset, or namespace).
        index: the request's arrival index.
        path, line: log file and line of the request.
        segment: segment path where the cause sits (``None`` for causes outside the text).
        char_offset: character offset inside the segment's part, or ``None``.
        token_index: token index of the break in the prompt, or ``None``.
        evidence: values on both sides and other facts; an :class:`~.redact.Evidence` holds its
            quotes unformatted (and unredacted) until :func:`aggregate` shows them.
        tokens_lost: tokens the request could have read from the cache without the cause.
        cost_lost: money those tokens cost under the simulated rules, or ``None``.
        values: extra placeholders for the rule's message.
        gap: the accounting gap its tokens belong to (``content``, ``rules``, ``reported``:
            :mod:`.accounting`), or ``None`` for a finding that claims no lost tokens (a what-if
            saving, a rate warning).
        verdict: the provider's own cache verdict for the request beside this cause
            (:class:`~.verdict.Reading`), or ``None`` when the response carried none.
    """

    rule: Rule
    key: tuple[Any, ...]
    index: int
    path: str
    line: int
    segment: str | None
    char_offset: int | None
    token_index: int | None
    evidence: dict[str, Any] | Evidence
    tokens_lost: int
    cost_lost: Decimal | None
    values: dict[str, Any] = field(default_factory=dict)
    gap: str | None = None
    verdict: Any = None


@dataclass
class Finding:
    """A cause grouped across the log.

    Attributes:
        rule: the rule.
        message: the rule's message filled from the first instance and the totals.
        path, line: file and line of the first affected request.
        segment, char_offset, token_index: where the cause sits in that request.
        evidence: the first instance's evidence (redacted unless ``--show-text``), with the
            provider's own verdict where responses carried one (:func:`verdicts`).
        requests: requests that lost tokens to the cause (every request it names, for a finding
            that claims no tokens).
        tokens_lost: tokens lost over the whole log.
        cost_usd_lost: money lost over the log under the simulated rules, or ``None``.
        first_request: id of the first affected request.
    """

    rule: Rule
    message: str
    path: str
    line: int
    segment: str | None
    char_offset: int | None
    token_index: int | None
    evidence: dict[str, Any]
    requests: int
    tokens_lost: int
    cost_usd_lost: Decimal | None
    first_request: int

    @property
    def severity(self) -> str:
        """``info``, ``warning`` or ``error``."""
        return self.rule.severity

    def to_record(self) -> dict[str, Any]:
        """The JSON record (``findings`` items of ``promptcache.audit/v1``)."""
        return {
            "rule": self.rule.id,
            "code": self.rule.code,
            "severity": self.rule.severity,
            "cause": CAUSE[self.rule.kind],
            "message": self.message,
            "location": {"path": self.path, "line": self.line, "segment": self.segment,
                         "char_offset": self.char_offset, "token_index": self.token_index},
            "evidence": self.evidence,
            "requests": self.requests,
            "tokens_lost": self.tokens_lost,
            "cost_usd_lost": None if self.cost_usd_lost is None else float(round(self.cost_usd_lost, 6)),
            "fix": {"description": self.rule.fix.get("description"), "safety": self.rule.fix.get("safety")},
        }


def verdicts(cs: list[Candidate], shown: Candidate) -> dict[str, Any]:
    """The provider's own verdicts over a finding's instances, as evidence: ``provider_verdict``
    (the shown instance's, else the first instance's that has one), ``provider_verdicts`` (each
    distinct verdict and its requests, where they differ), ``provider_verdict_requests``
    (instances with a verdict, where not all have one) and, where any disagrees with the located
    cause, ``provider_disagrees`` (the first disagreement, in words, and on how many requests),
    else ``provider_agrees``; ``provider_compared_with`` where the provider compared the shown
    instance with another request than the diagnosis did."""
    got = [c for c in cs if c.verdict is not None]
    if not got:
        return {}
    first = shown if shown.verdict is not None else got[0]
    out: dict[str, Any] = {"provider_verdict": first.verdict.text}
    texts: dict[str, int] = {}
    for c in got:
        texts[c.verdict.text] = texts.get(c.verdict.text, 0) + 1
    if len(texts) > 1:
        out["provider_verdicts"] = texts
    if len(got) < len(cs):
        out["provider_verdict_requests"] = len(got)
    if first.verdict.elsewhere:
        out["provider_compared_with"] = first.verdict.elsewhere
    against = [c for c in got if c.verdict.agrees is False]
    if against:
        lead = first if first.verdict.agrees is False else against[0]
        n = len(against)
        out["provider_disagrees"] = lead.verdict.note + (f"; on {n} of {len(got)} requests with a verdict"
                                                         if len(got) > 1 else "")
    elif any(c.verdict.agrees for c in got):
        out["provider_agrees"] = True
    return out


def aggregate(cands: list[Candidate]) -> list[Finding]:
    """Group candidates by (rule, key) and rank by money lost, then tokens lost, then severity."""
    groups: dict[tuple[str, tuple[Any, ...]], list[Candidate]] = {}
    for c in cands:
        if c.rule.kind == "accounting" or c.rule.options.get("accounting_only"):
            continue  # unexplained tokens, or a loss by design: rows of the accounting, not causes to fix
        groups.setdefault((c.rule.id, c.key), []).append(c)
    out: list[Finding] = []
    for (_, _), cs in groups.items():
        cs.sort(key=lambda c: c.index)
        # locate the finding where most instances sit (a value at one place in a template)
        offsets: dict[Any, int] = {}
        for c in cs:
            offsets[c.char_offset] = offsets.get(c.char_offset, 0) + 1
        mode = max(offsets, key=lambda k: offsets[k])
        first = next(c for c in cs if c.char_offset == mode)
        evidence = first.evidence.resolve() if isinstance(first.evidence, Evidence) else dict(first.evidence)
        evidence.update(verdicts(cs, first))
        tokens = sum(c.tokens_lost for c in cs)
        priced = [c.cost_lost for c in cs if c.cost_lost is not None]
        cost = sum(priced, Decimal(0)) if priced else None
        if tokens == 0 and all(c.gap is not None for c in cs):
            cost = None  # lost nothing: not listed as costing money
        # requests that lost tokens to the cause (as the accounting's rows count them); a finding
        # that claims no tokens (a what-if saving, a latent cause) counts every request it names.
        # A request may lose tokens in two gaps to one cause: it counts once.
        n = len({c.index for c in cs if c.tokens_lost > 0} or {c.index for c in cs})
        values = {"requests": n, "tokens_lost": f"{tokens:,}", "segment": first.segment,
                  **{k: v for k, v in evidence.items() if isinstance(v, (str, int, float))}, **first.values}
        message = first.rule.format(**values)
        under = [c for c in cs if c.tokens_lost > 0 and c.values.get("under_minimum")]
        if under:
            # the gap is the ideal cache's; a prompt under the minimum is served nothing, changed or not
            k, m = len({c.index for c in under}), max(int(c.values["under_minimum"]) for c in under)
            tok = sum(c.tokens_lost for c in under)
            evidence["under_minimum"] = {"requests": k, "tokens": tok, "min_tokens": m}
            if k == n:
                message += (f" ({'the request is' if n == 1 else f'all {n:,} requests are'} shorter than the "
                            f"{m:,}-token minimum: with the change undone the simulated rules would still cache "
                            f"none of it, so it costs nothing under them)")
            else:
                message += (f" ({k:,} of the {n:,} requests are shorter than the {m:,}-token minimum, so the "
                            f"simulated rules would cache none of them with the change undone: their {tok:,} "
                            f"tokens cost nothing under them)")
        out.append(Finding(first.rule, message, first.path, first.line, first.segment,
                           first.char_offset, first.token_index, evidence, n, tokens, cost, first.index))
    out.sort(key=lambda f: (f.cost_usd_lost if f.cost_usd_lost is not None else Decimal(-1), f.tokens_lost,
                            RANK[f.severity], -f.first_request), reverse=True)
    return out
