"""The cheapest cache lifetime for a template, on the log's own arrival times.

Policies (each provider's options come from ``rules/providers/*.yaml``: ``ttl_options`` for
breakpoint caches, ``retention`` for OpenAI, as far as the model offers them,
``CacheRules.lifetimes``; write prices from genai-prices):

- a TTL for every breakpoint (Anthropic, Bedrock, Claude on Vertex: ``5m`` or ``1h``), or the
  longer one on the template's anchor and the shorter on the conversation's markers (longer
  TTLs must come first);
- a retention (OpenAI: ``in_memory`` or ``24h``);
- either of them with keep-alive requests: after each request, up to ``K`` minimal requests
  (the same request with no output: ``max_tokens`` 0 on Anthropic, whose docs name it as the way
  to pre-warm a cache) at 90% of the TTL, each reading the cached prefix and so restarting its
  lifetime, until the conversation's next request comes.

The model (:func:`cost`) replays a template's requests in arrival order on two levels, as the
simulated caches hold them: the **anchor** (the template's stable region, touched by every
request and keep-alive of the template) and the **conversation** (what a request reads beyond the
anchor, touched by the requests and keep-alives of its own conversation). A request whose
conversation entry is alive reads both; else, with a live anchor, it reads the anchor and writes
the rest again; else it writes everything again. Tokens read, written and billed as plain input
come from a simulation of the proposed log without expiry, so the model prices exactly the
prefixes the simulator caches; the chosen policy is then applied to the log and simulated again
(the re-simulated figures are the ones reported as "after").

Checked against a brute-force simulation of each policy (the proposed log rewritten with it and
audited) on logs with known gap distributions: ``tests/test_propose_lifetime.py``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Sequence

#: Keep-alive requests go out at this share of the TTL after the last touch.
PING_AT = 0.9
#: Most keep-alive requests after one request.
MAX_PINGS = 24


@dataclass(frozen=True)
class Visit:
    """One request of a template in the proposed log, as a simulation without expiry sees it
    (tokens).

    Attributes:
        arrival: UTC seconds.
        conversation: id of its conversation (:class:`~.conversations.Conversations`).
        anchor: tokens it reads up to the end of the template's anchor.
        session: tokens it reads beyond the anchor (what its conversation's earlier requests
            wrote).
        new_anchor: tokens it writes up to the end of the anchor.
        new_session: tokens it writes beyond the anchor.
        plain: prompt tokens billed as plain input whatever the lifetime (after the last
            breakpoint; everything uncached where writes are not billed).
        line: its line in the input log.
        output_price_tokens: output tokens a keep-alive copy of it costs (0 with ``max_tokens``
            0; 1 where the API needs one).
        ping_read: tokens a keep-alive copy of it reads (everything it caches: through its last
            breakpoint, or its whole prompt in a prefix cache, in whole hit blocks), or ``None``
            for :attr:`prefix`.
        ping_plain: tokens of a keep-alive copy billed as plain input (``None``: ``plain``).
    """

    arrival: float
    conversation: int
    anchor: int
    session: int
    new_anchor: int
    new_session: int
    plain: int
    line: int
    output_price_tokens: int = 0
    ping_read: int | None = None
    ping_plain: int | None = None

    @property
    def prefix(self) -> int:
        """Tokens a keep-alive copy of this request reads (all it caches)."""
        if self.ping_read is not None:
            return self.ping_read
        return self.anchor + self.session + self.new_anchor + self.new_session


@dataclass(frozen=True)
class Prices:
    """USD per token (``Decimal``): plain input, cache read, 5-minute (or standard) write,
    1-hour write, output."""

    input: Decimal
    read: Decimal
    write: Decimal
    write_1h: Decimal
    output: Decimal = Decimal(0)

    def of(self, tier: str) -> Decimal:
        """The write price of a tier: ``write``, ``write_1h`` or ``input`` (writes not billed)."""
        return {"write": self.write, "write_1h": self.write_1h, "input": self.input}[tier]


@dataclass(frozen=True)
class Policy:
    """A cache-lifetime policy.

    Attributes:
        name: as reports show it (``1h``, ``5m + keep-alive ×3``, ``24h`` ...).
        anchor_ttl, session_ttl: lifetimes of the anchor's and the conversation's entries,
            seconds.
        anchor_tier, session_tier: their write prices (:meth:`Prices.of`).
        pings: keep-alive requests after a request, at most.
        interval: seconds from a touch to the next keep-alive request.
        setting: how it is written into the log: ``{"anchor_ttl": "1h", "window_ttl": "5m"}``
            for breakpoints, ``{"retention": "24h"}`` for OpenAI, plus ``{"pings": K,
            "interval": s}``.
    """

    name: str
    anchor_ttl: float
    session_ttl: float
    anchor_tier: str
    session_tier: str
    pings: int = 0
    interval: float = 0.0
    setting: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def with_pings(self, k: int) -> Policy:
        """The same lifetime with up to ``k`` keep-alive requests at :data:`PING_AT` of the TTL."""
        iv = PING_AT * self.session_ttl
        return Policy(f"{self.name} + keep-alive ×{k}", self.anchor_ttl, self.session_ttl, self.anchor_tier,
                      self.session_tier, k, iv, {**self.setting, "pings": k, "interval": iv})


@dataclass
class Costed:
    """A policy replayed on a template's requests (USD).

    Attributes:
        policy: the policy.
        total: input-side cost of the requests and keep-alive requests.
        per_visit: each request's cost, with the keep-alive requests that follow it.
        pings: keep-alive requests sent.
        ping_cost: what they cost.
    """

    policy: Policy
    total: Decimal
    per_visit: list[Decimal]
    pings: int
    ping_cost: Decimal


def cost(visits: Sequence[Visit], policy: Policy, prices: Prices) -> Costed:
    """Replay ``visits`` (arrival order) under ``policy``.

    The first request of a conversation has nothing to read at the conversation level; a gap
    of exactly the TTL still hits (entries live "for" the TTL).
    """
    n = len(visits)
    nxt: list[float] = [math.inf] * n
    seen: dict[int, int] = {}
    for i in range(n - 1, -1, -1):
        c = visits[i].conversation
        if c in seen:
            nxt[i] = visits[seen[c]].arrival
        seen[c] = i
    last_tmpl = -math.inf
    last_conv: dict[int, float] = {}
    stream: dict[int, int] = {}  # conversation → visit index whose keep-alive stream is live
    heap: list[tuple[float, int, int]] = []  # (time, visit index, ping number)
    per = [Decimal(0)] * n
    pings = 0
    ping_cost = Decimal(0)
    ping_unit: list[Decimal] = [Decimal(0)] * n
    pr, pi = prices.read, prices.input
    wa, ws = prices.of(policy.anchor_tier), prices.of(policy.session_tier)

    def flush(until: float) -> None:
        nonlocal last_tmpl, pings, ping_cost
        while heap and heap[0][0] < until:
            t, i, j = heapq.heappop(heap)
            c = visits[i].conversation
            if stream.get(c) != i or t >= nxt[i]:
                continue
            pings += 1
            ping_cost += ping_unit[i]
            per[i] += ping_unit[i]
            last_tmpl = max(last_tmpl, t)
            last_conv[c] = t
            if j < policy.pings:
                heapq.heappush(heap, (t + policy.interval, i, j + 1))

    for i, v in enumerate(visits):
        t = v.arrival
        flush(t)
        c = v.conversation
        g_conv = t - last_conv.get(c, -math.inf)
        g_tmpl = t - last_tmpl
        if v.session and g_conv <= policy.session_ttl:
            read, re_a, re_s = v.anchor + v.session, 0, 0
        elif v.anchor and g_tmpl <= policy.anchor_ttl:
            read, re_a, re_s = v.anchor, 0, v.session
        else:
            read, re_a, re_s = 0, v.anchor, v.session
        per[i] += (pr * read + wa * (re_a + v.new_anchor) + ws * (re_s + v.new_session) + pi * v.plain)
        last_tmpl = max(last_tmpl, t)
        last_conv[c] = t
        if policy.pings and policy.interval > 0:
            plain = v.plain if v.ping_plain is None else v.ping_plain
            ping_unit[i] = pr * v.prefix + pi * plain + prices.output * v.output_price_tokens
            stream[c] = i
            heapq.heappush(heap, (t + policy.interval, i, 1))
    flush(math.inf)
    return Costed(policy, sum(per, Decimal(0)), per, pings, ping_cost)


def gap_cost(g: float, policy: Policy, prices: Prices, level: str = "conversation") -> Decimal:
    """What one cached token costs to serve after a pause of ``g`` seconds under ``policy``: the
    keep-alive requests sent during the pause, then a read or a write. ``level``:
    ``conversation`` (a pause in one conversation) or ``anchor`` (a pause between any two
    requests of the template, at the anchor's lifetime)."""
    ttl = policy.session_ttl if level == "conversation" else policy.anchor_ttl
    tier = policy.session_tier if level == "conversation" else policy.anchor_tier
    k = 0
    if policy.pings and policy.interval > 0 and g > policy.interval:
        k = min(policy.pings, math.ceil(g / policy.interval) - 1)
    alive = g - k * policy.interval <= ttl
    return prices.read * k + (prices.read if alive else prices.of(tier))


def winning_gaps(chosen: Policy, current: Policy, prices: Prices,
                 horizon: float = 2 * 86400) -> tuple[float, float, str] | None:
    """The first range of pauses ``(from, to]`` (seconds) on which ``chosen`` serves a cached
    token more cheaply than ``current``, and the level it wins at (``conversation``, else
    ``anchor``), or ``None``: ``to`` is the break-even gap, the pause beyond which the chosen
    policy stops paying off."""
    for level in ("conversation", "anchor"):
        pts = {0.0, horizon}
        for p in (chosen, current):
            ttl = p.session_ttl if level == "conversation" else p.anchor_ttl
            pts.add(ttl)
            if p.pings and p.interval > 0:
                for j in range(p.pings + 1):
                    pts.add(j * p.interval)
                    pts.add(j * p.interval + ttl)
        cuts = sorted(x for x in pts if 0 <= x <= horizon)
        lo = hi = None
        for a, b in zip(cuts, cuts[1:]):
            if b - a < 1e-9:
                continue
            probe = b if b - a <= 1 else (a + b) / 2
            wins = gap_cost(probe, chosen, prices, level) < gap_cost(probe, current, prices, level)
            if wins and lo is None:
                lo = a
            if lo is not None:
                if wins:
                    hi = b
                else:
                    break
        if lo is not None and hi is not None:
            return lo, hi, level
    return None


def policies(options: dict[str, tuple[float, str]], current: str | None, prices: Prices, *,
             mixed: bool) -> list[Policy]:
    """Every policy to weigh for a template.

    Args:
        options: lifetime name → ``(seconds, write tier)`` (``{"5m": (300, "write"), "1h":
            (3600, "write_1h")}``; OpenAI ``{"in_memory": (600, "input"), "24h": (1800,
            "input")}``).
        current: the name the log uses (always weighed), or ``None``.
        prices: per-token prices (the keep-alive counts worth weighing follow from them).
        mixed: whether the anchor may take a longer lifetime than the conversation's markers
            (breakpoint caches).
    """
    base: list[Policy] = []
    for name, (sec, tier) in options.items():
        base.append(Policy(name, sec, sec, tier, tier, setting=_setting(name, name, mixed)))
    if mixed and len(options) > 1:
        (lname, (lsec, ltier)), (sname, (ssec, stier)) = max(options.items(), key=lambda kv: kv[1][0]), \
            min(options.items(), key=lambda kv: kv[1][0])
        base.append(Policy(f"{lname} anchor, {sname} conversation", lsec, ssec, ltier, stier,
                           setting=_setting(lname, sname, True)))
    out = list(base)
    if prices.read > 0:
        for p in base:
            rewrite = prices.of(p.session_tier) - prices.read
            most = min(MAX_PINGS, int(rewrite / prices.read) + 1) if rewrite > 0 else 0
            out.extend(p.with_pings(k) for k in range(1, most + 1))
    return out


def _setting(anchor: str, window: str, breakpoints: bool) -> dict[str, Any]:
    return {"anchor_ttl": anchor, "window_ttl": window} if breakpoints else {"retention": anchor}


@dataclass
class Choice:
    """The lifetime optimiser's answer for one template.

    Attributes:
        current: the policy the log uses, replayed.
        best: the cheapest policy, replayed (``current`` when nothing is cheaper).
        ranked: every policy weighed, cheapest first.
        wins_on: pauses ``(from, to, level)`` on which ``best`` serves a cached token more
            cheaply than ``current`` (``to``: the break-even gap; ``level``: ``conversation`` or
            ``anchor``), or ``None``.
        losing: indices of the requests that cost more under ``best`` than under ``current``.
        per_day: money saved per day at the log's rate (USD), or ``None`` without a span.
        gaps: the conversations' pauses in the log (seconds), for reports.
        visit_lines: each request's line in the input log.
        template_gaps: the pauses between the template's requests (seconds).
    """

    current: Costed
    best: Costed
    ranked: list[Costed]
    wins_on: tuple[float, float, str] | None
    losing: list[int]
    per_day: Decimal | None
    gaps: list[float]
    visit_lines: list[int] = field(default_factory=list)
    template_gaps: list[float] = field(default_factory=list)

    @property
    def saves(self) -> Decimal:
        """Current minus best cost (USD)."""
        return self.current.total - self.best.total


def choose(visits: Sequence[Visit], candidates: Sequence[Policy], current: Policy, prices: Prices,
           span_seconds: float | None) -> Choice:
    """Replay every candidate and pick the cheapest (ties keep the current policy)."""
    cur = cost(visits, current, prices)
    ranked = sorted((cost(visits, p, prices) for p in candidates), key=lambda c: c.total)
    best = ranked[0] if ranked and ranked[0].total < cur.total else cur
    losing = [i for i, (a, b) in enumerate(zip(best.per_visit, cur.per_visit)) if a > b]
    per_day = None
    if span_seconds and span_seconds >= 60:
        per_day = (cur.total - best.total) * Decimal(86400) / Decimal(str(span_seconds))
    last: dict[int, float] = {}
    gaps = []
    for v in visits:
        if v.conversation in last:
            gaps.append(v.arrival - last[v.conversation])
        last[v.conversation] = v.arrival
    wins = winning_gaps(best.policy, current, prices) if best is not cur else None
    tgaps = [b.arrival - a.arrival for a, b in zip(visits, visits[1:])]
    return Choice(cur, best, ranked, wins, losing, per_day, gaps, [v.line for v in visits], tgaps)
