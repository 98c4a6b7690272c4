"""Tokenizers (tiktoken, Hugging Face, documented approximations) and the per-segment memo.

Real logs repeat the same system prompt and tool list thousands of times: each distinct segment
text is tokenized once, found again by the text itself (a hit compares the strings), as a KV
cache memoizes attention keys and values. Token ids are stored as little-endian uint32 bytes,
the form the prefix index compares.
"""

from __future__ import annotations

import contextlib
import re
from collections import OrderedDict
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..errors import ConfigError
from .base import Tokenizer
from .tiktoken_backend import ENCODINGS, TiktokenTokenizer, openai_encoding

__all__ = ["Tokenizer", "TokenMemo", "resolve_tokenizer", "ids_to_bytes", "bytes_to_ids"]

#: The approximation used for providers without a public tokenizer (Anthropic, Gemini,
#: DeepSeek). cl100k_base is a 100k-entry byte-level BPE of the same family; counts differ from
#: the provider's by a model-dependent factor, so reports label them approximate and price
#: with the log's reported usage where it has it.
APPROX_ENCODING = "cl100k_base"


def ids_to_bytes(ids: Sequence[int]) -> bytes:
    """Token ids → little-endian uint32 bytes."""
    return np.asarray(ids, dtype="<u4").tobytes()


def bytes_to_ids(b: bytes) -> list[int]:
    """Little-endian uint32 bytes → token ids."""
    return np.frombuffer(b, dtype="<u4").tolist()


#: Where a text may be cut for tokenizers that split there (see :func:`text_chunks`): after a
#: newline followed by printable ASCII other than the space and ``/``, or before a space that
#: follows printable ASCII and precedes an ASCII letter.
_CUT = re.compile(r"\n(?=[!-.0-~])|(?<=[!-~])(?= [A-Za-z])")


def text_chunks(text: str, size: int = 4096) -> list[str]:
    """``text`` cut into chunks of about ``size`` characters, at places counted from its end: a
    cut is the first place it may be cut at (:data:`_CUT`) after ``len(text) - k * size``, for
    k = 1, 2, ... So a long text whose start changed (a system prompt that starts with the
    current time, or greets the user by name) shares every chunk but its first with the text it
    was before, whatever the length of the change.

    For tiktoken's pre-tokenizers (``cl100k_base``, ``o200k_base``) the token ids of a text are
    those of its chunks, concatenated. The regex that splits a text into pieces before
    byte-pair merging matches each piece from its start onward, and no piece goes across such a
    cut: a newline joins a following printable character only if it is a space (which may lead
    a word) or ``/`` (which ``o200k_base`` joins to the newlines after punctuation), and a space
    before a letter leads that letter's word, after a character that ends the piece before it.
    ``tests/test_tokenize.py`` checks this at every such place of many random texts, on both
    encodings.

    >>> text = "Current time: 10:00. " + "Be brief and cite the rule. " * 600
    >>> chunks = text_chunks(text)
    >>> "".join(chunks) == text, len(chunks), text_chunks(text.replace("10:00", "9:59"))[1:] == chunks[1:]
    (True, 5, True)
    """
    cuts: list[int] = []
    search = _CUT.search
    end = stop = len(text)
    target = end - size
    while target > 0:
        m = search(text, target, stop)
        if m is not None:
            p = m.end()  # after the newline, or at the space
            if 0 < p < end:
                cuts.append(p)
                end = p
        # The next window is searched only up to its end (linear in the text's length): a cut
        # found past it would be the first one after this window's start, which this step made
        # already or found none of. A cut's match needs the character after the one it starts
        # at, so the search stops one character past the window.
        stop = target + 1 if target < end else end
        target -= size
    cuts.reverse()
    return [text[i:j] for i, j in zip([0] + cuts, cuts + [len(text)])]


class TokenMemo:
    """Tokenize each distinct text once.

    Texts are found again by the text itself. Where the tokenizer allows it
    (``splits_at_cuts``), texts of :attr:`CHUNKED` characters or more are tokenized as their
    chunks (:func:`text_chunks`), and only the chunks are memoized: a long text whose start
    changed (a system prompt that starts with the current time) is tokenized again only at its
    start, and the memo does not fill with long texts that never repeat.

    Attributes:
        tokenizer: the backend.
        hits, misses: lookups served from the memo / that tokenized something (a long text
            is a hit when all its chunks were).
        tokenized_chars: characters actually tokenized.
    """

    #: Texts at least this many characters long are tokenized in chunks, where the tokenizer
    #: allows it.
    CHUNKED = 8192

    def __init__(self, tokenizer: Tokenizer, budget_bytes: int = 64 * 2**20):
        self.tokenizer = tokenizer
        # text (or chunk) -> token bytes; bounded by the bytes of both (least recently used go)
        self._ids: OrderedDict[str, bytes] = OrderedDict()
        self.budget = budget_bytes
        self.size = 0
        self.hits = 0
        self.misses = 0
        self.tokenized_chars = 0
        self._chunked = bool(getattr(tokenizer, "splits_at_cuts", False))

    def __len__(self) -> int:
        return len(self._ids)

    def _encode(self, texts: list[str]) -> list[bytes]:
        """Token bytes of each text, from the backend (one batch)."""
        enc = getattr(self.tokenizer, "encode_batch_bytes", None)
        out = enc(texts) if enc else [ids_to_bytes(e) for e in self.tokenizer.encode_batch(texts)]
        self.tokenized_chars += sum(map(len, texts))
        return out

    def encode(self, texts: Sequence[str]) -> list[bytes]:
        """Token bytes of each text (uint32 little-endian), tokenizing only what was not seen
        before, in one batch (the backend spreads a batch over all cores)."""
        ids = self._ids
        big = self.CHUNKED if self._chunked else None
        plans: list[str | list[str]] = []  # each text's key: itself, or its chunks
        todo: dict[str, None] = {}  # keys to tokenize, once each, in order
        hits = 0
        for t in texts:
            if big is None or len(t) < big:
                plans.append(t)
                if t in ids:
                    ids.move_to_end(t)
                    hits += 1
                elif t in todo:
                    hits += 1
                else:
                    todo[t] = None
                continue
            keys = text_chunks(t)
            plans.append(keys)
            fresh = False
            for k in keys:
                if k in ids:
                    ids.move_to_end(k)
                elif k not in todo:
                    todo[k] = None
                    fresh = True
            hits += not fresh
        self.hits += hits
        self.misses += len(texts) - hits
        if todo:
            batch = list(todo)
            try:
                encoded = self._encode(batch)
            except (UnicodeEncodeError, ValueError, TypeError):
                # lone surrogates: each becomes one U+FFFD, as tiktoken's encode_ordinary does
                plans = list(texts)
                batch = [t for t in dict.fromkeys(texts) if t not in ids]
                encoded = self._encode([t.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for t in batch])
            for k, e in zip(batch, encoded):
                ids[k] = e
                self.size += len(e) + len(k)
        out = [ids[p] if p.__class__ is str else b"".join([ids[k] for k in p]) for p in plans]
        keep = len(todo)
        while self.size > self.budget and len(ids) > keep:  # oldest first, never this batch's
            k, old = ids.popitem(last=False)
            self.size -= len(old) + len(k)
        return out


@contextlib.contextmanager
def one_thread_per_batch() -> Iterator[None]:
    """Tokenize each batch on one thread meanwhile (tiktoken encodings).

    For an audit in two processes, each busy on a core of its own: a batch spread over every
    core only takes turns with the other process (on the 100k-request benchmark log, 0.4 s
    slower on two cores).
    """
    from . import tiktoken_backend

    old = tiktoken_backend.THREADS
    tiktoken_backend.THREADS = 1
    try:
        yield
    finally:
        tiktoken_backend.THREADS = old


def resolve_tokenizer(spec: str | None, *, default: str | None, model: str | None) -> Tokenizer | None:
    """Pick the tokenizer for a stream of requests.

    Args:
        spec: ``--tokenizer``: an encoding name (``o200k_base``, ``cl100k_base``),
            ``approx`` / ``approx:<encoding>``, or a path to a model directory, a
            ``tokenizer.json`` or a ``.gguf`` file. ``None`` uses ``default``.
        default: the provider rules' choice: ``tiktoken`` (by OpenAI model name; a model
            tiktoken does not know, or none, gets ``o200k_base`` labelled approximate),
            ``approx:<encoding>``, or ``None`` (no text to tokenize).
        model: model name, for ``tiktoken``.

    Returns:
        The tokenizer, or ``None`` when ``spec`` and ``default`` are both ``None``.

    Raises:
        ConfigError: for an unknown name or unreadable file, with what to pass instead.
    """
    choice = spec or default
    if choice is None:
        return None
    if choice == "tiktoken":
        enc, known = openai_encoding(model)
        if known:
            return TiktokenTokenizer(enc)
        why = f"{model!r} is no OpenAI model tiktoken knows" if model else "the requests name no model"
        return TiktokenTokenizer(enc, exact=False,
                                 note=f"approximate counts ({enc}): {why}; pass --tokenizer for exact counts")
    if choice in ENCODINGS:
        return TiktokenTokenizer(choice)
    if choice == "approx" or choice.startswith("approx:"):
        enc = choice.partition(":")[2] or APPROX_ENCODING
        return TiktokenTokenizer(enc, exact=False,
                                 note=f"approximate counts ({enc}); the provider publishes no tokenizer")
    p = Path(choice).expanduser()
    if p.exists():
        from .hf_backend import load_gguf, load_hf_dir

        return load_gguf(p) if p.suffix.lower() == ".gguf" else load_hf_dir(p)
    if p.suffix.lower() in (".gguf", ".json") or "/" in choice or choice.startswith("."):
        raise ConfigError(f"tokenizer file not found: {choice}")
    raise ConfigError(
        f"unknown tokenizer {choice!r}: use o200k_base, cl100k_base, approx, or a path to a model "
        "directory, tokenizer.json or .gguf file")
