"""A property test of the Anthropic breakpoint simulator (simulate/boundaries.py) against a
literal, step-by-step reading of Anthropic's prompt-caching page
(https://platform.claude.com/docs/en/build-with-claude/prompt-caching, checked 2026-12-01):

1. "Cache writes happen only at your breakpoint": one entry per breakpoint, for the whole prefix
   up to that block, if the prefix reaches the model's minimum.
2. A read checks each breakpoint and, when no entry exists there, "walks backward one block at a
   time" through "20 blocks ... counting the breakpoint itself as the first", for an entry that
   earlier requests wrote; the hit is the longest prefix found.
3. Tokens up to the hit are read; then "A = highest hit, B = highest 1 h breakpoint after A,
   C = last breakpoint → read A, 1 h write (B−A), 5 m write (C−B)".
4. An entry lives for its TTL (5 minutes, or 1 hour) from the start of the request that wrote or
   last read it ("refreshed for no additional cost each time the cached content is used").

Requests are generated as conversations that extend, edit or restart earlier ones, with up to
four breakpoints of either TTL and idle gaps around both lifetimes.
"""

from __future__ import annotations

import hashlib

from hypothesis import given, settings, strategies as st

from promptcache.model import Breakpoint, Segment
from promptcache.simulate import Prompt
from promptcache.simulate.boundaries import BoundarySim
from promptcache.simulate.rules import load_providers

RULES = load_providers()["anthropic"].rules_for("claude-sonnet-4-5")   # min 1,024, 4 breakpoints, 20 blocks


class Reference:
    """The page's rules, one step at a time, with no shared code."""

    def __init__(self, min_tokens: int, lookback: int):
        self.min_tokens = min_tokens
        self.lookback = lookback
        self.entries: dict[tuple, list[float]] = {}   # prefix (block identities) -> [expires at, ttl]

    def request(self, blocks: list[tuple[int, int]], marks: dict[int, int], now: float) -> tuple[int, int, int]:
        """blocks: (identity, tokens) in prefix order; marks: block index -> TTL seconds."""
        ends = []
        total = 0
        for _, n in blocks:
            total += n
            ends.append(total)
        prefix = [tuple(blocks[:i + 1]) for i in range(len(blocks))]
        # 2. reads: at every breakpoint, walk back up to `lookback` blocks (the breakpoint first)
        hit, hit_key = 0, None
        for b in sorted(marks):
            i = b
            while i >= 0 and i > b - self.lookback:
                e = self.entries.get(prefix[i])
                if e is not None and now <= e[0]:
                    if ends[i] > hit:
                        hit, hit_key = ends[i], prefix[i]
                    break                      # the longest entry this breakpoint can find
                i -= 1
        # 1. writes: at each breakpoint whose prefix reaches the minimum
        written = [(b, ttl) for b, ttl in sorted(marks.items()) if ends[b] >= self.min_tokens]
        for b, ttl in written:
            e = self.entries.get(prefix[b])
            if e is None:
                self.entries[prefix[b]] = [now + ttl, ttl]
            else:                              # written again: the longer lifetime, from now
                e[1] = max(e[1], ttl)
                e[0] = max(e[0], now + e[1])
        # 4. the entry read is refreshed
        if hit_key is not None:
            e = self.entries[hit_key]
            e[0] = max(e[0], now + e[1])
        # 3. billing positions
        if not written:
            return hit, 0, 0
        C = max(ends[b] for b, _ in written)
        one_hour = [ends[b] for b, ttl in written if ttl >= 3600 and ends[b] > hit]
        B = max(one_hour) if one_hour else hit
        return hit, max(0, C - hit), max(0, B - hit)


def to_prompt(blocks: list[tuple[int, int]], marks: dict[int, int]) -> Prompt:
    segs, ends, keys, total, h = [], [], [], 0, b""
    for i, (ident, n) in enumerate(blocks):
        bp = Breakpoint(marks[i]) if i in marks else None
        segs.append(Segment(f"messages[{i}]", "user", f"block {ident}", breakpoint=bp, role="user", message=i))
        total += n
        ends.append(total)
        h = hashlib.blake2b(h + f"{ident}:{n}".encode(), digest_size=16).digest()
        keys.append(h)
    return Prompt(b"", 4, 1, total, segs, ends, keys)


block = st.tuples(st.integers(0, 40), st.integers(1, 700))


@st.composite
def traffic(draw):
    convs: list[list[tuple[int, int]]] = []
    reqs = []
    t = 0.0
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["new", "extend", "edit", "repeat"])) if convs else "new"
        if kind == "new":
            blocks = draw(st.lists(block, min_size=1, max_size=30))
        else:
            base = list(draw(st.sampled_from(convs)))
            if kind == "extend":
                blocks = base + draw(st.lists(block, min_size=1, max_size=6))
            elif kind == "edit":
                i = draw(st.integers(0, len(base) - 1))
                blocks = base[:i] + [draw(block)] + base[i + 1:]
            else:
                blocks = base
        convs.append(blocks)
        idx = draw(st.lists(st.integers(0, len(blocks) - 1), max_size=4, unique=True))
        marks = {i: draw(st.sampled_from([300, 3600])) for i in idx}
        t += draw(st.sampled_from([0.0, 1.0, 60.0, 299.0, 300.0, 301.0, 1800.0, 3599.0, 3600.0, 3601.0, 7200.0]))
        reqs.append((blocks, marks, t))
    return reqs


@settings(max_examples=300, deadline=None)
@given(traffic())
def test_breakpoint_simulator_matches_the_page_step_by_step(reqs):
    sim = BoundarySim(RULES)
    ref = Reference(RULES.min_tokens, RULES.lookback)
    for blocks, marks, t in reqs:
        cached, write, write_1h, _, _ = sim.step(to_prompt(blocks, marks), t)
        assert (cached, write, write_1h) == ref.request(blocks, marks, t), (blocks, marks, t)
