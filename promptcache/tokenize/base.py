"""The tokenizer protocol every backend implements."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable


def without_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (``"\\ud800"`` decoded from a JSON, JavaScript or
    Python escape; no UTF-8 can hold one) made one U+FFFD, as tiktoken's ``encode_ordinary``
    and the audit's JSON reader do; a surrogate pair becomes the character it encodes.

    >>> without_lone_surrogates("a\\ud800b") == "a\\ufffdb"
    True
    """
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@runtime_checkable
class Tokenizer(Protocol):
    """Text → token ids, for one model family.

    Attributes:
        name: what to print in reports (``o200k_base``, ``hf:SmolLM2-135M-Instruct``,
            ``approx:cl100k_base``).
        exact: whether counts are the provider's own (False for approximations).
        note: one line saying what an approximation is based on, else ``""``.
    """

    name: str
    exact: bool
    note: str

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, special-token text treated as ordinary text."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """Text of the ids (lossy only inside a split multi-byte character)."""
        ...

    def special_id(self, token: str) -> int | None:
        """The id of a special token such as ``<|im_start|>``, or ``None``."""
        ...
