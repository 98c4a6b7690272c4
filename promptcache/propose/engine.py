"""Proposals: turn findings into concrete, priced changes to the templates behind the traffic.

Two passes over the logs:

1. audit (simulation and diagnosis) while inferring templates (:mod:`.templates`);
2. rewrite every request of a template with its changes, on the logged record itself
   (:mod:`.edits`), parse it again and re-simulate, so the proposed log that
   ``--write-proposed`` writes is exactly what is priced.

Changes never delete content; they re-order it (and each says what changes for the model):

- ``move-slots``: the sentences holding volatile values (time, ids, the user's details,
  environment) leave the template region and open the newest user turn;
- ``sort-tools`` and ``canonical-json``: one tool order (by name), one key order;
- ``sort-documents``: retrieved documents in a stable order;
- ``ttl-1h`` and ``automatic-caching``: Anthropic breakpoint TTL and placement;
- ``cache-key``: one ``prompt_cache_key`` per template;
- advice only (not applied, never priced): append-only history where it was truncated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import orjson

from ..pipeline import AuditOptions, AuditResult, Pipeline, ScenarioTotals, Step, price, run
from ..content import extract_sentences, sentence_span, stable_documents
from ..errors import BadRecord, ConfigError
from ..ingest import PARSERS, detect
from ..ingest.common import unwrap
from ..ingest.jsonio import iter_records
from ..model import Request, Source
from ..pricing import PriceBook
from ..report.numbers import usd
from .edits import get_text, set_text, set_ttl, sort_keys_deep, tool_name
from .templates import Template, TemplateIndex, region

#: A slot that changes between more than this share of consecutive requests moves out of the
#: template region even when its values look like no known volatile kind.
CHANGE_RATE = 0.05
BODY_FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini", "litellm", "helicone")


@dataclass
class Change:
    """One proposed change to a template.

    Attributes:
        kind: ``move-slots``, ``sort-tools``, ``canonical-json``, ``sort-documents``, ``ttl-1h``,
            ``automatic-caching``, ``cache-key`` or ``append-only-history``.
        where: the part path(s) it touches.
        before, after: what the template looks like without and with it.
        rationale: what changes for the model, and why it pays.
        applied: False for advice that is not simulated.
    """

    kind: str
    where: str
    before: str
    after: str
    rationale: str
    applied: bool = True

    def to_record(self) -> dict[str, Any]:
        """JSON record: ``kind``, ``where``, ``from``, ``to``, ``rationale``, ``applied``."""
        return {"kind": self.kind, "where": self.where, "from": self.before, "to": self.after,
                "rationale": self.rationale, "applied": self.applied}


@dataclass
class Plan:
    """What to do to one template's requests."""

    template: Template
    changes: list[Change] = field(default_factory=list)
    moves: dict[str, list[int]] = field(default_factory=dict)  # part path → slot indices to move
    documents: set[str] = field(default_factory=set)
    sort_tools: bool = False
    canonical: bool = False
    ttl_1h: bool = False
    automatic: bool = False
    cache_key: str | None = None

    @property
    def applies(self) -> bool:
        """Whether any change rewrites requests."""
        return any(c.applied for c in self.changes)


@dataclass
class Proposal:
    """A template's plan with its before/after simulation (tokens; USD)."""

    plan: Plan
    requests: int
    unmatched: int
    before: dict[str, ScenarioTotals]
    after: dict[str, ScenarioTotals]

    @property
    def savings_usd(self) -> Decimal | None:
        """Simulated cost before minus after, or ``None`` when unpriced."""
        b, a = self.before["simulated"].cost, self.after["simulated"].cost
        return None if b is None or a is None else b - a


@dataclass
class ProposeResult:
    """Before (the audit of the logs as they are), after (the proposed log) and the proposals."""

    before: AuditResult
    after: AuditResult
    proposals: list[Proposal]
    written: str | None = None
    skipped_records: int = 0


class _Observer:
    """Pass-1 observer: templates, tool orders, and which template each request belongs to."""

    def __init__(self) -> None:
        self.index = TemplateIndex()
        self.tool_orders: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        self.tool_sets: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        self.key_of: dict[int, tuple[str, ...]] = {}

    def __call__(self, step: Step) -> None:
        r = step.request
        if step.prompt.segments and r.parts:
            key = self.index.add(r, step.outcome.namespace)
            self.key_of[step.outcome.index] = key
            tools = tuple(p.text for p in r.parts if p.kind == "tool")
            if len(tools) > 1:
                self.tool_orders.setdefault(key, set()).add(tools)
                self.tool_sets.setdefault(key, set()).add(tuple(sorted(tools)))


def _plans(before: AuditResult, obs: _Observer, templates: dict[tuple[str, ...], Template]) -> dict[tuple[str, ...], Plan]:
    plans = {key: Plan(t) for key, t in templates.items()}
    # 1. volatile slots in the template region
    for key, plan in plans.items():
        for part in plan.template.parts:
            if part.kind in ("tool", "param"):
                continue
            idx = [s.index for s in part.slots if s.volatile or (s.change_rate > CHANGE_RATE and s.distinct > 1)]
            if not idx:
                continue
            plan.moves[part.path] = idx
            names = ", ".join(sorted({part.slots[i].name for i in idx}))
            full, spans = part.skeleton_spans()
            rest, moved = extract_sentences(full, [spans[i] for i in idx])
            plan.changes.append(Change(
                "move-slots", part.path, part.skeleton(), _short(rest) + "  [newest user turn starts with: "
                + _short(" ".join(moved), 60) + "]",
                f"The model now reads {names} at the start of the newest user message instead of in "
                f"`{part.path}`; everything before it stays identical across requests and is served from the cache."))
        orders, sets = obs.tool_orders.get(key, set()), obs.tool_sets.get(key, set())
        if len(orders) > 1 and len(sets) == 1:
            plan.sort_tools = True
            plan.changes.append(Change("sort-tools", "tools", f"{len(orders)} different orders of the same tools",
                                       "tools sorted by name", "The model sees the same tools in one fixed order; "
                                       "tool choice does not depend on their order."))
    # 2. causes the diagnosis found, attached to the template of their first request
    by_index = {o.index: o for o in before.outcomes}
    for f in before.findings:
        key = obs.key_of.get(f.first_request)
        ns = by_index[f.first_request].namespace if f.first_request in by_index else None
        targets = [k for k in plans if plans[k].template.namespace == ns] if ns else []
        plan = plans.get(key) if key else None
        rid = f.rule.id
        if rid == "json-key-order" and plan and not plan.canonical:
            plan.canonical = True
            plan.changes.append(Change("canonical-json", "tools", "keys in varying order", "keys sorted",
                                       "The same schemas and arguments, serialized with sorted keys; their meaning "
                                       "is unchanged."))
        elif rid == "tools-reordered" and plan and not plan.sort_tools:
            plan.sort_tools = True
            plan.changes.append(Change("sort-tools", "tools", "tools in varying order", "tools sorted by name",
                                       "The model sees the same tools in one fixed order."))
        elif rid == "documents-reordered" and f.segment:
            for k in targets or ([key] if key else []):
                if f.segment not in plans[k].documents:
                    plans[k].documents.add(f.segment)
                    plans[k].changes.append(Change(
                        "sort-documents", f.segment, "retrieved documents in score order",
                        "the same documents in a stable order (by content)",
                        "The model reads the same documents in a fixed order instead of by relevance score; if "
                        "the order carries meaning, state the relevance next to each document."))
        elif rid == "ttl-choice":
            for k in targets:
                if not plans[k].ttl_1h:
                    plans[k].ttl_1h = True
                    plans[k].changes.append(Change(
                        "ttl-1h", "cache_control", 'ttl "5m"', 'ttl "1h"',
                        "Nothing changes for the model. The cache entries outlive the pauses in this traffic; "
                        "writes cost 2x instead of 1.25x, reads replace re-writes."))
        elif rid == "breakpoint-missing":
            for k in targets:
                if not plans[k].automatic:
                    plans[k].automatic = True
                    plans[k].changes.append(Change(
                        "automatic-caching", "cache_control", "no breakpoint", 'top-level "cache_control"',
                        "Nothing changes for the model; the API caches up to the last block and moves the "
                        "breakpoint forward as the conversation grows."))
        elif rid == "cache-key-unique":
            for k in targets or ([key] if key else []):
                if plans[k].cache_key is None:
                    plans[k].cache_key = plans[k].template.id
                    plans[k].changes.append(Change(
                        "cache-key", "prompt_cache_key", "a key per request", f"'{plans[k].template.id}'",
                        "Nothing changes for the model; requests of one template share one cache route."))
        elif rid == "history-truncated" and plan:
            plan.changes.append(Change(
                "append-only-history", f.segment or "messages", "history truncated from the front",
                "history appended, compacted rarely", "The model keeps seeing the whole conversation until a "
                "rare, large compaction; not simulated (the dropped turns are not in the log).", applied=False))
    return plans


def _short(text: str, width: int = 90) -> str:
    t = text.replace("\n", "⏎")
    return t if len(t) <= width else t[:width - 1] + "…"


class _Rewriter:
    """Applies plans to logged records, in arrival order (the history memory needs it)."""

    def __init__(self, plans: dict[tuple[str, ...], Plan], index: TemplateIndex):
        self.plans = plans
        self.index = index
        self.unmatched: dict[str, int] = {}

    def rewrite(self, body: dict[str, Any], req: Request) -> bool:
        """Edit ``body`` in place for ``req``'s template; True if anything changed."""
        key = self.index.key_for(req)
        plan = self.plans.get(key)
        if plan is None or not plan.applies:
            return False
        changed = False
        moved_now: list[str] = []
        for path, slots in plan.moves.items():
            part = next(p for p in plan.template.parts if p.path == path)
            try:
                text = get_text(body, path)
            except BadRecord:
                continue
            m = part.pattern().match(text)
            if m is None:
                self.unmatched[plan.template.id] = self.unmatched.get(plan.template.id, 0) + 1
                continue
            rest, moved = extract_sentences(text, [m.span(i + 1) for i in slots])
            set_text(body, path, rest)
            moved_now.extend(moved)
            changed = True
        if moved_now:
            changed |= self._place(body, req, " ".join(moved_now))
        if plan.sort_tools and isinstance(body.get("tools"), list):
            body["tools"] = sorted(body["tools"], key=tool_name)
            changed = True
        if plan.canonical and isinstance(body.get("tools"), list):
            body["tools"] = [sort_keys_deep(t) for t in body["tools"]]
            changed = True
        for path in plan.documents:
            try:
                text = get_text(body, path)
            except BadRecord:
                continue
            set_text(body, path, stable_documents(text))
            changed = True
        if plan.ttl_1h:
            changed |= set_ttl(body, "1h") > 0
        if plan.automatic and "cache_control" not in body:
            body["cache_control"] = {"type": "ephemeral"}
            changed = True
        if plan.cache_key:
            body["prompt_cache_key"] = plan.cache_key
            changed = True
        return changed

    @staticmethod
    def drop_usage(rec: Any) -> None:
        """Reported usage describes the original prompt: a rewritten record drops it."""
        if not isinstance(rec, dict):
            return
        for holder in (rec, rec.get("response"), rec.get("response_body")):
            if isinstance(holder, dict):
                for k in ("usage", "usageMetadata"):
                    holder.pop(k, None)

    @staticmethod
    def _place(body: dict[str, Any], req: Request, moved: str) -> bool:
        """Put the moved text at the start of the newest user (or tool) turn.

        Earlier turns stay as logged, so each request holds exactly its own content; an
        application that keeps the moved values in its history would cache a little more than
        this simulation credits.
        """
        conv = [p for p in req.parts if p not in region(req)]
        newest = next((p.message for p in reversed(conv) if p.role in ("user", "tool")), None)
        if newest is None:
            return False
        for p in conv:
            if p.message == newest:
                try:
                    set_text(body, p.path, moved + "\n\n" + get_text(body, p.path))
                    return True
                except BadRecord:
                    continue
        return False


def _records(paths: Sequence[str | Path], opts: AuditOptions) -> Iterator[tuple[int, int, Any, str]]:
    """(file index, line, record, format) for every parseable record, in file order."""
    for fi, path in enumerate(paths):
        fmt = opts.read.input_format
        for line, rec in iter_records(path):
            if isinstance(rec, BadRecord):
                continue
            fmt = fmt or detect(rec)
            if fmt is None:
                continue
            yield fi, line, rec, fmt


def _parse(rec: Any, fmt: str, path: str, line: int, opts: AuditOptions, parsers: dict[str, Any]) -> list[Request]:
    parser = parsers.get(fmt)
    if parser is None:
        parser = PARSERS[fmt]
        if hasattr(parser, "for_file"):
            parser = parser.for_file()
        parsers[fmt] = parser
    got = parser(rec, Source(path, line), opts.read)
    items = got if isinstance(got, list) else [got]
    return [r for r in items if isinstance(r, Request)]


def propose(paths: Sequence[str | Path], opts: AuditOptions | None = None, *, write: str | Path | None = None,
            progress: Callable[[int], None] | None = None) -> ProposeResult:
    """Infer templates, propose stable-first versions, apply them to every logged request and
    re-simulate.

    Args:
        paths: log files.
        opts: audit options (the same rules and prices apply before and after).
        write: write the proposed log here, in the input's own format (JSONL records).
        progress: called with requests done, per pass.

    Returns:
        A :class:`ProposeResult`.

    Raises:
        ConfigError: when ``write`` is asked for a log format that cannot be rewritten.
    """
    opts = opts or AuditOptions()
    obs = _Observer()
    book = PriceBook(opts.prices_file)
    if write is not None:
        from ..fileio import refuse_inputs

        refuse_inputs([write], paths, flag="--write-proposed")
    before = run(Pipeline(paths, opts), progress=progress, observers=[obs], book=book)
    templates = obs.index.templates()
    plans = _plans(before, obs, templates)

    # Pass 2: parse each record, rewrite it, parse it again; arrival order for the rewrite.
    items: list[tuple[float, int, int, Any, str, list[Request]]] = []
    parsers: dict[str, Any] = {}
    skipped = 0
    for fi, line, rec, fmt in _records(paths, opts):
        try:
            reqs = _parse(rec, fmt, str(paths[fi]), line, opts, parsers)
        except BadRecord:
            skipped += 1
            continue
        t = min((r.arrival for r in reqs if r.arrival is not None), default=float("inf"))
        items.append((t, fi, line, rec, fmt, reqs))
    items.sort(key=lambda x: (x[0], x[1], x[2]))
    formats = sorted({it[4] for it in items})
    if write is not None and len(formats) > 1:
        raise ConfigError(f"--write-proposed writes one log in one format, but the inputs hold {', '.join(formats)} "
                          "records: propose each format's logs separately")
    while True:
        rewriter = _Rewriter(plans, obs.index)
        rewritten, new_reqs = _rewrite(items, rewriter, plans, obs, paths, opts, write is not None)
        after = run(Pipeline.from_requests(new_reqs, opts, label=f"{paths[0]} (proposed)"), progress=progress, book=book)
        proposals = _compare(before, after, obs, plans, rewriter, book)
        losing = [p for p in proposals if p.plan.applies and p.savings_usd is not None and p.savings_usd < 0]
        if not losing:
            break
        for p in losing:  # it costs more than it saves: withdrawn, and the rest simulated again without it
            for c in p.plan.changes:
                if c.applied:
                    c.applied = False
                    c.rationale += f" Withdrawn: re-simulated on this traffic it cost {usd(-p.savings_usd)} more than it saved."
    written = None
    if write is not None:
        written = _write(write, rewritten)
    return ProposeResult(before, after, proposals, written, skipped)


def _rewrite(items: list[tuple[float, int, int, Any, str, list[Request]]], rewriter: _Rewriter,
             plans: dict[tuple[str, ...], Plan], obs: _Observer, paths: Sequence[str | Path], opts: AuditOptions,
             writing: bool) -> tuple[list[tuple[int, int, Any]], list[Request]]:
    """Every record rewritten by its template's plan (a copy; the parsed original is left as
    it is), with its requests parsed again: ``(rewritten records, their requests)``.

    Raises:
        ConfigError: when ``writing`` and a plan applies to a format that cannot be rewritten.
    """
    rewritten: list[tuple[int, int, Any]] = []
    new_reqs: list[Request] = []
    parsers2: dict[str, Any] = {}
    for _, fi, line, rec, fmt, reqs in items:
        if fmt in BODY_FORMATS and len(reqs) == 1:
            # the readers' memos keep parsed objects and find them again by identity: rewrite a copy
            rec = orjson.loads(orjson.dumps(rec))
            try:
                body = unwrap(rec)[0]
            except BadRecord:
                body = None
            if isinstance(body, dict) and rewriter.rewrite(body, reqs[0]):
                rewriter.drop_usage(rec)
                reqs = _parse(rec, fmt, str(paths[fi]), line, opts, parsers2)
        elif writing and any((pl := plans.get(obs.index.key_for(r))) is not None and pl.applies for r in reqs):
            raise ConfigError(f"--write-proposed cannot rewrite {fmt} records ({paths[fi]}); "
                              f"it rewrites {', '.join(BODY_FORMATS)} logs")
        rewritten.append((fi, line, rec))
        new_reqs.extend(reqs)
    return rewritten, new_reqs


def _compare(before: AuditResult, after: AuditResult, obs: _Observer, plans: dict[tuple[str, ...], Plan],
             rewriter: _Rewriter, book: PriceBook) -> list[Proposal]:
    """Before/after totals per template with changes (matched by log location)."""
    key_at = {(o.path, o.line): obs.key_of.get(o.index) for o in before.outcomes}
    out = []
    for key, plan in plans.items():
        if not plan.changes:
            continue
        b = [o for o in before.outcomes if key_at.get((o.path, o.line)) == key]
        a = [o for o in after.outcomes if key_at.get((o.path, o.line)) == key]
        out.append(Proposal(plan, len(b), rewriter.unmatched.get(plan.template.id, 0),
                            price(b, before.rules, book)[0], price(a, after.rules, book)[0]))
    out.sort(key=lambda p: p.savings_usd if p.savings_usd is not None else Decimal(0), reverse=True)
    return out


def _write(dest: str | Path, rewritten: list[tuple[int, int, Any]]) -> str:
    """Write records in input order (file, line) as JSONL (gzipped for ``.gz``), atomically."""
    import gzip
    import io
    import json

    from ..fileio import write_atomic

    buf = io.StringIO()
    for _, _, rec in sorted(rewritten, key=lambda x: (x[0], x[1])):
        buf.write(json.dumps(rec, ensure_ascii=False) + "\n")
    data = buf.getvalue().encode("utf-8")
    if str(dest).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    write_atomic(dest, data)
    return str(dest)
