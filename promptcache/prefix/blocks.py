"""Chained block hashes: how a paged prefix cache names its KV blocks.

A prompt is cut into blocks of ``block_size`` tokens. Each *full* block gets a hash of its
parent block's hash, its own token ids and optional extra keys, so two blocks have equal hashes
exactly when the whole prefix up to and including them is equal (up to hash collisions). A
cache lookup then walks the prompt's block hashes from the first and stops at the first miss:
O(blocks) dict lookups per request.

This mirrors vLLM's ``hash_block_tokens(hash_function, parent_block_hash,
curr_block_token_ids, extra_keys)`` in ``vllm/v1/core/kv_cache_utils.py``
(https://github.com/vllm-project/vllm/blob/main/vllm/v1/core/kv_cache_utils.py, checked
2026-11-29), where the first block's parent is a seed (``NONE_HASH``), partial blocks are never
hashed ("we only hash full blocks"), and a request's ``cache_salt`` is an extra key of the
first block only, which isolates groups of requests from each other. vLLM hashes the tuple
``(parent, token_ids, extra_keys)`` with SHA-256 over CBOR (or Python's ``hash``); here the
parent hash, the extra keys and the token ids' little-endian uint32 bytes go through
BLAKE2b-128, which is faster and keeps the same meaning. The hash values are not vLLM's and
are not meant to be compared with vLLM's.
"""

from __future__ import annotations

import hashlib
import struct

#: Digest size of a block hash, bytes.
HASH_BYTES = 16

#: The parent hash of every prompt's first block (vLLM's ``NONE_HASH``; a fixed seed here, so
#: hashes are reproducible across processes).
NONE_HASH = hashlib.blake2b(b"promptcache/prefix/blocks NONE_HASH", digest_size=HASH_BYTES).digest()


def hash_block_tokens(parent: bytes | None, block: bytes, extra: bytes = b"") -> bytes:
    """Hash one full block chained to its parent.

    Args:
        parent: the previous block's hash (``HASH_BYTES`` bytes), or ``None`` for the first
            block (then :data:`NONE_HASH` is used).
        block: the block's token ids as little-endian uint32 bytes (4 × block size bytes).
        extra: extra keys (for example a cache salt); empty for none.

    Returns:
        ``HASH_BYTES`` bytes.
    """
    h = hashlib.blake2b(parent if parent else NONE_HASH, digest_size=HASH_BYTES)
    h.update(struct.pack("<I", len(extra)))
    h.update(extra)
    h.update(block)
    return h.digest()


def block_hashes(units: bytes, block_size: int, *, salt: str | None = None, width: int = 4) -> list[bytes]:
    """Chained hashes of every full block of a prompt.

    Args:
        units: the prompt's token ids as little-endian unsigned bytes (``width`` bytes each).
        block_size: tokens per block (at least 1).
        salt: cache salt mixed into the first block's hash (vLLM ``cache_salt``); ``None`` or
            ``""`` for none.
        width: bytes per token id (4 for uint32).

    Returns:
        ``len(units) // width // block_size`` hashes; the partial last block has none.

    Raises:
        ValueError: when ``block_size`` < 1 or ``units`` is not a whole number of ids.
    """
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    if len(units) % width:
        raise ValueError(f"units is not a whole number of {width}-byte ids")
    step = block_size * width
    full = len(units) // step
    out: list[bytes] = []
    parent: bytes | None = None
    first_extra = salt.encode("utf-8") if salt else b""
    for i in range(full):
        parent = hash_block_tokens(parent, units[i * step:(i + 1) * step], first_extra if i == 0 else b"")
        out.append(parent)
    return out
