"""What reading one record can end as, besides a :class:`~promptcache.model.Request`.

Every input record (a JSONL line, a JSON array item, a CSV row, a text log line, or one span,
observation or row inside a record that holds several) ends as exactly one of:

- a **request** (a :class:`~promptcache.model.Request` with prompt parts or block hashes);
- a **usage-only** record (a request without a prompt: reported usage, no content);
- **joined** to another record's request (a batch output joined to its input by ``custom_id``,
  the log record that carries a span's content, a server's "finished" line);
- a **duplicate** of a call counted once already (a wrapper span or generation that logs the
  same call as its leaf);
- **skipped**, with a reason (a record of a known producer that is no LLM call, or one whose
  content the log does not hold), or **malformed** (a :class:`~promptcache.errors.BadRecord`).

Readers return :class:`Keyed` around a request that later records may join or supersede, and
:class:`Skipped` for a record that is no request; ``promptcache.ingest`` counts the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Request


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record (or an item inside one) of a known producer that holds no LLM request to audit
    (a Langfuse ``SPAN`` observation, an OpenTelemetry ``execute_tool`` span, an encrypted body).
    Counted by ``reason`` and never reported as an error.

    Attributes:
        reason: short, stable, human-readable reason (the count key).
    """

    reason: str


@dataclass(slots=True)  # one per keyed record: not frozen (a frozen dataclass's __init__ costs 5x)
class Keyed:
    """A request with the keys by which later records of the same run find it.

    Attributes:
        request: the request (its parts may be empty: a usage-only record, or one whose content
            arrives on a later record).
        keys: join keys (``"<reader>:<id>"``): a later :class:`Keyed` with one of these keys is
            joined to this request (the reader's ``merge`` combines the two) and counted as
            joined.
        supersedes: keys of requests this one is the leaf call of (a wrapper generation or span
            that logs the same call): those records count as duplicates, whichever comes first.
    """

    request: Request
    keys: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()


#: What a reader returns for one record: one outcome, or one per item of a record that holds
#: several (each item's outcome, in order; a malformed item is a ``BadRecord`` instance).
Outcome = Request | Keyed | Skipped | Exception
