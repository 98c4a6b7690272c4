"""History cut back in batches below a trigger, instead of one message per turn.

A sliding window (the newest ``N`` messages, re-sent every turn) drops the oldest message each
turn, so the conversation part of the prompt differs from its first message on and nothing past
the template is ever read from the cache (omi's fixed 10-message window, openclaw's
``historyLimit``; tests/data/cases/C15). The batched policy keeps the window's start fixed while
the history grows up to the trigger ``N`` (what the log sent), then cuts it back by ``batch``
messages at once: between cuts the history only grows, so each turn reads the previous one.

Each request keeps only messages it already held (a suffix of its own conversation), so nothing
is invented and no request grows: the model sees the newest ``N - batch`` to ``N`` messages
instead of always ``N``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..model import Part
from .conversations import Window, messages


def _starts_turn(parts: Sequence[Part]) -> bool:
    """A message a conversation may start with: a user turn that is not a tool result (whose
    tool call would be cut away)."""
    return all(p.role == "user" and p.kind != "tool_result" for p in parts)


@dataclass
class Batches:
    """Per window chain, the absolute position the kept history starts at.

    Attributes:
        batch: messages cut at once when the trigger is reached.
    """

    batch: int
    start: dict[int, int] = field(default_factory=dict)

    def keep_from(self, win: Window, conv: Sequence[Part]) -> int:
        """How many of the request's leading conversation messages to drop (0: keep all).

        Args:
            win: where the request stands in its window chain (:class:`~.conversations.Windows`).
            conv: its conversation parts.
        """
        msgs = messages(conv)
        b = self.start.get(win.chain)
        if b is None or win.start > b:  # a new chain, or the window passed the kept start: cut
            cut = 0 if b is None else self.batch
            while cut < len(msgs) - 1 and not _starts_turn(msgs[cut][1]):
                cut += 1
            if cut >= len(msgs) - 1:
                cut = 0
            b = self.start[win.chain] = win.start + cut
        return max(0, b - win.start)
