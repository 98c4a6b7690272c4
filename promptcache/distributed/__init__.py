"""The audit on Dask: the same pipeline, one task per namespace partition, merged on the client.

Providers and engines partition their caches by model (and cache key); so does the audit. A
request's partition is a stable hash of its model
(:meth:`~promptcache.pipeline.Pipeline.partition_of`): the ideal cache holds a model's traffic
whatever upstream or rules file serves it, and every simulated namespace is one model's, so each
partition holds whole caches (ideal and simulated) and whole diagnosis groups, and its results merge without loss: outcomes
are put back in the single-run arrival order and re-numbered, cause instances are grouped
afterwards, shared prefixes ranked together. The result equals a single-process audit
(``tests/test_distributed.py``).

Every task reads every input file (each keeps only its partition's requests), so the files
must be readable from every worker: a shared filesystem or object store path on a cluster.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..pipeline import AuditOptions, AuditResult, Partial, Pipeline, assemble, collect, stretch_rank
from ..errors import ConfigError
from ..pricing import PriceBook


def audit_partition(paths: Sequence[str], opts: AuditOptions, index: int, count: int) -> Partial:
    """Audit partition ``index`` of ``count`` (a Dask task; also callable directly)."""
    return collect(Pipeline(paths, opts, partition=(index, count)))


def merge(parts: Sequence[Partial], top: int) -> Partial:
    """Merge partitions' results into what one run over all requests would have produced."""
    rows: list[tuple[tuple[float, int, int], int, Any]] = []
    files = {st.path: k for k, st in enumerate(parts[0].inputs)} if parts else {}
    for pi, part in enumerate(parts):
        for o in part.outcomes:
            t = o.arrival if o.arrival is not None else float("-inf")
            rows.append(((t, files.get(o.path, 0), o.line), pi, o))
    rows.sort(key=lambda r: r[0])
    renum: dict[tuple[int, int], int] = {}
    for new, (_, pi, o) in enumerate(rows):
        renum[(pi, o.index)] = new
    outcomes = []
    for _, pi, o in rows:
        outcomes.append(replace(o, index=renum[(pi, o.index)],
                                diverged_from=None if o.diverged_from is None else renum.get((pi, o.diverged_from))))
    cands = None
    if all(p.candidates is not None for p in parts):
        cands = [replace(c, index=renum[(pi, c.index)]) for pi, p in enumerate(parts) for c in p.candidates or []]
    stretches = sorted((s for p in parts for s in p.stretches), key=stretch_rank, reverse=True)[:top]
    rules: dict[str, Any] = {}
    tokenizers: dict[str, tuple[bool, str]] = {}
    warnings: list[str] = []
    first: dict[str, int] = {}
    for pi, p in enumerate(parts):
        rules.update(p.rules)
        tokenizers.update(p.tokenizers)
        warnings += [w for w in p.warnings if w not in warnings]
        for name, idx in p.tokenizer_first.items():
            at = renum.get((pi, idx), len(outcomes))
            first[name] = min(first.get(name, at), at)
    # in the order one run counts them: by the first request each counted
    tokenizers = dict(sorted(tokenizers.items(), key=lambda kv: first.get(kv[0], len(outcomes))))
    firsts = [p.first_t for p in parts if p.first_t is not None]
    lasts = [p.last_t for p in parts if p.last_t is not None]
    return Partial(outcomes, cands, stretches, rules, tokenizers, warnings, parts[0].inputs if parts else [],
                   min(firsts) if firsts else None, max(lasts) if lasts else None,
                   tokenizer_first={n: i for n, i in first.items()})


def audit_dask(paths: Sequence[str | Path], opts: AuditOptions | None = None, *, scheduler: str | None = None,
               partitions: int | None = None) -> AuditResult:
    """Audit on Dask: a local cluster when ``scheduler`` is ``None``, else the cluster at that
    address (``tcp://host:8786``).

    Args:
        paths: log files, readable from every worker.
        opts: audit options.
        scheduler: Dask scheduler address, or ``None`` for a ``LocalCluster``.
        partitions: number of namespace partitions (default: twice the workers).

    Raises:
        ConfigError: when ``dask[distributed]`` is not installed.
    """
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError("--dask needs dask[distributed]: pip install 'promptcache[dask]'") from None
    opts = opts or AuditOptions()
    files = [str(Path(p).resolve()) if Path(p).exists() else str(p) for p in paths]
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(processes=True, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        n = partitions or max(1, 2 * len(client.scheduler_info().get("workers", {})))
        futures = [client.submit(audit_partition, files, opts, k, n, pure=False) for k in range(n)]
        parts = client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return assemble(merge(parts, opts.top), opts, PriceBook(opts.prices_file))
