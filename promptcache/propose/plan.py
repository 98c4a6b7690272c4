"""A template's plan: every change its requests need, decided from the first pass (the
templates, :class:`~.observe.TemplateStats`, the diagnosis's findings and the simulated rules),
each with what it changes for the model.

Changes (``Change.kind``):

- ``move-slots``: a volatile span (time, date, ids, a nonce, the user's details, environment)
  leaves the template and goes at the end of the newest user (or tool) turn, in the requests
  that hold it; only the span moves (:mod:`.spans`);
- ``sort-tools``, ``canonical-json`` (tool schemas), ``canonical-json-history`` (tool calls and
  results in the conversation), ``sort-items`` (memories, retrieved items), ``sort-documents``;
- ``tool-set-union``: one tool set for every request of the template where requests send
  different sets (a plan mode that swaps a tool);
- ``trim-whitespace``: a template part sent with and without whitespace at a slot gets one form;
- ``replay-verbatim``: the model's own answers (tool call arguments, text) are sent back as the
  log's responses returned them (an engine keeps the KV of what it generated);
- ``summary-after-stable``: a compaction summary in the template goes after its stable parts;
- ``move-inserted``: a message some requests insert before the stable history (lessons, a
  reminder, a status line) goes at the end of the newest user turn instead;
- ``history-batches``: a history rewritten every turn (a sliding window, a summary replacing the
  oldest exchanges, old tool results cleared one at a time) is kept append-only and cut back to
  what the client sent in batches, past a trigger (:mod:`.history`);
- ``add-breakpoints``, ``breakpoint-window``, ``mark-tool-results``: breakpoints where the
  provider caches only at breakpoints (:mod:`.breakpoints`);
- ``cache-key``: a stable ``prompt_cache_key`` per conversation (:mod:`.identity`);
- ``pin-routing``: one upstream per template where a router spread its conversations;
- ``keep-tool-choice``: one ``tool_choice`` for every request of the template where some
  requests switch it (Anthropic: a change of ``tool_choice`` invalidates the cached messages);
  what the other value asked of the model is said at the end of the newest user turn;
- ``lifetime``: the cheapest TTL, retention and keep-alive policy (:mod:`.lifetime`, added after
  a first re-simulation);
- ``append-only-history`` (advice): history truncated in a way the log cannot undo.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..pipeline import AuditResult
from ..simulate.rules import load_providers
from .breakpoints import Limits
from .identity import pinned_upstream
from .observe import Observer, TemplateStats
from .templates import Template

#: A slot that changes between more than this share of consecutive requests moves out of the
#: template region even when its values look like no known volatile kind.
CHANGE_RATE = 0.05
#: Share of the ideal's shared tokens that breakpoint misses (after the last breakpoint, beyond
#: the lookback, no breakpoint) must reach before logged breakpoints are placed again.
BREAKPOINT_LOSS = 0.05
#: Share of a template's requests that must continue an earlier one for it to count as
#: conversational (a marker on the newest block pays only when a later turn reads it).
CONVERSATIONAL = 0.1
#: What a compaction summary looks like around its slot, or in its part's first line.
SUMMARY = re.compile(r"\b(summary|summari[sz]ed|compact(ed|ion)|conversation so far|"
                     r"earlier (in|of) (this|the) conversation|previous conversation)\b", re.IGNORECASE)
#: Miss reasons that a better breakpoint placement recovers.
BREAKPOINT_REASONS = ("after_last_breakpoint", "lookback", "no_breakpoint")


@dataclass
class Change:
    """One proposed change to a template.

    Attributes:
        kind: see the module docstring.
        where: the part path(s) it touches.
        before, after: what the template looks like without and with it.
        rationale: what changes for the model, and why it pays.
        applied: False for advice that is not simulated, and for a withdrawn change.
        withdrawn: the re-simulation found it costs more than it saves.
    """

    kind: str
    where: str
    before: str
    after: str
    rationale: str
    applied: bool = True
    withdrawn: bool = False

    def to_record(self) -> dict[str, Any]:
        """JSON record: ``kind``, ``where``, ``from``, ``to``, ``rationale``, ``applied``, ``withdrawn``."""
        return {"kind": self.kind, "where": self.where, "from": self.before, "to": self.after,
                "rationale": self.rationale, "applied": self.applied, "withdrawn": self.withdrawn}


@dataclass
class Plan:
    """What to do to one template's requests (the rewriter reads it; :class:`Change` items
    report it).

    Attributes:
        template: the template.
        stats: what the first pass saw of it.
        api: the request shape of its requests (``anthropic``, ``chat``, ``responses``,
            ``gemini``, ``converse``: a Bedrock Converse body).
        fmt: the log format of its records (``openai-chat``, ``bedrock`` ...), or ``""``.
        changes: the changes, in the order they are reported.
        moves: part path → slot indices whose spans move to the newest turn.
        tool_moves: tool part path → slot indices (spans inside a tool's description).
        sort_items: part path → ``(first, last)`` slot runs whose lines are sorted.
        documents: part paths whose retrieved documents are sorted.
        summaries: template part paths holding a compaction summary (they go last).
        sort_tools, canonical: one tool order; sorted keys in tool schemas.
        canonical_history: sorted keys in the conversation's tool calls and results.
        tool_union: ``(name, tool object)`` of every tool the template's requests send, in the
            order of first appearance (filled from the records before rewriting:
            ``[("", None)]`` until then, and where no record holds a tool list); empty: no
            ``tool-set-union``.
        trims: part path → indices of slots whose values differ only in surrounding whitespace.
        replay: send the logged responses back byte for byte.
        history: keep the history append-only between cuts (:mod:`.history`).
        breakpoints: ``add`` or ``window`` when the plan places breakpoints, else ``None``.
        limits: the provider's breakpoint limits.
        conversational: whether requests continue one another (a marker on the newest block).
        stable: template part path → whether its text is one text across the template's
            requests once the plan applies (the anchor goes after the stable ones).
        cache_key: derive a key per conversation.
        key_cause: what the log's keys look like (:data:`KEY_CAUSES`), or ``""``.
        reported: ``"key"``/``"routing"`` → (tokens, requests) the diagnosis finds the reported
            usage losing to cache keys or to routing, on the template's requests.
        coarse: session identities that name several conversations (:meth:`~.observe.Observer.coarse`).
        pin: the upstream to pin, or ``None``.
        tool_choice: ``(JSON text of the value every request sends, or "null" for none)`` where
            ``keep-tool-choice`` applies, else ``None``.
        lifetime: the lifetime policy's ``setting`` (:class:`~.lifetime.Policy`), or ``None``.
        marker_ttl: the TTL the log's breakpoints use (``"1h"``) where breakpoints are placed
            again, else ``None`` (the default).
        head: ``(parts, chained hash)`` of the leading conversation parts most requests share
            (:meth:`~.observe.TemplateStats.stable_head`): stable content the anchor may end on.
    """

    template: Template
    stats: TemplateStats
    api: str = ""
    fmt: str = ""
    changes: list[Change] = field(default_factory=list)
    moves: dict[str, list[int]] = field(default_factory=dict)
    tool_moves: dict[str, list[int]] = field(default_factory=dict)
    sort_items: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    documents: set[str] = field(default_factory=set)
    summaries: list[str] = field(default_factory=list)
    sort_tools: bool = False
    canonical: bool = False
    canonical_history: bool = False
    tool_union: list[tuple[str, Any]] = field(default_factory=list)
    trims: dict[str, list[int]] = field(default_factory=dict)
    replay: bool = False
    history: bool = False
    breakpoints: str | None = None
    limits: Limits | None = None
    conversational: bool = False
    stable: dict[str, bool] = field(default_factory=dict)
    cache_key: bool = False
    key_cause: str = ""
    reported: dict[str, tuple[int, int]] = field(default_factory=dict)
    coarse: frozenset[str] = frozenset()
    pin: str | None = None
    tool_choice: str | None = None
    lifetime: dict[str, Any] | None = None
    marker_ttl: str | None = None
    head: tuple[int, int] | None = None

    @property
    def applies(self) -> bool:
        """Whether any change rewrites requests."""
        return any(c.applied for c in self.changes)

    def active(self, kind: str) -> bool:
        """Whether a change of ``kind`` is applied."""
        return any(c.applied and c.kind == kind for c in self.changes)

    def withdraw(self, kinds: tuple[str, ...] | None, why: str) -> None:
        """Withdraw the applied changes of ``kinds`` (every change when ``None``)."""
        for c in self.changes:
            if c.applied and (kinds is None or c.kind in kinds):
                c.applied = False
                c.withdrawn = True
                c.rationale += " " + why


def _short(text: str, width: int = 90) -> str:
    t = text.replace("\n", "⏎")
    return t if len(t) <= width else t[:width - 1] + "…"


def build(before: AuditResult, obs: Observer, templates: dict[tuple[str, ...], Template],
          apis: dict[tuple[str, ...], str]) -> dict[tuple[str, ...], Plan]:
    """Every template's plan (breakpoint and lifetime decisions included; a template without
    changes gets an empty plan).

    Args:
        before: the audit of the log as it is.
        obs: the first pass's observer.
        templates: the inferred templates, by key.
        apis: each template's request shape.
    """
    coarse = obs.coarse()
    plans = {key: Plan(t, obs.stats.get(key) or TemplateStats(), apis.get(key, ""), coarse=coarse)
             for key, t in templates.items()}
    loss = _breakpoint_loss(before, obs)
    for key, plan in plans.items():
        _content(plan, obs, key)
    _from_findings(before, obs, plans)
    for key, plan in plans.items():
        plan.head = plan.stats.stable_head()
        _inserted(plan)
        _history(plan)
        _breakpoints(plan, loss.get(key, (0, 0)))
        _routing(plan)
    return plans


def _content(plan: Plan, obs: Observer, key: tuple[str, ...]) -> None:
    """Volatile spans, reordered items, summaries and tool order of one template."""
    t = plan.template
    region_paths = [p.path for p in t.parts]
    for part in t.parts:
        if part.kind == "param":
            continue
        spaces = [s for s in part.slots if s.distinct > 1 and not s.reordered and _whitespace_only(s)]
        if spaces and part.kind == "system":
            plan.trims[part.path] = [s.index for s in spaces]
            plan.changes.append(Change(
                "trim-whitespace", part.path, "the same text sent with and without whitespace around "
                f"{len(spaces)} place(s)", "one form, without it", "The model reads the same words; the part is "
                "byte-identical across requests and is read from the cache."))
        moving = [s for s in part.slots if s.distinct > 1 and not s.reordered and s not in spaces
                  and (s.volatile or (s.change_rate > CHANGE_RATE and _keeps_changing(part, s, t.requests)))]
        items = [s for s in part.slots if s.reordered]
        plan.stable[part.path] = True
        summary = part.kind == "system" and any(
            s.distinct > 1 and not s.volatile and (SUMMARY.search(part.statics[s.index][-80:])
                                                   or any(SUMMARY.search(e[:200]) for e in s.examples))
            for s in part.slots)
        if summary and part.path != region_paths[-1] and plan.api in ("anthropic", "chat", "converse"):
            plan.summaries.append(part.path)
            plan.stable[part.path] = False
            plan.changes.append(Change(
                "summary-after-stable", part.path, _short(part.skeleton()), "the same summary, after the template's "
                "other parts", "The model reads the conversation summary after the rest of the instructions instead "
                "of before them; the instructions stay identical across compactions and are read from the cache."))
            continue
        if items:
            runs: dict[int, list[int]] = {}
            for s in items:
                runs.setdefault(s.group if s.group is not None else s.index, []).append(s.index)
            plan.sort_items[part.path] = [(min(v), max(v)) for v in runs.values()]
            plan.changes.append(Change(
                "sort-items", part.path, "the same items in a different order per request",
                "the items sorted within each group", "The model reads the same memories or retrieved items in "
                "one fixed order (sorted by text) instead of by search score; state their relevance next to each "
                "item if the order carried meaning." if part.kind != "tool" else
                "The model reads the same list in the tool's description (agents, skills: one per line) in one "
                "fixed order, sorted by text, instead of the order the client happened to build it in; better still, "
                "sort it where the client builds the description."))
        if not moving:
            if any(s.distinct > 1 and not s.reordered and s not in spaces for s in part.slots):
                plan.stable[part.path] = False
            continue
        target = plan.tool_moves if part.kind == "tool" else plan.moves
        target[part.path] = [s.index for s in moving]
        names = ", ".join(sorted({s.name if s.name != "text" else "changing text" for s in moving}))
        only = any(s.optional for s in moving)
        tool = part.kind == "tool"
        plan.changes.append(Change(
            "move-slots", part.path, _short(part.skeleton()),
            f"without the {names} span (the value with its label, within its line); the newest user turn ends "
            "with it" + (", labelled with the tool's name" if tool else ""),
            f"The model reads {names} at the end of the newest user message instead of in `{part.path}`"
            + (" (after the tool's name in brackets, so it knows which tool the sentence belongs to; better "
               "still, make the value deterministic)" if tool else "")
            + "; everything before it stays identical across requests and is read from the cache."
            + (" Requests that do not render it are left as they are." if only else "")))
    orders, sets = obs.tool_orders.get(key, set()), obs.tool_sets.get(key, set())
    if len(orders) > 1 and len(sets) == 1:
        plan.sort_tools = True
        plan.changes.append(Change("sort-tools", "tools", f"{len(orders)} different orders of the same tools",
                                   "tools sorted by name", "The model sees the same tools in one fixed order; "
                                   "tool choice does not depend on their order."))
    named = {frozenset(_tool_name(t) for t in ts) for ts in sets}
    if len(named) > 1 and plan.api in ("anthropic", "chat", "responses"):
        union = set().union(*named)
        common = set.intersection(*map(set, named))
        if common and len(common) * 2 >= len(union):
            plan.tool_union = [("", None)]  # filled from the records before rewriting (engine)
            plan.changes.append(Change(
                "tool-set-union", "tools", f"{len(named)} tool sets: {len(union) - len(common)} of {len(union)} tools "
                "are sent by some requests only", f"every request sends all {len(union)} tools, in one order",
                "The model sees every tool of the template in every request (a mode that removed one now leaves it "
                "listed: tell the model in the newest message which tools the mode allows); the tools come first in "
                "the prompt and are read from the cache."))
    if plan.stats.json_drift:
        plan.canonical_history = True
        plan.changes.append(Change(
            "canonical-json-history", "tool calls and results", f"{plan.stats.json_drift:,} re-sent JSON parts in "
            "another key order", "keys sorted, as first sent", "The model reads the same arguments and results; "
            "only the key order is fixed, so re-sent history is byte-identical."))


def _tool_name(text: str) -> str:
    """A tool part's name (its JSON text as the readers give it)."""
    import json

    from .edits import tool_name

    try:
        return tool_name(json.loads(text))
    except ValueError:
        return text


#: A tool's name as static text of its part (no slot inside it: slots are joined with NUL).
_NAMED = re.compile(r'"name":\s*"[^"\x00]+"')


def _keeps_changing(part: Any, s: Any, requests: int) -> bool:
    """Whether a frequently changing slot keeps changing rather than having been edited once.

    A tool's definition edited once (a new description from a deploy) costs one cache write,
    and moving the new text out of the definition would change the tool for good; a note that
    a client re-renders into the definition on call after call (a failure count, "last failure 2
    turn(s) ago") is volatile context like any other: it moves (labelled with the tool's name).
    Only prose moves (a value holding no JSON member, ``"name":``): a schema that changes is
    not context to re-send; and only where the tool's name is static text (tools sent in another
    order put another tool in this place: that is ``sort-tools``). Other template parts move on
    the change rate alone, as before.
    """
    if part.kind != "tool":
        return True
    changes = round(s.change_rate * max(1, requests - 1))
    prose = bool(s.examples) and not any('":' in e or '":' in e.replace('\\"', '"') for e in s.examples)
    one_tool = _NAMED.search("\x00".join(part.statics)) is not None  # not another tool in this place
    return s.distinct > 2 and changes >= 2 and prose and one_tool


def _whitespace_only(s: Any) -> bool:
    """Whether a slot's values (its examples) differ only in surrounding whitespace."""
    return len(s.examples) > 1 and len(set(s.examples)) > 1 and len({e.strip() for e in s.examples}) == 1


def _from_findings(before: AuditResult, obs: Observer, plans: dict[tuple[str, ...], Plan]) -> None:
    """Causes the diagnosis found, attached to the template of their first request."""
    by_index = {o.index: o for o in before.outcomes}
    for f in before.findings:
        key = obs.key_of.get(f.first_request)
        ns = by_index[f.first_request].namespace if f.first_request in by_index else None
        targets = [k for k in plans if plans[k].template.namespace == ns] if ns else []
        plan = plans.get(key) if key else None
        rid = f.rule.id
        if rid == "json-key-order" and plan and not plan.canonical and (f.segment or "").startswith("tools"):
            plan.canonical = True
            plan.changes.append(Change("canonical-json", "tools", "keys in varying order", "keys sorted",
                                       "The same schemas and arguments, serialized with sorted keys; their meaning "
                                       "is unchanged."))
        elif rid == "json-key-order" and plan and not plan.canonical_history:
            plan.canonical_history = True
            plan.changes.append(Change(
                "canonical-json-history", f.segment or "messages", "re-sent JSON in varying key order",
                "keys sorted", "The model reads the same arguments and results; only the key order is fixed."))
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
        elif rid in KEY_CAUSES:
            for k in targets or ([key] if key else []):
                plans[k].cache_key = True
                plans[k].key_cause = plans[k].key_cause or KEY_CAUSES[rid]
                if f.tokens_lost:
                    t, n = plans[k].reported.get("key", (0, 0))
                    plans[k].reported["key"] = (t + f.tokens_lost, n + f.requests)
        elif rid == "parameter-changed" and plan and (f.evidence or {}).get("param") == "tool_choice" \
                and plan.tool_choice is None and plan.api in TOOL_CHOICE_APIS and len(plan.stats.tool_choices) > 1:
            _keep_tool_choice(plan, f)
        elif rid == "routed-elsewhere" and plan and f.tokens_lost:
            t, n = plan.reported.get("routing", (0, 0))
            plan.reported["routing"] = (t + f.tokens_lost, n + f.requests)
        elif rid == "replay-drift" and plan and plan.api == "chat" and not plan.replay:
            plan.replay = True
            plan.changes.append(Change(
                "replay-verbatim", f.segment or "messages", "the model's answers re-serialized when sent back",
                "sent back as the responses returned them, byte for byte", "The model reads its own answers exactly "
                "as it wrote them; an engine that keeps the KV of generated tokens reads them from its cache. Not "
                "simulated: the simulator caches prompt tokens only, so the saving (the diagnosis's replay-drift "
                "tokens) does not show in the simulated figures."))
        elif rid == "history-truncated" and plan and not plan.stats.shifted and not plan.stats.inserted:
            plan.changes.append(Change(
                "append-only-history", f.segment or "messages", "history truncated from the front",
                "history appended, compacted rarely", "The model keeps seeing the whole conversation until a "
                "rare, large compaction; not simulated (the dropped turns are not in the log).", applied=False))


#: Request shapes whose ``tool_choice`` the rewriter sets (a top-level field of the body).
TOOL_CHOICE_APIS = ("anthropic", "chat", "responses")


def tool_choice_instruction(value: Any) -> str | None:
    """What a ``tool_choice`` value asks of the model, as a sentence for the newest user turn,
    or ``None`` for the automatic choice (nothing to say): Anthropic's ``{"type": "none"|"any"|
    "tool"|"auto"}``, the OpenAI shapes' ``"none"|"required"|"auto"`` and ``{"type": "function",
    ...}``, as the bodies the readers parse carry them."""
    kind = value.get("type") if isinstance(value, dict) else value
    if kind == "none":
        return "(Answer in text; do not call a tool for this message.)"
    if kind in ("any", "required"):
        return "(Answer by calling one of the tools.)"
    if kind in ("tool", "function"):
        name = value.get("name") or (value.get("function") or {}).get("name") if isinstance(value, dict) else None
        return f"(Answer by calling the {name} tool.)" if name else "(Answer by calling the named tool.)"
    return None


def _keep_tool_choice(plan: Plan, f: Any) -> None:
    """The template's most common ``tool_choice`` for every request; a request that asked for
    another says so in its newest turn instead."""
    import json

    keep = plan.stats.tool_choices.most_common(1)[0][0]
    others = [v for v in plan.stats.tool_choices if v != keep]
    said = [x for x in (tool_choice_instruction(json.loads(v)) for v in others) if x]
    plan.tool_choice = keep
    n = sum(plan.stats.tool_choices[v] for v in others)
    plan.changes.append(Change(
        "keep-tool-choice", "tool_choice", f"{n:,} request(s) switch tool_choice to "
        + ", ".join(others) + f" ({f.tokens_lost:,} tokens lost over {f.requests:,} requests)",
        f"tool_choice {keep if keep != 'null' else 'unset'} in every request"
        + (f"; those requests end their newest user turn with {' or '.join(repr(x) for x in said)}" if said else ""),
        "The model is told in the message what tool_choice enforced, and may still call a tool where the other "
        "value forbade it (or answer in text where it forced one): check those requests' answers. The provider "
        "keeps the conversation's cached messages, which a change of tool_choice throws away (the invalidation table "
        f"of the provider's rules, rules/providers/{plan.stats.provider or 'anthropic'}.yaml render.params); or send "
        "those requests as a conversation of their own."))


def _inserted(plan: Plan) -> None:
    st = plan.stats
    if not st.inserted or plan.api not in ("anthropic", "chat", "responses", "gemini", "converse"):
        return
    plan.changes.append(Change(
        "move-inserted", "messages", f"{st.inserted:,} requests insert a message before the conversation's stable "
        f"history (\"{_short(st.inserted_example, 60)}\")", "the same message at the end of the newest user turn, "
        "kept with that turn in later requests",
        "The model reads the inserted text after the conversation instead of before it, and later turns still see "
        "it with the turn it came with; the history before it stays identical across requests and is read from the "
        "cache."))


def _history(plan: Plan) -> None:
    from .history import GROWTH

    st = plan.stats
    if st.rewritten < 2:
        return
    plan.history = True
    plan.changes[:] = [c for c in plan.changes if c.kind != "append-only-history"]  # this is it, simulated
    how = []
    if st.shifted:
        size = max(st.window, key=lambda n: st.window[n])
        how.append(f"a {size}-message window that drops its oldest messages ({st.shifted:,} requests)")
    if st.rewritten > st.shifted:
        how.append(f"history summarised or cleared in place ({st.rewritten - st.shifted:,} requests)")
    plan.changes.append(Change(
        "history-batches", "messages", "the history rewritten on every turn: " + "; ".join(how),
        f"append-only between cuts: each request re-sends its predecessor's history and adds its own messages, up "
        f"to {GROWTH:g} times what the log sent; then the log's own history for that request (a cut)",
        f"The model sees up to {GROWTH:g} times as much of the conversation between cuts as the log sent (older "
        "messages in full where they were dropped, summarised or cleared), its own messages all from the log; "
        "between cuts the history only grows, so each turn reads the previous one from the cache."))


def _breakpoint_loss(before: AuditResult, obs: Observer) -> dict[tuple[str, ...], tuple[int, int]]:
    """Per template: (tokens breakpoint placement lost, tokens the ideal shares)."""
    out: dict[tuple[str, ...], list[int]] = {}
    for o in before.outcomes:
        key = obs.key_of.get(o.index)
        if key is None:
            continue
        acc = out.setdefault(key, [0, 0])
        acc[1] += o.shared_prefix_tokens
        if o.miss_reason in BREAKPOINT_REASONS:
            acc[0] += max(0, o.shared_prefix_tokens - o.cached_tokens)
    return {k: (v[0], v[1]) for k, v in out.items()}


def _breakpoints(plan: Plan, loss: tuple[int, int]) -> None:
    """Breakpoints for providers that cache only at breakpoints (the rules' ``mode``)."""
    st = plan.stats
    r = st.rules
    if r is None or r.mode != "breakpoints" or plan.api not in ("anthropic", "converse") or not st.requests:
        return
    plan.limits = Limits(int(r.max_breakpoints or 4), int(r.lookback or 20))
    plan.conversational = st.continues >= max(1, CONVERSATIONAL * st.requests)
    ttls = [t for t in st.marker_ttls if t]
    plan.marker_ttl = "1h" if ttls and max(st.marker_ttls, key=lambda t: st.marker_ttls[t]) >= 3600 else None
    window = ("anchor on the template's last stable block" + (
        ", then the newest stable block and one marker every "
        f"{plan.limits.lookback} blocks back" if plan.conversational else "") +
        f", at most {plan.limits.max_breakpoints}")
    field_name = "cachePoint" if plan.api == "converse" else "cache_control"
    if not st.marked and not st.automatic:
        plan.breakpoints = "add"
        plan.changes.append(Change(
            "add-breakpoints", field_name, "no breakpoint: nothing is cached", window,
            f"Nothing changes for the model. {r.provider} caches only at breakpoints, and these requests set "
            "none; the anchor caches tools and system prompt for every request"
            + (", the newest block caches each turn for the next one." if plan.conversational else ".")))
        return
    moved = bool(plan.moves or plan.tool_moves or plan.summaries)
    lost, shared = loss
    head = st.stable_head()
    if st.unmarked_tool_tail and st.unmarked_tool_tail >= CONVERSATIONAL * st.requests:
        plan.breakpoints = "window"
        plan.changes.append(Change(
            "mark-tool-results", field_name, f"{st.unmarked_tool_tail:,} requests end with a turn of tool "
            "results that carries no breakpoint", window + " (a turn of tool results is marked like any other)",
            "Nothing changes for the model; each tool round reads the previous one from the cache."))
    elif plan.conversational and st.unmarked_tail >= CONVERSATIONAL * st.requests:
        plan.breakpoints = "window"
        plan.changes.append(Change(
            "breakpoint-window", field_name, f"{st.unmarked_tail:,} requests of a conversation carry no "
            "breakpoint on their newest turn, so the next turn reads none of the history", window,
            "Nothing changes for the model; each turn reads the previous one from the cache."))
    elif shared and lost >= BREAKPOINT_LOSS * shared:
        plan.breakpoints = "window"
        plan.changes.append(Change(
            "breakpoint-window", field_name, f"breakpoints that miss {lost:,} of {shared:,} shared tokens "
            "(after the last breakpoint, beyond the lookback)", window,
            "Nothing changes for the model; the breakpoints move with the conversation, within the provider's "
            "limit, so every turn reads the one before it."))
    elif plan.history and plan.conversational:
        plan.breakpoints = "window"
        plan.changes.append(Change(
            "breakpoint-window", field_name, "breakpoints as logged, on a history the plan keeps append-only",
            window, "Nothing changes for the model; the breakpoints follow the append-only history, so each turn "
            "reads the one before it."))
    elif moved and st.automatic and not st.marked:
        plan.breakpoints = "window"
        plan.changes.append(Change(
            "breakpoint-window", field_name, "automatic caching (the breakpoint on the last block, which now "
            "ends with the moved text)", window, "Nothing changes for the model; the breakpoint stays on stable "
            "content."))
    elif moved or head:
        plan.breakpoints = "window"
        what = "the blocks the moved spans leave stable" if moved else f"the {head[0]} leading conversation " \
            "block(s) most requests share"
        plan.changes.append(Change(
            "breakpoint-window", field_name, "breakpoints as logged, before " + what,
            window.replace("template's last stable block", "last stable block, " + what),
            "Nothing changes for the model; the anchor ends after all the content the template's requests share."))


#: Diagnosis rules whose fix is a stable ``prompt_cache_key`` per conversation, and what the
#: log's keys look like under each.
KEY_CAUSES = {"cache-key-unique": "a key per request", "routing-key-missing": "no key: unkeyed requests are spread "
              "over the provider's cache machines", "cache-key-shared": "one key for many conversations",
              "cache-key-overflow": "one key for many conversations",
              "affinity-changed": "a routing identifier that changes between turns"}


def _routing(plan: Plan) -> None:
    st = plan.stats
    pf = load_providers().get(st.provider)
    keyed = pf is not None and "cache_key" in pf.namespace and plan.api in ("chat", "responses")
    if plan.cache_key and keyed:
        tokens, requests = plan.reported.get("key", (0, 0))
        seen = f" The diagnosis finds {tokens:,} tokens lost to the keys in {requests:,} requests." if tokens else ""
        if plan.key_cause != KEY_CAUSES["cache-key-unique"]:
            seen += (" The simulation keeps one cache per key and none per machine, so what routing loses shows in "
                     "the log's reported usage, not in the simulated figures.")
        plan.changes.append(Change(
            "cache-key", "prompt_cache_key", plan.key_cause or "a key per request", "one key per conversation: pc- "
            "and a fingerprint of " + ("the session the log names (with the first message where one id names "
                                       "several conversations)" if st.identified else "the conversation's first message"),
            "Nothing changes for the model; every turn of a conversation is routed to the cache machine that "
            "holds its prefix." + seen))
    else:
        plan.cache_key = False
    up = pinned_upstream(st.upstreams)
    if up is not None and st.spread and plan.api in ("chat", "responses"):
        tokens, requests = plan.reported.get("routing", (0, 0))
        seen = (f" The log's reported usage shows {tokens:,} tokens lost to the moves in {requests:,} requests "
                "(the diagnosis's routed-elsewhere).") if tokens else ""
        where = f"{len(st.upstreams)} upstreams; {st.spread:,} requests served by another than their conversation's " \
                "previous one"
        if st.routed:
            plan.pin = up
            plan.changes.append(Change(
                "pin-routing", "provider", where, f'provider.order ["{up}"], allow_fallbacks false; the proposed '
                f"log's responses name {up}", "Nothing changes for the model (the same model, served by one upstream). "
                "Simulated: the router keeps one cache per upstream (rules/providers/openrouter.yaml), and the "
                f"proposed requests are served by {up}, so each turn reads the previous one there." + seen))
        else:
            plan.changes.append(Change(
                "pin-routing", "provider", where, f"one upstream ({up}) for every request, in the router's or "
                "gateway's own settings (OpenRouter: provider.order, allow_fallbacks false)",
                "Nothing changes for the model. Not simulated: the log names no router whose upstreams the rules "
                f"keep apart, so the rules applied ({st.provider}) already simulate one cache for every upstream."
                + seen, applied=False))
