"""Flat tables over the audit and proposal records: CSV, Parquet and pandas DataFrames.

Three tables, one row per item, built only from :func:`~.audit_records.audit_record` (with
``detail=True``) and :func:`~.audit_records.proposals_record`:

- ``requests``: one row per request (ids, location, namespace, model, arrival, token counts,
  divergence, miss reason, reported usage, cost per scenario);
- ``findings``: one row per finding (rule, location, evidence, tokens and money lost, fix);
- ``proposals``: one row per template with changes (changes, before/after per scenario).

Every column has a type (:data:`INT`, :data:`FLOAT`, :data:`STR`, :data:`TIME`), so empty
values stay typed in Parquet and pandas. Token counts are ``*_tokens``, money is ``*_usd``
(floats), arrival is UTC epoch seconds (``arrival``) and a UTC timestamp (``arrival_utc``).
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..errors import ConfigError

INT, FLOAT, STR, TIME = "int", "float", "str", "time"
TABLES = ("requests", "findings", "proposals")
_SCEN = ("no_cache", "reported", "simulated", "ideal")
_PHASE_SCEN = ("no_cache", "simulated", "ideal")

REQUEST_COLUMNS: list[tuple[str, str]] = [
    ("index", INT), ("id", STR), ("path", STR), ("line", INT), ("namespace", STR), ("provider", STR), ("model", STR),
    ("arrival", FLOAT), ("arrival_utc", TIME), ("prompt_tokens", INT), ("cached_tokens", INT),
    ("cache_write_tokens", INT), ("shared_prefix_tokens", INT), ("output_tokens", INT),
    ("divergence_segment", STR), ("divergence_char_offset", INT), ("divergence_token_index", INT),
    ("diverged_from", INT), ("miss_reason", STR), ("reported_input_tokens", INT), ("reported_cached_tokens", INT),
    ("reported_cache_write_tokens", INT),
    *[(f"cost_{s}_usd", FLOAT) for s in _SCEN],
    ("flags", STR),
]

FINDING_COLUMNS: list[tuple[str, str]] = [
    ("rank", INT), ("rule", STR), ("code", STR), ("severity", STR), ("cause", STR), ("message", STR), ("path", STR),
    ("line", INT), ("segment", STR), ("char_offset", INT), ("token_index", INT), ("requests", INT),
    ("tokens_lost", INT), ("cost_usd_lost", FLOAT), ("evidence_before", STR), ("evidence_after", STR),
    ("evidence", STR), ("fix", STR), ("fix_safety", STR),
]

PROPOSAL_COLUMNS: list[tuple[str, str]] = [
    ("template_id", STR), ("namespace", STR), ("requests", INT), ("unmatched_requests", INT), ("changes", STR),
    ("changes_detail", STR),
    *[(f"{ph}_{s}_{m}", t) for ph in ("before", "after") for s in _PHASE_SCEN
      for m, t in (("prompt_tokens", INT), ("cached_tokens", INT), ("hit_ratio", FLOAT), ("cost_usd", FLOAT))],
    ("savings_usd", FLOAT), ("savings_usd_per_day", FLOAT), ("after_ideal_share", FLOAT), ("attainable_tokens", INT),
    ("lifetime_current", STR), ("lifetime_best", STR), ("lifetime_saves_usd", FLOAT),
    ("lifetime_break_even_gap_seconds", FLOAT),
]

COLUMNS = {"requests": REQUEST_COLUMNS, "findings": FINDING_COLUMNS, "proposals": PROPOSAL_COLUMNS}


def _utc(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, tz=timezone.utc)


def request_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the ``requests`` table from an audit record made with ``detail=True``.

    Raises:
        ValueError: when the record has no per-request costs (made without ``detail``).
    """
    rows = []
    for r in record.get("requests", []):
        if "cost_usd" not in r:
            raise ValueError("the audit record was made without detail=True")
        d = r.get("divergence") or {}
        rep = r.get("reported") or {}
        row = {
            "index": r["index"], "id": r["id"], "path": r["path"], "line": r["line"], "namespace": r["namespace"],
            "provider": r["provider"], "model": r["model"], "arrival": r["arrival"], "arrival_utc": _utc(r["arrival"]),
            "prompt_tokens": r["prompt_tokens"], "cached_tokens": r["cached_tokens"],
            "cache_write_tokens": r["cache_write_tokens"], "shared_prefix_tokens": r["shared_prefix_tokens"],
            "output_tokens": r["output_tokens"], "divergence_segment": d.get("segment"),
            "divergence_char_offset": d.get("char_offset"), "divergence_token_index": d.get("token_index"),
            "diverged_from": r["diverged_from"], "miss_reason": r["miss_reason"],
            "reported_input_tokens": rep.get("input_tokens"), "reported_cached_tokens": rep.get("cached_tokens"),
            "reported_cache_write_tokens": rep.get("cache_write_tokens"),
            "flags": ";".join(r["flags"]) if r.get("flags") else None,
        }
        for s in _SCEN:
            row[f"cost_{s}_usd"] = r["cost_usd"].get(s)
        rows.append(row)
    return rows


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)


def finding_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the ``findings`` table from an audit record (ranked as in the report)."""
    rows = []
    for k, f in enumerate(record.get("findings", []), 1):
        loc = f.get("location") or {}
        ev = f.get("evidence") or {}
        fix = f.get("fix") or {}
        rows.append({
            "rank": k, "rule": f["rule"], "code": f["code"], "severity": f["severity"], "cause": f.get("cause"),
            "message": f["message"], "path": loc.get("path"), "line": loc.get("line"), "segment": loc.get("segment"),
            "char_offset": loc.get("char_offset"), "token_index": loc.get("token_index"), "requests": f["requests"],
            "tokens_lost": f["tokens_lost"], "cost_usd_lost": f["cost_usd_lost"],
            "evidence_before": _text(ev.get("before")), "evidence_after": _text(ev.get("after")),
            "evidence": _text(ev) if ev else None, "fix": fix.get("description"), "fix_safety": fix.get("safety"),
        })
    return rows


def proposal_rows(proposals: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the ``proposals`` table from :func:`~.audit_records.proposals_record`."""
    rows = []
    for p in proposals:
        row: dict[str, Any] = {
            "template_id": p["template_id"], "namespace": p["namespace"], "requests": p["requests"],
            "unmatched_requests": p["unmatched_requests"],
            "changes": ";".join(c["kind"] for c in p["changes"]),
            "changes_detail": json.dumps(p["changes"], ensure_ascii=False),
            "savings_usd": p["savings_usd"], "savings_usd_per_day": p["savings_usd_per_day"],
            "after_ideal_share": p.get("after_ideal_share"), "attainable_tokens": p.get("attainable_tokens"),
        }
        lt = p.get("lifetime")
        if lt:
            row.update({"lifetime_current": lt["current"]["policy"], "lifetime_best": lt["best"]["policy"],
                        "lifetime_saves_usd": lt["saves_usd"], "lifetime_break_even_gap_seconds": lt["break_even_gap_seconds"]})
        for ph in ("before", "after"):
            for s in _PHASE_SCEN:
                sc = p[ph].get(s, {})
                row[f"{ph}_{s}_prompt_tokens"] = sc.get("prompt_tokens")
                row[f"{ph}_{s}_cached_tokens"] = sc.get("cached_tokens")
                row[f"{ph}_{s}_hit_ratio"] = sc.get("hit_ratio")
                row[f"{ph}_{s}_cost_usd"] = sc.get("cost_usd")
        rows.append(row)
    return rows


def _cell(v: Any, kind: str) -> str:
    if v is None:
        return ""
    if kind == TIME:
        return v.isoformat().replace("+00:00", "Z")
    if kind == FLOAT:
        return repr(float(v))
    return str(v)


def to_csv(columns: Sequence[tuple[str, str]], rows: Iterable[dict[str, Any]]) -> str:
    """CSV text (RFC 4180, header row; empty cell for a missing value; times in ISO 8601 UTC)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([c for c, _ in columns])
    for r in rows:
        w.writerow([_cell(r.get(c), k) for c, k in columns])
    return buf.getvalue()


def to_arrow(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]]) -> Any:
    """A ``pyarrow.Table`` with one typed column per column (int64, float64, string, timestamp UTC).

    Raises:
        ConfigError: when pyarrow is not installed.
    """
    try:
        import pyarrow as pa
    except ImportError:
        raise ConfigError("Parquet output needs pyarrow: pip install 'promptcache[data]'") from None
    types = {INT: pa.int64(), FLOAT: pa.float64(), STR: pa.string(), TIME: pa.timestamp("us", tz="UTC")}
    schema = pa.schema([(c, types[k]) for c, k in columns])
    return pa.Table.from_pylist([{c: r.get(c) for c, _ in columns} for r in rows], schema=schema)


def to_parquet_bytes(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]]) -> bytes:
    """A Parquet file's bytes (zstd where available), for :func:`~promptcache.fileio.write_atomic`.

    Raises:
        ConfigError: when pyarrow is not installed.
    """
    table = to_arrow(columns, rows)
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def to_frame(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]]) -> Any:
    """A pandas DataFrame with typed columns: nullable ``Int64`` counts, ``float64`` money and
    ratios, ``string`` text, ``datetime64[ns, UTC]`` times.

    Raises:
        ImportError: when pandas is not installed (with the install command).
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("DataFrames need pandas: pip install 'promptcache[data]'") from None
    data: dict[str, Any] = {}
    for c, k in columns:
        vals = [r.get(c) for r in rows]
        if k == INT:
            data[c] = pd.array(vals, dtype="Int64")
        elif k == FLOAT:
            data[c] = pd.array([float("nan") if v is None else float(v) for v in vals], dtype="float64")
        elif k == TIME:
            data[c] = pd.to_datetime(pd.Series(vals, dtype="object"), utc=True)
        else:
            data[c] = pd.array(vals, dtype="string")
    return pd.DataFrame(data, columns=[c for c, _ in columns])


def table_rows(table: str, record: dict[str, Any], proposals: Sequence[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Rows of one of :data:`TABLES`.

    Raises:
        ConfigError: for an unknown table, or ``proposals`` without proposals.
    """
    if table == "requests":
        return request_rows(record)
    if table == "findings":
        return finding_rows(record)
    if table == "proposals":
        if proposals is None:
            raise ConfigError("the proposals table needs proposals (promptcache audit --propose, or promptcache propose)")
        return proposal_rows(proposals)
    raise ConfigError(f"unknown table {table!r} (choose one of {', '.join(TABLES)})")


def write_table(fmt: str, table: str, record: dict[str, Any], proposals: Sequence[dict[str, Any]] | None,
                output: Path | None) -> str | bytes:
    """The bytes or text of a table in ``csv`` or ``parquet``.

    Raises:
        ConfigError: for Parquet without an output file or without pyarrow.
    """
    rows = table_rows(table, record, proposals)
    cols = COLUMNS[table]
    if fmt == "csv":
        return to_csv(cols, rows)
    if output is None:
        raise ConfigError("--format parquet writes a binary file: give it --output FILE")
    return to_parquet_bytes(cols, rows)
