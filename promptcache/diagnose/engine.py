"""Diagnosis: for every request whose cacheable prefix ends earlier than it should, find the
cause, point at it and price it.

Each request is compared with its predecessor: the previous request of the same session
(session / conversation / user id, ``prompt_cache_key``) when the log names one, else the
earlier request it shares the longest prefix with (the ideal cache's best match, which infers
template families and growing histories). Where the two part ways is located exactly (segment
path, character offset, token index); the rules in ``rules/lint/`` then name the cause, and a
counterfactual (both prompts with the cause removed: the value replaced, the tools sorted, the
keys canonicalised, ...) re-tokenized and compared tells how many tokens the cause costs.

Every lost token goes to exactly one cause (:mod:`.accounting`): a located content cause claims
what the request would have shared with its predecessor without it, beyond the ideal cache; the
ideal cache's lead over the simulated rules is claimed whole by one mechanics cause (minimum
length, TTL, breakpoints, cache keys, capacity, granularity), and the simulation's lead over the
reported usage by one cause only the reported usage shows (routing, per-request keys, rendered
parameters, reasoning settings, server-side chains, TTL or capacity inside the documented
ranges). What no cause explains is recorded as ``unexplained``, with the miss reason.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass, replace
from decimal import Decimal
from collections.abc import Mapping
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..prepare import Context as _Context
from ..step import Step
from ..content import documents, looks_like_documents, normalize_whitespace, stable_documents
from ..model import CacheVerdict, Part, Request
from ..prefix.lcp import common_prefix
from ..pricing import PriceBook, Rates
from ..simulate import Prompt
from ..simulate.boundaries import BoundarySim
from ..simulate.rules import CacheRules, ProviderFile
from .accounting import UNEXPLAINED
from .findings import Candidate, Finding, aggregate
from .redact import CONTEXT, Evidence, Excerpt, Personal, identifier
from .rules import Rule, load_rules
from . import verdict as _verdict

#: Requests kept in memory per model to serve as predecessors (their text and tokens). Per
#: model, so a run split by namespace (``--dask``) keeps exactly what a single run keeps.
RECENT = 256
#: Sessions whose last request is kept (least recently active go first), per model.
SESSIONS = 512


@dataclass
class Pair:
    """A request, its predecessor and where they part ways."""

    r: Request
    p: Request
    rp: Prompt
    pp: Prompt
    ctx: _Context
    d: int  # shared tokens
    i: int  # segment index of the break in r
    j: int  # segment index of the break in p
    c: int | None  # character offset of the break inside r's segment text (None: framing)
    tail: int  # first segment of r's final user turn
    rules: CacheRules



def _longer(longer: list[tuple[str, float, str]], model: str | None) -> str:
    """The ttl-expired finding's advice from :meth:`CacheRules.longer_lifetimes`: the longer
    lifetime the model offers and how to ask for it, or that it offers none."""
    who = f"`{model}`" if model else "this model"
    if not longer:
        return f"{who} offers no longer cache lifetime: keep its cache warm, or batch the turns"
    name, sec, how = longer[-1]
    return f"{who} offers {how} (about {int(sec):,} s)"


def _segment_index(prompt: Prompt, token: int) -> int:
    return min(bisect_right(prompt.seg_ends, token), len(prompt.segments) - 1)


def _char_at(prompt: Prompt, ctx: _Context, i: int, token: int) -> int | None:
    seg = prompt.segments[i]
    start = prompt.seg_ends[i - 1] if i else 0
    k = token - start - len(seg.head)
    if k < 0:
        return None
    text_tokens = prompt.seg_ends[i] - start - len(seg.head) - len(seg.tail)
    if k >= text_tokens:
        return len(seg.text)
    ids = np.frombuffer(prompt.units, dtype="<u4", count=k, offset=(start + len(seg.head)) * 4).tolist()
    return min(len(ctx.tokenizer.decode(ids)) if ids else 0, len(seg.text))


def _tail_start(prompt: Prompt) -> int:
    """First segment of the newest input message: the final user turn, or in a tool loop the
    newest tool result (what the request adds; a break inside it is no cause), or
    len(segments)."""
    segs = prompt.segments
    last = None
    for k in range(len(segs) - 1, -1, -1):
        s = segs[k]
        if (s.role == "user" and s.kind in ("user", "image", "document", "tool_result")) or s.role == "tool":
            last = s.message
            break
    if last is None:
        return len(segs)
    for k in range(len(segs)):
        s = segs[k]
        if s.message == last and (s.role == "user" or s.role == "tool"):
            return k
    raise AssertionError("unreachable: the segment found above qualifies")


def _conversation_start(prompt: Prompt) -> int:
    """First segment of the conversation (what a template family does not share)."""
    segs = prompt.segments
    for k in range(len(segs)):
        s = segs[k]
        if s.role in ("user", "assistant", "tool") and s.kind != "param" and s.kind != "tool":
            return k
    return len(segs)


def comparable(a: _Context | None, b: _Context | None) -> bool:
    """Whether prompts prepared in two contexts hold comparable token ids: the same context, or
    the same tokenizer and the same rendering (two upstreams of one model behind a router, whose
    rules files render alike)."""
    return a is b or (a is not None and b is not None and a.tokenizer is b.tokenizer and a.pf.layout == b.pf.layout)


def tokens_of(ctx: _Context, req: Request) -> bytes:
    """Render and tokenize a (transformed) request like the pipeline does."""
    segs = ctx.format.render(req)
    ids = ctx.memo.encode([s.text for s in segs])
    return b"".join(ctx.piece(s, t) for s, t in zip(segs, ids))


def _with_parts(req: Request, fn: Callable[[Part], Part]) -> Request:
    return replace(req, parts=tuple(fn(p) for p in req.parts))


def _first_difference(a: str, b: str, start: int = 0) -> int:
    """Index of the first character where ``a`` and ``b`` differ at or after ``start`` (both
    equal before it); ``min(len)`` when one is a prefix of the other."""
    n = min(len(a), len(b))
    i = start
    while i < n:
        j = min(n, i + 64)
        if a[i:j] != b[i:j]:
            while a[i] == b[i]:
                i += 1
            return i
        i = j
    return n


#: How many conversation parts from the front a moved window is looked for in (a window drops a
#: few messages per turn).
WINDOW_PROBE = 16


def conversation_head(q: Request) -> tuple[str, ...]:
    """The texts of a request's first :data:`WINDOW_PROBE` conversation parts (not system)."""
    out: list[str] = []
    for p in q.parts:  # a loop, not islice over a generator: once per request
        if p.message is not None and p.role != "system" and p.role != "developer":
            out.append(p.text)
            if len(out) == WINDOW_PROBE:
                break
    return tuple(out)


def _same_conversation(head_a: tuple[str, ...], head_b: tuple[str, ...]) -> bool:
    """Whether two requests (by their :func:`conversation_head`) hold the same conversation:
    the first message of one is among the first conversation parts of the other (the same
    opening, or a window that moved on)."""
    if not head_a or not head_b:
        return False
    return head_a[0] == head_b[0] or head_a[0] in head_b or head_b[0] in head_a


#: The conversations of the requests compared last (a request is compared as the newer one,
#: then as the predecessor of the next): ``id(request) -> (request, conversation)``.
_CONVERSATIONS: dict[int, tuple[Request, list[tuple[int, str | None, tuple[str, ...], str]]]] = {}


def _conversation(q: Request) -> list[tuple[int, str | None, tuple[str, ...], str]]:
    """The conversation of a request, message by message: ``(message index, role, texts of
    its parts, path of its first part)``; system and developer messages are not conversation.
    Two messages are the same when their roles and texts are (the texts are compared, never
    joined: :func:`_text` joins one where it is shown)."""
    got = _CONVERSATIONS.get(id(q))
    if got is not None and got[0] is q:
        return got[1]
    out: list[tuple[int, str | None, tuple[str, ...], str]] = []
    for x in q.parts:
        if x.message is None or x.role in ("system", "developer"):
            continue
        if out and out[-1][0] == x.message:
            m = out[-1]
            out[-1] = (m[0], m[1], m[2] + (x.text,), m[3])
        else:
            out.append((x.message, x.role, (x.text,), x.path))
    if len(_CONVERSATIONS) >= 16:
        _CONVERSATIONS.clear()
    _CONVERSATIONS[id(q)] = (q, out)
    return out


def _text(message: tuple[int, str | None, tuple[str, ...], str]) -> str:
    """A :func:`_conversation` message's text: its parts' texts joined by NUL."""
    return "\x00".join(message[2])


def _drift_kind(returned: str, replayed: str) -> str:
    """What a replayed assistant turn changed: ``whitespace``, ``serialization`` (the same JSON),
    ``dropped`` (a part of the returned text left out), else ``rewritten``."""
    if normalize_whitespace(returned) == normalize_whitespace(replayed):
        return "whitespace"
    if deep_canonical_json(returned) == deep_canonical_json(replayed) != returned:
        return "serialization"
    if len(replayed) < len(returned) and all(w in returned for w in replayed.split("\x00")):
        return "dropped"
    return "rewritten"


def _permuted_lines(tr: str, tp: str) -> tuple[int, int, int, int] | None:
    """``(start, end in r, end in p, items)`` of the smallest run of whole lines where ``tr``
    and ``tp`` differ, when the two runs hold the same lines in another order (at least two
    lines), else ``None``."""
    n = len(tr)
    if n != len(tp):  # the same lines in another order keep the length
        return None
    a = _first_difference(tr, tp)
    if a >= n:
        return None
    line = tr[tr.rfind("\n", 0, a) + 1:tr.find("\n", a) if tr.find("\n", a) >= 0 else n]
    if line not in tp:  # r's line at the break must be one of p's, somewhere
        return None
    # the common suffix, compared in slices from the end (both have the same length)
    end = n
    while end > a:
        j = max(a, end - 64)
        if tr[j:end] != tp[j:end]:
            while tr[end - 1] == tp[end - 1]:
                end -= 1
            break
        end = j
    b = n - end
    a = tr.rfind("\n", 0, a) + 1
    end_r, end_p = len(tr) - b, len(tp) - b
    nl_r, nl_p = tr.find("\n", end_r), tp.find("\n", end_p)
    end_r = len(tr) if nl_r < 0 else nl_r
    end_p = len(tp) if nl_p < 0 else nl_p
    if end_r - a != end_p - a:
        return None
    lines_r, lines_p = tr[a:end_r].split("\n"), tp[a:end_p].split("\n")
    if len(lines_r) < 2 or lines_r == lines_p or sorted(lines_r) != sorted(lines_p):
        return None
    return a, end_r, end_p, len(lines_r)


def _json_strings(a: Any, b: Any, out: list[tuple[str, str]]) -> bool:
    """Collect the pairs of strings that differ between two JSON values of the same shape
    (``False`` when the shapes or any non-string value differ)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_json_strings(a[k], b[k], out) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_strings(x, y, out) for x, y in zip(a, b))
    if isinstance(a, str) and isinstance(b, str):
        if a != b:
            out.append((a, b))
        return True
    return a == b


def _permuted_items(tr: str, tp: str) -> tuple[str, str, int, int, int] | None:
    """Whether ``tr`` is ``tp`` with the lines of a list (or several) in another order: as
    text (:func:`_permuted_lines`), or inside the strings of a JSON value whose shape is
    otherwise the same (a tool definition whose description lists agents or skills one per
    line, the newlines escaped). ``(text of r, text of p, start of the first item out of place
    in them, items in that run, character offset of it in ``tr`` or of the string holding it)``,
    else ``None``."""
    got = _permuted_lines(tr, tp)
    if got is not None:
        return tr, tp, got[0], got[3], got[0]
    if tr.lstrip()[:1] not in "{[" or len(tr) != len(tp):
        return None
    try:
        vr, vp = json.loads(tr), json.loads(tp)
    except (json.JSONDecodeError, RecursionError):
        return None
    pairs: list[tuple[str, str]] = []
    if not _json_strings(vr, vp, pairs) or not pairs:
        return None
    first = None
    for sr, sp in pairs:
        run = _permuted_lines(sr, sp)
        if run is None:
            return None
        if first is None:
            first = (sr, sp, run)
    assert first is not None
    sr, sp, run = first
    at = _first_difference(tr, tp)
    return sr, sp, run[0], run[3], at


def _item(text: str, at: int, width: int = 48) -> Excerpt:
    """The start of the list item (line) at ``at`` in ``text``: at most ``width`` characters, cut
    with ``…`` (an item's name or first words tell two orders apart; a multi-KB item is not
    quoted whole)."""
    nl = text.find("\n", at)
    end = len(text) if nl < 0 else nl
    b = min(end, at + width)
    return Excerpt(text[at:b], False, b < end, context=text[max(0, at - CONTEXT):min(len(text), b + CONTEXT)],
                   at=at - max(0, at - CONTEXT), focus=(0, b - at))


def _inserted_line(tr: str, tp: str, ms: int, me: int, follow: int = 32, longest: int = 200) -> bool:
    """Whether the line of ``tr`` starting at ``ms`` and holding a value a pattern matched (up to
    ``me``) was added: ``tr`` and ``tp`` agree before it, it ends within ``longest`` characters,
    and ``tp`` goes on at ``ms`` with what follows that line in ``tr`` (at least ``follow``
    characters of it). A clock line put in front of a system prompt another request sends
    without one."""
    if ms and tr[ms - 1] != "\n":
        return False
    nl = tr.find("\n", me)
    if nl < 0 or nl - ms > longest:
        return False
    after = tr[nl + 1:nl + 1 + follow]
    return len(after) == follow and tp.startswith(after, ms)


def _canon(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _canon(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [_canon(x) for x in v]
    if isinstance(v, str) and v[:1] in "{[":
        try:
            return json.dumps(_canon(json.loads(v)), ensure_ascii=False, separators=(",", ":"))
        except (json.JSONDecodeError, RecursionError):
            return v
    return v


def deep_canonical_json(text: str) -> str:
    """JSON text with sorted keys at every level, JSON held in strings included (OpenAI tool-call
    ``arguments`` are a JSON object serialized into a string); other text unchanged."""
    if text.lstrip()[:1] not in "{[":
        return text
    try:
        return json.dumps(_canon(json.loads(text)), ensure_ascii=False, separators=(",", ":"))
    except (json.JSONDecodeError, RecursionError):
        return text


def _tool_name(p: Part) -> str:
    try:
        d = json.loads(p.text)
    except json.JSONDecodeError:
        return p.text
    fn = d.get("function") if isinstance(d, dict) else None
    return str((fn or d).get("name", p.text)) if isinstance(fn or d, dict) else p.text


class Diagnoser:
    """Streams :class:`~promptcache.step.Step` s and collects :class:`Candidate` s.

    Args:
        providers: the provider files by id (whether a rules id is a priced provider).
        book: prices, for money lost.
        rules: the rules to apply (default: every shipped rule).
        show_text: quote values unredacted.
    """

    def __init__(self, providers: Mapping[str, ProviderFile], book: PriceBook, rules: Sequence[Rule] | None = None, show_text: bool = False):
        self.providers = providers
        self.book = book
        self.rules = tuple(rules) if rules is not None else load_rules()
        self.by_kind: dict[str, list[Rule]] = {}
        for r in self.rules:
            self.by_kind.setdefault(r.kind, []).append(r)
        # looked up per request: resolved once
        self._firsts: dict[tuple[str, str, str], Rule | None] = {}
        self._structural = {ru.options.get("compare"): ru for ru in self.by_kind.get("structural-diff", ())}
        self._bp = {ru.options.get("check"): ru for ru in self.by_kind.get("breakpoint", ())}
        self._fallback_rule = self._first("structural-diff", "compare", "any")
        self._ttl_choice = self._first("timing", "check", "ttl-choice")
        self._value_rules = [(rule, [(pat, "value" in pat.groupindex) for pat in rule.patterns()],
                              bool(rule.options.get("numeric_increase")), int(rule.options.get("min_tokens_lost", 1)),
                              bool(rule.options.get("snapshot")))
                             for rule in self.by_kind.get("value-pattern", ())]
        self.show = show_text
        self.cands: list[Candidate] = []
        self.recent: dict[str, OrderedDict[int, tuple[Request, Prompt, _Context | None]]] = {}
        self.session_last: dict[str, OrderedDict[str, tuple[int, Request, Prompt, _Context | None]]] = {}
        self.latest: dict[str, int] = {}
        self._buf: list[Candidate] = self.cands
        self._extends = False
        self._cf: tuple[int, float | None] | None = None
        self._rates_for: Step | None = None
        self._heads: dict[int, tuple[Request, tuple[str, ...]]] = {}
        self._rates_got: Rates | None = None
        self.keys: dict[str, dict[str | None, int]] = {}
        self.key_windows: dict[tuple[str, str, bytes], list[float]] = {}
        self.overflow: dict[tuple[str, str], list[int]] = {}
        # (namespace, key) -> [conversations' first-message hashes, arrivals, first (index, path, line)]
        self.key_use: dict[tuple[str, str], list[Any]] = {}
        self.shadow: dict[str, tuple[BoundarySim, list[Decimal]]] = {}

    # ------------------------------------------------------------------ helpers

    def _head(self, r: Request) -> tuple[str, ...]:
        """:func:`conversation_head` of a request, computed once per request (the recent
        requests are compared with several later ones)."""
        got = self._heads.get(id(r))
        if got is not None and got[0] is r:
            return got[1]
        if len(self._heads) >= 4 * RECENT:
            for k in list(itertools.islice(self._heads, 2 * RECENT)):
                del self._heads[k]
        head = conversation_head(r)
        self._heads[id(r)] = (r, head)
        return head

    def _first(self, kind: str, option: str, value: str) -> Rule | None:
        """The first rule of ``kind`` whose ``option`` is ``value`` (looked up per request:
        found once)."""
        key = (kind, option, value)
        try:
            return self._firsts[key]
        except KeyError:
            got = self._firsts[key] = next((ru for ru in self.by_kind.get(kind, ()) if ru.options.get(option) == value), None)
            return got

    def _rates(self, step: Step) -> Rates | None:
        """The request's prices (looked up once per request)."""
        if self._rates_for is step:
            return self._rates_got
        pf = self.providers[step.outcome.provider]
        self._rates_got = self.book.rates(step.outcome.provider if pf.kind == "provider" else None, step.request.model,
                                          step.request.arrival)
        self._rates_for = step
        return self._rates_got

    def _money(self, step: Step, cached: int, better: int) -> Decimal | None:
        rates = self._rates(step)
        if rates is None or better <= cached:
            return None if rates is None else Decimal(0)
        o = step.outcome
        bw = step.rules.bills_writes
        return rates.cost(o.prompt_tokens, cached, o.write_tokens, o.write_1h_tokens, bw) - \
            rates.cost(o.prompt_tokens, better, max(0, o.write_tokens - (better - cached)), 0, bw)

    def _add(self, step: Step, rule: Rule, key: tuple[Any, ...], *, segment: str | None, char: int | None,
             token: int | None, evidence: dict[str, Any] | Evidence, lost: int, cost: Decimal | None,
             gap: str | None = "content", **values: Any) -> None:
        """Record one cause instance; ``gap`` names the accounting gap its tokens belong to
        (``content`` for what :meth:`_pair` locates in the text). A content loss on a request
        whose whole prompt is shorter than the rules' minimum (``min_tokens``) keeps its tokens
        (the gap is measured against the ideal cache) but costs nothing under the simulated
        rules, which would cache none of it with the change undone; ``values["under_minimum"]``
        says so. (A longer prompt is valued as usual: undone, it could match any cached prompt,
        not only the one it is compared with.)"""
        o = step.outcome
        if gap == "content" and lost > 0 and o.prompt_tokens < step.rules.min_tokens:
            # shorter than the minimum: the simulated rules cache none of this request however
            # its prefix reads, so the change costs nothing under them
            cost = None if cost is None else Decimal(0)
            values = {**values, "under_minimum": step.rules.min_tokens}
        if not isinstance(evidence, Evidence) and any(isinstance(v, (Excerpt, Personal)) for v in evidence.values()):
            evidence = Evidence(evidence, self.show)  # quotes are formatted (and redacted) when shown
        self._buf.append(Candidate(rule, key, o.index, o.path, o.line, segment, char, token, evidence, lost, cost, values,
                                   gap))

    # ------------------------------------------------------------------ streaming

    def observe(self, step: Step) -> None:
        """Diagnose one request (in arrival order).

        The request is compared with its session's previous request when the log names a
        session; otherwise with the latest request of the same model (the live template
        family) and with the earlier request it shares most with, keeping the comparison that
        explains more lost tokens (the template family only where the session's request names
        no cause). Then the gap between the ideal and the simulated cache, and
        between the simulated cache and the reported usage, are each claimed by one cause (or
        recorded as unexplained).
        """
        r, o = step.request, step.outcome
        ideal_ns = f"{o.provider}/{o.model or '-'}"  # what cache keys partition
        model = o.model or "-"  # the ideal cache's traffic: predecessors whatever upstream served them
        sess = r.session or r.cache_key
        # (predecessor, family): a family comparison looks only at the template part
        recent = self.recent.setdefault(model, OrderedDict())
        sessions = self.session_last.setdefault(model, OrderedDict())
        preds: list[tuple[tuple[Request, Prompt, _Context | None], bool]] = []
        seen: set[int] = set()
        prev = None
        if sess is not None:
            prev = sessions.pop(sess, None)
            if prev is not None:
                # a cache key shared by several conversations is no session: compare as a family
                preds.append((prev[1:], r.session is None and not _same_conversation(self._head(r), self._head(prev[1]))))
                seen.add(prev[0])
            sessions[sess] = (o.index, r, step.prompt, step.context)
            if len(sessions) > SESSIONS:
                sessions.popitem(last=False)
        latest = self.latest.get(model)
        # the latest request of the model is a template-family comparison, unless the ideal cache
        # says it is also the one this request shares most with
        for idx, family in ((latest, latest != o.diverged_from), (o.diverged_from, False)):
            if idx is not None and idx not in seen and idx in recent:
                got = recent[idx]
                # the same conversation (its first message as this one's): a full comparison
                preds.append((got, family and not _same_conversation(self._head(r), self._head(got[0]))))
                seen.add(idx)
        self.latest[model] = o.index
        # the first request after a switch of model: compared with the latest request of the
        # other model (its session's previous request; without sessions, the log's latest when
        # this model has no earlier request), whose prefix the switch threw away, where it is
        # the same conversation (unless the log names the session: a cache key may be shared)
        other = self._other_model(model, sess) if prev is None and (sess is not None or not preds) else None
        if other is not None and (r.session is not None or _same_conversation(self._head(r), self._head(other[0]))):
            preds.insert(0, (other, False))
        best: list[Candidate] = []
        best_cf: tuple[int, float | None] | None = None
        best_pred: Request | None = preds[0][0][0] if preds else None
        best_pp: Prompt | None = None
        if step.context is not None and step.prompt.segments:
            best_lost = -1
            for k, (got, family) in enumerate(preds):
                if not comparable(got[2], step.context):
                    continue
                if k and sess is not None and self._extends:
                    break  # it extends its own session's last request: other comparisons add nothing
                if family and k and sess is not None and best:
                    # its session's last request names a cause: a template-family comparison
                    # counts only up to where the conversation starts, and the cause found
                    # against the session's own request claims up to its newest turn
                    continue
                self._buf = []
                self._extends = False
                self._cf = None
                self._pair(step, got[0], got[1], family)
                lost = sum(c.tokens_lost for c in self._buf)
                if lost > best_lost or (lost == best_lost and self._buf and not best):
                    best, best_lost, best_cf, best_pred, best_pp = self._buf, lost, self._cf, got[0], got[1]
            recent[o.index] = (r, step.prompt, step.context)
            if len(recent) > RECENT:
                recent.popitem(last=False)
        self._buf = self.cands
        start = len(self.cands)
        self.cands.extend(best)
        # the request that could have written what the ideal cache serves: the earlier request it
        # shares most with, else its session's previous one
        writer = recent.get(o.diverged_from) if o.diverged_from is not None else None
        if writer is None and preds:
            writer = preds[0][0]
        self._rules_gap(step, writer, best[0] if best and best_cf is not None else None, best_cf, best_pp)
        self._reported_gap(step, preds[0][0] if preds else None)
        if sess is not None and preds and not preds[0][1]:
            self._replay(step, preds[0][0])
        self._keys(step, ideal_ns)
        self._latent(step, preds[0][0][0] if preds else None)
        if step.rules.mode == "breakpoints" and step.prompt.segments \
                and any(s >= 3600 for _, s in step.rules.lifetimes):  # only where the model offers the 1-hour TTL
            self._shadow_1h(step)
        verdict = r.response.verdict if r.response is not None else None
        if verdict is not None:
            self._show_verdict(self.cands[start:], r, verdict, best_pred)

    def _other_model(self, model: str, sess: str | None) -> tuple[Request, Prompt, _Context | None] | None:
        """The latest request of a model other than ``model``: session ``sess``'s last one on
        another model, or without a session the log's (looked up only for a request with no
        predecessor of its own model, so rarely)."""
        best: tuple[int, Request, Prompt, _Context | None] | None = None
        if sess is not None:
            for m, last in self.session_last.items():
                got = last.get(sess) if m != model else None
                if got is not None and (best is None or got[0] > best[0]):
                    best = got
        else:
            for m, idx in self.latest.items():
                got = self.recent.get(m, {}).get(idx) if m != model else None
                if got is not None and (best is None or idx > best[0]):
                    best = (idx, *got)
        return best[1:] if best is not None else None

    def finish(self) -> list[Finding]:
        """Aggregate everything seen into ranked findings."""
        return aggregate(self.finish_candidates())

    def finish_candidates(self) -> list[Candidate]:
        """Every cause instance once the stream has ended (before grouping): what a run split
        by namespace sends back to be merged."""
        self._finish_keys()
        self._finish_shared_keys()
        self._finish_best_effort()
        self._finish_shadow()
        return self.cands

    # ------------------------------------------------------------------ pair analysis

    def _pair(self, step: Step, p: Request, pp: Prompt, family: bool = False) -> None:
        r, rp, ctx = step.request, step.prompt, step.context
        assert ctx is not None
        d = common_prefix(rp.units, pp.units)
        if r.model != p.model:
            # the cache is per model: on p's model the request would share d tokens with p, and
            # what that adds to the ideal cache's read (its own model's traffic) is the switch's
            # content loss, like any located cause's (:meth:`_report_lost`)
            lost = max(0, d - step.outcome.shared_prefix_tokens)
            if lost <= 0:  # the other model's request holds nothing this one could have used
                return
            for rule in self.by_kind.get("parameter-diff", ()):
                if rule.options.get("model"):
                    self._add(step, rule, ("model",), segment=None, char=None, token=0,
                              evidence={"param": "model", "before": p.model, "after": r.model}, lost=lost,
                              cost=self._value(step, lost), param="model")
            return
        if d * 4 >= len(pp.units) or d * 4 >= len(rp.units):
            self._extends = True
            return  # one extends the other: no break
        i, j = _segment_index(rp, d), _segment_index(pp, d)
        tail = _conversation_start(rp) if family else _tail_start(rp)
        pair = Pair(r, p, rp, pp, ctx, d, i, j, _char_at(rp, ctx, i, d), tail, step.rules)
        in_tail = i >= pair.tail
        # a prompt logged as one rendered text (vLLM and SGLang request logs, completion prompts)
        # has no newest turn to tell apart: a value located at the break is named wherever it is
        rendered = len(r.parts) == 1 and len(p.parts) == 1
        for check in (self._parameter, self._structure, self._values):
            if check(step, pair, in_tail and not (rendered and check == self._values)):
                return
        if not in_tail:
            self._fallback(step, pair)

    def _cf_lost(self, pair: Pair, fr: Callable[[Request], Request], fp: Callable[[Request], Request] | None = None) -> int:
        """Tokens of ``r`` that would be shared with ``p`` if both were transformed: the drop in
        ``r``'s unshared tokens (the transform may change lengths, so compare what is left)."""
        a = tokens_of(pair.ctx, fr(pair.r))
        b = tokens_of(pair.ctx, (fp or fr)(pair.p))
        unshared_now = pair.rp.n_tokens - pair.d
        unshared_cf = len(a) // 4 - common_prefix(a, b)
        return max(0, unshared_now - unshared_cf)

    def _report_lost(self, step: Step, pair: Pair, lost: int) -> tuple[int, Decimal | None]:
        """The content gap of a located cause: the request would share ``pair.d + lost`` tokens
        with its predecessor without the cause; what that adds to the ideal cache's read (the
        longest prefix shared with any earlier request as logged) is the cause's, valued as
        cache reads at the request's prices."""
        o = step.outcome
        # (the request undone may be longer than as logged: a template that dropped content)
        self._cf = (min(max(o.prompt_tokens, pair.pp.n_tokens), pair.d + lost), pair.p.arrival)
        gained = max(0, self._cf[0] - o.shared_prefix_tokens)
        return gained, self._value(step, gained)

    def _value(self, step: Step, tokens: int) -> Decimal | None:
        """What ``tokens`` more cache reads would save this request (plain input price minus
        the cache-read price), or ``None`` when the model has no price."""
        rates = self._rates(step)
        if rates is None:
            return None
        if tokens <= 0:
            return Decimal(0)
        n = step.outcome.prompt_tokens
        return rates.cost(n, 0, 0, 0, False) - rates.cost(n, tokens, 0, 0, False)

    def _where(self, pair: Pair, char: int | None) -> tuple[str, int | None]:
        seg = pair.rp.segments[pair.i]
        if char is None:
            return seg.path, None
        return seg.locate(char)

    def _parameter(self, step: Step, pair: Pair, in_tail: bool) -> bool:
        seg = pair.rp.segments[pair.i]
        if seg.kind != "param":
            return False
        changed = sorted(k for k in set(pair.r.params) | set(pair.p.params) if pair.r.params.get(k) != pair.p.params.get(k))
        for rule in self.by_kind.get("parameter-diff", ()):
            keys = [k for k in changed if k in (rule.options.get("params") or ())]
            if not keys:
                continue
            lost = self._cf_lost(pair, lambda q: replace(q, params=dict(pair.p.params)), lambda q: q)
            gained, cost = self._report_lost(step, pair, lost)
            k = keys[0]
            self._add(step, rule, (k,), segment="<params>", char=None, token=pair.d,
                      evidence={"param": k, "before": json.dumps(pair.p.params.get(k)), "after": json.dumps(pair.r.params.get(k))},
                      lost=gained, cost=cost, param=k)
            return True
        return False

    def _structure(self, step: Step, pair: Pair, in_tail: bool) -> bool:
        r, p = pair.r, pair.p
        seg = pair.rp.segments[pair.i]
        rules = self._structural
        where_path, where_off = self._where(pair, pair.c)
        part_r = next((x for x in r.parts if x.path == where_path), None)
        part_p = None if part_r is None else next((x for x in p.parts if x.path == part_r.path), None)
        seg_p = pair.pp.segments[pair.j]
        # a break before the conversation (tools, system, parameters) is not in its history
        in_history = not in_tail and pair.i >= _conversation_start(pair.rp)
        if "history-part-removed" in rules and in_history and self._part_removed(step, pair, rules["history-part-removed"]):
            return True
        if "rendered" in rules and not in_tail and part_r is not None and part_p is not None \
                and part_r.text == part_p.text and seg.text != seg_p.text:
            # the request holds the same content, the chat template renders it otherwise
            c = pair.c or 0
            lost = max(0, pair.pp.n_tokens - pair.d)
            gained, cost = self._report_lost(step, pair, lost)
            self._add(step, rules["rendered"], (where_path,), segment=where_path, char=where_off, token=pair.d,
                      evidence=Evidence({"before": Excerpt.around(seg_p.text, c, c + 1),
                                         "after": Excerpt.around(seg.text, c, c + 1)}, self.show),
                      lost=gained, cost=cost)
            return True
        if seg.kind == "tool" and not in_tail:
            # tools: same set in another order, or a different set
            tools_r = [x for x in r.parts if x.kind == "tool"]
            tools_p = [x for x in p.parts if x.kind == "tool"]
            if "tools-order" in rules and sorted(t.text for t in tools_r) == sorted(t.text for t in tools_p):
                def srt(q: Request) -> Request:
                    tools = sorted((x for x in q.parts if x.kind == "tool"), key=_tool_name)
                    it = iter(tools)
                    return replace(q, parts=tuple(next(it) if x.kind == "tool" else x for x in q.parts))
                return self._emit_structure(step, pair, rules["tools-order"], srt, None,
                                            {"before": ", ".join(_tool_name(t) for t in tools_p),
                                             "after": ", ".join(_tool_name(t) for t in tools_r)})
            names_r, names_p = {_tool_name(t) for t in tools_r}, {_tool_name(t) for t in tools_p}
            if names_r != names_p and "tools-set" in rules:
                added, removed = sorted(names_r - names_p), sorted(names_p - names_r)
                def same_tools(q: Request) -> Request:
                    rest = [x for x in q.parts if x.kind != "tool"]
                    return replace(q, parts=tuple(tools_p) + tuple(rest))
                return self._emit_structure(step, pair, rules["tools-set"], same_tools, lambda q: q,
                                            {"added": ", ".join(added) or "-", "removed": ", ".join(removed) or "-"})
        if part_r is not None and part_p is not None and part_r.text != part_p.text and not in_tail \
                and "attachment" in rules and {part_r.kind, part_p.kind} & {"image", "document"} \
                and (part_r.kind != part_p.kind or part_r.kind in ("image", "document")):
            # an attachment replaced by a text pointer (or back), or the same place re-encoded
            kind = "replaced" if part_r.kind != part_p.kind else "re-encoded"
            path = part_r.path
            keep = part_p

            def as_before(q: Request) -> Request:
                return replace(q, parts=tuple(keep if x.path == path else x for x in q.parts))
            return self._emit_structure(step, pair, rules["attachment"], as_before, lambda q: q,
                                        {"change": kind, "before": part_p.kind, "after": part_r.kind}, char=0)
        if part_r is not None and part_p is not None and part_r.text != part_p.text:
            # the cheap tests first: canonical_json parses the whole text
            if not in_tail and "json-key-order" in rules and part_r.text.lstrip()[:1] in "{[" \
                    and deep_canonical_json(part_r.text) == deep_canonical_json(part_p.text):
                canon = lambda q: _with_parts(q, lambda x: replace(x, text=deep_canonical_json(x.text)) if x.text.lstrip()[:1] in "{[" else x)
                return self._emit_structure(step, pair, rules["json-key-order"], canon, None, self._texts(pair, part_r, part_p))
            f = _first_difference(part_r.text, part_p.text, max(0, (where_off or 0) - 2))
            near = part_r.text[f:f + 1] + part_p.text[f:f + 1]
            if not in_tail and "whitespace" in rules and (not near.strip() or not near.isascii()) \
                    and normalize_whitespace(part_r.text) == normalize_whitespace(part_p.text):
                norm = lambda q: _with_parts(q, lambda x: replace(x, text=normalize_whitespace(x.text)))
                return self._emit_structure(step, pair, rules["whitespace"], norm, None, self._texts(pair, part_r, part_p))
            near_break = part_r.text[:(where_off or 0) + 64]
            (pre_r, docs_r), (pre_p, docs_p) = (documents(part_r.text), documents(part_p.text)) \
                if looks_like_documents(near_break) else (("", []), ("", []))
            if len(docs_r) >= 2 and len(docs_r) == len(docs_p) and docs_r != docs_p and sorted(docs_r) == sorted(docs_p) and pre_r == pre_p \
                    and "documents-order" in rules:
                path = part_r.path

                def stable(q: Request) -> Request:
                    return _with_parts(q, lambda x: replace(x, text=stable_documents(x.text)) if x.path == path else x)
                k = next(n for n, (a, b) in enumerate(zip(docs_r, docs_p)) if a != b)
                start = len(pre_r) + sum(len(x) for x in docs_r[:k])  # the first document out of place
                return self._emit_structure(step, pair, rules["documents-order"], stable, None,
                                            {"documents": len(docs_r), "first_moved": k + 1}, char=start)
            # items (lines) of a list in another order: memories, retrieved notes, bullet lists, or
            # a list inside a JSON string (a tool description's agents, escaped ``\n``)
            if not in_tail and "items-order" in rules:
                got = _permuted_items(part_r.text, part_p.text)
                if got is not None:
                    text_r, text_p, a, n_items, at = got
                    # every part whose only change is a list in another order goes back to the
                    # predecessor's order: undoing one list of two restores nothing
                    mine = {x.path: x.text for x in p.parts}
                    same = {x.path: mine[x.path] for x in r.parts
                            if x.path in mine and x.text != mine[x.path] and x.kind not in ("tool_result",)
                            and (x.path == part_r.path or _permuted_items(x.text, mine[x.path]) is not None)}

                    def same_order(q: Request) -> Request:
                        return _with_parts(q, lambda x: replace(x, text=same[x.path]) if x.path in same else x)
                    # the run starts at the first item out of place: quote its start on both sides
                    ev = {"items": n_items, "before": _item(text_p, a), "after": _item(text_r, a)}
                    if len(same) > 1:
                        ev["lists_reordered"] = len(same)
                    return self._emit_structure(step, pair, rules["items-order"], same_order, lambda q: q,
                                                Evidence(ev, self.show), char=at)
        return in_history and self._history(step, pair, where_path)

    def _part_removed(self, step: Step, pair: Pair, rule: Rule) -> bool:
        """A content part taken out of an earlier message: the first message of the conversation
        that differs holds the predecessor's parts less some, in order (Cline, Roo Code and Kilo
        Code send ``<environment_details>`` with the newest user turn only and strip it from
        that turn when the next one starts). Everything the predecessor would have served from
        the removed part on is sent again; the message's other parts are byte-identical, so the
        request is the same in what it keeps, not rendered otherwise."""
        r, p = pair.r, pair.p
        cr, cp = _conversation(r), _conversation(p)
        k = next((n for n, (x, y) in enumerate(zip(cr, cp)) if x[1:3] != y[1:3]), None)
        if k is None or cr[k][0] != cp[k][0] or cr[k][1] != cp[k][1]:
            return False
        mine = [x for x in r.parts if x.message == cr[k][0]]
        theirs = [x for x in p.parts if x.message == cp[k][0]]
        if len(mine) >= len(theirs) or not mine:
            return False
        it = iter(theirs)
        if not all(any(y.text == x.text for y in it) for x in mine):
            return False  # not the same parts less some
        kept = {id(y) for x in mine for y in theirs if y.text == x.text}
        removed = [y for y in theirs if id(y) not in kept]
        if not removed or any(x.kind in ("tool", "tool_call", "param") for x in removed):
            return False
        gone = removed[0]
        lost = max(0, pair.pp.n_tokens - pair.d)
        gained, cost = self._report_lost(step, pair, lost)
        self._add(step, rule, ("part-removed",), segment=gone.path, char=None, token=pair.d,
                  evidence=Evidence({"message": cp[k][0], "role": cp[k][1], "part": gone.path,
                                     "parts_removed": len(removed), "before": _item(gone.text, 0)}, self.show),
                  lost=gained, cost=cost)
        return True

    def _history(self, step: Step, pair: Pair, where: str) -> bool:
        """Rewrites inside the conversation history, against the predecessor's: the window's
        front dropped (a sliding window), a message rewritten in place (old tool results
        cleared), a message inserted before messages that were stable (a summary), an assistant
        turn replayed otherwise than the model returned it. Each costs what the predecessor
        would have served after the divergence had the history been append-only."""
        rules = self._structural
        cr, cp = _conversation(pair.r), _conversation(pair.p)
        if not cr or not cp:
            return False
        k = next((n for n, (x, y) in enumerate(zip(cr, cp)) if x[1:3] != y[1:3]), None)
        if k is None:
            return False
        if k == 0 and "history-front" in rules:
            # a window whose front moved: the request opens with a later message of the
            # predecessor, or with a summary (a new first message) followed by one
            for drop, lead in itertools.product(range(1, len(cp)), (0, 1)):
                m = 0
                while lead + m < len(cr) and drop + m < len(cp) and cr[lead + m][1:3] == cp[drop + m][1:3]:
                    m += 1
                if m >= min(2, len(cp) - drop):
                    last_msg = cp[drop + m - 1][0]
                    end = max((e for sg, e in zip(pair.pp.segments, pair.pp.seg_ends) if sg.message == last_msg),
                              default=pair.d)
                    gained, cost = self._report_lost(step, pair, max(0, end - pair.d))
                    self._add(step, rules["history-front"], ("history",), segment=where, char=None, token=pair.d,
                              evidence={"dropped_messages": drop, "kept_messages": m, "summary_in_front": bool(lead)},
                              lost=gained, cost=cost)
                    return True
        if "history-insert" in rules and len(cr) > len(cp) - 0 and k < len(cp) and [x[1:3] for x in cr[k + 1:k + 1 + len(cp) - k]] == [y[1:3] for y in cp[k:]] \
                and len(cp) - k >= 1:
            lost = max(0, pair.pp.n_tokens - pair.d)
            gained, cost = self._report_lost(step, pair, lost)
            self._add(step, rules["history-insert"], ("insert",), segment=cr[k][3], char=None, token=pair.d,
                      evidence={"inserted_at_message": cr[k][0], "stable_messages_after": len(cp) - k,
                                "inserted": Excerpt.around(_text(cr[k]), 0, min(len(_text(cr[k])), 40), 0)}, lost=gained, cost=cost)
            return True
        if "history-rewrite" in rules and len(cr) >= len(cp) and k + 1 < len(cp) \
                and [x[1:3] for x in cr[k + 1:len(cp)]] == [y[1:3] for y in cp[k + 1:]] and cr[k][1] == cp[k][1]:
            # one message changed in place, everything after it as it was
            lost = max(0, pair.pp.n_tokens - pair.d)
            gained, cost = self._report_lost(step, pair, lost)
            self._add(step, rules["history-rewrite"], ("rewrite",), segment=cr[k][3], char=None, token=pair.d,
                      evidence={"message": cr[k][0], "role": cr[k][1], "chars_before": len(_text(cp[k])),
                                "chars_after": len(_text(cr[k]))}, lost=gained, cost=cost)
            return True
        return False

    def _replay(self, step: Step, prev: tuple[Request, Prompt, _Context | None] | None) -> None:
        """The predecessor's answer as the model returned it (its logged response), sent back
        otherwise in this request. An engine keeps the KV of what it generated (vLLM, SGLang,
        llama.cpp), so the returned tokens from the first changed character on are computed
        again; a provider caches prompts only, so there it costs nothing and is not reported."""
        rule = self._structural.get("replay")
        if rule is None or prev is None or step.context is None or step.rules.kind != "engine":
            return
        p = prev[0]
        resp = p.response
        if resp is None or not resp.parts:
            return
        cp, cr = _conversation(p), _conversation(step.request)
        k = len(cp)
        if len(cr) <= k or cr[k][1] != "assistant" or [x[1:3] for x in cr[:k]] != [y[1:3] for y in cp]:
            return
        returned = "\x00".join(x.text for x in resp.parts)
        replayed = _text(cr[k])
        if replayed == returned:
            return
        f = _first_difference(replayed, returned)
        lost = len(step.context.memo.encode([returned[f:].replace("\x00", "")])[0]) // 4  # uint32 token bytes
        if lost <= 0:
            return
        self._add(step, rule, ("replay",), segment=cr[k][3], char=f, token=None,
                  evidence=Evidence({"returned": Excerpt.around(returned.replace("\x00", "⏎"), f, f + 1),
                                     "replayed": Excerpt.around(replayed.replace("\x00", "⏎"), f, f + 1),
                                     "kind": _drift_kind(returned, replayed)}, self.show),
                  lost=lost, cost=self._value(step, lost), kind=_drift_kind(returned, replayed))

    def _texts(self, pair: Pair, part_r: Part, part_p: Part) -> Evidence:
        c = pair.c or 0
        _, off = self._where(pair, c)
        off = off or 0
        return Evidence({"before": Excerpt.around(part_p.text, off, off + 1),
                         "after": Excerpt.around(part_r.text, off, off + 1)}, self.show)

    def _emit_structure(self, step: Step, pair: Pair, rule: Rule, fr: Callable[[Request], Request],
                        fp: Callable[[Request], Request] | None, evidence: dict[str, Any] | Evidence, char: int | None = None) -> bool:
        lost = self._cf_lost(pair, fr, fp)
        gained, cost = self._report_lost(step, pair, lost)
        path, off = self._where(pair, pair.c)
        if char is not None:
            off = char
        self._add(step, rule, (path,), segment=path, char=off, token=pair.d, evidence=evidence, lost=gained, cost=cost)
        return True

    def _values(self, step: Step, pair: Pair, in_tail: bool) -> bool:
        if in_tail or pair.c is None or not self._value_rules:
            return False
        seg_r = pair.rp.segments[pair.i]
        seg_p = pair.pp.segments[pair.j]
        if seg_r.path != seg_p.path and pair.j > 0 and pair.pp.segments[pair.j - 1].path == seg_r.path:
            seg_p = pair.pp.segments[pair.j - 1]  # p's segment ended where r's goes on (lines added)
        if seg_r.path != seg_p.path:
            return False
        tr, tp, c = seg_r.text, seg_p.text, pair.c
        # a break on the whitespace just before a value counts: tokens carry their leading space
        while c < len(tr) and c < len(tp) and tr[c] == tp[c] and tr[c].isspace():
            c += 1
        for rule, pats, numeric, min_lost, snapshot in self._value_rules:
            hit = self._match_value(pats, numeric, tr, tp, c)
            if hit is None and snapshot:
                hit = self._match_snapshot(pats, tr, tp, c)
            if hit is None:
                continue
            start, end_r, end_p = hit
            path, off = seg_r.locate(start)
            lost = self._resync_lost(pair)
            if lost < min_lost:
                continue
            gained, cost = self._report_lost(step, pair, lost)
            ev = Evidence({"before": Excerpt.around(tp, start, end_p), "after": Excerpt.around(tr, start, end_r),
                           "value": Excerpt.value(tr, start, end_r)}, self.show)
            self._add(step, rule, (path,), segment=path, char=off, token=pair.d, evidence=ev, lost=gained, cost=cost)
            return True
        return False

    @staticmethod
    def _match_value(pats: Sequence[tuple[re.Pattern[str], bool]], numeric: bool, tr: str, tp: str, c: int
                     ) -> tuple[int, int, int] | None:
        """(start, end in r, end in p) of a pattern match covering the break at ``c`` (``pats``:
        each regex and whether it has a ``value`` group) whose value differs in ``p`` (and, with
        ``numeric``, grew)."""
        lo = max(0, c - 80)
        hi = min(len(tr), c + 100)
        for pat, has_value in pats:
            for m in pat.finditer(tr, lo, hi):
                ms, me = m.span()
                s, e = m.span("value") if has_value else (ms, me)
                if not numeric and c <= ms and tr.rfind("\n", 0, ms) + 1 == c and _inserted_line(tr, tp, c, me):
                    return s, e, c  # a line holding the value added where p goes on with what follows it
                if not (ms <= c <= me and (s <= c <= e or ms <= c <= s)):
                    continue
                mp = pat.match(tp, ms)
                if mp is None:
                    continue
                sp, ep = mp.span("value") if has_value else mp.span()
                if numeric:
                    try:
                        if int(re.sub(r"\D", "", tr[s:e])) <= int(re.sub(r"\D", "", tp[sp:ep])):
                            continue
                    except ValueError:
                        continue
                if tr[s:e] == tp[sp:ep]:
                    continue
                return s, e, ep
        return None

    @staticmethod
    def _match_snapshot(pats: Sequence[tuple[re.Pattern[str], bool]], tr: str, tp: str, c: int
                        ) -> tuple[int, int, int] | None:
        """(start, end in r, end in p) of a snapshot line (a pattern match) in ``tr`` at the
        break ``c`` (covering it, or starting on the line after it) where ``tp``'s side is a
        snapshot line too, or ends there: lines of a listing added, removed or changed (a
        ``git status``, a directory listing)."""
        lo, hi = max(0, c - 200), min(len(tr), c + 200)
        for pat, _ in pats:
            for m in pat.finditer(tr, max(0, c - 80), hi):
                ms, me = m.span()
                if ms > c + 1 or me < c:
                    continue
                near = c >= len(tp) - 1 or any(mm.start() <= c + 1 and mm.end() >= c - 1
                                               for mm in pat.finditer(tp, max(0, c - 200), min(len(tp), c + 200)))
                if near:
                    end_p = next((mm.end() for mm in pat.finditer(tp, max(0, ms - 1), min(len(tp), c + 200))), min(len(tp), c))
                    return ms, me, end_p
        del lo
        return None

    def _fallback(self, step: Step, pair: Pair) -> None:
        rule = self._fallback_rule
        if rule is None:
            return
        path, off = self._where(pair, pair.c)
        part_p = next((x for x in pair.p.parts if x.path == path), None)
        part_r = next((x for x in pair.r.parts if x.path == path), None)
        if part_p is None or part_r is None:
            return
        lost = self._segment_lost(pair)
        if lost <= 0:
            return
        gained, cost = self._report_lost(step, pair, lost)
        self._add(step, rule, (path,), segment=path, char=off, token=pair.d,
                  evidence=self._texts(pair, part_r, part_p), lost=gained, cost=cost)

    @staticmethod
    def _stop(pair: Pair) -> int:
        """Token of ``r`` where what it adds begins (its newest turn, or for a template family
        its conversation): a loss counts the tokens the predecessor would serve up to there."""
        return pair.rp.seg_ends[pair.tail - 1] if 0 < pair.tail <= len(pair.rp.seg_ends) else pair.rp.n_tokens

    @classmethod
    def _segment_lost(cls, pair: Pair) -> int:
        """Tokens ``r`` would share with ``p`` if the segment where they part were the same in
        both: the rest of that segment, then what follows it, re-aligned past any further change
        before the newest turn (:meth:`_resync`): two changes, undone one at a time, each restore
        nothing, and the loss goes to the first, in full."""
        end_r, end_p = pair.rp.seg_ends[pair.i], pair.pp.seg_ends[pair.j]
        return (end_r - pair.d) + cls._resync(pair, end_r, end_p)

    @classmethod
    def _resync_lost(cls, pair: Pair) -> int:
        """Tokens ``r`` would share with ``p`` if the values that differ where they part (and
        any further difference before the newest turn) were the same: :meth:`_resync` from the
        break."""
        return cls._resync(pair, pair.d, pair.d)

    @classmethod
    def _resync(cls, pair: Pair, pos_r: int, pos_p: int, window: int = 48, k: int = 4, skips: int = 8) -> int:
        """Tokens shared from ``pos_r`` in ``r`` and ``pos_p`` in ``p`` once the token streams are
        re-aligned after each difference (BPE re-synchronises within a few tokens once the texts
        agree again; at most ``skips`` differences, each within ``window`` tokens), counting the
        common runs up to where ``r``'s newest turn begins (:meth:`_stop`): a change after the
        first one in the stable content does not end the loss (with it undone too, the
        predecessor serves on)."""
        ru, pu = pair.rp.units, pair.pp.units
        stop = max(cls._stop(pair), pair.rp.seg_ends[pair.i])
        shared = 0
        for _ in range(skips):
            if pos_r >= stop:  # in what the request adds: shared only while both agree
                return shared + common_prefix(ru, pu, 4, pos_r * 4, pos_p * 4)
            # the first k-gram of r's next ``window`` tokens that p's next ``window`` tokens
            # hold, at the first place p holds it
            lo_p = pos_p * 4
            hi_p = min(len(pu), (pos_p + window - 1 + k) * 4)
            hit = None
            for a in range(window):
                g = ru[(pos_r + a) * 4:(pos_r + a + k) * 4]
                if len(g) < k * 4:
                    break
                at = pu.find(g, lo_p, hi_p)
                while at >= 0 and (at - lo_p) & 3:  # only whole tokens
                    at = pu.find(g, at + 1, hi_p)
                if at >= 0:
                    hit = (a, (at - lo_p) >> 2)
                    break
            if hit is None:
                break
            run = common_prefix(ru, pu, 4, (pos_r + hit[0]) * 4, (pos_p + hit[1]) * 4)
            shared += hit[1] + run  # with p's value in r, its tokens are shared too (counted as p's)
            pos_r += hit[0] + run
            pos_p += hit[1] + run
            if pos_r * 4 >= len(ru) or pos_p * 4 >= len(pu):
                break
        return shared

    # ------------------------------------------------------------------ the rules gap

    def _rules_gap(self, step: Step, writer: tuple[Request, Prompt, _Context | None] | None,
                   content: Candidate | None = None, cf: tuple[int, float | None] | None = None,
                   pred: Prompt | None = None) -> None:
        """Claim the request's whole rules gap (ideal read minus simulated read) for one cause:
        the minimum, the TTL, eviction, granularity, a cache key, a breakpoint placement; what
        none explains is ``unexplained``, with the simulation's miss reason.

        Where a located content cause (``content``, sharing ``cf[0]`` tokens with a predecessor
        that arrived at ``cf[1]``) made the request depend on an older request whose entry
        expired, was evicted or sits under another key, while its own predecessor's is live,
        the content cause also claims that part: undone, it would have been read from the
        predecessor. Likewise under breakpoints where the older request wrote no entry inside what
        it shares and the predecessor (``pred``, the prompt the cause was located against) has one
        within what the request would share with it undone: a tool_choice switched on side
        requests makes each read from the previous side request, not the main turn before it."""
        o, rules = step.outcome, step.rules
        gap = o.shared_prefix_tokens - o.cached_tokens
        served = cf[0] if cf is not None else 0
        if pred is not None and cf is not None and rules.mode == "breakpoints" \
                and o.miss_reason in ("after_last_breakpoint", "lookback") and writer is not None and writer[1] is not pred \
                and content is not None and content.token_index is not None and o.shared_prefix_tokens > content.token_index:
            # an older request shares more than the predecessor as logged (past the break): the
            # change sent the request to it; undone, it reads the predecessor's last entry within
            # what the two would share
            served = max((e for sg, e in zip(pred.segments, pred.seg_ends) if sg.breakpoint is not None and e <= cf[0]),
                         default=0)
        elif o.miss_reason in ("after_last_breakpoint", "lookback"):
            served = 0  # it shares no more with the older request: the breakpoints' placement is the cause
        if content is not None and cf is not None and gap > 0 and served > o.cached_tokens \
                and o.miss_reason in ("expired", "evicted", "namespace", "after_last_breakpoint", "lookback"):
            live = rules.ttl_seconds is None or step.request.arrival is None or cf[1] is None \
                or step.request.arrival - cf[1] <= rules.ttl_seconds
            if live and o.miss_reason != "evicted":
                claim = min(o.shared_prefix_tokens, served) - o.cached_tokens
                if claim > 0:
                    self._buf.append(Candidate(content.rule, content.key, o.index, o.path, o.line, content.segment,
                                               content.char_offset, content.token_index, content.evidence, claim,
                                               self._money(step, o.cached_tokens, o.cached_tokens + claim),
                                               content.values, "rules"))
                    gap -= claim
                    if gap <= 0:
                        return
                    o_cached = o.cached_tokens + claim
                    cost = self._money(step, o_cached, o.shared_prefix_tokens)
                    got = self._mechanics(step, writer, o.miss_reason)
                    if got is not None:
                        rule, key, segment, token, evidence, values = got
                        self._add(step, rule, key, segment=segment, char=None, token=token, evidence=evidence,
                                  lost=gap, cost=cost, gap="rules", **values)
                        return
        if "breakpoints_over_limit" in o.flags and "too-many" in self._bp:
            n = sum(1 for s in step.prompt.segments if s.breakpoint is not None)
            self._add(step, self._bp["too-many"], ("too-many",), segment=None, char=None, token=None,
                      evidence={"breakpoints": n, "limit": rules.max_breakpoints}, lost=0, cost=None, gap=None,
                      breakpoints=n)
        if gap <= 0:
            return
        cost = self._money(step, o.cached_tokens, o.shared_prefix_tokens)
        reason = o.miss_reason
        got = self._mechanics(step, writer, reason)
        if got is None:
            self._add(step, UNEXPLAINED, ("rules",), segment=None, char=None, token=None,
                      evidence={"miss_reason": reason or "none", "ideal_tokens": o.shared_prefix_tokens,
                                "simulated_tokens": o.cached_tokens}, lost=gap, cost=cost, gap="rules",
                      reason=reason or "none")
            return
        rule, key, segment, token, evidence, values = got
        if rule.kind == "breakpoint" and rule.options.get("check") == "outside":
            cost = None if cost is None else Decimal(0)  # the reported usage disproves the loss
        self._add(step, rule, key, segment=segment, char=None, token=token, evidence=evidence, lost=gap, cost=cost,
                  gap="rules", **values)

    def _mechanics(self, step: Step, writer: tuple[Request, Prompt, _Context | None] | None, reason: str | None
                   ) -> tuple[Rule, tuple[Any, ...], str | None, int | None, dict[str, Any], dict[str, Any]] | None:
        """``(rule, key, segment, token, evidence, message values)`` of the mechanics cause of
        a rules gap, or ``None``."""
        o, rules, rp = step.outcome, step.rules, step.prompt
        ns = o.namespace
        if reason == "below_min":
            rule = self._first("length-threshold", "check", "minimum") or self._first("length-threshold", "target", "prompt")
            if rule is not None:
                return rule, (ns,), None, None, {"min_tokens": rules.min_tokens, "shared_tokens": o.shared_prefix_tokens,
                                                  "model": o.model or "-"}, \
                    {"min_tokens": rules.min_tokens, "model": o.model or "-"}
        if reason == "expired":
            rule = self._first("timing", "check", "expired")
            if rule is not None:
                longer = rules.longer_lifetimes()  # what this model offers (rules/providers/<id>.yaml)
                return rule, (ns,), None, None, {"ttl_seconds": rules.ttl_seconds, "namespace": ns,
                                                  "longer_lifetimes": [n for n, _, _ in longer]}, \
                    {"ttl": int(rules.ttl_seconds or 0), "longer": _longer(longer, o.model)}
        if reason == "evicted":
            rule = self._first("capacity", "check", "single-slot" if rules.eviction == "slot" else "evicted")
            if rule is not None:
                return rule, (ns,), None, None, {"capacity_tokens": rules.capacity_tokens, "namespace": ns}, \
                    {"capacity": f"{rules.capacity_tokens:,}" if rules.capacity_tokens else "-"}
        if reason == "granularity":
            rule = self._first("length-threshold", "check", "granularity")
            if rule is not None:
                return rule, (ns,), None, None, {"granularity_tokens": rules.granularity, "namespace": ns}, \
                    {"granularity": rules.granularity}
        if reason == "no_unit":  # DeepSeek: no persisted cache prefix unit covers the shared tokens yet
            rule = self._first("length-threshold", "check", "unit")
            if rule is not None:
                return rule, (ns,), None, None, {"cached_tokens": o.cached_tokens, "shared_tokens": o.shared_prefix_tokens,
                                                  "namespace": ns}, {}
        if reason == "namespace":
            moved = self._routed(step, writer)
            if moved is not None:
                return moved
            rule = self._first("key-usage", "check", "unique")
            r_key = step.request.cache_key
            w_key = writer[0].cache_key if writer is not None else r_key
            if rule is None or (r_key == w_key and (writer is not None or r_key is None)):
                # the same cache key (or none) on both sides: a field the provider partitions by, or
                # None where no cache key, route or partition field the log shows tells them apart
                return self._partition(step, writer)
            return rule, (f"{o.provider}/{o.model or '-'}",), None, None, \
                Evidence({"cache_key": identifier("cache_key", step.request.cache_key),
                          "namespace": f"{o.provider}/{o.model or '-'}"}, self.show), {}
        if rules.mode == "breakpoints" and rp.segments:
            return self._breakpoint_cause(step, writer, reason)
        return None

    def _routed(self, step: Step, writer: tuple[Request, Prompt, _Context | None] | None
                ) -> tuple[Rule, tuple[Any, ...], str | None, int | None, dict[str, Any], dict[str, Any]] | None:
        """The routing cause of a namespace miss: the request that holds the shared prefix
        (``writer``) was served by another upstream, or under another rules file, than this one
        (a router or gateway moved the model's traffic; each upstream keeps its own cache), or
        ``None`` when both went the same way (a cache key or an identifier keeps them apart)."""
        rule = self._first("routing", "check", "upstream")
        if rule is None or writer is None:
            return None
        w, _, wctx = writer
        r, o = step.request, step.outcome
        up_r = r.response.upstream if r.response is not None else None
        up_w = w.response.upstream if w.response is not None else None
        file_r = step.context.pf.id if step.context is not None else o.provider
        file_w = wctx.pf.id if wctx is not None else None
        if (up_r, file_r) == (up_w, file_w):
            return None
        before, after = up_w or file_w or "-", up_r or file_r
        if before == after:  # one upstream name under two rules files: name the files
            before, after = f"{before} ({file_w})", f"{after} ({file_r})"
        model = o.model or "-"
        return rule, (model,), None, None, {"model": model, "before": before, "after": after,
                                           "before_rules": file_w, "after_rules": file_r}, \
            {"model": model, "before": before, "after": after}

    def _partition(self, step: Step, writer: tuple[Request, Prompt, _Context | None] | None
                   ) -> tuple[Rule, tuple[Any, ...], str | None, int | None, Evidence, dict[str, Any]] | None:
        """The partition cause of a namespace miss: the request that holds the shared prefix
        (``writer``) differs from this one in a field other than the cache key that the
        provider keeps separate caches by (its rules file's ``namespace``: ``service_tier``, an
        ``affinity:`` routing identifier such as xAI's ``x-grok-conv-id``), or ``None``."""
        rule = self._first("routing", "check", "partition")
        if rule is None or writer is None or step.context is None:
            return None
        pf = step.context.pf
        for (name, now), (_, before) in zip(pf.partitions(step.request), pf.partitions(writer[0])):
            if now != before:
                if name == "service_tier":
                    shown_now, shown_before = now or "default", before or "default"
                else:
                    shown_now, shown_before = identifier(name, now) or "none", identifier(name, before) or "none"
                model = step.outcome.model or "-"
                return rule, (model, name), None, None, \
                    Evidence({"field": name, "before": shown_before, "after": shown_now, "model": model,
                              "provider": pf.id}, self.show), {"field": name, "model": model, "provider": pf.id}
        return None

    def _breakpoint_cause(self, step: Step, writer: tuple[Request, Prompt, _Context | None] | None,
                          reason: str | None) -> tuple[Rule, tuple[Any, ...], str | None, int | None, dict[str, Any], dict[str, Any]] | None:
        """Why a breakpoint cache reads less than the ideal one, from this request's breakpoints
        and those of the request that wrote what it shares (``writer``)."""
        o, rules, rp = step.outcome, step.rules, step.prompt
        bp = self._bp
        marks = [k for k, s in enumerate(rp.segments) if s.breakpoint is not None]
        if not marks:
            u = o.usage  # as read (a double-counted input count corrected: ingest.usage.counted_twice)
            if u is not None and u.cache_read_tokens > 0 and "outside" in bp:
                # the bill shows reads the logged body cannot: breakpoints were added after logging
                ratio = f"{u.cache_read_tokens / u.input_tokens:.1%}" if u.input_tokens else "-"
                return bp["outside"], ("outside", o.namespace), None, None, \
                    {"shared_tokens": o.shared_prefix_tokens, "namespace": o.namespace,
                     "reported_cached_tokens": u.cache_read_tokens, "reported_input_tokens": u.input_tokens}, \
                    {"reported_cached": f"{u.cache_read_tokens:,}", "reported_input": f"{u.input_tokens:,}",
                     "reported_ratio": ratio}
            if "missing" in bp:
                return bp["missing"], ("missing", o.namespace), None, None, \
                    {"shared_tokens": o.shared_prefix_tokens, "namespace": o.namespace}, {}
            return None
        shared = o.shared_prefix_tokens
        # the only breakpoint before the end of the shared prefix sits on a block that changed
        i = _segment_index(rp, shared) if shared < rp.n_tokens else len(rp.segments) - 1
        first = marks[0]
        if "volatile-block" in bp and first == i and shared >= rules.min_tokens:
            seg = rp.segments[i]
            return bp["volatile-block"], (seg.path,), seg.path, shared, \
                {"block": seg.path, "stable_tokens_before": shared}, {}
        if writer is None:
            return None
        wp = writer[1]
        w_ends = [wp.seg_ends[k] for k, s in enumerate(wp.segments) if s.breakpoint is not None]
        r_ends = {rp.seg_ends[k] for k in marks}
        if reason == "lookback" and "lookback" in bp:
            # an entry the writer left inside the shared prefix is more blocks back than a read looks
            return bp["lookback"], ("lookback",), None, None, {"lookback_blocks": rules.lookback}, {}
        moved = [e for e in w_ends if o.cached_tokens < e <= shared and e not in r_ends and e >= rules.min_tokens]
        if moved and "moved" in bp:
            pos = max(moved)
            seg = wp.segments[_segment_index(wp, pos - 1)].path
            return bp["moved"], ("moved",), seg, pos, {"previous_breakpoint_token": pos}, {}
        last_w = max(w_ends, default=0)
        # where the writer's own content ends (before its generation prompt)
        w_end = wp.seg_ends[-2] if len(wp.segments) >= 2 and wp.segments[-1].kind == "frame" else wp.seg_ends[-1]
        if w_ends and last_w >= min(w_end, shared):
            # only the chat framing after the writer's last block is shared past it
            rule = self._first("length-threshold", "check", "granularity")
            if rule is not None:
                return rule, (o.namespace,), None, None, {"granularity_tokens": 0, "namespace": o.namespace}, {"granularity": 0}
            return None
        if last_w < shared:
            # the shared prefix runs past the writer's last breakpoint: that tail was never written
            n_w = len(w_ends)
            if rules.max_breakpoints and n_w >= rules.max_breakpoints and "frozen" in bp:
                seg = wp.segments[_segment_index(wp, last_w - 1)].path if last_w else None
                return bp["frozen"], ("frozen",), seg, last_w, \
                    {"breakpoints": n_w, "limit": rules.max_breakpoints, "last_breakpoint_token": last_w,
                     "uncached_tail_tokens": shared - last_w}, {"breakpoints": n_w}
            last_msg = [s for s in wp.segments if s.message is not None and s.message == wp.segments[-2].message] \
                if len(wp.segments) >= 2 else []
            if last_msg and all(s.kind in ("tool_result", "image", "document") for s in last_msg) \
                    and not any(s.breakpoint for s in last_msg) and "tool-result" in bp:
                path = last_msg[-1].path
                return bp["tool-result"], ("tool-result",), path, last_w, \
                    {"last_message": path, "blocks": len(last_msg), "last_breakpoint_token": last_w}, {}
            if "tail" in bp:
                seg = wp.segments[_segment_index(wp, last_w - 1)].path if last_w else None
                return bp["tail"], ("tail",), seg, last_w, \
                    {"last_breakpoint_token": last_w, "uncached_tail_tokens": shared - last_w}, {}
        return None

    def _latent(self, step: Step, prev: Request | None) -> None:
        """Causes whose tokens another cause already claims, named so the fix list is whole
        (no tokens of their own): a TTL passed since the previous request (when the minimum,
        say, already stops every read), and breakpoints sent to a provider that caches
        implicitly (Gemini; a proxy may turn them into an explicit cache of the marked head)."""
        o, r, rules = step.outcome, step.request, step.rules
        if prev is not None and r.arrival is not None and prev.arrival is not None and rules.ttl_seconds \
                and r.arrival - prev.arrival > rules.ttl_seconds and o.miss_reason not in (None, "expired"):
            rule = self._first("timing", "check", "expired")
            if rule is not None:
                self._add(step, rule, (o.namespace,), segment=None, char=None, token=None,
                          evidence={"ttl_seconds": rules.ttl_seconds, "namespace": o.namespace,
                                    "idle_seconds": round(r.arrival - prev.arrival, 1),
                                    "claimed_by": o.miss_reason}, lost=0, cost=None, gap=None,
                          ttl=int(rules.ttl_seconds), longer=_longer(rules.longer_lifetimes(), o.model))
        if rules.mode == "prefix" and step.prompt.segments and rules.kind == "provider":
            # clients mark the stable head (tools, system) or the newest messages: the first and
            # last few segments, so the check costs the same whatever the history's length
            segs, ends = step.prompt.segments, step.prompt.seg_ends
            n = len(segs)
            near = range(n) if n <= 16 else itertools.chain(range(8), range(n - 8, n))
            marks = [(segs[k].path, ends[k]) for k in near if segs[k].breakpoint is not None]
            rule = self._first("breakpoint", "check", "ignored")
            if marks and rule is not None:
                head = marks[0][1]
                self._add(step, rule, (o.namespace,), segment=marks[0][0], char=None, token=head,
                          evidence={"markers": ", ".join(m[0] for m in marks), "provider": o.provider,
                                    "shared_past_first_marker_tokens": max(0, o.shared_prefix_tokens - head)},
                          lost=0, cost=None, gap=None, provider=o.provider)

    # ------------------------------------------------------------------ the reported gap

    def _reported_gap(self, step: Step, pred: tuple[Request, Prompt, _Context | None] | None) -> None:
        """Claim the request's reported gap (simulated read minus the cache read the log
        reports) for the one explanation its evidence supports, else ``unexplained`` with the
        evidence there is (the model, the prompt's size, whether the request only appends to
        its predecessor: :meth:`_unchanged`)."""
        o, r = step.outcome, step.request
        prev = pred[0] if pred is not None else None
        u = r.usage
        if u is None or not u.cache_reported:  # no cache usage logged: nothing to compare with
            return
        gap = o.cached_tokens - u.cache_read_tokens
        checks = {ru.options.get("check"): ru for ru in self.by_kind.get("reported-usage", ())}
        cost = None
        if gap > 0 and (rates := self._rates(step)) is not None:
            bw = step.rules.bills_writes
            cost = rates.cost(o.prompt_tokens, u.cache_read_tokens, 0, 0, bw) - rates.cost(o.prompt_tokens, o.cached_tokens, 0, 0, bw)
        if r.previous_response_id and "server-chain" in checks and u.input_tokens > o.prompt_tokens:
            # the history is on the server: what the log cannot show, named whatever the gap
            unseen = u.input_tokens - o.prompt_tokens
            self._add(step, checks["server-chain"], (f"{o.provider}/{o.model or '-'}",), segment=None, char=None,
                      token=None, evidence={"previous_response_id": r.previous_response_id,
                                            "logged_prompt_tokens": o.prompt_tokens, "reported_input_tokens": u.input_tokens,
                                            "reported_cached_tokens": u.cache_read_tokens,
                                            "server_side_tokens": unseen},
                      lost=max(0, gap), cost=cost, gap="reported" if gap > 0 else None, unseen=f"{unseen:,}")
            if gap > 0:
                return
        if gap <= 0:
            return
        got = self._reported_cause(step, prev)
        unchanged = self._unchanged(step, pred)
        if got is None and unchanged and u.cache_read_tokens == 0:
            got = self._best_effort(step)
        if got is None:
            self._add(step, UNEXPLAINED, ("reported",), segment=None, char=None, token=None,
                      evidence={"simulated_tokens": o.cached_tokens, "reported_tokens": u.cache_read_tokens,
                                "reported_input_tokens": u.input_tokens}, lost=gap, cost=cost, gap="reported",
                      reason="reported below simulated", model=o.model or "-", prompt_tokens=o.prompt_tokens,
                      prefix_unchanged=unchanged, reported_zero=u.cache_read_tokens == 0)
            return
        rule, key, evidence, values = got
        self._add(step, rule, key, segment=None, char=None, token=None, evidence=evidence, lost=gap, cost=cost,
                  gap="reported", **values)

    def _reported_cause(self, step: Step, prev: Request | None
                        ) -> tuple[Rule, tuple[Any, ...], dict[str, Any] | Evidence, dict[str, Any]] | None:
        r, o = step.request, step.outcome
        checks = {ru.options.get("check"): ru for ru in self.by_kind.get("reported-usage", ())}
        ns = f"{o.provider}/{o.model or '-'}"
        if prev is None:
            return None
        up_r = r.response.upstream if r.response is not None else None
        up_p = prev.response.upstream if prev.response is not None else None
        if up_r and up_p and up_r != up_p and "routing" in checks:
            # one finding per model: its upstreams may be served under several rules files
            return checks["routing"], (o.model or "-",), {"before": up_p, "after": up_r}, {"before": up_p, "after": up_r}
        # the request before it in the same conversation (the same opening, or a session the log
        # names; a session read from a per-request identifier differs each time): identifiers
        # and deployments of two conversations differ by design
        same = (r.session is not None and r.session == prev.session) or _same_conversation(self._head(r), self._head(prev))
        dep_r = r.response.deployment if r.response is not None else None
        dep_p = prev.response.deployment if prev.response is not None else None
        if same and dep_r and dep_p and dep_r != dep_p and "deployment" in checks:
            # a gateway moved the conversation to another deployment (account, endpoint) of the
            # model: each keeps its own cache
            conv = r.session or "-"
            return checks["deployment"], (ns,), {"conversation": conv, "before": dep_p, "after": dep_r,
                                                 "reported_cached_tokens": r.usage.cache_read_tokens if r.usage else None,
                                                 "simulated_tokens": o.cached_tokens}, \
                {"conversation": conv, "before": dep_p, "after": dep_r, "model": o.model or "-"}
        for rule in (checks.get("parameter"), checks.get("reasoning")):
            if rule is None:
                continue
            names = rule.options.get("params") or ()
            changed = [k for k in names if r.params.get(k) != prev.params.get(k)]
            if changed:
                k = changed[0]
                return rule, (k,), {"param": k, "before": json.dumps(prev.params.get(k)), "after": json.dumps(r.params.get(k))}, \
                    {"param": k}
        if "affinity" in checks and same:
            for name in sorted(set(r.affinity) | ({"cache_key"} if r.cache_key else set())):
                now = r.cache_key if name == "cache_key" else r.affinity.get(name)
                before = prev.cache_key if name == "cache_key" else prev.affinity.get(name)
                if now is not None and before is not None and now != before:
                    return checks["affinity"], (ns, name), \
                        Evidence({"identifier": name, "before": identifier(name, before), "after": identifier(name, now)},
                                 self.show), {"identifier": name}
        v = r.response.verdict if r.response is not None else None
        if "verdict" in checks and v is not None and v.kind == "cache_miss" and v.reason:
            # the provider saw a change the logged request does not show (the log's copy would
            # have broken the prefix in the content gap, not left the simulation serving it)
            area = _verdict.REASON_AREA.get((v.source, v.reason))
            change = f"a change in {_verdict.WORDS[area]}" if area in _verdict.WORDS else "a change"
            return checks["verdict"], (ns, v.source, v.reason), \
                {"provider_reason": v.reason, "provider_missed_tokens": v.missed_tokens, "simulated_tokens": o.cached_tokens,
                 "reported_tokens": r.usage.cache_read_tokens if r.usage else None}, {"change": change, "reason": v.reason}
        if "ttl" in checks and r.arrival is not None and prev.arrival is not None:
            idle = r.arrival - prev.arrival
            low = float(checks["ttl"].options.get(f"min_ttl_{o.provider}", checks["ttl"].options.get("min_ttl_seconds", 300)))
            if idle > low:
                return checks["ttl"], (ns,), {"idle_seconds": round(idle, 1), "documented_min_ttl_seconds": low}, \
                    {"idle": int(idle), "min_ttl": int(low), "longer": _longer(step.rules.longer_lifetimes(), o.model)}
        if "no-key" in checks and step.rules.kind == "provider" and r.cache_key is None and not r.affinity \
                and self._routes_by_key(o.provider):
            # nothing tells the provider which cache machine holds the prefix (a session the log
            # groups requests by is not sent to it: only a key or an affinity identifier routes)
            return checks["no-key"], (ns,), {"cache_key": None, "reported_cached_tokens": r.usage.cache_read_tokens if r.usage else None,
                                             "simulated_tokens": o.cached_tokens}, {}
        return None

    @staticmethod
    def _unchanged(step: Step, pred: tuple[Request, Prompt, _Context | None] | None) -> bool:
        """Whether the request only appends to its predecessor: it holds the predecessor's whole
        prompt up to its generation prompt (the chat framing after the last message) as its
        prefix, so nothing in the prompt explains a miss."""
        if pred is None or not comparable(pred[2], step.context):
            return False
        pp = pred[1]
        if not pp.segments:
            return False
        end = pp.seg_ends[-2] if len(pp.segments) >= 2 and pp.segments[-1].kind == "frame" else pp.seg_ends[-1]
        return end > 0 and common_prefix(step.prompt.units, pp.units) >= end

    def _best_effort(self, step: Step) -> tuple[Rule, tuple[Any, ...], dict[str, Any], dict[str, Any]] | None:
        """The documented best-effort implicit cache (``check: best-effort``; ``options.providers``
        the rules files whose provider documents no hit guarantee) for a request that only appends
        to its predecessor and is reported as reading nothing, or ``None``. The size band and the
        guess (``options.known``) are filled over the whole log by :meth:`_finish_best_effort`."""
        rule = self._first("reported-usage", "check", "best-effort")
        o = step.outcome
        if rule is None or step.rules.kind != "provider" or step.rules.mode != "prefix" \
                or o.provider not in (rule.options.get("providers") or ()):
            return None
        model = o.model or "-"
        return rule, (f"{o.provider}/{model}",), {"model": model, "prompt_tokens": o.prompt_tokens,
                                                   "simulated_tokens": o.cached_tokens, "reported_cached_tokens": 0,
                                                   "prefix_unchanged": True}, \
            {"model": model, "prompt_tokens": o.prompt_tokens, "band": f"{o.prompt_tokens:,}", "guess": ""}

    def _finish_best_effort(self) -> None:
        """Per model, the prompt size band of the requests a best-effort cache reported as
        reading nothing (``band``: smallest to largest prompt, tokens), and where a public
        report (``options.known``: model globs, a prompt size range in tokens, what it says and
        where) covers the model and the whole band, that report named as a guess."""
        from fnmatch import fnmatch

        rule = self._first("reported-usage", "check", "best-effort")
        if rule is None:
            return
        groups: dict[tuple[Any, ...], list[Candidate]] = {}
        for c in self.cands:
            if c.rule is rule:
                groups.setdefault(c.key, []).append(c)
        for cs in groups.values():
            sizes = [int(c.values["prompt_tokens"]) for c in cs]
            lo, hi = min(sizes), max(sizes)
            model = str(cs[0].values["model"])
            band = f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"
            guess = ""
            for k in rule.options.get("known") or ():
                if any(fnmatch(model, g) for g in k.get("models") or ()) \
                        and int(k.get("min_prompt_tokens", 0)) <= lo and hi <= int(k.get("max_prompt_tokens", 1 << 62)):
                    guess = f"; a guess, not a documented rule: {k['says']} ({k['reference']})"
                    break
            for c in cs:
                c.values.update(band=band, guess=guess)
                if isinstance(c.evidence, dict):
                    c.evidence.update(prompt_tokens_band=band, guess=guess[2:] if guess else None)

    def _routes_by_key(self, provider: str) -> bool:
        """Whether a provider routes requests to cache machines by a key the request carries
        (its rules file's ``namespace`` names ``cache_key`` or an ``affinity:`` identifier)."""
        pf = self.providers.get(provider)
        return pf is not None and any(n == "cache_key" or n.startswith("affinity:") for n in pf.namespace)

    def _show_verdict(self, cands: Sequence[Candidate], r: Request, verdict: CacheVerdict, p: Request | None) -> None:
        """Put the provider's own cache verdict beside each cause found for the request, and
        whether it names the place of the located cause (:mod:`.verdict`); ``p`` is the request
        the causes were located against."""
        wanted = {c.segment for c in cands if c.segment}
        parts: dict[str, Part] = {}
        for x in r.parts:  # the parts the causes sit in (most sit early: stop once all are found)
            if not wanted:
                break
            if x.path in wanted:
                parts[x.path] = x
                wanted.discard(x.path)
        pred = p.response.id if p is not None and p.response is not None else None
        text = _verdict.describe(verdict)
        for c in cands:
            c.verdict = _verdict.read(verdict, c.rule, c.segment, c.values, parts, pred, text)

    # ------------------------------------------------------------------ cache keys

    def _keys(self, step: Step, ideal_ns: str) -> None:
        r = step.request
        if r.cache_key is None:
            return
        per = self.keys.setdefault(ideal_ns, {})
        per[r.cache_key] = per.get(r.cache_key, 0) + 1
        head = self._head(r)
        first_msg = head[0] if head else ""
        use = self.key_use.get((ideal_ns, r.cache_key))
        if use is None:
            o = step.outcome
            use = self.key_use[(ideal_ns, r.cache_key)] = [set(), [], (o.index, o.path, o.line)]
        if len(use[0]) < 64:
            use[0].add(hash(first_msg))
        if r.arrival is not None and len(use[1]) < 4096:
            use[1].append(r.arrival)
        if r.arrival is not None and step.prompt.units:
            head = hashlib.blake2b(step.prompt.units[:256 * step.prompt.width], digest_size=8).digest()
            win = self.key_windows.setdefault((ideal_ns, r.cache_key, head), [])
            win.append(r.arrival)
            while win and r.arrival - win[0] > 60:
                win.pop(0)
            for rule in self.by_kind.get("key-usage", ()):
                if rule.options.get("check") == "overflow" and len(win) > int(rule.options.get("rpm_limit", 15)):
                    self.overflow.setdefault((ideal_ns, r.cache_key), []).append(step.outcome.index)
                    self._add(step, rule, (ideal_ns, r.cache_key), segment=None, char=None, token=None,
                              evidence=Evidence({"cache_key": identifier("cache_key", r.cache_key),
                                                 "requests_per_minute": len(win)}, self.show),
                              lost=0, cost=None, gap=None, rpm=len(win), limit=int(rule.options.get("rpm_limit", 15)))

    def _finish_shared_keys(self) -> None:
        """A key carried by several conversations at a rate above what one cache machine serves
        (OpenAI: about 15 requests per minute per prefix and key): overflow requests route to
        machines without the conversation's history. The rate is the busiest window of
        ``rpm_limit`` + 1 requests, extrapolated to a minute."""
        rule = self._first("key-usage", "check", "shared")
        if rule is None:
            return
        limit = int(rule.options.get("rpm_limit", 15))
        least = int(rule.options.get("min_conversations", 3))
        for (ns, key), (convs, times, (index, path, line)) in self.key_use.items():
            if len(convs) < least or len(times) < 2:
                continue
            times.sort()
            w = min(limit + 1, len(times))
            span = min(times[i + w - 1] - times[i] for i in range(len(times) - w + 1))
            rpm = (w - 1) / span * 60 if span > 0 else float("inf")
            if rpm <= limit:
                continue
            shown = "over" if rpm == float("inf") else f"{rpm:.0f}"
            self.cands.append(Candidate(rule, (ns, key), index, path, line, None, None, None,
                                        Evidence({"cache_key": identifier("cache_key", key), "conversations": len(convs),
                                                  "requests_per_minute": shown, "limit": limit}, self.show), 0, None,
                                        {"conversations": len(convs), "rpm": shown, "limit": limit}, None))

    def _finish_keys(self) -> None:
        """Name a cache key *unique* only where keys are nearly one per request; elsewhere the
        same tokens go to the key that splits traffic sharing a prefix (``check: split``), so the
        accounting keeps them."""
        unique = self._first("key-usage", "check", "unique")
        split = self._first("key-usage", "check", "split")
        if unique is None:
            return
        share = float(unique.options.get("unique_share", 0.5))
        drop = {ns for ns, per in self.keys.items() if sum(per.values()) < 4 or len(per) / sum(per.values()) < share}
        for c in self.cands:
            if c.rule is not unique:
                continue
            per = self.keys.get(c.key[0], {})
            c.values.update(keys=len(per), total=sum(per.values()))
            if c.key[0] in drop or not per:
                c.rule = split if split is not None else UNEXPLAINED
                c.values["reason"] = "namespace"

    def _shadow_1h(self, step: Step) -> None:
        """Re-simulate breakpoint namespaces with every breakpoint at the 1-hour TTL."""
        rule = self._ttl_choice
        if rule is None:
            return
        ns = step.outcome.namespace
        if ns not in self.shadow:
            self.shadow[ns] = (BoundarySim(step.rules, force_ttl=3600), [Decimal(0), Decimal(0), Decimal(0)], step)  # type: ignore[assignment]
        sim, acc, _ = self.shadow[ns]  # type: ignore[misc]
        cached, write, w1h, _, _ = sim.step(step.prompt, step.request.arrival)
        rates = self._rates(step)
        if rates is None:
            return
        o = step.outcome
        acc[0] += rates.cost(o.prompt_tokens, o.cached_tokens, o.write_tokens, o.write_1h_tokens, True)
        acc[1] += rates.cost(o.prompt_tokens, cached, write, w1h, True)
        acc[2] += 1

    def _finish_shadow(self) -> None:
        rule = self._ttl_choice
        if rule is None:
            return
        for ns, (sim, acc, step) in self.shadow.items():  # type: ignore[misc]
            actual, with_1h, n = acc
            if n and with_1h < actual * Decimal("0.97"):
                self.cands.append(Candidate(rule, (ns,), step.outcome.index, step.outcome.path, step.outcome.line, None,
                                            None, None, {"namespace": ns, "cost_now_usd": float(round(actual, 6)),
                                                         "cost_1h_usd": float(round(with_1h, 6))},
                                            0, actual - with_1h, {"saving": f"${actual - with_1h:,.4f}"}))
