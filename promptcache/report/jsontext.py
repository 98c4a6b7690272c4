"""JSON text of the commands' records (``--format json``)."""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(record: Any) -> str:
    """A record as indented JSON text (UTF-8 characters kept, not escaped).

    orjson writes it: an audit's record runs to megabytes (a namespace per cache key), and the
    standard library's indenting encoder is pure Python (0.36 s of a 100k-request audit's
    serial tail). Floats are written in their shortest round-trip form (``1e-5``), NaN and
    infinities as ``null``, and non-string keys as strings. A record orjson cannot write (an
    integer beyond 64 bits) is written by the standard library, with the same indentation.

    Raises:
        TypeError: for a value JSON cannot hold (a set, a ``Decimal``).

    >>> print(dumps({"a": [1, 0.5], "é": None}))
    {
      "a": [
        1,
        0.5
      ],
      "é": null
    }
    """
    try:
        return orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        return json.dumps(record, ensure_ascii=False, indent=2)
