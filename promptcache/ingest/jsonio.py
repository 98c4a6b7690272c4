"""Read records from JSONL, JSON arrays, concatenated JSON objects, CSV, text logs and gzip
files (or standard input, ``-``), each with its 1-based line number.

What a file holds is told from its content, not its name:

- ``[`` first: a JSON array (an item per record); a text log that starts with ``[`` (``[GIN]``
  lines) is read line by line instead;
- a first line of comma-separated column names (``Timestamp,Model,Request tokens``) or a
  ``.csv`` name: CSV, a :class:`CsvRow` per row;
- otherwise lines: each JSON line is a record, each other line a :class:`TextLine` (text logs:
  vLLM, Ollama); pretty-printed objects written one after another (a JSON object per record,
  as the OpenTelemetry console exporter prints spans) are read as such.

A JSON array where a record is expected (a JSONL line holding ``[{...}, {...}]``, as gateway
dumps that batch records write; an array among concatenated objects) holds one record per
item, as a whole-file array does; each item keeps the line the array starts on (an empty one is
a :class:`~promptcache.errors.BadRecord`: a record that holds none). Nothing after a whole-file array's closing ``]`` is dropped: what follows is
read as further values.

A line that starts like JSON but does not decode becomes a :class:`~promptcache.errors.BadRecord`
in the stream (the caller counts and reports it); the rest of the file is still read. A lone
surrogate escape (``"\\ud800"``) or bytes that are not UTF-8 are decoded as Python's ``json``
decodes them and then made U+FFFD (orjson refuses them), and counted (:class:`ReadNotes`).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import sys
import tempfile
import zlib
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
#: The name standard input goes by on the command line.
STDIN = "-"
_CSV_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_ ().\-/]{0,60}$")
_SURROGATE = re.compile("[\ud800-\udfff]")
_TEXT_BRACKET = re.compile(rb"^\[[A-Za-z][A-Za-z0-9_ -]*\]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class TextLine(str):
    """A line of a text log (not JSON), without its line ending."""

    __slots__ = ()


class CsvRow(dict):  # type: ignore[type-arg]
    """One CSV row: column name → cell text (``None`` for a missing cell)."""

    __slots__ = ()


class ReadNotes:
    """What decoding one file needed beyond plain JSON, for its warnings.

    Attributes:
        replaced: records whose text held a lone surrogate escape or bytes that are not UTF-8
            (decoded as U+FFFD); ``replaced_line``: the first one's line.
    """

    def __init__(self) -> None:
        self.replaced = 0
        self.replaced_line = 0
        self.truncated: str | None = None  # why a compressed file ended early
        self.last_good_line = 0  # the last complete record's line before it did

    def notes(self, path: str) -> list[str]:
        """One-line warnings (empty when nothing was replaced or cut off)."""
        out = []
        if self.replaced:
            out.append(f"{path}: {self.replaced:,} record(s) held a lone surrogate escape or bytes that are not UTF-8 "
                       f"(first at line {self.replaced_line}): decoded as U+FFFD, as Python's json does")
        if self.truncated:
            out.append(f"{path}: the compressed file is truncated ({self.truncated}): read the complete records up "
                       f"to line {self.last_good_line:,}, the rest is lost (--strict fails on it)")
        return out


class _Truncatable(io.RawIOBase):
    """A gzip stream that ends, instead of raising, where the compressed data is cut off or
    corrupt: what decompressed before it is read as usual, and ``notes.truncated`` says why it
    ended (the caller warns, or fails under ``--strict``)."""

    def __init__(self, gz: gzip.GzipFile, notes: ReadNotes):
        self.gz, self.notes_ = gz, notes

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self.notes_.truncated:
            return 0
        try:
            data = self.gz.read1(len(b))  # one chunk: what decompressed before a cut is kept
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            self.notes_.truncated = str(e) or type(e).__name__
            return 0
        n = len(data)
        b[:n] = data
        return n

    def close(self) -> None:
        self.gz.close()
        super().close()


_stdin_copy: str | None = None
#: Where the copy of standard input is, for the worker processes of the same run (a local Dask
#: cluster): ``<pid of the reading process>:<path>``.
STDIN_COPY_ENV = "PROMPTCACHE_STDIN_COPY"


def stdin_copy() -> str:
    """A file holding what standard input holds, read once per run (a run may read its inputs
    more than once: the proposal pass reads them again, and worker processes read them too)."""
    global _stdin_copy
    if _stdin_copy is None:
        pid, _, name = os.environ.get(STDIN_COPY_ENV, "").partition(":")
        if name and pid != str(os.getpid()) and os.path.exists(name):
            _stdin_copy = name  # a worker of the process that read standard input
            return name
        fd, name = tempfile.mkstemp(prefix="promptcache-stdin-", suffix=".log")
        with os.fdopen(fd, "wb") as out:
            src = sys.stdin.buffer
            while True:
                chunk = src.read(READ_BUFFER)
                if not chunk:
                    break
                out.write(chunk)
        import atexit

        atexit.register(lambda: os.path.exists(name) and os.unlink(name))
        os.environ[STDIN_COPY_ENV] = f"{os.getpid()}:{name}"
        _stdin_copy = name
    return _stdin_copy


def local_path(path: str | Path) -> str:
    """The file to open for an input path (``-`` is a copy of standard input)."""
    return stdin_copy() if str(path) == STDIN else str(path)


def open_text(path: str | Path) -> IO[bytes]:
    """Open a log file for binary reading, transparently gunzipping ``.gz`` files (told by their
    magic bytes); ``-`` reads standard input.

    Raises:
        InputError: when the file cannot be opened.
    """
    p = Path(local_path(path))
    if p.is_dir():
        raise InputError("is a directory, not a log file", path=str(path))
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


def _looks_csv(first_line: bytes, path: str | Path) -> bool:
    """A first line of at least two column names separated by commas (or a ``.csv`` name)."""
    name = str(path).lower()
    if name.endswith((".csv", ".csv.gz")):
        return True
    text = first_line.decode("utf-8", "replace").strip()
    if "," not in text or "{" in text:
        return False
    fields = next(csv.reader([text]), [])
    return len(fields) >= 2 and all(_CSV_FIELD.match(f.strip()) for f in fields)


def iter_records(path: str | Path, reuse_history: bool = False, notes: ReadNotes | None = None) -> Iterator[Record]:
    """Yield ``(line, object)`` for every record in a file (see the module docstring).

    With ``reuse_history``, JSONL lines are decoded by :class:`~.resent.ResentLines`: a
    message array that repeats an earlier line's is decoded only for what it adds, and the
    records share the repeated message objects (callers must not modify records).

    Blank lines and a UTF-8 byte order mark are skipped. A line that starts like JSON but does
    not decode yields ``(line, BadRecord(reason))``. A syntax error inside a JSON array ends
    the file with one BadRecord (nothing after it can be located reliably).

    A ``.gz`` cut off or corrupt part-way ends where it stops (``notes.truncated`` says why);
    its partial last line is a BadRecord.

    Raises:
        InputError: when the file cannot be read at all (a ``.gz`` whose header is not gzip).
    """
    raw = open_text(path)
    notes = notes if notes is not None else ReadNotes()
    if isinstance(raw, gzip.GzipFile):  # a cut-off .gz still gives its complete records
        raw = _Truncatable(raw, notes)  # type: ignore[assignment]
    fh = raw if hasattr(raw, "peek") else io.BufferedReader(raw, READ_BUFFER)  # type: ignore[arg-type]
    try:
        if fh.peek(3)[:3] == _BOM:  # Windows tools (PowerShell, Excel) start UTF-8 files with one
            fh.read(3)
        first = _first_char(fh)
        head = fh.peek(65536)  # type: ignore[attr-defined]
        first_line = head.split(b"\n", 1)[0]
        if first == b"[" and b"\n" in head and _is_array(first_line):
            yield from _iter_lines(fh, reuse_history, notes)  # JSON lines, the first one an array of records
            return
        if first == b"[":
            data = fh.read()
            items = _iter_array(data, notes)
            one = next(items, None)
            if one is not None and isinstance(one[1], BadRecord):  # not an array: "[GIN] ..." text lines
                yield from _iter_lines(io.BytesIO(data), False, notes)
                return
            if one is not None:
                yield one
            yield from items
            return
        if first and first not in b"{\"" and _looks_csv(first_line, path):
            yield from _iter_csv(fh)
            return
        yield from _iter_lines(fh, reuse_history, notes)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise InputError(f"cannot read: {e}", path=str(path)) from None
    finally:
        fh.close()


def _is_array(line: bytes) -> bool:
    """Whether one line is a whole JSON array (not the first line of a pretty-printed one, nor
    a ``[GIN]`` text line)."""
    try:
        return isinstance(orjson.loads(line), list)
    except orjson.JSONDecodeError:
        return False


def _items(lineno: int, obj: Any) -> Iterator[Record]:
    """A decoded value as records: an array's items (each a record of the array's line), else
    the value itself."""
    if isinstance(obj, list):
        if not obj:
            yield lineno, BadRecord("an empty JSON array: no record in it")
        for item in obj:
            yield lineno, item
    else:
        yield lineno, obj


def _iter_lines(fh: Any, reuse_history: bool, notes: ReadNotes) -> Iterator[Record]:
    loads = ResentLines().loads if reuse_history else orjson.loads
    for lineno, line in enumerate(fh, 1):
        if len(line) < 3 and not line.strip():  # blank (copying every long line to strip it costs)
            continue
        try:
            rec = loads(line)
        except orjson.JSONDecodeError as e:
            stripped = line.strip()
            if not stripped:
                continue
            if stripped[:1] not in (b"{", b"[") or _TEXT_BRACKET.match(stripped):
                yield lineno, TextLine(stripped.decode("utf-8", "replace"))  # a text log line ("[GIN] ...")
                continue
            if stripped.startswith(b"{") and lineno == 1 and (stripped.endswith(b"{") or stripped == b"{"):
                # pretty-printed objects, one after another (or a single one), not JSONL
                yield from _iter_concatenated(stripped + b"\n" + fh.read(), notes)
                return
            yield from _items(lineno, _fallback(line, e, lineno, notes))
            continue
        if type(rec) is list:  # a line holding an array of records
            yield from _items(lineno, rec)
        else:
            yield lineno, rec


def _fallback(line: bytes, err: Exception, lineno: int, notes: ReadNotes) -> Any:
    """The record Python's ``json`` decodes from a line orjson refused for a lone surrogate
    escape or bytes that are not UTF-8 (strings made U+FFFD), else a BadRecord."""
    msg = str(err).split(":")[0]
    if "surrogate" not in msg and "utf-8" not in msg.lower() and "UTF-8" not in msg:
        return BadRecord(f"invalid JSON: {msg}")
    try:
        obj = json.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return BadRecord(f"invalid JSON: {msg}")
    notes.replaced += 1
    if not notes.replaced_line:
        notes.replaced_line = lineno
    return _no_surrogates(obj)


def _no_surrogates(obj: Any) -> Any:
    """``obj`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    def fix(s: str) -> str:
        return _SURROGATE.sub("\ufffd", s)

    if isinstance(obj, str):
        return fix(obj)
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k in list(x):
                v = x[k]
                if isinstance(k, str) and _SURROGATE.search(k):
                    del x[k]
                    k = fix(k)
                if isinstance(v, str):
                    v = fix(v)
                elif isinstance(v, (dict, list)):
                    stack.append(v)
                x[k] = v
        elif isinstance(x, list):
            for i, v in enumerate(x):
                if isinstance(v, str):
                    x[i] = fix(v)
                elif isinstance(v, (dict, list)):
                    stack.append(v)
    return obj


def _decode_text(data: bytes, notes: ReadNotes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        notes.replaced += 1
        notes.replaced_line = notes.replaced_line or 1
        return data.decode("utf-8", errors="replace")


def _iter_concatenated(data: bytes, notes: ReadNotes) -> Iterator[Record]:
    """JSON values written one after another (whitespace between), each with its first line
    (an array's items each with the array's first line)."""
    text = _decode_text(data, notes)
    yield from _values(text, 0, 1, _no_surrogates if _SURROGATE_ESCAPE.search(text) else (lambda x: x))


def _values(text: str, p: int, line: int, fix: Any) -> Iterator[Record]:
    """The JSON values of ``text`` from offset ``p`` (on line ``line``) on, as records."""
    dec = json.JSONDecoder()
    n = len(text)
    pos = p
    while True:
        while p < n and text[p] in " \t\r\n":
            p += 1
        if p >= n:
            return
        line += text.count("\n", pos, p)
        pos = p
        try:
            obj, end = dec.raw_decode(text, p)
        except json.JSONDecodeError as e:
            yield line + e.lineno - 1, BadRecord(f"invalid JSON: {e.msg}")
            return
        except RecursionError:
            yield line, BadRecord("invalid JSON: nested too deep")
            return
        yield from _items(line, fix(obj))
        p = end


def _iter_csv(fh: Any) -> Iterator[Record]:
    """CSV rows as :class:`CsvRow` (header → cell), each with its first line."""
    text = io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")
    reader = csv.reader(text)
    header: list[str] | None = None
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            yield reader.line_num, BadRecord(f"invalid CSV: {e}")
            continue
        if not row or all(not c.strip() for c in row):
            continue
        if header is None:
            header = [c.strip() for c in row]
            continue
        rec = CsvRow(zip(header, (c.strip() for c in row)))
        if len(row) < len(header):
            for k in header[len(row):]:
                rec[k] = None
        yield reader.line_num, rec


def _iter_array(data: bytes, notes: ReadNotes) -> Iterator[Record]:
    text = _decode_text(data, notes)
    fix = _no_surrogates if _SURROGATE_ESCAPE.search(text) else (lambda x: x)
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
    p = skip_ws(p + 1)  # past '['
    while p < n and text[p] != "]":
        try:
            obj, end = dec.raw_decode(text, p)
        except json.JSONDecodeError as e:
            yield e.lineno, BadRecord(f"invalid JSON in array: {e.msg}")
            return
        except RecursionError:
            yield line_at(p), BadRecord("invalid JSON in array: nested too deep")
            return
        yield line_at(p), fix(obj)
        p = skip_ws(end)
        if p < n and text[p] == ",":
            p = skip_ws(p + 1)  # a trailing comma before "]" (Helicone's export CLI writes one) ends it
        elif p < n and text[p] != "]":
            yield line_at(p), BadRecord("expected ',' or ']' in JSON array")
            return
    p = skip_ws(p + 1)  # past ']'
    if p < n:  # more after the array (JSON lines whose first line is an array): nothing is dropped
        yield from _values(text, p, line_at(p), fix)
