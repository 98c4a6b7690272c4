"""Pydantic Logfire: rows of the ``records`` table, from the query API
(``logfire.experimental.query_client`` ``query_json_rows`` → ``{"columns": [...], "rows":
[...]}``) or one row per line (a JSON or CSV export of the same query).

Columns (pydantic/logfire ``docs/reference/sql.md``; the OpenAI instrumentation's attributes
in ``tests/otel_integrations/test_openai.py``; checked 2026-12-01): ``start_timestamp``,
``trace_id``, ``span_id``, ``parent_span_id``, ``kind``, ``span_name``, ``message``,
``attributes`` (an object: the OpenTelemetry GenAI attributes, ``request_data`` with the
request body, ``response_data`` ...). A row's attributes are read as an OpenTelemetry span's
(:mod:`.otel`); ``request_data`` stands in when the row has no ``gen_ai.input.messages``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import BadRecord
from ..model import Source
from .bodies import body_format, parse_body, reprefix
from .common import MAPPING, loads_if_json
from .fields import parse_time
from .otel import attributes, classify, span_keys, span_request
from .outcomes import Keyed, Skipped
from .reader import Reader
from .usage import find_usage


def _row(row: Any, src: Source, opts: Any) -> Any:
    if not isinstance(row, MAPPING):
        raise BadRecord("row is not an object")
    raw = loads_if_json(row.get("attributes"))
    a = attributes(raw if isinstance(raw, MAPPING) else {})
    rd = loads_if_json(raw.get("request_data")) if isinstance(raw, MAPPING) else None
    why = classify(a)
    if why is not None and not (isinstance(rd, MAPPING) and "messages" in rd):
        return Skipped(f"Logfire {why}")
    t = row.get("start_timestamp")
    req = span_request({k: v for k, v in a.items() if not k.startswith(("request_data.", "response_data."))}, [], src,
                       opts, row.get("span_id"), parse_time(t) if t not in (None, "") else None, fmt="logfire")
    if not req.parts and isinstance(rd, MAPPING):
        fmt = body_format(rd)
        if fmt is not None:
            b = parse_body(rd, fmt)
            req = replace(req, parts=reprefix(b.parts, "", "attributes.request_data."), params=b.params,
                          model=req.model or (str(rd["model"]) if rd.get("model") else None))
    if req.usage is None and isinstance(raw, MAPPING):
        req = replace(req, usage=find_usage(loads_if_json(raw.get("response_data"))))
    parent = row.get("parent_span_id")
    return Keyed(req, keys=span_keys(row.get("trace_id"), row.get("span_id")),
                 supersedes=span_keys(row.get("trace_id"), parent) if parent else ())


class LogfireReader(Reader):
    """Logfire ``records`` rows (see the module docstring). ``arrival``: ``start_timestamp``."""

    name = "logfire"
    producer = "Pydantic Logfire"
    shapes = "query API results {columns, rows} and records rows (start_timestamp, span_name, attributes)"
    looks_for = "start_timestamp with span_name/attributes, or rows of such"
    owns = ("start_timestamp", "span_name")

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or not self.alone(rec):
            return None
        if "start_timestamp" in rec and ("span_name" in rec or "attributes" in rec):
            return "a records row (start_timestamp, span_name)"
        rows = rec.get("rows")
        if isinstance(rec.get("columns"), list) and isinstance(rows, list) and rows and isinstance(rows[0], MAPPING) \
                and "start_timestamp" in rows[0]:
            return "a query result of records rows (columns, rows)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        if "rows" not in rec or "start_timestamp" in rec:
            return _row(rec, src, opts)
        out: list[Any] = []
        for k, row in enumerate(rec["rows"]):
            try:
                out.append(_row(row, src, opts))
            except BadRecord as e:
                out.append(BadRecord(f"rows[{k}]: {e}"))
        return out
