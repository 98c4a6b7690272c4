"""tiktoken encodings, offline.

tiktoken downloads its BPE ranks on first use; these machines (and many CI runners) have no
network. The ranks of ``o200k_base`` and ``cl100k_base`` ship, byte-identical, in the
``quicktok-v1`` wheel (its ``data/*.vocab`` files: u32 count, then per token u16 length, the
bytes, u32 rank, little-endian). Rewritten in tiktoken's text format they reproduce
tiktoken's expected sha256 exactly (``tests/test_tokenize.py`` checks it). tiktoken itself
still does all the encoding, with its own pattern and special tokens.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import os
import struct
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Sequence
from unittest import mock

import numpy as np
import tiktoken
import tiktoken_ext.openai_public as openai_public

from ..errors import ConfigError
from .base import without_lone_surrogates

#: tiktoken encoding → quicktok vocabulary file stem.
_QUICKTOK_STEM = {"o200k_base": "o200k", "o200k_harmony": "o200k", "cl100k_base": "cl100k"}
ENCODINGS = ("o200k_base", "o200k_harmony", "cl100k_base")


def _quicktok_dir() -> Path | None:
    spec = importlib.util.find_spec("quicktok")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(list(spec.submodule_search_locations)[0]) / "data"
    return d if d.is_dir() else None


@lru_cache(maxsize=None)
def read_quicktok_vocab(path: Path) -> dict[bytes, int]:
    """Parse a quicktok ``.vocab`` file into tiktoken's ``mergeable_ranks`` mapping.

    Raises:
        ConfigError: when the file is truncated or malformed.
    """
    b = path.read_bytes()
    try:
        (n,) = struct.unpack_from("<I", b, 0)
        off, ranks = 4, {}
        for _ in range(n):
            (ln,) = struct.unpack_from("<H", b, off)
            tok = b[off + 2: off + 2 + ln]
            (rank,) = struct.unpack_from("<I", b, off + 2 + ln)
            ranks[tok] = rank
            off += 6 + ln
    except struct.error:
        raise ConfigError(f"{path}: truncated quicktok vocabulary") from None
    if off != len(b):
        raise ConfigError(f"{path}: trailing bytes in quicktok vocabulary")
    return ranks


def _tiktoken_cache_file(url: str) -> Path:
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") \
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()


@lru_cache(maxsize=None)
def load_encoding(name: str) -> tiktoken.Encoding:
    """A tiktoken :class:`~tiktoken.Encoding` that never touches the network.

    Uses tiktoken's own cache when it already holds the file, else the ranks shipped in the
    ``quicktok-v1`` wheel.

    Raises:
        ConfigError: for an unknown encoding, or when neither source is available.
    """
    if name not in ENCODINGS:
        raise ConfigError(f"unknown tiktoken encoding {name!r}; available offline: {', '.join(ENCODINGS)}")
    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    qdir = _quicktok_dir()

    def load_ranks(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        cached = _tiktoken_cache_file(url)
        if cached.exists():
            return openai_public.load_tiktoken_bpe(url, expected_hash=expected_hash)
        if qdir is None:
            raise ConfigError(
                f"tokenizer {name} needs its BPE file and there is no network: install "
                "'quicktok-v1' (ships it) or put the file in $TIKTOKEN_CACHE_DIR")
        return read_quicktok_vocab(qdir / f"{_QUICKTOK_STEM[name]}.vocab")

    with mock.patch.object(openai_public, "load_tiktoken_bpe", load_ranks):
        spec = constructor()
    return tiktoken.Encoding(spec["name"], pat_str=spec["pat_str"],
                             mergeable_ranks=spec["mergeable_ranks"], special_tokens=spec["special_tokens"])


@lru_cache(maxsize=None)
def _fast_encoder(name: str):  # type: ignore[no-untyped-def]
    """quicktok's encoder for ``name`` when installed (same ids as tiktoken's
    ``encode_ordinary``, 3-4x faster: ``tests/test_tokenize.py`` checks the ids), else ``None``."""
    try:
        import quicktok

        return quicktok.get_encoding(name)
    except Exception:  # not installed, or an encoding it does not ship
        return None


def _special_ids(fast) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {t: fast.encode_single_token(t) for t in fast.special_tokens_set}


@lru_cache(maxsize=None)
def harmony_specials() -> dict[str, int]:
    """The special tokens of ``o200k_harmony`` (OpenAI's chat framing), without building a
    second encoder: same ranks as ``o200k_base``."""
    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda url, expected_hash=None: {}):
        return dict(openai_public.ENCODING_CONSTRUCTORS["o200k_harmony"]()["special_tokens"])


@lru_cache(maxsize=None)
def _unassigned() -> np.ndarray:
    """Which code points Python's Unicode database (14.0 in Python 3.11) holds unassigned, as a
    boolean table (1.1 MB). quicktok's tables are newer than tiktoken's and class some of them
    (U+11DB7) as letters, so it splits texts that hold one otherwise: those go to tiktoken."""
    import unicodedata

    table = np.zeros(0x110000, dtype=bool)
    for cp in itertools.chain(range(0x80, 0x40000), range(0xE0000, 0xE1000)):
        if unicodedata.category(chr(cp)) == "Cn":
            table[cp] = True
    table[0x40000:0xE0000] = True  # planes 4 to 13: nothing assigned
    return table


def _holds_unassigned(text: str) -> bool:
    """Whether a text holds a code point :func:`_unassigned` lists (ASCII texts at once)."""
    if text.isascii():
        return False
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return bool(_unassigned()[cps].any())


#: Threads a batch is tokenized on; ``None``: one per core (see
#: :func:`promptcache.tokenize.one_thread_per_batch`).
THREADS: int | None = None


class TiktokenTokenizer:
    """OpenAI's tokenizer through tiktoken (exact for OpenAI models); batches go through
    quicktok's faster encoder of the same vocabulary when it is installed."""

    def __init__(self, encoding: str, *, exact: bool = True, note: str = ""):
        self.encoding = encoding
        self.name = encoding if exact else f"approx:{encoding}"
        self.exact = exact
        self.note = note
        self._threads = max(1, os.cpu_count() or 1)
        #: Whether a text's ids are those of its chunks (:func:`~promptcache.tokenize.text_chunks`):
        #: true of these encodings' regex pre-tokenizers.
        self.splits_at_cuts = encoding in ("o200k_base", "cl100k_base")
        self._fast = _fast_encoder(encoding) if encoding in ("o200k_base", "cl100k_base") else None
        if self._fast is None:
            self.enc  # noqa: B018 - fail now (no vocabulary) rather than mid-audit
        # Chat framing ids (harmony specials) live in o200k_harmony; same ranks as o200k_base.
        if encoding.startswith("o200k"):
            self._specials = harmony_specials()
        else:
            self._specials = _special_ids(self._fast) if self._fast else dict(self.enc._special_tokens)

    @property
    def enc(self) -> tiktoken.Encoding:
        """The tiktoken encoding (built on first use: it takes a few hundred milliseconds)."""
        return load_encoding(self.encoding)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text (``encode_ordinary``: special-token text is plain text)."""
        if self._fast is not None:
            return [x.tolist() for x in self._split(texts)]
        if len(texts) < 8:
            return [self.enc.encode_ordinary(t) for t in texts]
        return self.enc.encode_ordinary_batch(list(texts), num_threads=THREADS or self._threads)

    def encode_batch_bytes(self, texts: Sequence[str]) -> list[bytes]:
        """Token ids of each text as little-endian uint32 bytes (the memo's form)."""
        if self._fast is not None:
            return [x.astype("<u4", copy=False).tobytes() for x in self._split(texts)]
        return [np.asarray(ids, dtype="<u4").tobytes() for ids in self.encode_batch(texts)]

    def _split(self, texts: Sequence[str]) -> list:  # list of numpy uint32 arrays
        texts = list(texts)
        try:
            toks, offs = self._fast.encode_batch(texts, THREADS or self._threads)
        except (TypeError, UnicodeEncodeError, ValueError):
            # a lone surrogate (quicktok takes UTF-8 only): each becomes one U+FFFD, as tiktoken does
            texts = [without_lone_surrogates(t) for t in texts]
            toks, offs = self._fast.encode_batch(texts, THREADS or self._threads)
        out = [toks[offs[i]:offs[i + 1]] for i in range(len(texts))]
        for i, t in enumerate(texts):
            # quicktok's Unicode tables are newer than tiktoken's: a character assigned since
            # Unicode 14 may count as a letter in one and not the other; tiktoken decides
            if _holds_unassigned(t):
                out[i] = np.asarray(self.enc.encode_ordinary(t), dtype=np.uint32)
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """Text of the ids."""
        if self._fast is not None:
            return self._fast.decode_bytes(list(ids)).decode("utf-8", errors="replace")
        return self.enc.decode(list(ids), errors="replace")

    def special_id(self, token: str) -> int | None:
        """Id of a special token, or ``None``."""
        return self._specials.get(token)


def openai_encoding(model: str | None) -> tuple[str, bool]:
    """The tiktoken encoding of an OpenAI model name, and whether tiktoken's model table (its
    names and prefixes: ``gpt-5``, ``gpt-4.1-``, ``o3-``, ``ft:gpt-4o`` ...) knows the model:
    ``(o200k_base, False)`` for a model it does not know, or none.

    >>> openai_encoding("gpt-4-0613"), openai_encoding("openai/gpt-5.6"), openai_encoding("acme-7b")
    (('cl100k_base', True), ('o200k_base', True), ('o200k_base', False))
    """
    if model:
        m = model.split("/")[-1]
        try:
            name = tiktoken.encoding_name_for_model(m)
            if name in ENCODINGS:
                return ("o200k_base" if name == "o200k_harmony" else name), True
        except KeyError:
            pass
        if m.startswith(("gpt-4-", "gpt-3.5", "gpt-35")) or m == "gpt-4":
            return "cl100k_base", True
    return "o200k_base", False


def encoding_for_model(model: str | None) -> str:
    """The tiktoken encoding of an OpenAI model name; ``o200k_base`` for others (see
    :func:`openai_encoding`, which says whether the model is known).

    >>> encoding_for_model("gpt-4-0613"), encoding_for_model("gpt-4o-mini"), encoding_for_model("gpt-5.6")
    ('cl100k_base', 'o200k_base', 'o200k_base')
    """
    return openai_encoding(model)[0]
