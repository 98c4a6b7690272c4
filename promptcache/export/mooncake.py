"""Export a log as an anonymised hashed trace: Mooncake (FAST'25) or Qwen-Bailian shape.

Every request is rendered and tokenized by the audit pipeline (the same tokens the audit
simulates), cut into blocks of ``block_tokens`` tokens (the last block may be partial), and
each block is hashed with its parent's hash, keyed with a secret salt::

    h_0 = BLAKE2b-128(key=salt, "promptcache.export/v1" 0x00 namespace)
    h_i = BLAKE2b-128(key=salt, h_(i-1) || little-endian uint32 token ids of block i)

so two requests share the hash of block ``i`` exactly when they share their cache namespace and
every token up to the end of block ``i`` (vLLM's block chain; different models never share).
The hashes are then replaced by small integers in first-seen order, as the published Mooncake
and Bailian traces do, and never written. A trace holds only those integers, lengths, output
lengths and arrival times: no text, no ids, no model names, no raw hashes.

Hashed inputs (Mooncake, Bailian) keep their block size; their ids are re-chained and remapped
the same way.

Mooncake: ``{"timestamp": ms since the first request, "input_length", "output_length",
"hash_ids"}`` (512-token blocks by default). Bailian: ``{"chat_id", "parent_chat_id",
"timestamp": seconds since the first request, "input_length", "output_length", "type",
"turn", "hash_ids"}`` (16-token blocks), sessions from the log's session or conversation ids.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..pipeline import AuditOptions, Pipeline
from ..errors import ConfigError

FORMATS = {"mooncake": 512, "bailian": 16}
DIGEST = 16
SALT_BYTES = 32
_DOMAIN = b"promptcache.export/v1\x00"


def new_salt() -> bytes:
    """A fresh random salt (32 bytes from :mod:`secrets`)."""
    return secrets.token_bytes(SALT_BYTES)


def load_salt(path: str | Path | None) -> bytes:
    """The salt in ``path`` (hex text), creating the file with a fresh salt and mode 0600 when
    it does not exist; a fresh salt that is not kept when ``path`` is ``None``.

    Raises:
        ConfigError: when the file holds no hex salt of at least 16 bytes, or cannot be created.
    """
    if path is None:
        return new_salt()
    p = Path(path)
    if not p.exists():
        from ..fileio import create_atomic

        salt = new_salt()
        if create_atomic(p, salt.hex() + "\n", 0o600):
            return salt
    try:
        text = p.read_text(encoding="ascii").strip()
        salt = bytes.fromhex(text)
    except (OSError, UnicodeDecodeError, ValueError):
        raise ConfigError(f"{p}: not a salt file (one line of hex, as promptcache export writes it)") from None
    if len(salt) < 16:
        raise ConfigError(f"{p}: the salt is {len(salt)} bytes; use at least 16")
    return salt


def _key(salt: bytes) -> bytes:
    if len(salt) < 16:
        raise ConfigError("the salt must be at least 16 bytes")
    return salt if len(salt) <= 64 else hashlib.blake2b(salt, digest_size=64).digest()


def chain_hashes(units: bytes, width: int, units_per_block: int, salt: bytes, namespace: str = "") -> list[bytes]:
    """Salted chained block hashes of a prompt.

    Args:
        units: the prompt as little-endian units (uint32 token ids, or uint64 block ids).
        width: bytes per unit (4 or 8).
        units_per_block: units in one block (the block size in tokens for token ids; 1 for
            block ids).
        salt: the BLAKE2b key (16 to 64 bytes; longer salts are hashed to 64).
        namespace: cache namespace: prompts of different namespaces share no hash.

    Returns:
        One 16-byte digest per block (the last block may be partial).

    Raises:
        ConfigError: for a salt shorter than 16 bytes.
    """
    key = _key(salt)
    h = hashlib.blake2b(_DOMAIN + namespace.encode("utf-8"), key=key, digest_size=DIGEST).digest()
    step = width * units_per_block
    out = []
    for i in range(0, len(units), step):
        h = hashlib.blake2b(h + units[i:i + step], key=key, digest_size=DIGEST).digest()
        out.append(h)
    return out


@dataclass
class ExportResult:
    """The exported trace.

    Attributes:
        format: ``mooncake`` or ``bailian``.
        block_tokens: tokens per block.
        records: trace records in the pipeline's order (arrival order).
        distinct_blocks: distinct hash ids.
        warnings: one-line notes for the user.
    """

    format: str
    block_tokens: int
    records: list[dict[str, Any]]
    distinct_blocks: int
    warnings: list[str] = field(default_factory=list)


def export(paths: Sequence[str | Path], opts: AuditOptions | None = None, *, to: str = "mooncake",
           block_tokens: int | None = None, salt: bytes | None = None,
           progress: Callable[[int], None] | None = None) -> ExportResult:
    """Tokenize every request with the audit pipeline and build the anonymised trace.

    Args:
        paths: log files (any format the audit reads), in arrival order.
        opts: audit options (cache rules decide the tokenizer, chat framing and namespaces).
        to: ``mooncake`` or ``bailian``.
        block_tokens: tokens per block (default 512 for Mooncake, 16 for Bailian); hashed
            inputs keep their own block size.
        salt: the hash key (default: a fresh random one).
        progress: called with the number of requests done so far.

    Raises:
        ConfigError: for an unknown format, a bad block size or salt, or a hashed input whose
            block size differs from ``block_tokens``.
        InputError: for unreadable files, or malformed records with ``strict``.
    """
    if to not in FORMATS:
        raise ConfigError(f"unknown trace format {to!r} (choose {', '.join(FORMATS)})")
    if block_tokens is not None and block_tokens < 1:
        raise ConfigError("--block-size must be a positive number of tokens")
    key = salt if salt is not None else new_salt()
    _key(key)
    asked = block_tokens
    bt: int | None = None
    ids: dict[bytes, int] = {}
    rows: list[tuple[float | None, dict[str, Any]]] = []
    sessions: dict[str, tuple[int, int]] = {}  # session → (last chat_id, turns)
    warnings: list[str] = []
    pipe = Pipeline(paths, opts or AuditOptions(diagnose=False))
    for step in pipe.steps(progress):
        p = step.prompt
        if p.width == 8:  # a hashed trace: one unit per block
            if asked is not None and asked != p.unit_tokens:
                raise ConfigError(f"{step.request.source.path} is a hashed trace of {p.unit_tokens}-token blocks; "
                                  f"it cannot be re-cut into {asked}-token blocks without its text")
            this_bt, per_block = p.unit_tokens, 1
        else:
            this_bt = asked or FORMATS[to]
            per_block = this_bt
        if bt is None:
            bt = this_bt
        elif bt != this_bt:
            raise ConfigError(f"inputs with different block sizes ({bt} and {this_bt} tokens) cannot share one trace")
        digests = chain_hashes(p.units, p.width, per_block, key, step.outcome.namespace)
        hash_ids = [ids.setdefault(d, len(ids)) for d in digests]
        out_tokens = step.outcome.output_tokens or (step.request.hashed.output_tokens if step.request.hashed else 0)
        rec: dict[str, Any] = {"timestamp": 0, "input_length": p.n_tokens, "output_length": out_tokens,
                               "hash_ids": hash_ids}
        if to == "bailian":
            chat_id = len(rows)
            sess = step.request.session
            parent, turn = -1, 1
            if sess is not None and sess in sessions:
                last, turns = sessions[sess]
                parent, turn = last, turns + 1
            if sess is not None:
                sessions[sess] = (chat_id, turn)
            rec = {"chat_id": chat_id, "parent_chat_id": parent, "timestamp": 0.0, **{k: rec[k] for k in ("input_length", "output_length")},
                   "type": "text", "turn": turn, "hash_ids": hash_ids}
        rows.append((step.request.arrival, rec))
    times = [t for t, _ in rows if t is not None]
    t0 = min(times) if times else 0.0
    missing = 0
    last = t0
    for t, rec in rows:
        if t is None:
            missing += 1
            t = last
        last = t
        rec["timestamp"] = int(round((t - t0) * 1000)) if to == "mooncake" else round(t - t0, 3)
    if missing:
        warnings.append(f"{missing} request(s) have no arrival time: each takes the time of the request before it")
    if to == "mooncake" and bt is not None and bt != FORMATS["mooncake"]:
        warnings.append(f"blocks of {bt} tokens: read this trace back with --hash-block-size {bt}")
    if to == "bailian" and bt is not None and bt != FORMATS["bailian"]:
        warnings.append(f"blocks of {bt} tokens: read this trace back with --hash-block-size {bt}")
    return ExportResult(to, bt or asked or FORMATS[to], [r for _, r in rows], len(ids), warnings)


def dumps(records: Sequence[dict[str, Any]]) -> str:
    """JSONL text of the records (compact, one per line)."""
    return "".join(json.dumps(r, separators=(", ", ": ")) + "\n" for r in records)


def write_trace(dest: str | Path, records: Sequence[dict[str, Any]], inputs: Sequence[str | Path] = ()) -> None:
    """Write the records as JSONL (gzipped for ``.gz``), atomically; never over one of ``inputs``.

    Raises:
        ConfigError: when ``dest`` is one of ``inputs``.
    """
    from ..fileio import write_atomic

    data = dumps(records).encode("utf-8")
    if str(dest).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    write_atomic(dest, data, inputs=inputs)
