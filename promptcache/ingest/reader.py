"""The reader protocol: one producer's record shapes, how to tell a record is one of them, and
how to read it. :mod:`promptcache.ingest.registry` lists every reader; detection asks them.

A reader says *why* a record is its own (:meth:`Reader.claim` returns the evidence, a short
phrase) so that ``promptcache formats FILE`` can show it, and two readers claiming one record is
a test failure (``tests/test_ingest_registry.py``), not a silent choice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from ..errors import BadRecord
from ..model import Request, Source
from .outcomes import Keyed, Outcome

#: Top-level keys that some specific producer writes and no provider request body has; the
#: generic body readers (bare and gateway-wrapped OpenAI, Anthropic and Gemini bodies) step back
#: from a record holding any of them, and every reader from a record holding another reader's.
#: Filled by :mod:`.registry` from every reader's ``owns``.
FOREIGN: set[str] = set()
#: Keys of a request body: the readers whose records hold their body nested (batch lines, spans)
#: claim no record that has one at its top.
BODY_KEYS = ("messages", "input", "contents", "prompt", "instructions")


class Reader:
    """One producer's record shapes.

    Subclasses set the class attributes and implement :meth:`claim` and :meth:`read`.

    Attributes:
        name: the ``--input-format`` name.
        producer: who writes these records (``Langfuse``, ``AWS Bedrock``).
        shapes: the record shapes read, one line.
        looks_for: what :meth:`claim` checks, one line (docs and ``promptcache formats``).
        records: which records the reader takes: ``json`` (objects), ``text`` (log lines that
            are not JSON, :class:`~promptcache.ingest.jsonio.TextLine`) or ``csv`` (rows,
            :class:`~promptcache.ingest.jsonio.CsvRow`).
        responses_only: the records are responses only (batch outputs, Response objects): a
            file of them is read before the others, so that requests in other files join them.
        owns: top-level keys only this producer writes, never found in another producer's
            records (see :data:`FOREIGN`): a reader claims no record holding another reader's
            (:meth:`alone`), and a reader whose claim needs none of its own keys claims no record
            holding a body key (:data:`BODY_KEYS`), so that no two readers claim one record.
        stateful: the reader keeps per-file state; :meth:`for_file` returns a fresh instance.
    """

    name: ClassVar[str] = ""
    producer: ClassVar[str] = ""
    shapes: ClassVar[str] = ""
    looks_for: ClassVar[str] = ""
    records: ClassVar[str] = "json"
    responses_only: ClassVar[bool] = False
    owns: ClassVar[tuple[str, ...]] = ()
    stateful: ClassVar[bool] = False

    #: ``FOREIGN`` without this reader's own keys (set by the registry).
    others: frozenset[str] = frozenset()

    def alone(self, rec: Any) -> bool:
        """Whether ``rec`` holds no key another reader owns."""
        return self.others.isdisjoint(rec)

    def claim(self, rec: Any) -> str | None:
        """Why ``rec`` is one of this reader's records (a short phrase), or ``None``.

        Must be cheap (a few key lookups): the file's current reader is asked for every record.
        Never raises.
        """
        raise NotImplementedError

    def why_not(self, rec: Any) -> str:
        """Why ``rec`` is not this reader's (for ``promptcache formats``)."""
        if self.records == "text":
            from .jsonio import TextLine

            if not isinstance(rec, TextLine):
                return "not a text log line"
        elif self.records == "csv":
            from .jsonio import CsvRow

            if not isinstance(rec, CsvRow):
                return "not a CSV row"
        return f"needs {self.looks_for}"

    def read(self, rec: Any, src: Source, opts: Any) -> Outcome | list[Outcome]:
        """Read one claimed record.

        Returns:
            One outcome, or a list with one outcome per item for a record that holds several
            (a malformed item is a :class:`~promptcache.errors.BadRecord` instance in the list).

        Raises:
            BadRecord: when the record is malformed.
        """
        raise NotImplementedError

    def merge(self, first: Request, later: Request) -> Request:
        """One request from two records of the same call (joined by a :class:`Keyed` key):
        ``first``'s fields, with what it lacks taken from ``later`` (prompt parts, usage,
        response, arrival, model, session)."""
        kw: dict[str, Any] = {}
        if not first.parts and first.hashed is None and (later.parts or later.hashed is not None):
            kw["parts"] = later.parts
            kw["hashed"] = later.hashed
            kw["params"] = {**later.params, **first.params}
        for name in ("usage", "response", "arrival", "model", "session", "cache_key", "previous_response_id"):
            if getattr(first, name) is None and getattr(later, name) is not None:
                kw[name] = getattr(later, name)
        if first.provider is None and later.provider is not None:
            kw["provider"] = later.provider
        if later.affinity and not first.affinity:
            kw["affinity"] = later.affinity
        return replace(first, **kw) if kw else first

    def for_file(self) -> Reader:
        """The reader to use for one file (a fresh instance when :attr:`stateful`)."""
        return type(self)() if self.stateful else self

    def __call__(self, rec: Any, src: Source, opts: Any) -> list[Request | Any]:
        """``read`` with :class:`Keyed` unwrapped to its request (the form the proposal pass
        reads records in)."""
        got = self.read(rec, src, opts)
        items = got if isinstance(got, list) else [got]
        return [i.request if isinstance(i, Keyed) else i for i in items]


def mapping(rec: Any) -> bool:
    """Whether ``rec`` is a JSON object (dicts first: the ABC check is slow)."""
    if type(rec) is dict:
        return True
    from collections.abc import Mapping

    return isinstance(rec, Mapping)


def bad(what: str) -> BadRecord:
    """A :class:`~promptcache.errors.BadRecord` (shorthand for readers)."""
    return BadRecord(what)
