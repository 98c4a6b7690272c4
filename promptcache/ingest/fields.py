"""Field helpers shared by the log readers: arrival times, ids, nested lookups."""

from __future__ import annotations

import time as _time
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from collections.abc import Mapping
from typing import Any, Iterable

from .common import MAPPING

#: Keys that hold a request's arrival time, in the order they are tried, on the wrapper
#: record first and then on the request body.
TIME_KEYS = (
    "timestamp", "arrival_time", "request_time", "created_at", "createdAt", "startTime",
    "start_time", "request_created_at", "time", "ts", "created",
)
#: Keys that hold a request id.
ID_KEYS = ("request_id", "id", "custom_id", "requestId", "trace_id")
#: Keys that hold a session / conversation id, tried on the wrapper, body and ``metadata``.
SESSION_KEYS = (
    "session_id", "sessionId", "conversation_id", "conversationId", "thread_id", "chat_id",
    "user_id", "userId", "user",
)

# Epoch values above this are milliseconds (1e11 s is the year 5138; 1e11 ms is 1973).
_MS_THRESHOLD = 1e11
_US_THRESHOLD = 1e14
#: Seconds since the epoch that a calendar can show (years 1 to 9999): a time outside cannot be
#: placed on a report's axis, so its request is left untimed.
MIN_SECONDS = -62135596800.0
MAX_SECONDS = 253402300799.0
#: A time this far past the clock of the machine reading the log is counted as "far future".
FUTURE_SLACK = 366 * 86400.0
_ZONE_WORDS = (" UTC", " GMT", " Z")


class TimeNotes:
    """What reading one file's times found, for its warnings: times without a zone (read as
    UTC), times that are not times (the request is left untimed), negative (before 1970) and
    far-future times. ``line`` is set by the reader loop before each record.

    Attributes:
        naive: times without a zone; ``naive_example``: ``(line, value)`` of the first.
        unusable: times left out; ``unusable_examples``: the first ``(line, reason)`` pairs.
        negative / future: times before 1970 / more than a year past the reading machine's clock
            (``future_example``: ``(line, seconds)``). Such a time is no arrival any log of real
            traffic can have (a clock reset, a placeholder date): its request is left untimed,
            so that it drives no TTL expiry, no idle gap and no "rules checked N days before
            the newest request"; it is counted here, apart from ``unusable``.
    """

    EXAMPLES = 5

    def __init__(self) -> None:
        self.line = 0
        self.naive = 0
        self.naive_example: tuple[int, str] | None = None
        self.unusable = 0
        self.unusable_examples: list[tuple[int, str]] = []
        self.negative = 0
        self.yearless = 0
        self.future = 0
        self.future_example: tuple[int, float] | None = None
        import time

        self._now = time.time()

    def bad(self, reason: str) -> None:
        self.unusable += 1
        if len(self.unusable_examples) < self.EXAMPLES:
            self.unusable_examples.append((self.line, reason))

    def got(self, seconds: float) -> bool:
        """Count a time before 1970 or more than a year ahead; whether it is usable (neither)."""
        if seconds < 0:
            self.negative += 1
            return False
        if seconds > self._now + FUTURE_SLACK:
            self.future += 1
            if self.future_example is None:
                self.future_example = (self.line, seconds)
            return False
        return True

    def notes(self, path: str) -> list[str]:
        """One-line warnings about this file's times (empty when all were fine)."""
        out = []
        if self.unusable:
            ex = "; ".join(f"line {ln}: {r}" for ln, r in self.unusable_examples)
            out.append(f"{path}: {self.unusable:,} request time(s) are no usable time and were left out "
                       f"(those requests are untimed: {ex})")
        if self.naive:
            ln, v = self.naive_example or (0, "")
            out.append(f"{path}: {self.naive:,} time(s) carry no time zone (e.g. line {ln}: {v!r}): read as UTC")
        if self.yearless:
            out.append(f"{path}: {self.yearless:,} time(s) carry no year (vLLM's logger): the year is the log file's "
                       "modification year, a guess")
        untimed = ("left untimed: each is audited right after the request before it in its file, and no "
                   "TTL is evaluated for it")
        if self.negative:
            out.append(f"{path}: {self.negative:,} time(s) are before 1970 (negative epoch seconds): {untimed}")
        if self.future:
            ln, v = self.future_example or (0, 0.0)
            out.append(f"{path}: {self.future:,} time(s) lie more than a year in the future (e.g. line {ln}: "
                       f"{v:.0f} epoch seconds): {untimed}")
        return out


#: The notes of the file being read (set by ``promptcache.ingest.read_requests``); ``None``:
#: problems are not recorded.
NOTES: TimeNotes | None = None


def _epoch(v: float) -> float | None:
    if v != v or v in (float("inf"), float("-inf")):
        return _problem(f"not a time: {v!r}")
    if abs(v) > _US_THRESHOLD:
        v /= 1e6
    elif abs(v) > _MS_THRESHOLD:
        v /= 1e3
    if not MIN_SECONDS <= v <= MAX_SECONDS:
        return _problem(f"time out of any calendar's range: {v:.6g}")
    if v < 0 or v > _now() + FUTURE_SLACK:  # no real arrival (counted when NOTES is set): untimed
        if NOTES is not None:
            NOTES.got(v)
        return None
    return v


def _now() -> float:
    return NOTES._now if NOTES is not None else _time.time()


def _problem(reason: str) -> None:
    if NOTES is not None:
        NOTES.bad(reason)
    return None


def parse_time(value: Any) -> float | None:
    """Parse an arrival time into UTC seconds since the epoch; ``None`` when it is no time.

    Accepts epoch seconds, milliseconds or microseconds (told apart by magnitude), ISO 8601
    strings (``2026-11-29T10:00:00Z``, with or without zone, ``T`` or a space; naive times are
    UTC and counted), ``... UTC`` (BigQuery) and RFC 2822 strings. A value that is no time
    (``"yesterday"``, ``NaN``, ``1e300``, an object) gives ``None``: the request stays untimed
    and the reason is counted in :data:`NOTES` with its line. A time before 1970 or more than a
    year past the reading machine's clock is no arrival either (``None``; counted apart, see
    :class:`TimeNotes`).

    >>> parse_time("2026-01-01T00:00:01Z")
    1767225601.0
    >>> parse_time(1767225601000)
    1767225601.0
    >>> parse_time("yesterday") is None
    True
    """
    if isinstance(value, bool):
        return _problem(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        try:
            return _epoch(float(value))
        except OverflowError:  # an integer beyond any float
            return _problem("not a time: a number too large for a float")
    if isinstance(value, str):
        s = value.strip()
        try:
            num = float(s)
        except ValueError:
            num = None
        if num is not None:
            return _epoch(num)
        iso = s
        for word in _ZONE_WORDS:
            if iso.endswith(word):
                iso = iso[:-len(word)] + "+00:00"
                break
        else:
            if iso.endswith(("Z", "z")):
                iso = iso[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(iso)
        except ValueError:
            try:
                dt = parsedate_to_datetime(s)
            except (TypeError, ValueError, IndexError, OverflowError):
                return _problem(f"not a time: {_short(value)!r}")
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
            if NOTES is not None:
                NOTES.naive += 1
                if NOTES.naive_example is None:
                    NOTES.naive_example = (NOTES.line, _short(s))
        try:
            return _epoch(dt.timestamp())
        except (OverflowError, OSError, ValueError):
            return _problem(f"time out of range: {_short(value)!r}")
    return _problem(f"not a time: a {type(value).__name__}")


def _short(v: Any, n: int = 40) -> str:
    s = str(v)
    return s if len(s) <= n else s[:n] + "…"


def first(mappings: Iterable[Mapping[str, Any] | None], keys: Iterable[str]) -> Any:
    """Return the first non-empty value of any key in any mapping (mappings outer loop)."""
    keys = tuple(keys)
    for m in mappings:
        if not isinstance(m, MAPPING):
            continue
        for k in keys:
            v = m.get(k)
            if v not in (None, ""):
                return v
    return None


def find_arrival(*mappings: Mapping[str, Any] | None) -> float | None:
    """Arrival time from the usual fields of the given mappings (wrapper first), or ``None``
    (none present, or none usable: see :func:`parse_time`)."""
    v = first(mappings, TIME_KEYS)
    return None if v is None else parse_time(v)


def find_session(*mappings: Mapping[str, Any] | None) -> str | None:
    """Session / conversation / user id from the mappings and their ``metadata``."""
    ms: list[Mapping[str, Any] | None] = []
    for m in mappings:
        if isinstance(m, MAPPING):
            ms.append(m)
            md = m.get("metadata")
            if isinstance(md, MAPPING):
                ms.append(md)
    v = first(ms, SESSION_KEYS)
    return None if v is None else str(v)


def get_path(obj: Any, *keys: str | int) -> Any:
    """Nested lookup that returns ``None`` on any missing step."""
    for k in keys:
        if isinstance(k, int):
            if not isinstance(obj, list) or not -len(obj) <= k < len(obj):
                return None
            obj = obj[k]
        else:
            if not isinstance(obj, MAPPING):
                return None
            obj = obj.get(k)
    return obj
