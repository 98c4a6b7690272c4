"""The calls a run has counted so far, by id and by prompt: one call logged twice is counted once.

Teams often keep two exports of the same traffic (a LiteLLM proxy's logs and its Langfuse
callback, a gateway's logs and an OpenTelemetry trace). Each producer logs each call, so reading
both would audit every call twice, and the second copy of every prompt would hit the first one's
cache. What tells one call logged twice from two calls:

- **same id, same prompt, same time** (within :data:`SAME_CALL_SECONDS`): one call; the record
  read later is a duplicate of the one counted (the ``duplicates`` column of the inputs table);
- **same id, another prompt or time**: two calls that reuse an id (a client's own counter, a
  retried request id): both are audited, with a warning;
- **another id, same prompt and time, in another file**: possibly the same call under each
  producer's own id (a LiteLLM ``chatcmpl-…`` beside a Langfuse observation id): both are
  audited, with a warning that the two files may hold the same calls (identical prompts at the
  same second are also what parallel sessions with the same first turn look like, so this is
  not proof).

The prompt is compared by a digest of what is sent (each part's kind, role and text, in order;
a hashed trace's block ids), not by the producer's field paths, which differ between producers
(``input[0]`` in Langfuse is ``messages[0]`` in LiteLLM). Only the digest is kept, one per id
(and, when several files are read, one per distinct prompt): memory stays a few machine words
per request, never the prompt. The digest is Python's ``hash`` of a tuple of the parts' strings,
only compared within one run (``hash`` is salted per process).

A digest hashes the whole prompt (on a log of 10k-token agent prompts, 6 of the 25 seconds
reading 100k records took, pure Python), and one file's records need it only when a later
record has the same id and time: so while one file is read, a request stays undigested (kept
whole, :data:`KEPT` at most) as long as a later record in arrival order can share its time,
and is digested only when one does (or when it leaves for room). Reading several files, every
prompt is digested (another file's record of the same call has another id).
"""

from __future__ import annotations

from collections import deque
from operator import attrgetter

from ..model import Request

_SENT = attrgetter("kind", "role", "text")  # what a part sends, in C: no tuple built in Python per part

#: Two records of one id and prompt whose arrival times differ by at most this many seconds
#: log the same call. Producers stamp a call's start from their own clocks (a proxy before it
#: forwards, a tracing callback when the SDK call starts): the same call's times differ by
#: milliseconds to about a second; a client reusing an id for a second call is seconds apart
#: at least (a model's answer takes that long).
SAME_CALL_SECONDS = 2.0
#: Requests kept undigested at most (see the module docstring): those that arrived within
#: :data:`SAME_CALL_SECONDS` of the newest arrival; a burst beyond this many is digested as
#: it leaves.
KEPT = 64


def prompt_digest(req: Request) -> int:
    """A digest of a request's prompt as sent: the parts' kinds, roles and texts in order (not
    their field paths, which name the producer's shape), or a hashed trace's block ids."""
    if req.hashed is not None:
        return hash((req.hashed.block_tokens, req.hashed.block_ids))
    return hash(tuple(map(_SENT, req.parts)))


def same_time(a: float | None, b: float | None) -> bool:
    """Whether two arrival times (epoch seconds) agree within :data:`SAME_CALL_SECONDS`; an
    untimed request agrees with nothing (nothing shows it is the same call)."""
    return a is not None and b is not None and abs(a - b) <= SAME_CALL_SECONDS


class SeenCalls:
    """The requests a run has passed on so far.

    Attributes:
        ids: request id → ``(path, line, arrival, prompt digest)`` of the first request with it;
            the digest is ``None`` while the request is kept undigested, and stays ``None`` for
            one that left untimed or older than :data:`SAME_CALL_SECONDS` before the newest
            arrival (no later record in arrival order can log the same call; one that arrives
            out of order by more than that is taken for an id reused: both are audited).
        prompts: prompt digest → ``(path, line, arrival, id)`` of the latest request with it;
            kept only when the run reads several files (``by_prompt``), where it finds the same
            calls logged under other ids by another file.
    """

    __slots__ = ("ids", "prompts", "_kept", "_order", "_newest")

    def __init__(self, by_prompt: bool = False) -> None:
        self.ids: dict[str, tuple[str, int, float | None, int | None]] = {}
        self.prompts: dict[int, tuple[str, int, float | None, str]] | None = {} if by_prompt else None
        self._kept: dict[str, Request] = {}  # id → its request, undigested (one file's run)
        self._order: deque[tuple[float, str]] = deque()  # (arrival, id) of the kept, as kept
        self._newest = float("-inf")

    def check(self, req: Request, path: str) -> tuple[str, tuple[str, int] | None]:
        """Register a request about to be passed on and say what it is.

        Returns:
            ``(verdict, earlier)``: ``("new", None)``; ``("same-call", (path, line))``: the same
            id, prompt and time as the earlier request at ``(path, line)`` (count it as a
            duplicate, do not pass it on); ``("id-reused", (path, line))``: the id of an earlier
            request with another prompt or time (audit it); ``("same-prompt", (path, line))``:
            another id, but the prompt and time of a request in another file (audit it).
        """
        digest = prompt_digest(req) if self.prompts is not None else None
        t = req.arrival
        prev = self.ids.get(req.id)
        if prev is not None:
            if same_time(prev[2], t):
                earlier = prev[3]
                if earlier is None and req.id in self._kept:
                    earlier = self._digest(req.id)
                if earlier is not None and earlier == (digest if digest is not None else prompt_digest(req)):
                    return "same-call", (prev[0], prev[1])
            verdict: tuple[str, tuple[str, int] | None] = ("id-reused", (prev[0], prev[1]))
        else:
            self.ids[req.id] = (path, req.source.line, t, digest)
            if digest is None and t is not None:
                self._keep(req, t)
            verdict = ("new", None)
        if self.prompts is not None:
            other = self.prompts.get(digest)
            self.prompts[digest] = (path, req.source.line, t, req.id)
            if verdict[0] == "new" and other is not None and other[0] != path and other[3] != req.id \
                    and same_time(other[2], t):
                verdict = ("same-prompt", (other[0], other[1]))
        return verdict

    def _digest(self, rid: str) -> int:
        """Digest a kept request now, in ``ids``; it stays kept until it leaves in order."""
        path, line, t, _ = self.ids[rid]
        d = prompt_digest(self._kept[rid])
        self.ids[rid] = (path, line, t, d)
        return d

    def _keep(self, req: Request, t: float) -> None:
        """Keep a new timed request undigested; let go of those a later record in arrival
        order can no longer share the time of (digesting those that leave for room first)."""
        self._kept[req.id] = req
        self._order.append((t, req.id))
        self._newest = max(self._newest, t)
        horizon = self._newest - SAME_CALL_SECONDS
        order = self._order
        while order and (order[0][0] < horizon or len(order) > KEPT):
            t0, rid = order.popleft()
            if t0 >= horizon and self.ids[rid][3] is None:  # it may still be logged again
                self._digest(rid)
            del self._kept[rid]
