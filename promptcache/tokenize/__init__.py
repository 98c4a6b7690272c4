"""Tokenizers (tiktoken, Hugging Face, documented approximations) and the per-segment memo.

Real logs repeat the same system prompt and tool list thousands of times: each distinct segment
text is tokenized once, keyed by a 128-bit BLAKE2b digest of its UTF-8 bytes, exactly as a KV
cache memoizes attention keys and values. Token ids are stored as little-endian uint32 bytes,
the form the prefix index compares.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ConfigError
from .base import Tokenizer
from .tiktoken_backend import ENCODINGS, TiktokenTokenizer, encoding_for_model

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


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TokenMemo:
    """Tokenize each distinct text once.

    Attributes:
        tokenizer: the backend.
        hits, misses: lookups served from the memo / tokenized.
        tokenized_chars: characters actually tokenized.
    """

    def __init__(self, tokenizer: Tokenizer, budget_bytes: int = 64 * 2**20):
        from collections import OrderedDict

        self.tokenizer = tokenizer
        self._ids: OrderedDict[bytes, bytes] = OrderedDict()
        self.budget = budget_bytes  # token bytes kept; the oldest entries go first
        self.size = 0
        self.hits = 0
        self.misses = 0
        self.tokenized_chars = 0

    def __len__(self) -> int:
        return len(self._ids)

    def encode(self, texts: Sequence[str]) -> list[bytes]:
        """Token bytes of each text (uint32 little-endian), tokenizing only unseen texts, in one
        batch (the backend spreads a batch over all cores)."""
        return self.encode_keyed(texts)[0]

    def encode_keyed(self, texts: Sequence[str]) -> tuple[list[bytes], list[bytes]]:
        """Like :meth:`encode`, also returning each text's 16-byte digest."""
        keys = [_digest(t) for t in texts]
        ids = self._ids
        missing: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            if k not in ids and k not in missing:
                missing[k] = t
        if missing:
            todo = list(missing.values())
            enc = getattr(self.tokenizer, "encode_batch_bytes", None)
            try:
                encoded = enc(todo) if enc else [ids_to_bytes(e) for e in self.tokenizer.encode_batch(todo)]
            except (UnicodeEncodeError, ValueError, TypeError):
                clean = [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for t in todo]
                encoded = enc(clean) if enc else [ids_to_bytes(e) for e in self.tokenizer.encode_batch(clean)]
            for k, t, e in zip(missing, todo, encoded):
                ids[k] = e
                self.size += len(e)
                self.tokenized_chars += len(t)
        out = [ids[k] for k in keys]
        while self.size > self.budget and len(ids) > len(missing):  # oldest first, never this batch's
            _, old = ids.popitem(last=False)
            self.size -= len(old)
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        return out, keys


def resolve_tokenizer(spec: str | None, *, default: str | None, model: str | None) -> Tokenizer | None:
    """Pick the tokenizer for a stream of requests.

    Args:
        spec: ``--tokenizer``: an encoding name (``o200k_base``, ``cl100k_base``),
            ``approx`` / ``approx:<encoding>``, or a path to a model directory, a
            ``tokenizer.json`` or a ``.gguf`` file. ``None`` uses ``default``.
        default: the provider rules' choice: ``tiktoken`` (by OpenAI model name),
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
        return TiktokenTokenizer(encoding_for_model(model))
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
