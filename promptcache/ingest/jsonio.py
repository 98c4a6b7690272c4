"""Read records from JSONL, JSON-array and gzip files, each with its 1-based line number.

A line that is not valid JSON becomes a :class:`~promptcache.errors.BadRecord` in the stream
(the caller counts and reports it); the rest of the file is still read.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import IO, Any, Iterator

import orjson

from ..errors import BadRecord, InputError
from .resent import ResentLines

Record = tuple[int, Any]  # (line, parsed object or BadRecord)
#: Read buffer in bytes: agent logs hold lines of tens of kilobytes, which the default 8 KiB
#: buffer reads in many pieces (four times slower).
READ_BUFFER = 1 << 20
_BOM = b"\xef\xbb\xbf"


def open_text(path: str | Path) -> IO[bytes]:
    """Open a log file for binary reading, transparently gunzipping ``.gz`` files.

    Raises:
        InputError: when the file cannot be opened.
    """
    p = Path(path)
    try:
        fh = open(p, "rb", buffering=READ_BUFFER)
    except OSError as e:
        raise InputError(f"cannot open: {e.strerror or e}", path=str(path)) from None
    head = fh.peek(2)[:2] if hasattr(fh, "peek") else b""
    if head == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh)  # type: ignore[return-value]
    return fh


def _first_char(fh: IO[bytes]) -> bytes:
    """The first non-whitespace byte, without consuming the stream (buffered peek)."""
    buf = fh.peek(4096) if hasattr(fh, "peek") else b""  # type: ignore[attr-defined]
    s = buf.lstrip()
    return s[:1]


def iter_records(path: str | Path, reuse_history: bool = False) -> Iterator[Record]:
    """Yield ``(line, object)`` for every record in a JSONL file, a JSON array, or one object.

    With ``reuse_history``, JSONL lines are decoded by :class:`~.resent.ResentLines`: a
    message array that repeats an earlier line's is decoded only for what it adds, and the
    records share the repeated message objects (callers must not modify records).

    Blank lines and a UTF-8 byte order mark are skipped. An unparseable JSONL line yields
    ``(line, BadRecord(reason))``.
    A syntax error inside a JSON array ends the file with one BadRecord (nothing after it can
    be located reliably).

    Raises:
        InputError: when the file cannot be read at all.
    """
    raw = open_text(path)
    fh = raw if hasattr(raw, "peek") else io.BufferedReader(raw)  # type: ignore[arg-type]
    try:
        if fh.peek(3)[:3] == _BOM:  # Windows tools (PowerShell, Excel) start UTF-8 files with one
            fh.read(3)
        first = _first_char(fh)
        if first == b"[":
            yield from _iter_array(fh.read())
            return
        loads = ResentLines().loads if reuse_history else orjson.loads
        for lineno, line in enumerate(fh, 1):
            if len(line) < 3 and not line.strip():  # blank (copying every long line to strip it costs)
                continue
            try:
                yield lineno, loads(line)
            except orjson.JSONDecodeError as e:
                line = line.strip()
                if not line:
                    continue
                if first == b"{" and lineno == 1 and line.endswith(b"{"):
                    # A pretty-printed single JSON object, not JSONL.
                    yield from _iter_array(line + b"\n" + fh.read(), single=True)
                    return
                yield lineno, BadRecord(f"invalid JSON: {str(e).split(':')[0]}")
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise InputError(f"cannot read: {e}", path=str(path)) from None
    finally:
        fh.close()


def _iter_array(data: bytes, single: bool = False) -> Iterator[Record]:
    text = data.decode("utf-8", errors="replace")
    dec = json.JSONDecoder()
    pos, line = 0, 1
    n = len(text)

    def skip_ws(p: int) -> int:
        while p < n and text[p] in " \t\r\n":
            p += 1
        return p

    def line_at(p: int) -> int:
        nonlocal pos, line
        line += text.count("\n", pos, p)
        pos = p
        return line

    p = skip_ws(0)
    if single:
        try:
            obj, _ = dec.raw_decode(text, p)
        except json.JSONDecodeError as e:
            yield e.lineno, BadRecord(f"invalid JSON: {e.msg}")
            return
        yield line_at(p), obj
        return
    p = skip_ws(p + 1)  # past '['
    while p < n and text[p] != "]":
        try:
            obj, end = dec.raw_decode(text, p)
        except json.JSONDecodeError as e:
            yield e.lineno, BadRecord(f"invalid JSON in array: {e.msg}")
            return
        yield line_at(p), obj
        p = skip_ws(end)
        if p < n and text[p] == ",":
            p = skip_ws(p + 1)
        elif p < n and text[p] != "]":
            yield line_at(p), BadRecord("expected ',' or ']' in JSON array")
            return
