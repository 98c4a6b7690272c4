"""Proposals: turn what breaks the cache into concrete, priced plans for the templates behind the
traffic, applied to every logged request and re-simulated together.

1. audit the log as it is while inferring its templates (:mod:`.templates`, :mod:`.observe`);
2. plan each template: every change it needs (:mod:`.plan`);
3. rewrite every record of the template (:mod:`.rewrite`) into the proposed log (:mod:`.logio`)
   and audit that log without expiry; choose each template's cheapest cache lifetime on those
   figures and the log's own arrival times (:mod:`.lifetime`);
4. rewrite again with the lifetime policies (keep-alive requests included) and audit the
   proposed log as it will be written: its figures are the proposal's "after";
5. withdraw what costs more than it saves (the lifetime policy first, then the whole plan) and
   simulate again, until nothing loses.

The proposed log that ``--write-proposed`` writes is the file step 4 audits, byte for byte.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import BadRecord, ConfigError
from ..model import Request
from ..pipeline import AuditOptions, AuditResult, Pipeline, ScenarioTotals, Step, assemble, collect, price, run
from ..pricing import PriceBook
from ..report.numbers import usd
from ..simulate import Outcome
from ..simulate.rules import load_providers
from . import lifetime as lt
from . import logio
from .logio import BODY_FORMATS, Item, Out, Parsers
from .observe import Observer
from .plan import Change, Plan, build
from .remaining import Remaining, explain, remaining_findings
from .rewrite import Rewriter
from .unaddressed import Unaddressed, unaddressed

__all__ = ["Change", "Plan", "Proposal", "ProposeResult", "propose"]

#: Changes whose saving the simulated figures may not show, so a plan is not withdrawn for
#: leaving them unchanged: ``pin-routing`` where the rules give every upstream one cache (the
#: saving is in the log's reported usage), ``replay-verbatim`` (the simulator caches prompt
#: tokens, not the generated tokens an engine keeps); and ``cache-key`` where it fixes routing
#: (:func:`_unseen`).
UNSEEN = ("pin-routing", "replay-verbatim")


@dataclass
class Proposal:
    """A template's plan with its before/after simulation (tokens; USD).

    Attributes:
        plan: the plan.
        requests: the template's requests in the log.
        unmatched: requests whose text did not match the template (left as they are).
        before, after: scenario totals of the template's requests before and after the plan
            (after: keep-alive requests included).
        remaining: what is left after the plan, by cause: the loss accounting of the proposed
            log's audit on the template's requests (:func:`~.remaining.explain`); its ``rules``
            gap is ``after["ideal"]`` minus ``after["simulated"]`` cached tokens, exactly.
        lifetime: the lifetime optimiser's answer, or ``None`` where it did not run.
        lines: lines of the proposed log that belong to the template.
        findings_after: what the diagnosis still finds on the template's proposed requests.
    """

    plan: Plan
    requests: int
    unmatched: int
    before: dict[str, ScenarioTotals]
    after: dict[str, ScenarioTotals]
    remaining: Remaining = field(default_factory=lambda: Remaining({}, [], 0))
    lifetime: lt.Choice | None = None
    lines: list[int] = field(default_factory=list)
    findings_after: list[Any] = field(default_factory=list)

    @property
    def attainable_tokens(self) -> int:
        """The ideal's cache reads after the plan within the provider's minimum, hit granularity
        and longest cacheable prefix (:func:`~.remaining.attainable`)."""
        return self.remaining.attainable

    @property
    def savings_usd(self) -> Decimal | None:
        """Simulated cost before minus after, or ``None`` when unpriced."""
        b, a = self.before["simulated"].cost, self.after["simulated"].cost
        return None if b is None or a is None else b - a

    @property
    def ideal_share(self) -> float | None:
        """Simulated cached tokens after the plan as a share of the ideal's after the plan."""
        i = self.after["ideal"].cached_tokens
        return self.after["simulated"].cached_tokens / i if i else None


@dataclass
class ProposeResult:
    """Before (the audit of the logs as they are), after (the audit of the proposed log), the
    proposals, and each template's lifetime analysis.

    Attributes:
        before, after: the two audits.
        proposals: templates with changes, largest saving first.
        written: where the proposed log was written, or ``None``.
        skipped_records: input records that could not be read again.
        lifetimes: per template id, the lifetime optimiser's answer (every template it ran on).
        template_of_line: per ``(file, line)`` of the proposed log as audited, its template id
            (``None``: no template).
        unaddressed: the findings of the log as it is that lose tokens and that no proposal
            addresses, each with the reason (:mod:`.unaddressed`).
    """

    before: AuditResult
    after: AuditResult
    proposals: list[Proposal]
    written: str | None = None
    skipped_records: int = 0
    lifetimes: dict[str, lt.Choice] = field(default_factory=dict)
    template_of_line: dict[tuple[str, int], str | None] = field(default_factory=dict)
    unaddressed: list[Unaddressed] = field(default_factory=list)


class _Trace:
    """Observer of the no-expiry audit of the proposed log: per template, its requests as
    :class:`~.lifetime.Visit` items.

    A request's *conversation*, for the lifetime, is that of the earlier request whose prompt it
    shares the most with (the ideal cache's ``diverged_from``) when it reads beyond the template's
    anchor: the entries it reads there are the ones that request's conversation touches.
    """

    def __init__(self, outs: dict[tuple[str, int], Out]):
        self.outs = outs
        self.visits: dict[tuple[str, ...], list[lt.Visit]] = {}
        self.prompt: dict[tuple[str, ...], tuple[str, str | None, int, float | None]] = {}
        self.conv_of_index: dict[int, int] = {}
        self.conv_of_source: dict[tuple[int, int], int] = {}

    def __call__(self, step: Step) -> None:
        o = step.outcome
        out = self.outs.get((o.path, o.line))
        if out is None or out.template is None or out.keepalive or out.arrival is None:
            return
        r = step.rules
        anchor_end = 0
        if out.anchor is not None:
            for seg, e in zip(step.prompt.segments, step.prompt.seg_ends):
                if seg.path == out.anchor or any(p == out.anchor for p, _, _ in seg.spans):
                    if r.mode != "breakpoints" or seg.breakpoint is not None:
                        anchor_end = e
                    break
        n, cached, write = o.prompt_tokens, o.cached_tokens, o.write_tokens
        ping_read = ping_plain = None
        if r.mode == "prefix":  # hits in whole blocks; a keep-alive copy reads the whole stored prompt
            g = max(1, r.granularity)
            anchor_end = (anchor_end // g) * g
            ping_read = (max(0, n - r.max_hit_offset) // g) * g
            ping_read = ping_read if ping_read >= r.min_tokens else 0
            ping_plain = n - ping_read
        a = min(cached, anchor_end)
        new_a = max(0, min(anchor_end, cached + write) - cached)
        conv = o.index
        if cached > a and o.diverged_from is not None:
            conv = self.conv_of_index.get(o.diverged_from, o.index)
        self.conv_of_index[o.index] = conv
        self.conv_of_source[out.source] = conv
        self.visits.setdefault(out.template, []).append(lt.Visit(
            out.arrival, conv, a, cached - a, new_a,
            write - new_a, n - cached - write, o.line, 0 if out.api == "anthropic" else 1, ping_read, ping_plain))
        self.prompt.setdefault(out.template, (o.provider, o.model, o.prompt_tokens, out.arrival))


def propose(paths: Sequence[str | Path], opts: AuditOptions | None = None, *, write: str | Path | None = None,
            progress: Callable[[int], None] | None = None, lifetime: str | None = None) -> ProposeResult:
    """Infer templates, plan every change each needs, apply the plans to every logged request,
    choose each template's cache lifetime, and re-simulate.

    Args:
        paths: log files.
        opts: audit options (the same rules and prices apply before and after).
        write: write the proposed log here (JSONL records in the input's format; ``.gz``
            compressed).
        progress: called with requests done, per pass.
        lifetime: force one lifetime policy on every template (a :class:`~.lifetime.Policy`
            name such as ``"1h"`` or ``"5m + keep-alive ×2"``; ``"current"`` keeps the log's):
            the brute-force check of the optimiser, not a user option.

    Returns:
        A :class:`ProposeResult`.

    Raises:
        ConfigError: when ``write`` is asked for inputs of several formats, or for records the
            proposal cannot rewrite.
    """
    opts = opts or AuditOptions()
    book = PriceBook(opts.prices_file)
    if write is not None:
        from ..fileio import refuse_inputs

        refuse_inputs([write], paths, flag="--write-proposed")
    obs = Observer()
    before = run(Pipeline(paths, opts), progress=progress, observers=[obs], book=book)
    templates = obs.index.templates()
    items, skipped = logio.items(paths, opts.read)
    apis: dict[tuple[str, ...], str] = {}
    formats: dict[tuple[str, ...], str] = {}
    rewritable: dict[tuple[str, ...], str | None] = {}
    for it in items:
        for r in it.requests:
            if not r.parts:
                continue
            key = obs.index.key_for(r)
            if it.fmt in BODY_FORMATS and len(it.requests) == 1:
                apis.setdefault(key, logio.dialect(it.record, it.fmt, r.api))
                formats.setdefault(key, it.fmt)
                rewritable[key] = None
            else:
                rewritable.setdefault(key, it.fmt)
    plans = build(before, obs, templates, apis)
    for key, fmt in formats.items():
        if key in plans:
            plans[key].fmt = fmt
    _tool_unions(plans, items, obs)
    for key, fmt in rewritable.items():
        if fmt is not None and key in plans:  # advice only: no record of the template can be rewritten
            for c in plans[key].changes:
                if c.applied:
                    c.applied = False
                    c.rationale += (f" Not applied: {fmt} records cannot be rewritten (the proposal rewrites "
                                    f"{', '.join(BODY_FORMATS)} records); not simulated.")
    answers = sorted({it.fmt for it in items if logio.responses_only(it.fmt)})
    if write is not None and answers and len(answers) < len({it.fmt for it in items}):
        raise ConfigError(f"--write-proposed writes one log, but the inputs hold {', '.join(answers)} records, which "
                          "are read from a file of their own: propose them with their requests' files separately")
    unread = [str(p) for fi, (p, st) in enumerate(zip(paths, before.inputs))
              if st.requests and not any(it.file == fi for it in items)]
    if write is not None and unread:
        raise ConfigError(f"--write-proposed rewrites JSON records, and {', '.join(unread)} holds none")

    with tempfile.TemporaryDirectory(prefix="promptcache-propose-") as scratch:
        job = _Job(paths, opts, book, obs, plans, items, Path(scratch), unread, write)
        choices: dict[tuple[str, ...], lt.Choice] = {}
        if _lifetime_relevant(plans):
            # the proposed requests at one instant: no pause lets an entry expire, whatever the
            # provider's lifetimes; Out.arrival keeps the logged time for the optimiser
            first = min((it.order[0] for it in items if it.order[0] > float("-inf")), default=None)
            outs = job.rewrite()
            trace = _Trace({(r.source.path, r.source.line): o for o in outs for r in o.requests})
            reqs = [r if r.arrival is None else replace(r, arrival=first) for o in outs for r in o.requests]
            run(Pipeline.from_requests(reqs, AuditOptions(**{**opts.__dict__, "diagnose": False})),
                observers=[trace], book=book)
            choices = _choose(plans, trace, book, before.span_seconds, lifetime)
            job.conversations = trace.conv_of_source
        key_of = {id(pl): k for k, pl in plans.items()}
        for _ in range(4):
            outs = job.rewrite()
            after, where = job.audit(outs, opts, progress=progress)
            proposals = _compare(before, after, obs, plans, job, where, choices)
            losing = [p for p in proposals if p.plan.applies and p.savings_usd is not None and p.savings_usd < 0]
            idle = [p for p in proposals if _no_effect(p)]
            rewrote = {o.template for o in outs if o.changed}
            same = [p for p in proposals if p.plan.applies and key_of[id(p.plan)] not in rewrote]
            for p in same:  # its rewrite left every record byte-identical: no saving can be its
                p.plan.withdraw(None, "Withdrawn: it rewrites no logged request of the template (every proposed "
                                      "record is byte-identical to the logged one).")
            if not (losing or idle or same) or lifetime is not None:
                break
            losing = [p for p in losing if p not in same]
            idle = [p for p in idle if p not in same]
            for p in losing:  # it costs more than it saves: withdrawn, and the rest simulated again
                why = f"Withdrawn: re-simulated on this traffic it cost {usd(-p.savings_usd)} more than it saved."
                if p.plan.active("lifetime"):
                    p.plan.withdraw(("lifetime",), why)
                    p.plan.lifetime = None
                else:
                    p.plan.withdraw(None, why)
            for p in idle:
                p.plan.withdraw(tuple(c.kind for c in p.plan.changes if c.kind not in _unseen(p.plan)),
                                "Withdrawn: re-simulated on this traffic it changes neither the cost nor the cached "
                                "tokens" + (f" (left: {p.remaining.causes[0].description})." if p.remaining.causes
                                            else "."))
        written = job.written
    lines = {pl: (plans[o.template].template.id if o.template in plans else None) for pl, o in job.where.items()}
    left = unaddressed(before.findings, {i: plans.get(k) for i, k in obs.key_of.items()}, proposals)
    return ProposeResult(before, after, proposals, str(written) if written else None, skipped,
                         {plans[k].template.id: c for k, c in choices.items()}, lines, left)


@dataclass
class _Job:
    """One proposal run's inputs and the files it writes."""

    paths: Sequence[str | Path]
    opts: AuditOptions
    book: PriceBook
    obs: Observer
    plans: dict[tuple[str, ...], Plan]
    items: list[Item]
    scratch: Path
    unread: list[str]
    dest: str | Path | None
    written: str | None = None
    rewriter: Rewriter | None = None
    where: dict[tuple[str, int], Out] = field(default_factory=dict)
    #: per input record (file, line), its conversation for the lifetime (:class:`_Trace`)
    conversations: dict[tuple[int, int], int] = field(default_factory=dict)
    #: the diagnoser's cause instances on the proposed log's last audit (the accounting's)
    candidates: list[Any] = field(default_factory=list)

    def rewrite(self) -> list[Out]:
        """Every record rewritten by its template's plan, keep-alive copies added, in the
        audit's order.

        Raises:
            ConfigError: when writing, for records of a plan that cannot be rewritten.
        """
        parsers = Parsers()
        fmt = [""]

        def reparse(rec: Any, req: Request) -> Request | None:
            # a copy: the readers' memos keep the objects they parse, and the rewriter edits
            # this record further (breakpoints) after reading it back
            try:
                got = parsers.parse(logio.copy_record(rec), fmt[0], req.source.path, req.source.line, self.opts.read)
            except (BadRecord, KeyError):
                return None
            return got[0] if len(got) == 1 else None

        rw = Rewriter(self.plans, self.obs.index, reparse)
        self.rewriter = rw
        outs: list[Out] = []
        for it in self.items:
            reqs = it.requests
            if it.fmt in BODY_FORMATS and len(reqs) == 1 and reqs[0].parts:
                fmt[0] = it.fmt
                got = rw.rewrite(it.record, reqs[0])
                key = rw.key_of(reqs[0])
                own = -1 - got.link.conversation if got.link else None  # apart from the trace's ids (>= 0)
                conv = self.conversations.get((it.file, it.line), own)
                outs.append(Out(got.record, key, conv, reqs[0].arrival, got.changed, source=(it.file, it.line),
                                api=got.request.api, anchor=got.anchor, requests=[got.request]))
                continue
            if self.dest is not None and any((pl := self.plans.get(self.obs.index.key_for(r))) is not None
                                             and pl.applies for r in reqs if r.parts):
                raise ConfigError(f"--write-proposed cannot rewrite {it.fmt} records ({self.paths[it.file]}); "
                                  f"it rewrites {', '.join(BODY_FORMATS)} logs")
            key = self.obs.index.key_for(reqs[0]) if len(reqs) == 1 and reqs[0].parts else None
            outs.append(Out(it.record, key, None, reqs[0].arrival if reqs else None, False, source=(it.file, it.line),
                            api=reqs[0].api if reqs else "", requests=list(reqs)))
        return _with_keepalive(outs, self.plans)

    def audit(self, outs: list[Out], opts: AuditOptions, *,
              progress: Callable[[int], None] | None = None) -> tuple[AuditResult, dict[tuple[str, int], Out]]:
        """Write the proposed log (to ``dest`` when writing) and audit it: ``(audit, (path, line)
        → record)``."""
        # one file in the audit's order (the readers detect each record's format); records of a
        # response-only shape (batch outputs) in a file of their own, as ingest reads them first
        fmt_of = {(it.file, it.line): it.fmt for it in self.items}
        by_fmt: dict[bool, list[Out]] = {}
        for o in outs:
            by_fmt.setdefault(logio.responses_only(fmt_of.get(o.source, "")), []).append(o)
        files: list[str] = []
        where: dict[tuple[str, int], Out] = {}
        for k, (fmt, group) in enumerate(sorted(by_fmt.items())):
            data = logio.encode([o.record for o in group])
            if self.dest is not None:
                path = logio.write(self.dest, data)
                self.written = path
            else:
                path = logio.write(self.scratch / f"proposed-{k}.jsonl", data)
            files.append(path)
            for line, o in enumerate(group, 1):
                where[(path, line)] = o
        self.where = where
        part = collect(Pipeline(files + self.unread, opts), progress=progress, book=self.book)
        self.candidates = part.candidates or []
        return assemble(part, opts, self.book), where


def _tool_unions(plans: dict[tuple[str, ...], Plan], items: list[Item], obs: Observer) -> None:
    """Every tool the requests of a ``tool-set-union`` template send, as the first record that
    sends it wrote it, in the order of first appearance."""
    want = {k for k, p in plans.items() if p.tool_union}
    if not want:
        return
    found: dict[tuple[str, ...], dict[str, Any]] = {k: {} for k in want}
    from .edits import tool_name
    from .logio import body_of

    for it in items:
        for r in it.requests:
            key = obs.index.key_for(r) if r.parts else None
            if key not in want:
                continue
            located = body_of(it.record)
            tools = located[0].get("tools") if located is not None else None
            for t in tools if isinstance(tools, list) else ():
                found[key].setdefault(tool_name(t), logio.copy_record(t))
    for k in want:
        plans[k].tool_union = list(found[k].items()) or [("", None)]


def _unseen(plan: Plan) -> tuple[str, ...]:
    """The plan's changes whose saving the simulated figures may not show (:data:`UNSEEN`; a
    cache key that fixes routing rather than a key per request)."""
    from .plan import KEY_CAUSES

    return UNSEEN + (("cache-key",) if plan.cache_key and plan.key_cause != KEY_CAUSES["cache-key-unique"] else ())


def _no_effect(p: Proposal) -> bool:
    """A plan that rewrites requests and leaves the simulated cost and cache reads exactly as
    they were (what it changes is below the model's minimum, say): not worth a change."""
    if not any(c.applied and c.kind not in _unseen(p.plan) for c in p.plan.changes):
        return False
    b, a = p.before["simulated"], p.after["simulated"]
    return b.cost == a.cost and b.cached_tokens == a.cached_tokens and b.prompt_tokens == a.prompt_tokens


def _lifetime_relevant(plans: dict[tuple[str, ...], Plan]) -> bool:
    """Whether any template has timed requests under rules with a lifetime."""
    return any(p.stats.arrivals >= 2 and p.stats.rules is not None and p.stats.rules.ttl_seconds
               for p in plans.values())


def _options(plan: Plan) -> tuple[dict[str, tuple[float, str]], str | None, bool] | None:
    """The lifetime options of a template's provider: ``(name → (seconds, write tier), current,
    breakpoints)``, or ``None`` when it has no lifetime to choose."""
    r = plan.stats.rules
    pf = load_providers().get(plan.stats.provider)
    if r is None or pf is None or not r.ttl_seconds:
        return None
    tier = "write" if r.bills_writes else "input"
    offered = dict(r.lifetimes)  # what this model offers (CacheRules.lifetimes, rules/providers/<id>.yaml)
    if r.mode == "breakpoints":
        opts = {name: (float(sec), "write_1h" if sec >= 3600 else "write") for name, sec in offered.items()}
        if not opts:
            opts = {"default": (float(r.ttl_seconds), tier)}
        current = plan.marker_ttl or next((n for n, (s, _) in opts.items() if s == r.ttl_seconds), None)
        return opts, current, True
    if pf.retention and plan.api in ("chat", "responses"):
        opts = {name: (float(sec), tier) for name, sec in offered.items() if name in pf.retention}
        opts = {n: v for n, v in opts.items() if v[0]}
        current = next((n for n, (s, _) in opts.items() if s == r.ttl_seconds), None)
        if current is None:
            opts["default"] = (float(r.ttl_seconds), tier)
            current = "default"
        return opts, current, False
    return {"default": (float(r.ttl_seconds), tier)}, "default", False


def _prices(book: PriceBook, provider: str, model: str | None, n: int, when: float | None) -> lt.Prices | None:
    pf = load_providers().get(provider)
    rates = book.rates(provider if pf is not None and pf.kind == "provider" else None, model, when)
    if rates is None:
        return None
    pi, pr, pw, pw1 = (Decimal(x) / Decimal(1_000_000) for x in rates.unit_prices(n))
    out = rates.base("output")
    return lt.Prices(pi, pr, pw, pw1, Decimal(out) / Decimal(1_000_000) if out is not None else Decimal(0))


def _choose(plans: dict[tuple[str, ...], Plan], trace: _Trace, book: PriceBook, span: float | None,
            forced: str | None) -> dict[tuple[str, ...], lt.Choice]:
    """Each template's lifetime choice; the choice becomes a ``lifetime`` change when it saves
    (or, with ``forced``, the named policy is applied whatever it costs)."""
    out: dict[tuple[str, ...], lt.Choice] = {}
    for key, visits in trace.visits.items():
        plan = plans.get(key)
        if plan is None or len(visits) < 2:
            continue
        got = _options(plan)
        info = trace.prompt.get(key)
        if got is None or info is None:
            continue
        options, current_name, breakpoints = got
        provider, model, n, when = info
        prices = _prices(book, provider, model, n, when)
        if prices is None:
            continue
        cands = lt.policies(options, current_name, prices, mixed=breakpoints)
        if plan.api not in ("anthropic", "chat", "responses") or plan.fmt == "bedrock":
            # keep-alive copies ask for no output: Anthropic's max_tokens 0 and OpenAI's one token;
            # whether Bedrock takes either is not documented (no keep-alive there)
            cands = [c for c in cands if not c.pings]
        if current_name in options:
            sec, tier = options[current_name]
            current = lt.Policy(current_name, sec, sec, tier, tier)
        else:
            current = cands[0]
        choice = lt.choose(visits, cands, current, prices, span)
        out[key] = choice
        if forced is not None:
            if forced == "current":
                continue
            pick = next((c for c in cands if c.name == forced), None)
            if pick is None:
                raise ConfigError(f"no lifetime policy {forced!r}; have {', '.join(c.name for c in cands)}")
            policy = pick
        elif choice.best is not choice.current and choice.saves > 0:
            policy = choice.best.policy
        else:
            continue
        plan.lifetime = dict(policy.setting)
        plan.changes.append(Change(
            "lifetime", "cache_control ttl" if breakpoints else "prompt_cache_retention", current.name, policy.name,
            _lifetime_rationale(choice, breakpoints) if policy == choice.best.policy else "Forced."))
    return out


def _lifetime_rationale(choice: lt.Choice, breakpoints: bool) -> str:
    best = choice.best.policy
    bits = ["Nothing changes for the model."]
    if best.pings:
        bits.append(f"Up to {best.pings} keep-alive request(s) after each request, {best.interval:.0f} s apart, "
                    "re-send the request with no output" + (" (max_tokens 0)" if breakpoints else " (one output token)")
                    + " so the cached prefix outlives the pauses; each costs a cache read of the prefix.")
    if choice.wins_on:
        lo, hi, level = choice.wins_on
        where = "in a conversation" if level == "conversation" else "between the template's requests"
        bits.append(f"It pays on pauses {where} from {_dur(lo)} to {_dur(hi)} (break-even gap {_dur(hi)}).")
    n = len(choice.losing)
    if n:
        bits.append(f"{n} request{' costs' if n == 1 else 's cost'} more under it than today.")
    bits.append(f"Estimated {usd(choice.saves)} saved on this log"
                + (f", {usd(choice.per_day)}/day." if choice.per_day is not None else "."))
    return " ".join(bits)


def _dur(s: float) -> str:
    if s >= 3600 and s % 3600 == 0:
        return f"{s / 3600:g} h"
    if s >= 60:
        return f"{s / 60:.4g} min"
    return f"{s:.0f} s"


def _with_keepalive(outs: list[Out], plans: dict[tuple[str, ...], Plan]) -> list[Out]:
    """The proposed records with the keep-alive copies their templates' lifetime policies send,
    merged in arrival order (each copy after the requests that came before it)."""
    from .logio import body_of, copy_record, drop_usage, set_arrival, tag_id

    live = {k for k, p in plans.items() if p.lifetime and p.lifetime.get("pings") and p.active("lifetime")}
    if not live:
        return outs
    nxt: dict[int, float] = {}
    following: list[float] = [float("inf")] * len(outs)
    for i in range(len(outs) - 1, -1, -1):
        o = outs[i]
        if o.template in live and o.conversation is not None and o.arrival is not None:
            following[i] = nxt.get(o.conversation, float("inf"))
            nxt[o.conversation] = o.arrival
    keyed: list[tuple[float, int, int, int, Out]] = []
    last = float("-inf")
    for i, o in enumerate(outs):
        t = o.arrival if o.arrival is not None else last
        last = t
        keyed.append((t, 0, i, 0, o))
        if o.template not in live or o.conversation is None or o.arrival is None:
            continue
        life = plans[o.template].lifetime or {}
        k, iv = int(life.get("pings", 0)), float(life.get("interval", 0))
        for j in range(1, k + 1):
            tp = o.arrival + j * iv
            if tp >= following[i]:
                break
            rec = copy_record(o.record)
            located = body_of(rec)
            if located is None:
                break
            body, put = located
            if not set_arrival(rec, body, tp):
                break
            tag_id(rec, body, f"+keepalive{j}", o.requests[0].id if o.requests else None)
            _no_output(body, o.api)
            put()
            drop_usage(rec)
            keyed.append((tp, 1, i, j, Out(rec, o.template, o.conversation, tp, True, True, o.source, o.api)))
    keyed.sort(key=lambda x: x[:4])
    return [x[4] for x in keyed]


def _no_output(body: dict[str, Any], api: str) -> None:
    """A keep-alive copy asks for no output (Anthropic: ``max_tokens`` 0, "writes the cache and
    returns no output", https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
    checked 2026-11-29; OpenAI: one token, the least it accepts)."""
    body.pop("stream", None)
    if api == "anthropic":
        thinking = body.get("thinking")
        if not (isinstance(thinking, dict) and thinking.get("type") == "enabled"):
            body["max_tokens"] = 0
    elif api == "responses":
        body["max_output_tokens"] = 16
    else:
        key = "max_tokens" if "max_tokens" in body else "max_completion_tokens"
        body[key] = 1


def _compare(before: AuditResult, after: AuditResult, obs: Observer, plans: dict[tuple[str, ...], Plan], job: _Job,
             where: dict[tuple[str, int], Out], choices: dict[tuple[str, ...], lt.Choice]) -> list[Proposal]:
    """Before/after totals per template with changes."""
    b_of: dict[tuple[str, ...], list[Outcome]] = {}
    for o in before.outcomes:
        key = obs.key_of.get(o.index)
        if key is not None:
            b_of.setdefault(key, []).append(o)
    a_of: dict[tuple[str, ...], list[Outcome]] = {}
    for o in after.outcomes:
        out = where.get((o.path, o.line))
        if out is not None and out.template is not None:
            a_of.setdefault(out.template, []).append(o)
    lines_of: dict[tuple[str, ...], list[int]] = {}
    for (_, line), o in where.items():
        if o.template is not None:
            lines_of.setdefault(o.template, []).append(line)
    unmatched = job.rewriter.unmatched if job.rewriter else {}
    unpinned = job.rewriter.unpinned if job.rewriter else {}
    out = []
    for key, plan in plans.items():
        if not plan.changes:
            continue
        n = unpinned.get(plan.template.id, 0)
        for c in plan.changes:
            if c.kind == "pin-routing" and c.applied and n and "the upstream the log names:" not in c.rationale:
                c.rationale += (f" {n:,} request{' keeps' if n == 1 else 's keep'} the upstream the log names: "
                                "the record names it nowhere the proposal can set.")
        b, a = b_of.get(key, []), a_of.get(key, [])
        b_tot = price(b, before.rules, job.book)[0]
        # a plan that rewrites nothing leaves the requests as logged (records of a shape the
        # proposal cannot rewrite are audited from their own file): after is before
        a_tot = price(a, after.rules, job.book)[0] if a or plan.applies else b_tot
        out.append(Proposal(plan, len(b), unmatched.get(plan.template.id, 0), b_tot,
                            a_tot, explain(job.candidates, a, after.rules),
                            choices.get(key), lines_of.get(key, []),
                            remaining_findings(after.findings, {o.index for o in a})))
    out.sort(key=lambda p: p.savings_usd if p.savings_usd is not None else Decimal(0), reverse=True)
    return out


