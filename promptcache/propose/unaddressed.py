"""What no proposal addresses: the findings of the log as it is that lose tokens and that no
applied change of their template's plan removes, each with the reason.

A report that proposes nothing may not read as "the templates are fine" while the diagnosis
finds tokens lost: every such finding is listed with why no plan takes it on (no change of the
proposal's kinds undoes its cause, the change that would was withdrawn or is advice only, or
the plan leaves it standing in the proposed log's audit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: Why no change of the proposal's kinds undoes a cause, per rule kind (``rules/lint/*.yaml``).
WHY = {
    "value-pattern": "no change the proposal makes takes this value out of the prefix",
    "structural-diff": "no change the proposal makes undoes this change to the prompt",
    "parameter-diff": "the proposal changes no request parameter but tool_choice (keep-tool-choice, on Anthropic, "
                      "OpenAI Chat and Responses bodies)",
    "length-threshold": "a limit of the provider's cache (the model's minimum cacheable length), not an order of "
                        "the prompt's content",
    "timing": "the cache's lifetime: the lifetime analysis found no cheaper policy on the log's pauses",
    "key-usage": "the log names no conversation identity the proposal can derive a cache key from",
    "breakpoint": "the proposal places no breakpoint that recovers these tokens",
    "reported-usage": "the log's reported usage, not the prompts: no change to the prompts recovers it",
    "routing": "routing: the log names no upstream the proposal can pin",
    "engine": "the engine's cache, not the prompts",
    "accounting": "no rule names its cause",
}
#: A finding the plan of its template still shows with at least this share of its tokens
#: after the plan is left standing by the plan.
STANDING = 0.5


@dataclass
class Unaddressed:
    """A finding of the log as it is that no proposal addresses.

    Attributes:
        finding: the finding (:class:`~promptcache.diagnose.findings.Finding`).
        reason: why no proposal addresses it.
        template: its template's id, or ``None``.
        after_tokens: tokens the same cause still loses in the proposed log's audit, or
            ``None`` where no plan rewrote its template.
    """

    finding: Any
    reason: str
    template: str | None = None
    after_tokens: int | None = None

    def to_record(self) -> dict[str, Any]:
        """JSON record: ``rule``, ``code``, ``segment``, ``tokens_lost``, ``cost_usd_lost``,
        ``requests``, ``template_id``, ``after_tokens``, ``reason``."""
        f = self.finding
        return {"rule": f.rule.id, "code": f.rule.code, "segment": f.segment, "tokens_lost": f.tokens_lost,
                "cost_usd_lost": None if f.cost_usd_lost is None else float(round(f.cost_usd_lost, 6)),
                "requests": f.requests, "template_id": self.template, "after_tokens": self.after_tokens,
                "reason": self.reason}


def _why(f: Any, changes: Iterable[Any]) -> str:
    """The reason for a finding whose template has no applied change that addresses it."""
    changes = list(changes)
    gone = [c for c in changes if c.withdrawn]
    advice = [c for c in changes if not c.applied and not c.withdrawn]
    fix = (f.rule.fix or {}).get("description")
    tail = f" (the rule's fix: {fix})" if fix else ""
    if gone:
        why = gone[-1].rationale
        at = why.find("Withdrawn:")
        return f"its template's plan rewrites no request: {', '.join(sorted({c.kind for c in gone}))} withdrawn" + (
            f" ({why[at + len('Withdrawn:'):].strip().rstrip('.')})" if at >= 0 else "") + tail
    if advice:
        why = advice[-1].rationale
        at = why.find("Not applied:")
        return f"its template's plan rewrites no request: {', '.join(sorted({c.kind for c in advice}))} advice only" + (
            f" ({why[at + len('Not applied:'):].strip().rstrip('.')})" if at >= 0 else ", not simulated") + tail
    base = WHY.get(f.rule.kind, "no change the proposal makes addresses it")
    if f.rule.kind == "parameter-diff":
        param = (f.evidence or {}).get("param")
        base = f"the proposal does not change `{param}`" if param and param != "tool_choice" else base
    return base + tail


def unaddressed(findings: Iterable[Any], template_of: Mapping[int, Any], proposals: Iterable[Any]) -> list[Unaddressed]:
    """The findings (of the log as it is) that lose tokens and that no proposal addresses.

    Args:
        findings: the before audit's findings.
        template_of: arrival index of a request in the before audit → its plan (``None``:
            no template).
        proposals: the proposals (:class:`~.engine.Proposal`), with their after findings.

    Returns:
        Largest loss first (the diagnosis's order). A finding counts as addressed where its
        template's plan applies a change and the proposed log's audit no longer finds the same
        rule at the same place with :data:`STANDING` of its tokens.
    """
    by_template = {p.plan.template.id: p for p in proposals}
    out = []
    for f in findings:
        if f.tokens_lost <= 0:
            continue
        plan = template_of.get(f.first_request)
        tid = plan.template.id if plan is not None else None
        p = by_template.get(tid) if tid is not None else None
        if p is not None and p.plan.applies:
            still = sum(g.tokens_lost for g in p.findings_after if g.rule.id == f.rule.id and g.segment == f.segment)
            if still < STANDING * f.tokens_lost:
                continue
            out.append(Unaddressed(f, f"{tid}'s plan leaves it: {still:,} tokens still lost after the plan; "
                                   + _why(f, ()), tid, still))
            continue
        out.append(Unaddressed(f, _why(f, plan.changes if plan is not None else ()), tid))
    return out
