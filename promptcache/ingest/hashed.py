"""Hashed production traces: Mooncake (FAST'25) and the same shape from other sources.

Mooncake: ``{"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}``, one id per
512-token block, chained (equal ids mean an equal prefix up to that block; the last block may
be partial). https://github.com/kvcache-ai/Mooncake/tree/main/FAST25-release/traces
(checked 2026-11-29).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import BadRecord
from ..model import HashedPrompt

#: Tokens per hashed block in Mooncake traces (their README).
MOONCAKE_BLOCK_TOKENS = 512


def parse_hashed(rec: Mapping[str, Any], block_tokens: int) -> tuple[HashedPrompt, float, int]:
    """Parse one hashed-trace record into (prompt, arrival seconds, output tokens).

    ``timestamp`` is in milliseconds from the start of the trace.

    Raises:
        BadRecord: when a field is missing, negative, or the block count does not fit
            ``input_length``.
    """
    ids = rec.get("hash_ids")
    n = rec.get("input_length")
    ts = rec.get("timestamp")
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise BadRecord("'hash_ids' is not a list of non-negative integers")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise BadRecord("'input_length' is not a non-negative integer")
    if not isinstance(ts, (int, float)) or isinstance(ts, bool):
        raise BadRecord("'timestamp' is not a number of milliseconds")
    expected = -(-n // block_tokens)
    if len(ids) != expected:
        raise BadRecord(
            f"{len(ids)} hash_ids for input_length {n} at {block_tokens} tokens per block "
            f"(expected {expected}); set the trace's block size with --hash-block-size")
    out = rec.get("output_length", 0)
    return HashedPrompt(tuple(ids), block_tokens, n), ts / 1000.0, int(out) if isinstance(out, (int, float)) else 0
