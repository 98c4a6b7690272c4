"""Field helpers shared by the log readers: arrival times, ids, nested lookups."""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from collections.abc import Mapping
from typing import Any, Iterable

from ..errors import BadRecord
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


def parse_time(value: Any) -> float:
    """Parse an arrival time into UTC seconds since the epoch.

    Accepts epoch seconds, milliseconds or microseconds (told apart by magnitude), ISO 8601
    strings (``2026-11-29T10:00:00Z``, with or without zone; naive times are UTC) and
    RFC 2822 strings.

    Raises:
        BadRecord: when the value is not a time.

    >>> parse_time("2026-01-01T00:00:01Z")
    1767225601.0
    >>> parse_time(1767225601000)
    1767225601.0
    """
    if isinstance(value, bool):
        raise BadRecord(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        v = float(value)
        if v > _US_THRESHOLD:
            return v / 1e6
        if v > _MS_THRESHOLD:
            return v / 1e3
        return v
    if isinstance(value, str):
        s = value.strip()
        try:
            return parse_time(float(s))
        except ValueError:
            pass
        iso = s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s
        try:
            dt = datetime.fromisoformat(iso)
        except ValueError:
            try:
                dt = parsedate_to_datetime(s)
            except (TypeError, ValueError):
                raise BadRecord(f"not a time: {value!r}") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    raise BadRecord(f"not a time: {value!r}")


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
    """Arrival time from the usual fields of the given mappings (wrapper first), or ``None``.

    Raises:
        BadRecord: when a time field is present but unparseable.
    """
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
