"""Hashed production traces: Mooncake (FAST'25), Qwen-Bailian, and the same shape from other
sources.

Mooncake: ``{"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}``, one id per
512-token block, chained (equal ids mean an equal prefix up to that block; the last block may
be partial). https://github.com/kvcache-ai/Mooncake/tree/main/FAST25-release/traces
(checked 2026-11-29).

Qwen-Bailian: ``{"chat_id", "parent_chat_id", "timestamp", "input_length", "output_length",
"type", "turn", "hash_ids"}``: ``timestamp`` in *seconds* since the start of the trace
(README: "Seconds since request arrive"; "All timestamps are normalized to trace-relative
values, starting from 0"), salted SipHash ids of 16-token blocks, ``parent_chat_id`` ``-1`` for
a session's first request and otherwise the ``chat_id`` of the previous turn.
https://github.com/alibaba-edu/qwen-bailian-usagetraces-anon (README) and NVIDIA AIPerf's
loader, which groups sessions by walking ``parent_chat_id`` to the root and converts the
timestamp from seconds to milliseconds
(https://docs.nvidia.com/aiperf/tutorials/datasets-inputs/profile-with-bailian-traces;
``aiperf/dataset/loader/bailian_trace.py``), checked 2026-11-29.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import HashedPrompt, Request, Source
from .bodies import default_id
from .common import MAPPING, provider_for_model
from .jsonio import CsvRow
from .outcomes import Skipped
from .reader import Reader

#: Tokens per hashed block in Mooncake traces (their README).
MOONCAKE_BLOCK_TOKENS = 512
#: Tokens per hashed block in Qwen-Bailian traces (their README: "16 tokens per block").
BAILIAN_BLOCK_TOKENS = 16


def parse_hashed(rec: Mapping[str, Any], block_tokens: int, seconds_per_unit: float = 1e-3) -> tuple[HashedPrompt, float, int]:
    """Parse one hashed-trace record into (prompt, arrival seconds, output tokens).

    Args:
        rec: the record.
        block_tokens: tokens per hashed block.
        seconds_per_unit: seconds per ``timestamp`` unit: ``1e-3`` for Mooncake's
            milliseconds, ``1.0`` for Bailian's seconds; times are relative to the trace start.

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
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not -1e15 < ts < 1e15:
        unit = "milliseconds" if seconds_per_unit == 1e-3 else "seconds"
        raise BadRecord(f"'timestamp' is not a number of {unit}")
    expected = -(-n // block_tokens)
    if len(ids) != expected:
        raise BadRecord(
            f"{len(ids)} hash_ids for input_length {n} at {block_tokens} tokens per block "
            f"(expected {expected}); set the trace's block size with --hash-block-size")
    out = rec.get("output_length", 0)
    out = int(out) if isinstance(out, (int, float)) else 0
    return HashedPrompt(tuple(ids), block_tokens, n, out), ts * seconds_per_unit, out


def looks_bailian(rec: Mapping[str, Any]) -> bool:
    """A hashed record with Bailian's session fields (``parent_chat_id`` or ``turn``)."""
    return "hash_ids" in rec and "input_length" in rec and ("parent_chat_id" in rec or "turn" in rec)


def _hashed(rec: Any) -> bool:
    return (type(rec) is dict or isinstance(rec, MAPPING)) and "hash_ids" in rec and "input_length" in rec


class MooncakeReader(Reader):
    """Mooncake (FAST'25) hashed traces: one request per record, 512-token blocks by default,
    ``timestamp`` in milliseconds from the trace start; ``id``: ``id``/``request_id``,
    ``session``: ``chat_id``."""

    name = "mooncake"
    producer = "Mooncake (FAST'25) traces, and the same shape from other sources"
    shapes = "{timestamp ms, input_length, output_length, hash_ids}"
    looks_for = "hash_ids + input_length (no parent_chat_id or turn)"
    owns = ("hash_ids",)

    def claim(self, rec: Any) -> str | None:
        if _hashed(rec) and not looks_bailian(rec):
            return "hash_ids and input_length"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Request:
        if not isinstance(rec, MAPPING):
            raise BadRecord("record is not a JSON object")
        hp, arrival, _ = parse_hashed(rec, getattr(opts, "hash_block_tokens", None) or MOONCAKE_BLOCK_TOKENS)
        rid = rec.get("id", rec.get("request_id"))
        model = getattr(opts, "model", None)
        return Request(
            id=str(rid) if isinstance(rid, (str, int)) and not isinstance(rid, bool) else default_id(src), source=src,
            format="mooncake", api="hashed", provider=provider_for_model(model), model=model,
            arrival=arrival, hashed=hp, session=str(rec["chat_id"]) if rec.get("chat_id") is not None else None,
        )


#: Length-only traces: (reader label, arrival column, model column, prompt-length column,
#: output-length column). BurstGPT README: "Timestamp,Model,Request tokens,Response tokens,Total
#: tokens,Log Type", Timestamp in seconds from the trace start
#: (https://github.com/HPMLL/BurstGPT); Azure LLM inference traces:
#: "TIMESTAMP,ContextTokens,GeneratedTokens" (https://github.com/Azure/AzurePublicDataset
#: AzureLLMInferenceDataset2023.md), checked 2026-12-01.
LENGTH_TRACES = (
    ("BurstGPT", "Timestamp", "Model", "Request tokens", "Response tokens"),
    ("Azure LLM inference trace", "TIMESTAMP", None, "ContextTokens", "GeneratedTokens"),
)


class LengthsReader(Reader):
    """Traces that give each request's prompt and output lengths but no prompt and no block
    hashes (BurstGPT, Azure LLM inference traces, CSV). Nothing in them says which requests
    share a prefix, so nothing can be simulated and no cache count is known: each row is
    checked and skipped with that reason (a request made up from a length would be priced as a
    cache miss it may not have been)."""

    name = "lengths"
    producer = "BurstGPT, Azure LLM inference traces (CSV)"
    shapes = "CSV rows of arrival, model and token lengths"
    looks_for = "CSV columns 'Request tokens' (BurstGPT) or 'ContextTokens' (Azure)"
    records = "csv"

    def claim(self, rec: Any) -> str | None:
        if isinstance(rec, CsvRow):
            for label, _, _, n_in, _ in LENGTH_TRACES:
                if n_in in rec:
                    return f"a {label} row ({n_in!r} column)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Skipped:
        for label, t_col, m_col, n_in, n_out in LENGTH_TRACES:
            if n_in in rec:
                break
        else:
            raise BadRecord("not a length-trace row")
        try:
            prompt = int(float(rec[n_in]))
            out = int(float(rec.get(n_out) or 0))
        except (TypeError, ValueError):
            raise BadRecord(f"{n_in!r} is not a token count: {rec.get(n_in)!r}") from None
        if prompt < 0 or out < 0:
            raise BadRecord(f"{n_in!r} is negative")
        return Skipped(f"a {label} row: token lengths only, no prompt or block hashes to simulate")


def _chat_id(v: Any, what: str) -> int | str:
    if isinstance(v, bool) or not isinstance(v, (int, str)) or v == "":
        raise BadRecord(f"'{what}' is not a chat id: {v!r}")
    return v


class BailianReader(Reader):
    """Parser for Qwen-Bailian trace records, with the per-file state that resolves sessions.

    A request's session is the ``chat_id`` of its session's first request, found by following
    ``parent_chat_id`` through the requests already read (parents arrive before their
    children). When a parent is not in the file (a trace cut), the parent's id stands for the
    session, so the later turns still group together. ``read_requests`` gets a fresh reader per
    file through :meth:`for_file`.

    Called as ``reader(record, source, options)`` → :class:`~promptcache.model.Request` with
    ``format="bailian"``, ``api="hashed"``, ``id`` = ``chat_id``, 16-token blocks unless
    ``options.hash_block_tokens`` says otherwise, ``model`` = ``options.model``.

    Raises:
        BadRecord: for a missing or malformed field (see :func:`parse_hashed`), a bad
            ``chat_id``/``parent_chat_id``, or a ``turn`` that is not a positive integer.
    """

    name = "bailian"
    producer = "Qwen-Bailian usage traces"
    shapes = "{chat_id, parent_chat_id, timestamp s, input_length, output_length, turn, hash_ids}"
    looks_for = "hash_ids + input_length + parent_chat_id or turn"
    stateful = True

    def __init__(self) -> None:
        self.roots: dict[int | str, int | str] = {}

    def claim(self, rec: Any) -> str | None:
        return "hash_ids, input_length and parent_chat_id/turn" if _hashed(rec) and looks_bailian(rec) else None

    def read(self, rec: Any, src: Source, opts: Any) -> Request:
        if not isinstance(rec, MAPPING):
            raise BadRecord("record is not a JSON object")
        hp, arrival, _ = parse_hashed(rec, getattr(opts, "hash_block_tokens", None) or BAILIAN_BLOCK_TOKENS, 1.0)
        cid = _chat_id(rec.get("chat_id"), "chat_id")
        parent = rec.get("parent_chat_id", -1)
        parent = -1 if parent is None else _chat_id(parent, "parent_chat_id")
        turn = rec.get("turn", 1)
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
            raise BadRecord(f"'turn' is not a positive integer: {turn!r}")
        root = cid if parent in (-1, "-1") else self.roots.get(parent, parent)
        self.roots[cid] = root
        model = getattr(opts, "model", None)
        return Request(id=str(cid), source=src, format="bailian", api="hashed", provider=provider_for_model(model),
                       model=model, arrival=arrival, hashed=hp, session=str(root))
