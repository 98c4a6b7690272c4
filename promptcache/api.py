"""The Python API: the commands as functions, for notebooks and scripts.

>>> import promptcache.api as pc                                     # doctest: +SKIP
>>> res = pc.audit(["samples/agent_timestamp.jsonl"])                # doctest: +SKIP
>>> df = res.to_pandas()               # one row per request          # doctest: +SKIP
>>> res.findings_frame()               # one row per finding          # doctest: +SKIP
>>> pc.propose(["samples/agent_timestamp.jsonl"]).to_pandas()        # doctest: +SKIP

Results wrap the library's own objects (:class:`~promptcache.pipeline.AuditResult`,
:class:`~promptcache.propose.engine.ProposeResult`) and let their attributes through. Tables
are the ones ``--format csv|parquet`` writes (:mod:`promptcache.report.tables`); pandas is
imported only by the ``*frame``/``to_pandas`` methods (``pip install 'promptcache[data]'``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .plurals import counted
from .pipeline import AuditOptions, AuditResult
from .pipeline import audit as _audit
from .ingest import ReadOptions

PathsLike = str | Path | Sequence[str | Path]


def _paths(paths: PathsLike) -> list[str | Path]:
    if isinstance(paths, (str, Path)):
        return [paths]
    return list(paths)


def options(*, cache_model: str | None = None, tokenizer: str | None = None, ttl: float | None = None,
            capacity_tokens: int | None = None, block_size: int | None = None, prices: str | Path | None = None,
            model: str | None = None, input_format: str | None = None, hash_block_size: int | None = None,
            strict: bool = False, show_text: bool = False, top: int = 10, diagnose: bool = True) -> AuditOptions:
    """The :class:`~promptcache.pipeline.AuditOptions` for the command-line options of the same
    names (``prices`` is ``--prices FILE``; sizes in tokens, ``ttl`` in seconds)."""
    return AuditOptions(cache_model=cache_model, tokenizer=tokenizer, ttl=ttl, capacity_tokens=capacity_tokens,
                        block_size=block_size, prices_file=str(prices) if prices else None, model=model, top=top,
                        diagnose=diagnose, show_text=show_text,
                        read=ReadOptions(input_format=input_format, hash_block_tokens=hash_block_size, strict=strict))


class Audit:
    """An audit's result with tables and reports.

    Attributes of :class:`~promptcache.pipeline.AuditResult` (``outcomes``, ``scenarios``,
    ``findings``, ``top_prefixes``, ``warnings`` ...) are available directly.

    Args:
        result: the audit result.
        inputs: the files it read besides the logs (a prices file, a tokenizer).

    Attributes:
        files_read: the logs and ``inputs``: :meth:`to_html` never writes over one of them.
    """

    def __init__(self, result: AuditResult, inputs: Sequence[str | Path | None] = ()):
        self.result = result
        self.files_read = [*(i.path for i in result.inputs), *inputs]
        self._record: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.result, name)

    def __repr__(self) -> str:
        s = self.result.scenarios
        return (f"<promptcache Audit: {counted(len(self.result.outcomes), 'request')}, simulated hit ratio "
                f"{s['simulated'].hit_ratio:.1%}, ideal {s['ideal'].hit_ratio:.1%}, "
                f"{counted(len(self.result.findings), 'finding')}>")

    def record(self) -> dict[str, Any]:
        """The ``promptcache.audit/v1`` record with the report detail (time series, per-request
        ``index``, ``provider``, ``output_tokens`` and ``cost_usd`` per scenario); computed once."""
        if self._record is None:
            from .report.audit_records import audit_record

            self._record = audit_record(self.result, detail=True)
        return self._record

    def to_pandas(self) -> Any:
        """Per-request outcomes as a DataFrame: one row per request, in arrival order (columns:
        :data:`promptcache.report.tables.REQUEST_COLUMNS`; costs in USD per scenario, ``NaN``
        when unpriced).

        Raises:
            ImportError: without pandas.
        """
        from .report.tables import REQUEST_COLUMNS, request_rows, to_frame

        return to_frame(REQUEST_COLUMNS, request_rows(self.record()))

    requests_frame = to_pandas

    def findings_frame(self) -> Any:
        """Findings as a DataFrame, ranked by money lost (columns:
        :data:`promptcache.report.tables.FINDING_COLUMNS`; evidence redacted unless
        ``show_text``).

        Raises:
            ImportError: without pandas.
        """
        from .report.tables import FINDING_COLUMNS, finding_rows, to_frame

        return to_frame(FINDING_COLUMNS, finding_rows(self.record()))

    def scenarios_frame(self) -> Any:
        """One row per scenario (``no_cache``, ``reported`` when the log has usage,
        ``simulated``, ``ideal``): requests, tokens, hit ratios and cost in USD.

        Raises:
            ImportError: without pandas.
        """
        from .report.tables import FLOAT, INT, STR, to_frame

        cols = [("scenario", STR), ("requests", INT), ("prompt_tokens", INT), ("cached_tokens", INT),
                ("cache_write_tokens", INT), ("uncached_tokens", INT), ("hit_ratio", FLOAT),
                ("request_hit_ratio", FLOAT), ("cost_usd", FLOAT)]
        rows = [{"scenario": k, **v} for k, v in self.record()["summary"]["scenarios"].items()]
        return to_frame(cols, rows)

    def to_html(self, path: str | Path | None = None, *, title: str | None = None) -> str:
        """The self-contained HTML report; written atomically to ``path`` when given.

        Raises:
            ConfigError: when ``path`` is one of the audit's inputs (:attr:`files_read`).
        """
        from .report.html import render_html

        html = render_html(self.record(), title=title)
        if path is not None:
            from .fileio import write_atomic

            write_atomic(path, html, inputs=self.files_read)
        return html

    def to_markdown(self) -> str:
        """The GitHub-flavoured Markdown summary (for pull-request comments)."""
        from .report.markdown import render_markdown

        return render_markdown(self.record())


class Proposals:
    """A proposal run: the audit before, the audit of the rewritten log after, and one
    proposal per template with changes.

    Attributes of :class:`~promptcache.propose.engine.ProposeResult` are available directly;
    :attr:`before` and :attr:`after` are :class:`Audit` objects.

    Args:
        result: the proposal result.
        inputs: as for :class:`Audit`.
    """

    def __init__(self, result: Any, inputs: Sequence[str | Path | None] = ()):
        self.result = result
        self.before = Audit(result.before, inputs)
        self.after = Audit(result.after, inputs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.result, name)

    def __repr__(self) -> str:
        b, a = self.result.before.scenarios["simulated"], self.result.after.scenarios["simulated"]
        return (f"<promptcache Proposals: {counted(len(self.result.proposals), 'template')}, simulated hit ratio "
                f"{b.hit_ratio:.1%} → {a.hit_ratio:.1%}>")

    def records(self) -> list[dict[str, Any]]:
        """The ``proposals`` array of the JSON report."""
        from .report.audit_records import proposals_record

        return proposals_record(self.result)

    def to_pandas(self) -> Any:
        """Proposals as a DataFrame: one row per template with changes, ranked by savings
        (columns: :data:`promptcache.report.tables.PROPOSAL_COLUMNS`).

        Raises:
            ImportError: without pandas.
        """
        from .report.tables import PROPOSAL_COLUMNS, proposal_rows, to_frame

        return to_frame(PROPOSAL_COLUMNS, proposal_rows(self.records()))

    proposals_frame = to_pandas

    def to_html(self, path: str | Path | None = None, *, title: str | None = None) -> str:
        """The HTML report of the audit before, with the proposals; written atomically to
        ``path`` when given.

        Raises:
            ConfigError: when ``path`` is one of the inputs (:attr:`Audit.files_read`).
        """
        from .report.html import render_html

        html = render_html(self.before.record(), self.records(), after=self._after_summary(), title=title,
                           unaddressed=self._unaddressed())
        if path is not None:
            from .fileio import write_atomic

            write_atomic(path, html, inputs=self.before.files_read)
        return html

    def to_markdown(self) -> str:
        """The Markdown summary of the audit before, with the proposals."""
        from .report.markdown import render_markdown

        return render_markdown(self.before.record(), self.records(), after=self._after_summary(),
                               unaddressed=self._unaddressed())

    def _unaddressed(self) -> list[dict[str, Any]]:
        from .report.audit_records import unaddressed_record

        return unaddressed_record(self.result)

    def _after_summary(self) -> dict[str, Any]:
        from .report.audit_records import scenario_record

        return {k: scenario_record(v) for k, v in self.result.after.scenarios.items() if k != "reported"}


@dataclass
class Export:
    """An exported trace: where it went and what it holds.

    Attributes:
        path: the file written, or ``None`` when only returned.
        format: ``mooncake`` or ``bailian``.
        block_tokens: tokens per hashed block.
        records: the trace records, in arrival order.
        distinct_blocks: distinct hash ids.
    """

    path: str | None
    format: str
    block_tokens: int
    records: list[dict[str, Any]]
    distinct_blocks: int

    def to_pandas(self) -> Any:
        """One row per exported request: ``timestamp`` (Mooncake: ms, Bailian: s, from the first
        request), ``input_length``, ``output_length``, ``blocks`` (and Bailian's ``chat_id``,
        ``parent_chat_id``, ``turn``, ``type``).

        Raises:
            ImportError: without pandas.
        """
        from .report.tables import FLOAT, INT, STR, to_frame

        cols = [("timestamp", INT if self.format == "mooncake" else FLOAT), ("input_length", INT),
                ("output_length", INT), ("blocks", INT)]
        if self.format == "bailian":
            cols = [("chat_id", INT), ("parent_chat_id", INT), ("turn", INT), ("type", STR)] + cols
        rows = [{**r, "blocks": len(r["hash_ids"])} for r in self.records]
        return to_frame(cols, rows)


def audit(paths: PathsLike, *, progress: Callable[[int], None] | None = None, **opts: Any) -> Audit:
    """Audit request logs (``promptcache audit``).

    Args:
        paths: a log file or a list of them (JSONL, JSON arrays, ``.gz``).
        progress: called with the number of requests done so far.
        **opts: the keyword arguments of :func:`options` (``cache_model="vllm"``,
            ``block_size=512``, ``ttl=300``, ``prices="prices.yaml"``, ...), or
            ``options=AuditOptions(...)``.

    Returns:
        An :class:`Audit`.

    Raises:
        ConfigError: for bad options, rules or prices files.
        InputError: for unreadable files, or malformed records with ``strict``.
    """
    o = opts.pop("options", None) or options(**opts)
    return Audit(_audit(_paths(paths), o, progress=progress), [o.prices_file, o.tokenizer])


def propose(paths: PathsLike, *, write: str | Path | None = None, progress: Callable[[int], None] | None = None,
            **opts: Any) -> Proposals:
    """Infer the templates, propose stable-first versions and re-price them (``promptcache propose``).

    Args:
        paths: a log file or a list of them.
        write: also write the proposed log here (JSONL in the input's format).
        progress: called with requests done, per pass.
        **opts: as for :func:`audit`.

    Returns:
        A :class:`Proposals`.

    Raises:
        ConfigError: for bad options, or ``write`` for a format that cannot be rewritten.
        InputError: for unreadable files, or malformed records with ``strict``.
    """
    from .propose.engine import propose as _propose

    o = opts.pop("options", None) or options(**opts)
    if write is not None:
        from .fileio import refuse_inputs

        refuse_inputs({"write": write}, [*_paths(paths), o.prices_file, o.tokenizer])
    return Proposals(_propose(_paths(paths), o, write=write, progress=progress), [o.prices_file, o.tokenizer])


def export_trace(paths: PathsLike, output: str | Path | None = None, *, to: str = "mooncake",
                 block_tokens: int | None = None, salt: bytes | None = None, salt_file: str | Path | None = None,
                 **opts: Any) -> Export:
    """Export an anonymised, replayable trace (``promptcache export``): salted chained block
    hashes remapped to small integers, lengths and arrival times, no text.

    Args:
        paths: a log file or a list of them.
        output: write the trace here (JSONL, gzipped for ``.gz``), atomically; else only return it.
        to: ``mooncake`` (ms timestamps, 512-token blocks) or ``bailian`` (seconds, 16-token
            blocks, sessions).
        block_tokens: tokens per block (default: the format's).
        salt: the BLAKE2b key (at least 16 bytes); else read from ``salt_file`` (created with
            mode 0600 when missing), else a fresh random salt that is not kept.
        **opts: as for :func:`audit` (the tokenizer and chat format follow the cache rules).

    Returns:
        An :class:`Export`.

    Raises:
        ConfigError: for bad options or salt, or a block size a hashed input cannot take.
        InputError: for unreadable files, or malformed records with ``strict``.
    """
    from .export.mooncake import export as _export, load_salt

    o = opts.pop("options", None) or options(diagnose=False, **opts)
    if output is not None:
        from .fileio import refuse_inputs

        refuse_inputs({"output": output}, [*_paths(paths), salt_file, o.prices_file, o.tokenizer])
    key = salt if salt is not None else load_salt(salt_file)
    res = _export(_paths(paths), o, to=to, block_tokens=block_tokens, salt=key)
    if output is not None:
        from .export.mooncake import write_trace

        write_trace(output, res.records, _paths(paths))
    return Export(str(output) if output is not None else None, res.format, res.block_tokens, res.records,
                  res.distinct_blocks)
