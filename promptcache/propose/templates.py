"""Template inference: cluster requests into the templates behind them and split each
template's parts into static spans and named variable slots.

A template is what a family of requests shares before the conversation starts: the tools, the
system or developer prompt and the cache-relevant parameters of one model. Requests with the
same model and the same part layout there are split into families by their words (word-set
Jaccard similarity of the template region at least :data:`SIMILAR` to the family's first
request), so two applications on one model never merge; each family is a template, and its id
is a fingerprint of its static text. Each part's texts (a bounded
sample) are aligned word by word against the first one; the words every sample keeps are
static, the runs between them are slots. A slot is named after what its values look like,
using the value patterns of the diagnose rules (``timestamp``, ``date``, ``uuid``,
``request_id``, ``random_id``, ``counter``, ``environment``, ``user_data``), else ``number`` or
``text``.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..diagnose.rules import Rule, load_rules
from ..model import Part, Request

#: Distinct texts kept per template part for alignment.
SAMPLE = 48
#: Word-set Jaccard similarity at or above which a request joins a template family. Requests of
#: one template differ in a few values (a timestamp, a name, an id: a few words of hundreds);
#: two different prompts on one model share little beyond common words.
SIMILAR = 0.5
#: Most families per model and layout (more joins the most similar one).
MAX_FAMILIES = 64
#: Slot kinds that should leave the cacheable prefix, with the rule that names them.
VOLATILE = {"timestamp-in-prefix": "timestamp", "date-in-prefix": "date", "uuid-in-prefix": "uuid",
            "request-id-in-prefix": "request_id", "random-id-in-prefix": "random_id", "counter-in-prefix": "counter",
            "environment-in-prefix": "environment", "user-data-before-shared": "user_data"}


def region(req: Request) -> list[Part]:
    """The template region of a request: tools, leading system/developer parts, parameters (the
    leading run of parts that are one of those)."""
    out = []
    for p in req.parts:
        if p.kind in ("tool", "param", "system"):
            out.append(p)
        else:
            break
    return out


def template_key(req: Request) -> tuple[str, ...]:
    """Model plus the layout (kind and path) of the template region (before families)."""
    return (req.model or "-", *(f"{p.kind}:{p.path}" for p in region(req)))


def template_id(key: tuple[str, ...], statics: Iterable[str] = ()) -> str:
    """A short stable id, ``T-`` + 8 hex digits, of a template's model, layout and static text
    (so one prompt keeps its id across logs, and two prompts never share one)."""
    text = "\x1f".join((*key, "\x1e", *statics))
    return "T-" + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def _words(req: Request) -> frozenset[str]:
    return frozenset("\x1f".join(p.text for p in region(req)).split())


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


@dataclass
class Slot:
    """A variable stretch of a template part.

    Attributes:
        index: position among the part's slots.
        name: what it holds (``timestamp``, ``user_data``, ``text`` ...).
        distinct: distinct values seen.
        change_rate: share of consecutive requests (in arrival order) whose part changed.
        examples: a few non-blank values (redact before printing).
        optional: some requests render nothing there (a conditional line); they are left as
            they are by every change to this slot.
        reordered: it lies in a run of slots on adjacent lines that hold the same lines in
            different orders (memories or retrieved items from a similarity search): sorting
            the lines makes them one text.
        group: index of the first slot of that run.
    """

    index: int
    name: str
    distinct: int
    change_rate: float
    examples: list[str] = field(default_factory=list)
    optional: bool = False
    reordered: bool = False
    group: int | None = None

    @property
    def volatile(self) -> bool:
        """Whether this slot should move out of the cacheable prefix."""
        return self.name in VOLATILE.values()


@dataclass
class PartTemplate:
    """One part of a template: static pieces around its slots.

    ``statics`` has one more item than ``slots``: text = statics[0] + slot0 + statics[1] + ...
    """

    path: str
    kind: str
    statics: list[str]
    slots: list[Slot]
    _pattern: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    def pattern(self) -> re.Pattern[str]:
        """A regex that matches this part's texts, one group per slot (compiled once)."""
        if self._pattern is None:
            body = "(.*?)".join(re.escape(s) for s in self.statics)
            self._pattern = re.compile(f"^{body}\\Z", re.DOTALL)  # \Z, not $: $ stops before a final newline
        return self._pattern

    def skeleton_spans(self) -> tuple[str, list[tuple[int, int]]]:
        """The template text with ``{slot}`` placeholders, and each placeholder's span."""
        out, spans = self.statics[0], []
        for s, st in zip(self.slots, self.statics[1:]):
            ph = "{" + s.name + "}"
            spans.append((len(out), len(out) + len(ph)))
            out += ph + st
        return out, spans

    def skeleton(self, width: int = 90) -> str:
        """The template with ``{slot}`` placeholders, shortened for display."""
        out = self.statics[0]
        for s, st in zip(self.slots, self.statics[1:]):
            out += "{" + s.name + "}" + st
        out = out.replace("\n", "⏎")
        return out if len(out) <= width else out[:width - 1] + "…"


@dataclass
class Template:
    """A cluster of requests and the structure of its template region."""

    id: str
    key: tuple[str, ...]
    namespace: str
    requests: int = 0
    parts: list[PartTemplate] = field(default_factory=list)

    @property
    def volatile_slots(self) -> list[tuple[PartTemplate, Slot]]:
        """(part, slot) pairs whose values should leave the prefix."""
        return [(p, s) for p in self.parts for s in p.slots if s.volatile]


class _PartStats:
    def __init__(self) -> None:
        self.texts: dict[str, int] = {}
        self.order: list[str] = []
        self.changes = 0
        self.last: str | None = None
        self.n = 0


class TemplateIndex:
    """Streams requests, then infers templates (bounded memory: a sample per part)."""

    def __init__(self, rules: Sequence[Rule] | None = None):
        self.rules = [r for r in (rules or load_rules()) if r.id in VOLATILE]
        self.stats: dict[tuple[str, ...], dict[str, _PartStats]] = {}
        self.count: dict[tuple[str, ...], int] = {}
        self.kinds: dict[tuple[str, ...], dict[str, str]] = {}
        self.namespace: dict[tuple[str, ...], str] = {}
        self.by_request: dict[tuple[str, int], tuple[str, ...]] = {}
        self.families: dict[tuple[str, ...], list[frozenset[str]]] = {}
        self._family_of: dict[tuple[tuple[str, ...], int], int] = {}

    def key_for(self, req: Request, *, grow: bool = False) -> tuple[str, ...]:
        """A request's template key: model, layout and family (``family:N``).

        Args:
            req: the request.
            grow: start a new family when none is similar enough (pass 1); else the request
                joins the most similar one.
        """
        base = template_key(req)
        texts = tuple(p.text for p in region(req))
        memo = (base, hash(texts))
        fam = self._family_of.get(memo)
        if fam is None:
            reps = self.families.setdefault(base, [])
            words = _words(req)
            best, best_sim = -1, -1.0
            for i, rep in enumerate(reps):
                sim = _jaccard(words, rep)
                if sim > best_sim:
                    best, best_sim = i, sim
            if best < 0 or (grow and best_sim < SIMILAR and len(reps) < MAX_FAMILIES):
                reps.append(words)
                best = len(reps) - 1
            fam = best
            self._family_of[memo] = fam
        return (*base, f"family:{fam}")

    def add(self, req: Request, namespace: str) -> tuple[str, ...]:
        """Account one request; returns its template key."""
        key = self.key_for(req, grow=True)
        self.count[key] = self.count.get(key, 0) + 1
        self.namespace.setdefault(key, namespace)
        per = self.stats.setdefault(key, {})
        kinds = self.kinds.setdefault(key, {})
        for p in region(req):
            st = per.setdefault(p.path, _PartStats())
            kinds[p.path] = p.kind
            st.n += 1
            if st.last is not None and p.text != st.last:
                st.changes += 1
            st.last = p.text
            if p.text in st.texts:
                st.texts[p.text] += 1
            elif len(st.texts) < SAMPLE:
                st.texts[p.text] = 1
                st.order.append(p.text)
        self.by_request[(req.source.path, req.source.line)] = key
        return key

    def templates(self) -> dict[tuple[str, ...], Template]:
        """Infer every template's static spans and slots."""
        out = {}
        for key, per in self.stats.items():
            t = Template("", key, self.namespace[key], self.count[key])
            for path, st in per.items():
                t.parts.append(self._infer(path, self.kinds[key][path], st))
            t.id = template_id(key[:-1], (s for p in t.parts for s in (p.path, *p.statics)))
            out[key] = t
        return out

    def _infer(self, path: str, kind: str, st: _PartStats) -> PartTemplate:
        texts = st.order
        ref = texts[0]
        if len(texts) == 1:
            return PartTemplate(path, kind, [ref], [])
        keep = [True] * len(ref)
        inserted: set[int] = set()
        for other in texts[1:]:
            matched, ins = _matched(ref, other)
            keep = [k and m for k, m in zip(keep, matched)]
            inserted |= ins
        spans = _slot_spans(ref, keep, inserted)
        pieces, pos = [], 0
        for a, b in spans:
            pieces.append(ref[pos:a])
            pos = b
        pieces.append(ref[pos:])
        pt = PartTemplate(path, kind, pieces, [])
        pat = pt.pattern()
        values: list[list[str]] = [[] for _ in range(len(pieces) - 1)]
        for t in texts:
            m = pat.match(t)
            if m:
                for i, v in enumerate(m.groups()):
                    values[i].append(v)
        for i, vals in enumerate(values):
            name = self._name(pieces[i][-80:], [v for v in vals if v.strip()], pieces[i + 1][:40])
            present = [v for v in vals if v.strip()]
            slot = Slot(i, name, len(set(vals)), st.changes / max(1, st.n - 1), present[:3],
                        optional=len(present) < len(vals))
            pt.slots.append(slot)
        self._reordered(pt, texts)
        return pt

    @staticmethod
    def _reordered(pt: PartTemplate, texts: list[str]) -> None:
        """Mark runs of slots on adjacent lines whose lines, sorted within their groups, are one
        text in every sample: the same items in another order (memories from a similarity
        search). Each run's slots get ``group`` = its first slot's index."""
        pat = pt.pattern()
        ref = pat.match(texts[0])
        if ref is None or not pt.slots:
            return
        sep = JSON_BREAK if pt.kind == "tool" else "\n"  # a tool's text is JSON: its lines are in a string
        runs: list[list[int]] = []
        for s in pt.slots:
            a, b = line_span(texts[0], ref.span(s.index + 1), sep)
            if runs and a <= line_span(texts[0], ref.span(runs[-1][-1] + 1), sep)[1] + len(sep):
                runs[-1].append(s.index)
            else:
                runs.append([s.index])
        for run in runs:
            if not any(pt.slots[i].distinct > 1 for i in run):
                continue
            raw, lined = set(), set()
            for t in texts:
                m = pat.match(t)
                if m is None:
                    continue
                a = line_span(t, m.span(run[0] + 1), sep)[0]
                b = line_span(t, m.span(run[-1] + 1), sep)[1]
                raw.add(t[a:b])
                lined.add(sort_lines(a, b, t, sep))
            if len(raw) > 1 and len(lined) == 1:
                for i in run:
                    pt.slots[i].reordered = True
                    pt.slots[i].group = run[0]

    def _name(self, before: str, values: list[str], after: str) -> str:
        for rule in self.rules:
            pats = rule.patterns()
            hits = 0
            for v in values[:16]:
                probe = before + v + after
                lo = len(before)
                if any(lo - 40 <= m.start() <= lo + len(v) and m.end() >= lo for pat in pats
                       for m in pat.finditer(probe, max(0, lo - 80))):
                    hits += 1
            if values and hits >= max(1, len(values[:16]) // 2):
                return VOLATILE[rule.id]
        if values and all(v.strip().isdigit() for v in values):
            return "number"
        return "text"


_VALUE_CHAR = re.compile(r"[\w\-:+/@.]")
#: A line that heads a group of items (``[Saved Notes]``, ``## Memories``, ``Relevant context:``):
#: items are sorted within their group, never across it.
_GROUP_HEAD = re.compile(r"^\s*(\[[^\]]*\]|#+\s.*|.*:)\s*$")


#: The line break inside a JSON string (a tool definition's text: its description's lines).
JSON_BREAK = "\\n"


def _string_bounds(text: str, a: int, b: int) -> tuple[int, int]:
    """``(start, end)`` of the JSON string holding ``text[a:b]``: after its opening quote and
    at its closing one (a quote counts when an even number of backslashes precede it)."""
    def quoted(i: int) -> bool:
        k = i - 1
        while k >= 0 and text[k] == "\\":
            k -= 1
        return (i - 1 - k) % 2 == 0

    i = a - 1
    while i >= 0 and not (text[i] == '"' and quoted(i)):
        i -= 1
    j = max(a, b)
    while j < len(text) and not (text[j] == '"' and quoted(j)):
        j += 1
    return i + 1, j


def line_span(text: str, span: tuple[int, int], sep: str = "\n") -> tuple[int, int]:
    """``span`` widened to the whole lines holding it; with ``sep`` :data:`JSON_BREAK`, the
    lines of the JSON string that holds it (a tool's description inside the tool's JSON text).

    >>> t = '{"d":"Agents:\\\\n- b: x\\\\n- a: y","n":1}'
    >>> a, b = line_span(t, (t.index("b:"), t.index("b:") + 2), JSON_BREAK); t[a:b]
    '- b: x'
    """
    a, b = span
    if sep == "\n":
        start = text.rfind("\n", 0, a) + 1
        end = text.find("\n", max(a, b - 1)) if b > a else text.find("\n", a)
        return start, len(text) if end < 0 else end
    lo, hi = _string_bounds(text, a, b)
    k = text.rfind(sep, lo, a)
    start = lo if k < 0 else k + len(sep)
    end = text.find(sep, max(a, b - 1) if b > a else a, hi)
    return start, hi if end < 0 else end


def sort_lines(a: int, b: int, text: str, sep: str = "\n") -> str:
    """The lines of ``text[a:b]`` (split at ``sep``) sorted within each group (a heading line
    starts a group and stays where it is).

    >>> sort_lines(0, 30, "[A]\\nz\\ny\\n[B]\\nx\\nw")
    '[A]\\ny\\nz\\n[B]\\nw\\nx'
    """
    out: list[str] = []
    group: list[str] = []
    for line in text[a:b].split(sep):
        if _GROUP_HEAD.match(line):
            out.extend(sorted(group))
            group = []
            out.append(line)
        else:
            group.append(line)
    out.extend(sorted(group))
    return sep.join(out)


def _matched(ref: str, other: str) -> tuple[list[bool], set[int]]:
    """Characters of ``ref`` that ``other`` keeps, and the places in ``ref`` where ``other``
    holds text that ``ref`` lacks (an inserted line: a conditional block one request renders
    and the other does not).

    Common prefix and suffix first, then a diff of the middle when it is small enough (a large
    middle counts as changed, with no insertion)."""
    n, m = len(ref), len(other)
    p = 0
    while p < n and p < m and ref[p] == other[p]:
        p += 1
    q = 0
    while q < n - p and q < m - p and ref[n - 1 - q] == other[m - 1 - q]:
        q += 1
    out = [True] * p + [False] * (n - p - q) + [True] * q
    inserted: set[int] = set()
    mid_r, mid_o = ref[p:n - q], other[p:m - q]
    if not mid_r:
        if mid_o:
            inserted.add(p)
    elif mid_o and len(mid_r) * len(mid_o) <= 4_000_000:
        at_r = at_o = 0
        for a, b, size in difflib.SequenceMatcher(None, mid_r, mid_o, autojunk=False).get_matching_blocks():
            if size < 4 and size != 0:  # ignore coincidental one-letter matches inside values
                continue
            if a == at_r and b > at_o:  # other has text here that ref lacks
                inserted.add(p + a)
            for i in range(p + a, p + a + size):
                out[i] = True
            if size:
                at_r, at_o = a + size, b + size
    return out, inserted


def _slot_spans(ref: str, keep: list[bool], inserted: Iterable[int] = ()) -> list[tuple[int, int]]:
    """Runs of changed characters, widened to whole values (a date, a name, an id) and merged
    when only a space separates them; plus an empty slot at each place where other texts insert
    something (kept as it is: an insertion between two kept characters)."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(ref)
    while i < n:
        if keep[i]:
            i += 1
            continue
        j = i
        while j < n and not keep[j]:
            j += 1
        a, b = i, j
        while a > 0 and _VALUE_CHAR.match(ref[a - 1]):
            a -= 1
        while b < n and _VALUE_CHAR.match(ref[b]):
            b += 1
        while b > a + 1 and ref[b - 1] in ".,:;":  # trailing punctuation belongs to the sentence
            b -= 1
        if spans and a <= spans[-1][1] + 1 and ref[spans[-1][1]:a].strip() == "":
            spans[-1] = (spans[-1][0], max(b, spans[-1][1]))
        else:
            spans.append((a, b))
        i = max(j, b)
    for x in sorted(inserted):
        if any(a <= x <= b for a, b in spans):
            continue  # next to a changed run: that slot's pattern matches the inserted text too
        spans.append((x, x))
    spans.sort()
    return spans


def group_requests(reqs: Iterable[Request]) -> dict[str, list[Request]]:
    """Requests by template id (for tests and small logs)."""
    index = TemplateIndex()
    reqs = list(reqs)
    keys = [index.add(r, "") for r in reqs]
    ids = {k: t.id for k, t in index.templates().items()}
    out: dict[str, list[Request]] = {}
    for r, k in zip(reqs, keys):
        out.setdefault(ids[k], []).append(r)
    return out
