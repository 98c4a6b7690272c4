"""Where a request's cache breakpoints go, for providers that cache only at breakpoints
(Anthropic ``cache_control``; the same rules on Bedrock and on Claude in Vertex AI).

The limits come from the simulated rules (``rules/providers/*.yaml``: ``max_breakpoints``,
``lookback``), never from here. The placement, per request:

1. a fixed **anchor** on the last block of the template's stable region (tools and the system
   prompt, up to the first part that still varies): every request of the template writes and
   reads it, whatever the conversation;
2. in conversations, a marker on the **newest stable block**: the last block the next request
   re-sends unchanged (the text a proposal appends to the newest turn included: later requests
   re-send it with that turn, :meth:`~.rewrite.Rewriter._carry`; and whatever
   the block's type: a turn of tool results is marked like any other);
3. a **moving window** behind it: more markers every ``lookback`` blocks back, while they stay
   after the anchor and within ``max_breakpoints``, so that the previous request's newest marker
   is within some marker's lookback even when a request adds more than ``lookback`` blocks.

A read "walks backward one block at a time" from each breakpoint through ``lookback`` blocks
(counting the breakpoint itself), so markers ``lookback`` apart cover every block between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Limits:
    """A provider's breakpoint limits (from the simulated :class:`~promptcache.simulate.rules.CacheRules`).

    Attributes:
        max_breakpoints: most markers one request may carry.
        lookback: blocks a read walks back from each marker, counting the marker's own.
    """

    max_breakpoints: int
    lookback: int


def place(n: int, anchor: int | None, newest: int | None, limits: Limits,
          markable: Callable[[int], bool] = lambda i: True) -> list[int]:
    """Part indices to mark, ascending.

    Args:
        n: parts in the request.
        anchor: index of the anchor part (last stable template part), or ``None``.
        newest: index of the newest stable block to mark, or ``None`` (no conversation marker:
            a template whose requests never continue one another).
        limits: the provider's limits.
        markable: whether a part can carry a marker (thinking blocks and empty text cannot);
            an unmarkable choice moves to the nearest markable part before it.

    >>> place(40, 2, 39, Limits(4, 20))
    [2, 19, 39]
    >>> place(100, 3, 99, Limits(4, 20))
    [3, 59, 79, 99]
    >>> place(10, None, 9, Limits(4, 20))
    [9]
    """

    def back(i: int, floor: int) -> int | None:
        while i > floor and not markable(i):
            i -= 1
        return i if i > floor and markable(i) else None

    out: list[int] = []
    floor = -1
    if anchor is not None and 0 <= anchor < n:
        a = back(anchor, -1)
        if a is not None:
            out.append(a)
            floor = a
    if newest is not None and limits.max_breakpoints > len(out):
        window: list[int] = []
        at = back(min(newest, n - 1), floor)
        while at is not None and len(out) + len(window) < limits.max_breakpoints:
            window.append(at)
            at = back(at - limits.lookback, floor) if at - limits.lookback > floor else None
        out.extend(window)
    return sorted(set(out))


def describe(marks: Sequence[int], anchor: int | None) -> str:
    """A short account of a placement for reports (``anchor + 2 window markers``)."""
    window = [m for m in marks if m != anchor]
    bits = ["anchor"] if anchor in marks else []
    if window:
        bits.append(f"{len(window)} window marker{'s' if len(window) > 1 else ''}")
    return " + ".join(bits) or "none"
