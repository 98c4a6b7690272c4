"""Reading a template source: its bytes, safely (a FIFO never blocks, a huge file is refused),
and its text, by the encoding it declares.

| the file | decoded as |
|---|---|
| starts with a byte order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE) | that encoding; the mark is not part of the text (columns on line 1 count from the first character after it, as editors show them) |
| ``.py`` with a PEP 263 coding declaration (``# -*- coding: latin-1 -*-`` on line 1 or 2) | the declared encoding, as Python reads it (``tokenize.detect_encoding``) |
| anything else | UTF-8 |

``--fix`` writes a file back in the encoding it was read in, with its byte order mark
(:func:`encode_like`), so a fix never re-encodes a user's file.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

#: The largest file lint reads (bytes); a larger one is an input error, not a prompt.
MAX_FILE_BYTES = 64 * 1024 * 1024

#: Byte order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


@dataclass(frozen=True)
class Encoding:
    """How a file's bytes became its text: the codec, and the byte order mark before it
    (``b""`` when none)."""

    codec: str = "utf-8"
    bom: bytes = b""


class NotText(ValueError):
    """The bytes are not text in the encoding the file declares (or UTF-8): ``message`` names
    the line and column of the first byte that is not."""


def read_bytes(path: Path) -> bytes:
    """A file's bytes, opened so that a file that is not regular (a FIFO put where a template
    was) never blocks: non-blocking open, then ``fstat``.

    Raises:
        InputError: for a file that is not regular or is larger than :data:`MAX_FILE_BYTES`.
        OSError: when it cannot be read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError("not a regular file", path=str(path))
        if st.st_size > MAX_FILE_BYTES:
            raise InputError(f"{st.st_size:,} bytes; lint reads files of at most {MAX_FILE_BYTES:,}", path=str(path))
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    return b"".join(chunks)


def detect(data: bytes, path: str | Path) -> Encoding:
    """The encoding a file declares: its byte order mark, else (Python) its PEP 263 coding
    declaration, else UTF-8.

    Raises:
        NotText: for a Python coding declaration naming no codec Python knows.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return Encoding(codec, bom)
    if str(path).lower().endswith(".py") and b"coding" in data[:400]:
        try:
            codec, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as e:  # an unknown codec, or a cookie that contradicts the BOM
            raise NotText(f"its coding declaration is not one Python reads: {e}") from None
        codec = codecs.lookup(codec).name
        if codec not in ("utf-8", "utf-8-sig"):
            return Encoding(codec)
    return Encoding()


def decode(data: bytes, path: str | Path) -> tuple[str, Encoding]:
    """A file's text and the encoding it was read in (see the module's table).

    Raises:
        NotText: when the bytes are not text in that encoding; the message names the line and
            column (and byte offset) of the first offending byte.
    """
    enc = detect(data, path)
    body = data[len(enc.bom):]
    try:
        return body.decode(enc.codec), enc
    except UnicodeDecodeError as e:
        good = body[:e.start].decode(enc.codec, "replace")
        line = good.count("\n") + 1
        col = len(good) - (good.rfind("\n") + 1) + 1
        what = "UTF-8" if enc.codec == "utf-8" else f"{enc.codec} (as it declares)"
        hint = "; save it as UTF-8, or declare its encoding (a byte order mark; in Python, a coding line)" \
            if enc.codec == "utf-8" else ""
        raise NotText(f"not {what} text: {e.reason} at line {line}, column {col} "
                      f"(byte {e.start + len(enc.bom)}){hint}") from None


def read_source(path: Path) -> str:
    """A source file's text (:func:`read_bytes`, then :func:`decode`).

    Raises:
        InputError, OSError: as :func:`read_bytes`.
        NotText: as :func:`decode`.
    """
    return decode(read_bytes(path), path)[0]


def encode_like(text: str, enc: Encoding) -> bytes:
    """``text`` encoded as the file it came from was: its codec, its byte order mark."""
    return enc.bom + text.encode(enc.codec)
