"""The checks lint runs on parsed prompts, and which rules they implement.

| rules | what lint checks |
|---|---|
| ``value-pattern`` rules with ``template_patterns`` (PC101-PC108), ``template`` rules with ``check: value`` (PC109, PC110) | a slot in the cacheable region that :mod:`.classify` puts in the rule's class (its source matches ``template_patterns``, or its names ``template_names``), with at least ``min_tokens_lost`` (default 16) static tokens after it |
| ``template`` rule with ``check: unknown-value`` (PC111) | a variable slot no rule classifies and no ``stable_names`` entry names, with at least its ``min_tokens_lost`` (256) static tokens after it |
| ``tools-reordered``, ``json-key-order``, ``documents-reordered`` | code patterns the Python parser reports on what flows into prompts and tool lists |
| ``breakpoint`` rules ``volatile-block`` and ``too-many`` | Anthropic ``cache_control`` markers visible in bodies and SDK calls |
| ``template`` rules | by ``options.check``: ``syntax``, ``invalid-suppression``, ``static-prefix``, ``breakpoint-minimum``, ``prefix-shrunk``, ``breakpoint-moved``, ``unused-suppression`` |

A prompt with conditionals (:class:`~.model.Piece` ``branch``) is checked once per variant
(:func:`variants`); a finding in any variant counts, once.

The *cacheable region* of a prompt is everything but its final user message (a lone template
is all region). Token counts are the provider tokenizer's counts of static text, each run of
static text between slots tokenized on its own, chat framing excluded; prompts whose source
names no model use the configured provider and model.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Sequence

from ..diagnose.rules import Rule
from ..simulate.routing import router
from ..simulate.rules import CacheRules, provider as provider_file
from ..tokenize import Tokenizer, resolve_tokenizer
from .classify import Classifier, Match, classifier_for, names_in, words
from .config import Settings
from .model import Doc, LintFinding, Parsed, Part, Piece, Slot, Span

#: Static tokens after a volatile slot below which a finding is not worth reporting.
DEFAULT_MIN_TOKENS_AT_RISK = 16
#: Checks of the ``template`` kind lint implements.
TEMPLATE_CHECKS = ("syntax", "invalid-suppression", "static-prefix", "breakpoint-minimum", "prefix-shrunk",
                   "breakpoint-moved", "unused-suppression", "value", "unknown-value")
#: Variants a prompt with branches is expanded into at most (each alternative at least once
#: while the budget lasts).
MAX_VARIANTS = 64
CODE_RULES = ("tools-reordered", "json-key-order", "documents-reordered")


def lint_capable(rule: Rule) -> bool:
    """Whether lint implements the rule (the rest apply to traffic only)."""
    if rule.kind == "template":
        return rule.options.get("check") in TEMPLATE_CHECKS
    if rule.kind == "value-pattern":
        return bool(rule.options.get("template_patterns"))
    if rule.kind == "breakpoint":
        return rule.options.get("check") in ("volatile-block", "too-many")
    return rule.id in CODE_RULES


def message_of(rule: Rule, values: dict[str, Any]) -> str:
    """The rule's lint message (``options.template_message``, else ``message``), filled."""
    class Safe(dict):
        def __missing__(self, k: str) -> str:
            return "{" + k + "}"
    fmt = {k: (f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in values.items()}
    return str(rule.options.get("template_message") or rule.message).format_map(Safe(fmt))


def finding(rule: Rule, span: Span, match: str, values: dict[str, Any], *, doc: str | None = None,
            part: str | None = None, edits: tuple = (), token_index: int | None = None,
            tokens_at_risk: int | None = None) -> LintFinding:
    """A finding of ``rule`` (message, severity and fix from the rule file)."""
    vals = dict(values, match=match)
    if token_index is not None:
        vals.setdefault("token_index", token_index)
    if tokens_at_risk is not None:
        vals.setdefault("tokens_at_risk", tokens_at_risk)
    return LintFinding(rule.id, rule.code, rule.severity, message_of(rule, vals), span, doc, part, match,
                       str(rule.fix.get("description", "")), str(rule.fix.get("safety", "unsafe")), tuple(edits),
                       token_index, tokens_at_risk, values=vals)


# ------------------------------------------------------------------------------ token counting

@lru_cache(maxsize=16)
def _tokenizer(spec: str | None, default: str | None, model: str | None) -> Tokenizer:
    return resolve_tokenizer(spec, default=default, model=model)  # type: ignore[return-value]


@dataclass
class Target:
    """The cache rules and tokenizer a prompt is judged by."""

    provider: str
    model: str | None
    rules: CacheRules
    tokenizer: Tokenizer
    _memo: dict[str, int] = field(default_factory=dict)

    def count(self, text: str) -> int:
        """Tokens of ``text`` (memoized)."""
        if not text:
            return 0
        n = self._memo.get(text)
        if n is None:
            n = len(self.tokenizer.encode_batch([text])[0])
            self._memo[text] = n
        return n


_TARGETS: dict[tuple[str, str | None, str | None], Target] = {}


def target_for(doc: Doc, settings: Settings) -> Target:
    """Provider, model, rules and tokenizer for a prompt: the model its source names, else the
    configured one; the rules file the audit's router gives that model and the provider the
    source implies (its API: ``anthropic`` for ``messages.create``), else the configured
    provider (:meth:`promptcache.simulate.routing.Router.resolve`: a Bedrock id, ``vertex_ai/…``
    or ``openrouter/…`` gets Bedrock's, Vertex AI's or the upstream's rules whatever SDK sent
    it); ``openai`` when nothing names one.

    Raises:
        ConfigError: when the configured provider names no rules file.
    """
    model = doc.model or settings.model
    named = doc.provider or settings.provider
    key = (named, model, settings.tokenizer)
    t = _TARGETS.get(key)
    if t is None:
        route = router().resolve(named, model)
        pf = route.file if route is not None else provider_file(named or "openai")
        t = Target(pf.id, model, pf.rules_for(model), _tokenizer(settings.tokenizer, pf.tokenizer, model))
        _TARGETS[key] = t
    return t


# ------------------------------------------------------------------------------ prompt metrics

@dataclass
class Item:
    """One piece of a prompt with its part, and the tokens of its static run."""

    part: int
    piece: Piece
    tokens: int = 0


@dataclass
class Metrics:
    """Token facts about one prompt.

    Attributes:
        items: pieces in order (all parts) with static-run token counts (runs merged per part).
        region_end: items before this index are the cacheable region.
        stable_text: static text before the first slot (parts joined by U+001E).
        stable_tokens: its tokens; ``stable_exact`` is False when an opaque piece precedes.
        first_slot: index in ``items`` of the first slot, or ``None``.
    """

    items: list[Item]
    region_end: int
    stable_text: str
    stable_tokens: int
    stable_exact: bool
    first_slot: int | None


def region_parts(doc: Doc) -> int:
    """Number of leading parts in the cacheable region (all but the final user message)."""
    n = len(doc.parts)
    if n <= 1:
        return n
    k = n
    while k > 0 and doc.parts[k - 1].role == "user":
        k -= 1
    return k if k > 0 else n


def metrics(doc: Doc, target: Target) -> Metrics:
    """Items, region and stable prefix of a prompt (of its first variant, when it has
    conditionals)."""
    if has_branches(doc):
        doc = variants(doc, 1)[0]
    items: list[Item] = []
    run: list[str] = []  # the texts of the static run being merged (joined once: no quadratic concatenation)

    def close_run() -> None:
        if len(run) > 1:
            first = items[-1].piece
            items[-1] = Item(items[-1].part, Piece("static", "".join(run), span=first.span))
        run.clear()

    for pi, part in enumerate(doc.parts):
        for pc in part.pieces:
            if pc.kind == "static" and items and items[-1].part == pi and items[-1].piece.kind == "static":
                run.append(pc.text)
            else:
                close_run()
                items.append(Item(pi, pc))
                if pc.kind == "static":
                    run.append(pc.text)
    close_run()
    for it in items:
        if it.piece.kind == "static":
            it.tokens = target.count(it.piece.text)
    nreg = region_parts(doc)
    region_end = next((k for k, it in enumerate(items) if it.part >= nreg), len(items))
    first_slot = next((k for k, it in enumerate(items) if it.piece.kind == "slot"), None)
    stop = first_slot if first_slot is not None else len(items)
    texts, last_part = [], None
    for it in items[:stop]:
        if it.piece.kind == "static":
            texts.append(("\x1e" if last_part is not None and it.part != last_part else "") + it.piece.text)
            last_part = it.part
    stable_exact = not any(it.piece.kind == "opaque" for it in items[:stop])
    return Metrics(items, region_end, "".join(texts), sum(it.tokens for it in items[:stop]), stable_exact, first_slot)


def sha256(text: str) -> str:
    """Hex SHA-256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def breakpoints(doc: Doc, m: Metrics) -> list[dict[str, Any]]:
    """Each ``cache_control`` marker: its part, the static tokens up to the end of that part
    (``exact`` when no slot or opaque piece comes before), and the hash of that stable text."""
    out = []
    for pi, part in enumerate(doc.parts):
        if part.breakpoint is None:
            continue
        upto = [it for it in m.items if it.part <= pi]
        stop = next((k for k, it in enumerate(upto) if it.piece.kind != "static"), len(upto))
        exact = stop == len(upto)
        text = "\x1e".join("".join(it.piece.text for it in upto[:stop] if it.part == q)
                           for q in sorted({it.part for it in upto[:stop]}))
        out.append({"part": part.name, "index": pi, "span": part.breakpoint, "exact": exact,
                    "tokens": sum(it.tokens for it in upto[:stop]), "sha256": sha256(text)})
    return out


# ------------------------------------------------------------------------------ branches

def _flatten(pieces: tuple[Piece, ...] | list[Piece], choice: dict[int, int], seen: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for pc in pieces:
        if pc.kind != "branch":
            out.append(pc)
            continue
        seen.append(pc)
        if pc.slot is not None:  # the condition (or a loop's iterable) is a value of the prompt
            c = pc.slot
            out.append(Piece("slot", slot=Slot(c.span, c.source, "loop" if pc.loop else "condition", c.probes,
                                               c.names, c.items), span=pc.span))
        alt = choice.get(id(pc), 0)
        if pc.branches:
            body = _flatten(pc.branches[min(alt, len(pc.branches) - 1)], choice, seen)
            if pc.loop:  # a loop body's values (nested loops too) vary with the items the loop slot stands for
                body = [Piece("slot", slot=Slot(b.slot.span, b.slot.source, "in-loop", b.slot.probes, b.slot.names,
                                                b.slot.items),
                              span=b.span) if b.kind == "slot" and b.slot is not None and b.slot.kind in ("variable", "loop")
                        else b for b in body]
            out += body
    return out


def has_branches(doc: Doc) -> bool:
    """Whether a prompt holds a conditional."""
    return any(pc.kind == "branch" for part in doc.parts for pc in part.pieces)


def variants(doc: Doc, limit: int = MAX_VARIANTS, stats: dict[str, Any] | None = None) -> list[Doc]:
    """The flat prompts a prompt with conditionals renders: the first alternative of every
    conditional, then, for each conditional met and each other alternative, the variant that
    takes it (nested conditionals included), up to ``limit`` variants. A prompt without
    conditionals is its own only variant.

    Each variant's conditions stay in it as ``block`` slots (so the static prefix ends there
    in the lockfile's terms), and its parts keep their names and breakpoints. ``stats`` (when
    given) gets ``complete``: whether every alternative was reached within ``limit``.
    """
    if stats is not None:
        stats["complete"] = True
    if not has_branches(doc):
        return [doc]
    out: list[Doc] = []
    queue: list[dict[int, int]] = [{}]
    done: set[tuple[tuple[int, int], ...]] = set()
    renders: set[tuple] = set()
    alternatives: set[tuple[int, int]] = set()  # (conditional, alternative) met
    taken: set[tuple[int, int]] = set()  # ... and rendered in a variant
    while queue and len(out) < limit:
        choice = queue.pop(0)
        key = tuple(sorted(choice.items()))
        if key in done:
            continue
        done.add(key)
        seen: list[Piece] = []
        parts = [Part(p.role, p.name, _flatten(p.pieces, choice, seen), p.span, p.breakpoint) for p in doc.parts]
        rendered = tuple((pc.kind, pc.text, pc.span, pc.slot.span if pc.slot else None)
                         for part in parts for pc in part.pieces)
        if rendered in renders:  # another choice of a conditional this variant never reaches
            continue
        renders.add(rendered)
        out.append(Doc(doc.path, doc.name, parts, doc.span, doc.model, doc.provider, doc.automatic_breakpoint))
        for pc in seen:
            alternatives.update((id(pc), a) for a in range(len(pc.branches)))
            taken.add((id(pc), choice.get(id(pc), 0)))
            if id(pc) in choice:
                continue
            for alt in range(1, len(pc.branches)):
                queue.append({**choice, id(pc): alt})
    if stats is not None and queue and not alternatives <= taken:
        stats["complete"] = False  # an alternative no checked variant rendered
    return out


# ------------------------------------------------------------------------------ the checks

def _value_rules(rules: Sequence[Rule]) -> tuple[list[Rule], Rule | None]:
    """The rules that classify values (in code order), and the unknown-value rule."""
    values = [r for r in rules if (r.kind == "value-pattern" and r.options.get("template_patterns"))
              or (r.kind == "template" and r.options.get("check") == "value")]
    unknown = next((r for r in rules if r.kind == "template" and r.options.get("check") == "unknown-value"), None)
    return sorted(values, key=lambda r: r.code), unknown


def _classifier(rules: Sequence[Rule]) -> Classifier:
    values, unknown = _value_rules(rules)
    if unknown is None:  # the vocabulary of stable names lives in the unknown-value rule's file
        from ..diagnose.rules import load_rules

        unknown = next((r for r in load_rules() if r.options.get("check") == "unknown-value"), None)
    return classifier_for(values, unknown)


#: Words that name a speaker in a transcript-style prompt (``{{$user}}I have a question``).
ROLE_WORDS = frozenset({"user", "bot", "human", "ai", "assistant", "system", "char", "model", "agent"})
#: Objects whose fields are a request's inputs of any kind: a per-user field read from one says
#: nothing about its other fields.
_GENERIC_OWNERS = frozenset({"json", "input", "inputs", "data", "props", "this", "self", "ctx", "context",
                             "params", "args", "kwargs", "state", "vars", "variables", "payload", "body", "req",
                             "request", "options", "opts", "item", "node", "env", "event", "values", "fields",
                             "locals", "globals", "page", "query"})
#: Text that introduces the assistant's own name ("You are called {name}", "Your name is {name}").
_SELF_NAME = re.compile(r"(?i)\b(?:you are|you're|your name is|you are called|you are named|call yourself|"
                        r"your name:|i am|i'm|my name is)\s*$")
_LABEL = re.compile(r"(?:^|\n)[ \t]*(?:[-*•>#\"'`(\[]+[ \t]*)?(?P<label>[A-Za-z][A-Za-z0-9 _'’/-]{0,40}?)[ \t]*[:=][ \t]*$")


def _all_slots(pieces: Sequence[Piece]) -> list[Slot]:
    out: list[Slot] = []
    stack = list(reversed(pieces))
    while stack:
        pc = stack.pop()
        if pc.slot is not None:
            out.append(pc.slot)
        for alt in reversed(pc.branches):
            stack.extend(reversed(alt))
    return out


def user_owners(doc: Doc, classify: Classifier) -> dict[str, str]:
    """Objects the prompt reads per-user fields from, by name (``requestHints`` when
    ``requestHints.city`` is per-user data by its name), each with the field that says so; a
    value read from the same object is per-user too (``requestHints.name``)."""
    out: dict[str, str] = {}
    for part in doc.parts:
        for slot in _all_slots(part.pieces):
            got = classify.classify(slot)
            if got is None or got.rule is None or got.by != "name" or got.rule.id != "user-data-before-shared":
                continue
            owner = _owner(got.evidence)
            if owner:
                out.setdefault(owner, got.evidence)
    return out


def _owner(name: str) -> str:
    """``requestHints`` of ``requestHints.city``; ``""`` for a plain name or a generic object."""
    n = re.sub(r"\s+", "", name).replace("?.", ".")
    head, dot, _ = n.rpartition(".")
    if not dot or not head:
        return ""
    last = head.rsplit(".", 1)[-1].lstrip("$@").lower()
    return "" if last in _GENERIC_OWNERS else head


def check_doc(doc: Doc, rules: Sequence[Rule], settings: Settings, notes: list[str] | None = None) -> list[LintFinding]:
    """Findings on one prompt: volatile, per-user and unknown values in the cacheable region, a
    short static prefix, and statically visible breakpoint mistakes; a prompt with conditionals
    is checked in each of its :func:`variants`, and a finding counts once. A prompt with more
    alternatives than :data:`MAX_VARIANTS` is checked in that many, and ``notes`` says so."""
    seen: dict[tuple[str, int, int], LintFinding] = {}
    owners = user_owners(doc, _classifier(rules))
    stats: dict[str, Any] = {}
    vs = variants(doc, MAX_VARIANTS, stats)
    if not stats.get("complete", True) and notes is not None:
        notes.append(f"`{doc.name}` renders more than {MAX_VARIANTS} variants (its conditionals combined); "
                     f"{MAX_VARIANTS} were checked, and an alternative none of them takes was not")
    for v in vs:
        for f in _check_variant(v, rules, settings, owners):
            key = (f.rule_id, f.span.line, f.span.col)
            # once per value: the variant that puts the most static tokens at risk says how much it costs
            if key not in seen or (f.tokens_at_risk or 0) > (seen[key].tokens_at_risk or 0):
                seen[key] = f
    return list(seen.values())


def _in_context(slot: Slot, items: list[Item], k: int, classify: Classifier, owners: dict[str, str],
                rules: Sequence[Rule]) -> Match | None | bool:
    """What a value's place says about it when its names and source do not: ``False`` for a
    speaker label (``{{$user}}`` opening a transcript line: ``Human:``), a per-user
    :class:`Match` for a field of an object other per-user fields are read from, or the class
    the label before it names (``- lat: ${hints.latitude}``, ``Session: {{ x }}``); ``None``
    when nothing does."""
    prev = items[k - 1].piece if k > 0 and items[k - 1].part == items[k].part else None
    nxt = items[k + 1].piece if k + 1 < len(items) and items[k + 1].part == items[k].part else None
    line_start = prev is None or (prev.kind == "static" and prev.text.endswith(("\n", "\r")))
    if line_start and nxt is not None and nxt.kind == "static" and nxt.text[:1] not in ("", "\n", "\r", " ", "\t") \
            and slot.names and all(words(n) and set(words(n)) <= ROLE_WORDS for n in slot.names):
        return False
    for n in slot.names:
        owner = _owner(n)
        if owner and owner in owners:
            user = next((r for r in classify.rules if r.id == "user-data-before-shared"), None)
            if user is not None:
                return Match(user, "name", n, f"read from `{owner}`, as `{owners[owner]}` is")
    if prev is not None and prev.kind == "static" and slot.kind == "variable":
        m = _LABEL.search(prev.text[-80:])
        if m is not None and not set(words(m.group("label"))) <= ROLE_WORDS:
            got = classify.by_name([m.group("label")])
            if got is not None:
                return Match(got.rule, "label", m.group("label").strip(), got.entry)
    return None


def self_owners(items: list[Item], classify: Classifier) -> set[str]:
    """Objects the prompt introduces as the assistant itself: the owner of a name field written
    as the assistant's own ("You are {{ identity.name }}", "Your name is ${persona.name}"). Their
    fields (``identity.function``, ``identity.core_directive``) are the assistant's persona,
    configured per deployment: stable."""
    out: set[str] = set()
    for k, it in enumerate(items):
        sl = it.piece.slot
        if it.piece.kind == "slot" and sl is not None and sl.kind == "variable" and _is_own_name(sl, items, k):
            # an object the per-user vocabulary names (`user.*`, `customer.*`) is that person
            out.update(o for o in (_owner(n) for n in sl.names) if o and not _is_person(o, classify))
    return out


def _is_person(obj: str, classify: Classifier) -> bool:
    """Whether the per-user vocabulary's owner entries name ``obj`` (``user``, ``customer``)."""
    got = classify.by_name([f"{obj}.x"])
    return got is not None and got.rule is not None and got.rule.id == "user-data-before-shared" \
        and got.entry.endswith(".*")


#: A template filter's name (``| capitalize``, ``| join(", ")``): a function, not a value read.
_FILTER = re.compile(r"\|\s*([A-Za-z_]\w*)")


def _persona_field(slot: Slot, persona: set[str]) -> bool:
    """Whether every name a value reads (its filters aside) is read from an object the prompt
    introduces as the assistant (or from inside one: ``identity.traits.core``)."""
    filters = set(_FILTER.findall(slot.source))
    names = [n for n in slot.names if n not in filters]
    return bool(names) and all(any(_owner(n) == p or _owner(n).startswith(p + ".") for p in persona) for n in names)


def _is_own_name(slot: Slot, items: list[Item], k: int) -> bool:
    """Whether a value named ``name`` is introduced as the assistant's own ("You are called
    {name}", "Your name is {{name}}")."""
    prev = items[k - 1].piece if k > 0 and items[k - 1].part == items[k].part else None
    nxt = items[k + 1].piece if k + 1 < len(items) and items[k + 1].part == items[k].part else None
    if nxt is not None and nxt.kind == "static" and nxt.text.startswith(("'s", "’s")):
        return False  # "You are {{ user.name }}'s assistant": someone else's name
    return prev is not None and prev.kind == "static" and bool(_SELF_NAME.search(prev.text[-40:])) and \
        bool(slot.names) and all(words(n)[-1:] == ("name",) for n in slot.names)


def _check_variant(doc: Doc, rules: Sequence[Rule], settings: Settings,
                   owners: dict[str, str] | None = None) -> list[LintFinding]:
    target = target_for(doc, settings)
    m = metrics(doc, target)
    by_check = {r.options.get("check"): r for r in rules if r.kind in ("template", "breakpoint")}
    values, unknown = _value_rules(rules)
    selected = {r.id for r in rules}
    classify = _classifier(rules)
    out: list[LintFinding] = []
    region = m.items[:m.region_end]
    total_static = sum(it.tokens for it in region)
    flagged: set[int] = set()
    seen_tokens = 0
    exact = True
    after = total_static
    persona = self_owners(m.items, classify)
    for k, it in enumerate(region):
        if it.piece.kind == "static":
            seen_tokens += it.tokens
            after -= it.tokens
            continue
        if it.piece.kind == "opaque":
            exact = False
            continue
        slot = it.piece.slot
        assert slot is not None
        if slot.items:
            # a loop's item or its field (`{{ name }}` in a loop over `capabilities`) is of its
            # iterable's kind, whatever the field is called: the loop's own slot is reported
            # (retrieved documents, unknown data), or it is a catalogue and stable
            continue
        if persona and _persona_field(slot, persona):
            continue  # a field of the object the prompt introduces as the assistant ("You are {{ identity.name }}")
        got: Match | None = classify.classify(slot)
        if got is not None and got.rule is not None and got.rule.id == "user-data-before-shared" and \
                _is_own_name(slot, m.items, k):
            continue  # "You are called {name}": the assistant's own name, set per deployment
        if got is None or (got.by == "name" and got.entry.lstrip("=") in ROLE_WORDS):
            ctx = _in_context(slot, m.items, k, classify, owners or {}, rules)
            if ctx is False:
                continue  # a speaker label of a transcript
            if ctx is not None or got is None:
                got = ctx  # type: ignore[assignment]
        if got is not None and got.rule is None:
            continue  # a deploy-time constant (stable_names)
        if slot.kind == "in-loop" and got is not None and got.by in ("name", "label") and \
                got.evidence not in names_in(slot.source):
            continue  # classified only by the loop's iterable (`{{ item.url }}` in a loop over documents): the loop is reported
        rule = got.rule if got is not None else None
        if rule is None:
            # unknown: a variable (or a loop or block that reads names) no vocabulary classifies;
            # a condition's alternatives are checked as variants instead, and a loop's body
            # varies with the loop, which is reported itself
            if unknown is None or slot.kind in ("condition", "in-loop") or (slot.kind != "variable" and not slot.names):
                continue
            rule = unknown
        elif rule.id not in selected:
            continue
        floor = int(rule.options.get("min_tokens_lost", DEFAULT_MIN_TOKENS_AT_RISK))
        if rule is unknown and slot.kind == "loop":
            # a list the prompt renders item by item is data of the request (retrieved items, a
            # user's records) unless its name says it is a catalogue (tools, plugins: stable)
            floor = int(rule.options.get("min_tokens_lost_loop", DEFAULT_MIN_TOKENS_AT_RISK))
        if after < floor:
            continue
        flagged.add(k)
        part = doc.parts[it.part]
        facts = {"part": part.name, "model": target.model or target.provider, "approx": "" if exact else "≥ ",
                 "value": _value_name(slot, got)}
        if got is not None:
            facts["classified_by"] = got.by
            facts["evidence"] = got.evidence
        if rule.options.get("template_period"):
            facts["period"] = _period(rule, got)
        out.append(finding(rule, slot.span, slot.source, facts,
                           doc=doc.name, part=part.name, token_index=seen_tokens, tokens_at_risk=after))
    rule = by_check.get("static-prefix")
    fs = m.first_slot
    if rule is not None and fs is not None and fs < m.region_end and fs not in flagged and m.stable_exact:
        mt = target.rules.min_tokens
        if m.stable_tokens < mt <= total_static:
            slot = m.items[fs].piece.slot
            assert slot is not None
            part = doc.parts[m.items[fs].part]
            out.append(finding(rule, slot.span, slot.source,
                               {"part": part.name, "prefix_tokens": m.stable_tokens, "min_tokens": mt,
                                "static_tokens": total_static, "model": target.model or f"{target.provider} (default)"},
                               doc=doc.name, part=part.name, token_index=m.stable_tokens,
                               tokens_at_risk=total_static - m.stable_tokens))
    if target.rules.mode == "breakpoints":
        out += _breakpoint_checks(doc, m, target, by_check, classify)
    return out


def _period(rule: Rule, got: Match | None) -> str:
    """How often a dated value changes, for the message: the first of the rule's
    ``template_period_patterns`` that matches the evidence that classified it (``month`` for
    ``strftime("%B")``, ``currentMonthName``), else its ``template_period`` (``day``)."""
    if got is not None:
        for period, pats in rule.period_patterns():
            if any(p.search(got.evidence) for p in pats):
                return period
    return str(rule.options.get("template_period"))


def _value_name(slot: Slot, got: Match | None) -> str:
    """The name a finding quotes: the name that classified it, else its first name, else its
    source."""
    if got is not None and got.by == "name":
        return got.evidence
    return slot.names[0] if slot.names else slot.source


def _breakpoint_checks(doc: Doc, m: Metrics, target: Target, by_check: dict[str, Rule],
                       classify: Classifier) -> list[LintFinding]:
    out: list[LintFinding] = []
    bps = breakpoints(doc, m)
    limit = target.rules.max_breakpoints
    total = len(bps) + (1 if doc.automatic_breakpoint is not None else 0)
    rule = by_check.get("too-many")
    if rule is not None and limit is not None and total > limit and len(bps) > limit:
        over = bps[limit]
        out.append(finding(rule, over["span"], "cache_control", {"breakpoints": total, "limit": limit,
                                                                 "part": over["part"], "requests": "every"},
                           doc=doc.name, part=over["part"]))
    rule = by_check.get("volatile-block")
    def volatile(slot: Slot) -> bool:
        got = classify.classify(slot)
        return got is not None and got.rule is not None and got.rule.id not in ("user-data-before-shared",
                                                                                 "retrieved-content-in-prefix")
    if rule is not None and bps:
        first = bps[0]
        part = doc.parts[first["index"]]
        hit = next((pc.slot for pc in part.pieces if pc.kind == "slot" and pc.slot is not None
                    and volatile(pc.slot)), None)
        if hit is not None:
            before = sum(it.tokens for it in m.items if it.part < first["index"])
            out.append(finding(rule, first["span"], "cache_control",
                               {"segment": part.name, "part": part.name, "value": hit.source,
                                "stable_tokens_before": before, "tokens_lost": before, "requests": "every"},
                               doc=doc.name, part=part.name, token_index=before))
    rule = by_check.get("breakpoint-minimum")
    if rule is not None:
        mt = target.rules.min_tokens
        for bp in bps:
            if bp["exact"] and bp["tokens"] < mt:
                out.append(finding(rule, bp["span"], "cache_control",
                                   {"part": bp["part"], "prefix_tokens": bp["tokens"], "min_tokens": mt,
                                    "model": target.model or f"{target.provider} (default)"},
                                   doc=doc.name, part=bp["part"], token_index=bp["tokens"]))
    return out


def check_parsed(parsed: Parsed, rules: Sequence[Rule], settings: Settings) -> list[LintFinding]:
    """Every finding on one parsed file, before suppression and selection."""
    by_id = {r.id: r for r in rules}
    out: list[LintFinding] = []
    for issue in parsed.issues:
        rule = by_id.get(issue.rule)
        if rule is None:
            continue
        out.append(finding(rule, issue.span, issue.match, issue.values, edits=issue.edits))
    for doc in parsed.docs:
        out += check_doc(doc, rules, settings, parsed.notes)
    return out
