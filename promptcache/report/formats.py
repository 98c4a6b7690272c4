"""The report formats the commands share beyond text and JSON: ``html``, ``markdown``, ``csv``
and ``parquet``, each rendered from the same records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..pipeline import AuditResult

FORMATS = ("html", "markdown", "csv", "parquet")


def render_report(fmt: str, res: AuditResult, proposed: Any = None, *, table: str = "requests",
                  output: Path | None = None) -> str | bytes:
    """One report of an audit (and its proposals, when ``proposed`` is a ``ProposeResult``).

    Args:
        fmt: one of :data:`FORMATS`.
        res: the audit (the log as it is).
        proposed: the proposals, or ``None``.
        table: for ``csv``/``parquet``: ``requests``, ``findings`` or ``proposals``.
        output: the destination (``parquet`` needs one).

    Returns:
        Text (html, markdown, csv) or bytes (parquet).

    Raises:
        ConfigError: for ``parquet`` without ``output`` or pyarrow, or the proposals table
            without proposals.
    """
    from .audit_records import audit_record, proposals_record, scenario_record, unaddressed_record

    rec = audit_record(res, include_requests=fmt in ("csv", "parquet") and table == "requests", detail=True)
    props = proposals_record(proposed) if proposed is not None else None
    after = ({k: scenario_record(v) for k, v in proposed.after.scenarios.items() if k != "reported"}
             if proposed is not None else None)
    if fmt == "html":
        from .html import render_html

        return render_html(rec, props, after=after, unaddressed=unaddressed_record(proposed) if proposed else ())
    if fmt == "markdown":
        from .markdown import render_markdown

        return render_markdown(rec, props, after=after, unaddressed=unaddressed_record(proposed) if proposed else ())
    from .tables import write_table

    return write_table(fmt, table, rec, props, output)


def emit_report(fmt: str, res: AuditResult, proposed: Any, output: Path | None, *, table: str = "requests") -> None:
    """Render with :func:`render_report` and write it to ``output`` (atomically) or stdout."""
    from ..fileio import emit
    from ..fileio import write_atomic

    data = render_report(fmt, res, proposed, table=table, output=output)
    if isinstance(data, bytes):
        assert output is not None
        write_atomic(output, data)
    else:
        emit(data, output)
