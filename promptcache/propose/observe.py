"""What the first pass over the log learns for the proposals: the templates behind the traffic
and, per template, the facts each change is decided on (breakpoints set or not, conversations
that continue, tool results closing a turn, JSON re-serialized in another key order, windows
that drop messages, session identities and upstreams).

One :class:`Observer` sees every simulated request (:class:`~promptcache.pipeline.Step`) in
arrival order; its work per request is proportional to the parts the request holds.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..model import Request
from ..pipeline import Step
from ..simulate.rules import CacheRules
from .conversations import Conversations, Insertions, Windows, conversation, messages
from .edits import sort_keys_deep
from .history import Histories, Tip, message_hash
from .identity import identity
from .templates import TemplateIndex

#: Distinct JSON parts whose canonical form is remembered per template (key-order drift).
JSON_MEMO = 50_000
#: Leading conversation parts weighed for a template's stable head, and distinct heads counted.
HEAD_PARTS = 8
HEAD_MEMO = 100_000
#: Conversations remembered per head (enough to tell "most conversations" from "one").
HEAD_CONVERSATIONS = 64
#: Conversations whose last upstream is remembered (the older half is dropped when full).
UPSTREAMS = 100_000


def head_chain(req: Request, seed: object, n: int) -> list[int]:
    """Hashes of the first ``n`` conversation parts of ``req``, chained (role, kind, text), the
    last part (the request's own newest turn) excluded."""
    conv = conversation(req)
    h = hash(seed)
    out = []
    for p in conv[:min(n, len(conv) - 1)]:
        h = hash((h, p.role, p.kind, p.text))
        out.append(h)
    return out


def canonical_part(text: str) -> str | None:
    """A JSON part's canonical form (sorted keys; a tool call's ``arguments`` string parsed and
    sorted too), or ``None`` when the text is not JSON."""
    s = text.lstrip()
    if not s or s[0] not in "{[":
        return None
    try:
        v = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(v, dict) and isinstance(v.get("arguments"), str):
        try:
            v = {**v, "arguments": json.loads(v["arguments"])}
        except (ValueError, RecursionError):
            pass
    return json.dumps(sort_keys_deep(v), ensure_ascii=False, separators=(",", ":"))


@dataclass
class TemplateStats:
    """Per template, counts of requests (in arrival order) for each fact a change depends on.

    Attributes:
        requests: requests of the template.
        provider: the provider file whose rules apply (``anthropic``, ``openai`` ...).
        rules: the cache rules of its first request.
        marked: requests with an explicit breakpoint.
        automatic: requests with Anthropic's top-level (automatic) breakpoint only.
        tool_tail: requests whose newest turn holds only tool results.
        unmarked_tool_tail: those of them with breakpoints elsewhere but none on that turn.
        unmarked_tail: requests with breakpoints elsewhere but none on their newest turn (what
            the next turn re-sends stays uncached).
        continues: requests that re-send an earlier request's whole conversation and add to it.
        json_drift: conversation parts re-sent as the same JSON in another key order.
        shifted: requests whose conversation dropped messages from the front.
        window: conversation sizes (messages) of the shifted requests.
        rewritten: requests whose history does not extend their predecessor's (front dropped,
            summarised or cleared in place; :class:`~.history.Histories`).
        marker_ttls: TTLs (seconds) of the explicit breakpoints seen.
        identified: requests that name a session or conversation (``session``, ``affinity``).
        routed: requests whose cache namespace carries the upstream that served them (a router's
            upstream caches are simulated apart: ``rules/providers/openrouter.yaml``).
        upstreams: who served the requests, where the log names it.
        spread: requests served by another upstream than their conversation's previous request.
        arrivals: requests with an arrival time.
        inserted: requests with a message inserted before the stable history
            (:class:`~.conversations.Insertions`), and ``inserted_example`` the first one's text.
        heads: ``(parts, chained hash)`` of the leading conversation parts → the conversations
            that open with them (at most :data:`HEAD_CONVERSATIONS` kept): a head most
            conversations share, such as project notes before the question, is stable content.
        conversations: conversations of the template (requests that continue none).
        tool_choices: ``tool_choice`` values (as JSON text; ``null`` where a request sets none)
            → requests, where the template's requests set more than one value or any.
    """

    requests: int = 0
    provider: str = ""
    rules: CacheRules | None = None
    marked: int = 0
    automatic: int = 0
    tool_tail: int = 0
    unmarked_tool_tail: int = 0
    unmarked_tail: int = 0
    continues: int = 0
    json_drift: int = 0
    shifted: int = 0
    rewritten: int = 0
    window: Counter = field(default_factory=Counter)
    marker_ttls: Counter = field(default_factory=Counter)
    identified: int = 0
    routed: int = 0
    upstreams: Counter = field(default_factory=Counter)
    spread: int = 0
    arrivals: int = 0
    inserted: int = 0
    inserted_example: str = ""
    heads: dict[tuple[int, int], set[int]] = field(default_factory=dict)
    conversations: int = 0
    tool_choices: Counter = field(default_factory=Counter)

    def stable_head(self) -> tuple[int, int] | None:
        """``(parts, chained hash)`` of the longest leading conversation head that at least half
        of the template's conversations (and two) open with, or ``None``."""
        best = None
        need = max(2, self.conversations / 2)
        for (n, h), convs in self.heads.items():
            if (len(convs) >= need or len(convs) >= HEAD_CONVERSATIONS) and (best is None or n > best[0]):
                best = (n, h)
        return best


class Observer:
    """Pass-1 observer: templates, and per template the facts in :class:`TemplateStats`."""

    def coarse(self) -> frozenset[str]:
        """Session identities the log shows naming more than one conversation (a person's,
        a device's or an account's)."""
        return frozenset(k for k, v in self.ident_convs.items() if len(v) > 1)

    def __init__(self) -> None:
        self.index = TemplateIndex()
        self.tool_orders: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        self.tool_sets: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        self.key_of: dict[int, tuple[str, ...]] = {}
        self.stats: dict[tuple[str, ...], TemplateStats] = {}
        self.conversations = Conversations()
        self.windows = Windows()
        self.insertions = Insertions()
        self.histories = Histories()
        self._json: dict[tuple[str, ...], dict[str, str]] = {}
        self._last_upstream: dict[int, str] = {}
        #: session identity → conversations it names (two kept: one that names more is a
        #: person's or a device's, :func:`~.identity.conversation_identity`)
        self.ident_convs: dict[str, set[int]] = {}

    def __call__(self, step: Step) -> None:
        r = step.request
        if not (step.prompt.segments and r.parts):
            return
        key = self.index.add(r, step.outcome.namespace)
        self.key_of[step.outcome.index] = key
        st = self.stats.get(key)
        if st is None:
            st = self.stats[key] = TemplateStats(provider=step.outcome.provider, rules=step.rules)
        st.requests += 1
        if r.arrival is not None:
            st.arrivals += 1
        st.tool_choices[json.dumps(r.params.get("tool_choice"), sort_keys=True)] += 1
        tools = tuple(p.text for p in r.parts if p.kind == "tool")
        if len(tools) > 1:
            self.tool_orders.setdefault(key, set()).add(tools)
            self.tool_sets.setdefault(key, set()).add(tuple(sorted(tools)))
        bps = [p.breakpoint for p in r.parts if p.breakpoint is not None]
        if any(not b.automatic for b in bps):
            st.marked += 1
        elif bps:
            st.automatic += 1
        for b in bps:
            if not b.automatic:
                st.marker_ttls[b.ttl_seconds or 0] += 1
        conv = conversation(r)
        msgs = messages(conv)
        if msgs:
            last = msgs[-1][1]
            unmarked = bps and all(p.breakpoint is None for p in last)
            st.unmarked_tail += bool(unmarked)
            if all(p.kind == "tool_result" for p in last):
                st.tool_tail += 1
                st.unmarked_tool_tail += bool(unmarked)
        link = self.conversations.link(r, key)
        st.continues += link.continues
        st.conversations += not link.continues
        pos, ins_msgs, _ = self.insertions.find(r, key)
        if pos is not None:
            st.inserted += 1
            if not st.inserted_example:
                st.inserted_example = " ".join(p.text for p in ins_msgs[pos][1])[:200]
        core = ins_msgs if pos is None else ins_msgs[:pos] + ins_msgs[pos + 1:]
        win = self.windows.observe(r, key, core)
        hashes = [message_hash(ps) for _, ps in core]
        found = self.histories.find(hashes, key)
        if found is not None and not found.extends:
            st.rewritten += 1
        tip = Tip(None, hashes)
        self.histories.remember(hashes, key, tip, found)
        if win.dropped:
            st.shifted += 1
            st.window[win.size] += 1
        memo = self._json.setdefault(key, {})
        for p in conv:
            if p.kind in ("tool_call", "tool_result") and p.text[:1] in "{[":
                canon = canonical_part(p.text)
                if canon is None:
                    continue
                seen = memo.get(canon)
                if seen is None:
                    if len(memo) < JSON_MEMO:
                        memo[canon] = p.text
                elif seen != p.text:
                    st.json_drift += 1
        if len(st.heads) < HEAD_MEMO:
            for n, h in enumerate(head_chain(r, key, HEAD_PARTS), 1):
                convs = st.heads.setdefault((n, h), set())
                if len(convs) < HEAD_CONVERSATIONS:
                    convs.add(link.conversation)
        ident = identity(r)
        if ident:
            st.identified += 1
            convs = self.ident_convs.get(ident)
            if convs is None:
                if len(self.ident_convs) >= UPSTREAMS:
                    for k in list(self.ident_convs)[: UPSTREAMS // 2]:
                        del self.ident_convs[k]
                convs = self.ident_convs[ident] = set()
            if len(convs) < 2:
                convs.add(tip.conv)
        if "/upstream=" in step.outcome.namespace:
            st.routed += 1
        up = r.response.upstream if r.response is not None else None
        if up:
            st.upstreams[up] += 1
            prev = self._last_upstream.get(link.conversation)
            if link.continues and prev is not None and prev != up:
                st.spread += 1
            if len(self._last_upstream) >= UPSTREAMS:
                for k in list(self._last_upstream)[: UPSTREAMS // 2]:
                    del self._last_upstream[k]
            self._last_upstream[link.conversation] = up


def most_common(c: Counter) -> Any:
    """The most common value of a counter, or ``None``."""
    return c.most_common(1)[0][0] if c else None
