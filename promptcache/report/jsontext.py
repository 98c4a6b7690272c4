"""JSON text of the commands' records (``--format json``)."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

#: Characters JSON may hold raw that a terminal acts on: the C1 controls and the bidirectional
#: embeddings, overrides and isolates (JSON writers already escape C0; see
#: :data:`promptcache.report.terminal.CONTROL`).
_RAW_CONTROL = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """JSON text with the characters of :data:`_RAW_CONTROL` written as ``\\uXXXX`` escapes:
    the same JSON value, safe to print to a terminal (raw, they can occur only inside strings).

    >>> escape_controls('{"a": "\x9b31m\u202e"}')
    '{"a": "\\\\u009b31m\\\\u202e"}'
    """
    if text.isascii() and "\x7f" not in text:
        return text
    return _RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps(record: Any) -> str:
    """A record as indented JSON text (UTF-8 characters kept, not escaped).

    orjson writes it: an audit's record runs to megabytes (a namespace per cache key), and the
    standard library's indenting encoder is pure Python (0.36 s of a 100k-request audit's
    serial tail). Floats are written in their shortest round-trip form (``1e-5``), NaN and
    infinities as ``null``, and non-string keys as strings. A record orjson cannot write (an
    integer beyond 64 bits) is written by the standard library, with the same indentation.
    Control characters in strings are escaped (:func:`escape_controls`), so the text is safe
    to print to a terminal.

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
        text = orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        text = json.dumps(record, ensure_ascii=False, indent=2)
    return escape_controls(text)
