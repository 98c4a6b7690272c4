"""Hit ratio against KV-cache capacity (LRU), many capacities in one pass over a log.

The log runs through the audit pipeline once (:class:`promptcache.pipeline.Pipeline`: ingest,
render, tokenize); every prompt then feeds one :class:`~promptcache.simulate.PrefixSim` per
capacity, built from the engine's rules (``rules/providers/vllm.yaml`` or ``sglang.yaml``)
with ``capacity_tokens`` set, plus one without a capacity (the unbounded ratio). A capacity is
in tokens of KV cache; × ``kv_bytes_per_token`` it is bytes, ÷ a context length it is
concurrent contexts.

All requests share one cache, as they share one deployment's GPU memory; requests of
different cache namespaces (models, ``cache_salt``/``prompt_cache_key``) never share a
prefix: the first unit of a prompt from any namespace but the first one seen is replaced by an
id of its own, which is what vLLM does when it folds the salt into the first block's hash.

Without explicit capacities the points are spaced logarithmically (two per decade, three
decades) below the log's distinct tokens, which only the end of the pass tells: the tokenized
prompts are spilled to a temporary file during the pass and replayed from it, so the log is
still read and tokenized once.
"""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Callable, Iterable, Sequence

from ..errors import ConfigError, InputError
from ..simulate import PrefixSim, Prompt
from ..simulate.rules import CacheRules, provider as provider_file

ENGINES = ("vllm", "sglang")
_SPILL = struct.Struct("<IBIQQ")  # namespace id, width, unit tokens, prompt tokens, unit bytes


@dataclass(frozen=True)
class SweepPoint:
    """Result at one capacity.

    Attributes:
        capacity_tokens: LRU capacity, tokens of KV cache.
        cached_tokens: prompt tokens served from the cache over the log.
        hit_ratio: ``cached_tokens / prompt_tokens`` (token-weighted).
    """

    capacity_tokens: int
    cached_tokens: int
    hit_ratio: float


@dataclass
class SweepResult:
    """A capacity sweep over a log (tokens).

    Attributes:
        engine: ``vllm`` or ``sglang``.
        rules: the unbounded rules used (block size, recomputed tail).
        requests: requests simulated.
        prompt_tokens: prompt tokens over the log.
        unbounded_cached_tokens: cached tokens with no capacity limit.
        distinct_tokens: tokens the unbounded cache holds at the end (the working set).
        points: one per capacity, ascending.
        namespaces: cache namespaces seen.
        warnings: one-line warnings (from the pipeline and the sweep).
        inputs: per-file reading statistics (``InputStats``) when run over logs.
    """

    engine: str
    rules: CacheRules
    requests: int = 0
    prompt_tokens: int = 0
    unbounded_cached_tokens: int = 0
    distinct_tokens: int = 0
    points: list[SweepPoint] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inputs: list = field(default_factory=list)

    @property
    def unbounded_hit_ratio(self) -> float:
        """Token-weighted hit ratio with no capacity limit."""
        return self.unbounded_cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def cached_at(self, capacity_tokens: int) -> int:
        """Cached tokens at a capacity that was swept.

        Raises:
            KeyError: when that capacity was not swept.
        """
        for p in self.points:
            if p.capacity_tokens == capacity_tokens:
                return p.cached_tokens
        raise KeyError(capacity_tokens)


def engine_rules(engine: str, *, block_size: int | None = None, model: str | None = None) -> CacheRules:
    """The unbounded engine rules for the sweep (``rules/providers/<engine>.yaml``).

    Raises:
        ConfigError: for an engine other than vllm or sglang, or a bad block size.
    """
    if engine not in ENGINES:
        raise ConfigError(f"--cache-model for a capacity sweep must be an engine ({', '.join(ENGINES)}), got {engine!r}")
    return provider_file(engine).rules_for(model, block_size=block_size)


class CapacitySweep:
    """Feed prompts once; read the hit ratio at every capacity.

    Args:
        rules: unbounded engine rules (:func:`engine_rules`); each capacity gets a copy with
            ``capacity_tokens`` set (as ``--capacity-tokens`` would).
        capacities: LRU capacities in tokens (each ≥ 1).

    Raises:
        ConfigError: for a capacity below 1.
    """

    def __init__(self, rules: CacheRules, capacities: Iterable[int]):
        caps = sorted({int(c) for c in capacities})
        if caps and caps[0] < 1:
            raise ConfigError("capacities must be at least 1 token")
        self.rules = rules
        self.capacities = caps
        self._rules_at = {c: replace(rules, capacity_tokens=c, eviction=rules.eviction or "node") for c in caps}
        self._sims: dict[int | None, PrefixSim] | None = None
        self._cached: dict[int | None, int] = {c: 0 for c in [None, *caps]}
        self._width = 0
        self._unit_tokens = 0
        self._ns: dict[str, int] = {}
        self._first_ids: dict[tuple[int, bytes], bytes] = {}
        self._next_id = 0
        self.requests = 0
        self.prompt_tokens = 0

    @property
    def namespaces(self) -> list[str]:
        """Namespaces seen, in order of first appearance."""
        return list(self._ns)

    def _separate(self, p: Prompt, ns_id: int) -> Prompt:
        """Give a prompt of namespace ``ns_id`` > 0 a first unit no other namespace uses."""
        if ns_id == 0 or not p.units:
            return p
        W = p.width
        key = (ns_id, p.units[:W])
        first = self._first_ids.get(key)
        if first is None:
            # ids counted down from the top of the unit range: far above any vocabulary
            first = ((1 << (8 * W)) - 1 - self._next_id).to_bytes(W, "little")
            self._next_id += 1
            self._first_ids[key] = first
        return Prompt(first + p.units[W:], W, p.unit_tokens, p.n_tokens)

    def feed(self, prompt: Prompt, namespace: str = "", now: float | None = None) -> None:
        """Simulate one prompt at every capacity (arrival order).

        Args:
            prompt: the tokenized prompt (token ids or hashed blocks).
            namespace: its cache namespace.
            now: arrival time (unused by the engines' rules, which have no TTL).

        Raises:
            InputError: when a log mixes token-level and hashed-block prompts.
        """
        if self._sims is None:
            self._width, self._unit_tokens = prompt.width, prompt.unit_tokens
            self._sims = {None: PrefixSim(self.rules, prompt.width, prompt.unit_tokens)}
            for c, r in self._rules_at.items():
                self._sims[c] = PrefixSim(r, prompt.width, prompt.unit_tokens)
        elif (prompt.width, prompt.unit_tokens) != (self._width, self._unit_tokens):
            raise InputError("a capacity sweep needs one kind of log: token-level requests and hashed-block "
                             "traces (or traces with different block sizes) cannot share one simulated cache")
        ns_id = self._ns.setdefault(namespace, len(self._ns))
        p = self._separate(prompt, ns_id)
        self.requests += 1
        self.prompt_tokens += p.n_tokens
        for c, sim in self._sims.items():
            self._cached[c] += sim.step(p, now)[0]

    @property
    def distinct_tokens(self) -> int:
        """Tokens the unbounded cache holds now (its stored units × tokens per unit)."""
        if self._sims is None:
            return 0
        return self._sims[None].tree.size * self._unit_tokens

    def result(self) -> SweepResult:
        """The sweep so far."""
        n = self.prompt_tokens
        pts = [SweepPoint(c, self._cached[c], self._cached[c] / n if n else 0.0) for c in self.capacities]
        return SweepResult(engine=self.rules.provider, rules=self.rules, requests=self.requests, prompt_tokens=n,
                           unbounded_cached_tokens=self._cached[None], distinct_tokens=self.distinct_tokens,
                           points=pts, namespaces=self.namespaces)


def auto_capacities(distinct_tokens: int, *, per_decade: int = 2, decades: int = 3, minimum: int = 1) -> list[int]:
    """Log-spaced capacities from ``distinct_tokens`` down ``decades`` decades, ascending.

    ``distinct_tokens × 10^(−k/per_decade)`` for ``k = 0 … per_decade × decades``, rounded,
    dropping those below ``minimum`` (one engine block).
    """
    if distinct_tokens < 1:
        return []
    pts = {round(distinct_tokens * 10 ** (-k / per_decade)) for k in range(per_decade * decades + 1)}
    return sorted(c for c in pts if c >= max(1, minimum))


def _spill(fh: IO[bytes], ns_id: int, p: Prompt) -> None:
    fh.write(_SPILL.pack(ns_id, p.width, p.unit_tokens, p.n_tokens, len(p.units)))
    fh.write(p.units)


def _replay(fh: IO[bytes], names: Sequence[str], sweep: CapacitySweep) -> None:
    fh.seek(0)
    size = _SPILL.size
    while True:
        head = fh.read(size)
        if len(head) < size:
            break
        ns_id, width, unit_tokens, n_tokens, nbytes = _SPILL.unpack(head)
        sweep.feed(Prompt(fh.read(nbytes), width, unit_tokens, n_tokens), names[ns_id])


def sweep_logs(paths: Sequence[str | Path], capacities: Sequence[int] | None = None, *, engine: str = "vllm",
               block_size: int | None = None, tokenizer: str | None = None, hash_block_size: int | None = None,
               input_format: str | None = None, model: str | None = None, strict: bool = False,
               extra_capacities: Iterable[int] = (), per_decade: int = 2, decades: int = 3,
               progress: Callable[[int], None] | None = None) -> SweepResult:
    """Run a capacity sweep over request logs.

    Args:
        paths: logs any ``promptcache audit`` reads (JSONL, JSON, .gz; Mooncake traces).
        capacities: LRU capacities in tokens; ``None``: automatic (see the module docstring).
        engine: ``vllm`` (full blocks, LRU over blocks) or ``sglang`` (token radix tree, LRU
            over leaves).
        block_size: engine block size in tokens (vLLM default 16).
        tokenizer, hash_block_size, input_format, model, strict: as for ``promptcache audit``.
        extra_capacities: capacities always swept (the GPU and tier boundaries).
        per_decade, decades: spacing of the automatic points.
        progress: called with the number of requests read so far.

    Returns:
        A :class:`SweepResult`.

    Raises:
        ConfigError: for bad options.
        InputError: for unreadable logs (malformed lines are skipped and counted unless
            ``strict``).
    """
    from ..pipeline import AuditOptions, Pipeline
    from ..ingest import ReadOptions

    rules = engine_rules(engine, block_size=block_size, model=model)
    opts = AuditOptions(cache_model=engine, tokenizer=tokenizer, block_size=block_size, model=model,
                        read=ReadOptions(input_format=input_format, hash_block_tokens=hash_block_size, strict=strict))
    pipe = Pipeline(paths, opts)
    extra = [int(c) for c in extra_capacities]
    models: set[str] = set()
    if capacities is not None:
        sweep = CapacitySweep(rules, [*capacities, *extra])
        for step in pipe.steps(progress):
            models.add(step.request.model or "-")
            sweep.feed(step.prompt, step.outcome.namespace)
        res = sweep.result()
    else:
        first = CapacitySweep(rules, extra)
        with tempfile.TemporaryFile(prefix="promptcache-kv-") as fh:
            for step in pipe.steps(progress):
                models.add(step.request.model or "-")
                ns = step.outcome.namespace
                first.feed(step.prompt, ns)
                _spill(fh, first._ns[ns], step.prompt)
            auto = auto_capacities(first.distinct_tokens, per_decade=per_decade, decades=decades,
                                   minimum=max(rules.granularity, first._unit_tokens or 1))
            sweep = CapacitySweep(rules, [*auto, *extra])
            _replay(fh, first.namespaces, sweep)
        res = sweep.result()
    res.inputs = pipe.inputs
    res.warnings = list(pipe.state.warnings)
    if len(models) > 1:
        res.warnings.append(f"the log names {len(models)} models; the sweep puts them in one cache (one deployment), "
                            "each model's prefixes apart")
    for st in pipe.inputs:
        if st.skipped_lines:
            first = f" (first: line {st.errors[0][0]}: {st.errors[0][1]})" if st.errors else ""
            res.warnings.append(f"{st.path}: {st.skipped_lines} malformed line(s) skipped{first}")
    return res
