"""What a template value is, from its name and its source.

A slot (a variable, a call, an expression) is classified by two kinds of evidence, both kept as
data in the rule files (``rules/lint/*.yaml``):

- **its source**: the rules' ``template_patterns`` (regular expressions) matched against the
  slot's probes (its source text, ``{{ expr }}`` forms, what its names were assigned from): the
  clock and random-id calls of each language's standard library (``datetime.now()``,
  ``new Date()``, ``time.Now()``, ``crypto.randomUUID()``), the workflow tools' built-in
  variables (``$now``, ``{{$today}}``). A source match is definite. The match that starts
  furthest right wins, then the longest: the outermost call decides what a chain renders
  (``new Date().toLocaleDateString()`` and ``datetime.now().strftime("%Y-%m-%d")`` are dates,
  not times).
- **its names**: each name the value is read from (``callerAgentId``, ``user.profile``,
  ``$json.session_id``, ``getCurrentDate``) is split into lower-case words (camelCase,
  PascalCase, snake_case, kebab-case, dotted and ``$`` names; acronyms kept whole:
  ``HTTPRequestID`` → ``http request id``) and matched against the rules' ``template_names``.

A ``template_names`` entry is a phrase of words:

| entry | matches a name whose words |
|---|---|
| ``session id`` | end with ``session id`` (``callerSessionId``, ``ctx.session_id``) |
| ``=name`` | are exactly ``name`` |
| ``user *`` | start with ``user`` (``user.location``, ``userPreferences``) |
| ``organization.*`` | are read from an object of that name (``organization.timezone``, ``org.name``, also further down: ``voice.speech_markers.frequent`` is ``voice``'s): the owner decides what the value is, whatever its last words say |

Trailing words that only say how a value is formatted (``name_suffixes``: ``currentDateStr``,
``timestamp_iso``) are dropped before matching, and leading verbs of getters (``getCurrentDate``)
do not matter since entries match the end of a name. An exact entry beats an owner entry,
which beats a suffix entry, which beats a prefix entry; a longer entry beats a shorter one; then
the rule with the lower code.

Names the unknown-value rule lists as ``stable_names`` (``tools``, ``format_instructions``,
``agent_name``) are deploy-time constants: matched like the others, they classify a value as
stable, and nothing is reported for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..diagnose.rules import Rule
from .model import Slot

#: Words of a name: acronyms (``HTTP`` in ``HTTPRequest``), capitalised or lower-case words, digits.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
#: Identifier-like names in an expression: ``$json.x``, ``user.profile.name``, ``getDate``.
_NAME = re.compile(r"(?<![\w$'\"])\.?[$@]?[A-Za-z_][\w$]*(?:\s*(?:\.|\?\.)\s*[$A-Za-z_][\w$]*)*")
_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|`[^`]*`")
#: Words that are syntax or built-ins in the template and code languages lint reads, not names.
_KEYWORDS = frozenset("""
if else elif elseif endif for endfor each in of not and or is none null true false undefined nil
this self return new await async function let const var def lambda with without endwith unless
end range define block template include import from as set endset raw endraw macro endmacro
call endcall filter endfilter typeof instanceof void default loop index first last length
json item items value key
""".split())


#: Methods that iterate a mapping (Python's ``dict.items()``, ``.values()``, ``.keys()``): the
#: value read is the mapping itself.
_ITERATE = frozenset({"items", "values", "keys", "iteritems", "itervalues", "iterkeys"})


def words(name: str) -> tuple[str, ...]:
    """A name split into lower-case words.

    >>> words("callerAgentId"), words("$json.session_id"), words("HTTPRequestID")
    (('caller', 'agent', 'id'), ('json', 'session', 'id'), ('http', 'request', 'id'))
    """
    return tuple(w.lower() for w in _WORD.findall(name) if not w.isdigit())


def names_in(expr: str) -> tuple[str, ...]:
    """Names an expression reads (string literals and keywords left out), in order.

    >>> names_in("formatDate(user.created_at, 'YYYY') | upper")
    ('formatDate', 'user.created_at', 'upper')
    >>> names_in("capabilities.items()")
    ('capabilities',)
    """
    text = _STRING.sub(" ", expr)
    out: list[str] = []
    for m in _NAME.finditer(text):
        n = re.sub(r"\s+", "", m.group(0)).replace("?.", ".").lstrip(".")
        head, dot, last = n.rpartition(".")
        if dot and head and last in _ITERATE and text[m.end():m.end() + 1] == "(":
            n = head  # `capabilities.items()` iterates `capabilities`: the mapping is what is read
        if n.lower().lstrip("$@") in _KEYWORDS:
            continue
        out.append(n)
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class Entry:
    """One vocabulary entry: ``mode`` ``exact``, ``owner``, ``suffix`` or ``prefix``, and its
    words."""

    mode: str
    words: tuple[str, ...]
    text: str

    @property
    def score(self) -> tuple[int, int]:
        """Exact beats owner beats suffix beats prefix; then longer beats shorter."""
        return ({"exact": 4, "owner": 3, "suffix": 2, "prefix": 1}[self.mode], len(self.words))

    def matches(self, ws: tuple[str, ...], owner: tuple[str, ...] = (),
                ancestors: tuple[tuple[str, ...], ...] = ()) -> bool:
        """Whether a name's words match (``owner``: the words of the object it is read from,
        ``organization`` in ``organization.timezone``; ``ancestors``: those of the objects that
        one is read from in turn, ``voice`` in ``voice.speech_markers.frequent``)."""
        n = len(self.words)
        if self.mode == "exact":
            return ws == self.words
        if self.mode == "owner":
            return owner == self.words or self.words in ancestors
        if self.mode == "suffix":
            return len(ws) >= n and ws[-n:] == self.words
        return len(ws) > n and ws[:n] == self.words


def owner_words(name: str) -> tuple[str, ...]:
    """The words of the object a dotted name is read from: ``organization.timezone`` →
    ``("organization",)``, ``this.org.name`` → ``("org",)``; ``()`` for a plain name.

    >>> owner_words("organization.timezone"), owner_words("$json.x"), owner_words("now")
    (('organization',), ('json',), ())
    """
    segs = [x for x in re.split(r"\s*(?:\?\.|\.)\s*", name.strip()) if x]
    if len(segs) < 2:
        return ()
    head = segs[:-1]
    while len(head) > 1 and head[0].lstrip("$@").lower() in ("this", "self", "props", "ctx"):
        head = head[1:]
    return words(head[-1])


def ancestor_words(name: str) -> tuple[tuple[str, ...], ...]:
    """The words of each object above the one a dotted name is read from:
    ``voice.speech_markers.frequent`` → ``(("voice",),)``; ``()`` for ``a.b`` and plain names.

    >>> ancestor_words("voice.speech_markers.frequent"), ancestor_words("organization.timezone")
    ((('voice',),), ())
    """
    segs = [x for x in re.split(r"\s*(?:\?\.|\.)\s*", name.strip()) if x]
    head = segs[:-2]
    while head and head[0].lstrip("$@").lower() in ("this", "self", "props", "ctx"):
        head = head[1:]
    return tuple(words(h) for h in head)


def parse_entry(text: str) -> Entry:
    """``"session id"``, ``"=name"``, ``"user *"`` or ``"organization.*"`` → an :class:`Entry`.

    Raises:
        ValueError: for an entry with no words.
    """
    t = text.strip()
    mode = "suffix"
    if t.startswith("="):
        mode, t = "exact", t[1:]
    elif t.endswith(".*"):
        mode, t = "owner", t[:-2]
    elif t.endswith("*"):
        mode, t = "prefix", t[:-1]
    ws = tuple(w for part in t.split() for w in words(part))
    if not ws:
        raise ValueError(f"vocabulary entry {text!r} has no words")
    return Entry(mode, ws, text.strip())


@dataclass(frozen=True)
class Match:
    """How a slot was classified.

    Attributes:
        rule: the rule whose class it is, or ``None`` for a stable (deploy-time) value.
        by: ``source`` (a ``template_patterns`` match) or ``name`` (a ``template_names`` match).
        evidence: the matched source text, or the name that matched.
        entry: the vocabulary entry that matched (``name`` matches), else ``""``.
    """

    rule: Rule | None
    by: str
    evidence: str
    entry: str = ""


class Classifier:
    """Classifies slots with the value rules' ``template_patterns`` and ``template_names``.

    Args:
        rules: the value rules, in the order that breaks ties (by code).
        stable: the ``stable_names`` vocabulary.
        suffixes: the ``name_suffixes`` dropped from the end of a name before matching.

    Raises:
        ValueError: for a vocabulary entry with no words.
    """

    def __init__(self, rules: Sequence[Rule], stable: Iterable[str] = (), suffixes: Iterable[str] = ()):
        self.rules = tuple(rules)
        self.vocab: list[tuple[Entry, Rule | None]] = []
        for r in self.rules:
            for e in r.options.get("template_names") or ():
                self.vocab.append((parse_entry(str(e)), r))
        for e in stable:
            self.vocab.append((parse_entry(str(e)), None))
        self.suffixes = frozenset(w for s in suffixes for w in words(str(s)))
        self._order = {r.id: k for k, r in enumerate(self.rules)}

    def by_source(self, slot: Slot) -> Match | None:
        """The ``template_patterns`` match over the slot's probes that starts furthest right,
        then the longest, then the lower code's; ``None`` when nothing matches."""
        best: tuple[tuple[int, int, int], Rule, str] | None = None
        for k, r in enumerate(self.rules):
            for pat in r.patterns("template_patterns"):
                for probe in slot.probes:
                    for m in pat.finditer(probe):
                        key = (m.start(), len(m.group(0)), -k)
                        if best is None or key > best[0]:
                            best = (key, r, m.group(0))
        return Match(best[1], "source", best[2]) if best else None

    def by_name(self, names: Iterable[str]) -> Match | None:
        """The best ``template_names`` (or ``stable_names``) match over the names, or ``None``."""
        best: tuple[tuple[int, int, int], Entry, Rule | None, str] | None = None
        for name in names:
            ws = self._trim(words(name))
            if not ws:
                continue
            owner = owner_words(name)
            ancestors = ancestor_words(name)
            for entry, rule in self.vocab:
                if entry.matches(ws, owner, ancestors):
                    order = -self._order.get(rule.id, len(self._order)) if rule else -len(self._order) - 1
                    key = (*entry.score, order)
                    if best is None or key > best[0]:
                        best = (key, entry, rule, name)
        return Match(best[2], "name", best[3], best[1].text) if best else None

    def classify(self, slot: Slot) -> Match | None:
        """A slot's class: a source match first, else the best name match, else ``None``
        (unknown)."""
        return self.by_source(slot) or self.by_name(slot.names)

    def _trim(self, ws: tuple[str, ...]) -> tuple[str, ...]:
        while len(ws) > 1 and ws[-1] in self.suffixes:
            ws = ws[:-1]
        return ws


_CACHE: dict[tuple[int, ...], Classifier] = {}


def classifier_for(value_rules: Sequence[Rule], unknown: Rule | None) -> Classifier:
    """The classifier of a run's value rules (built once per set of loaded rule objects)."""
    key = tuple(id(r) for r in (*value_rules, unknown))
    got = _CACHE.get(key)
    if got is None:
        opts = unknown.options if unknown is not None else {}
        got = Classifier(value_rules, opts.get("stable_names") or (), opts.get("name_suffixes") or ())
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[key] = got
    return got
