"""The audit pipeline: log files → requests → segments → tokens → simulation → prices.

:func:`audit` is the library entry point behind ``promptcache audit``. Data flows one way;
each stage lives in its own package (``ingest``, ``render``, ``tokenize``, ``prefix``,
``simulate``, ``pricing``). Requests stream through in chunks: memory grows with the distinct
prefixes kept alive in the simulated caches, not with the log's size.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import os
import itertools
import zlib
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from .diagnose.redact import identifier
from .errors import ConfigError
from .ingest import InputStats, ReadOptions, read_inputs
from .ingest.common import provider_for_model
from .ingest.usage import counted_twice
from .model import Divergence, Request
from .pricing import OVERLAY_SOURCE, PriceBook, Rates, tokens_cost
from .simulate import Outcome, Prompt, RequestRef, Simulator
from .step import Step
from .simulate.routing import FIRST_PARTY, Route, Router
from .simulate.rules import CacheRules, ProviderFile, load_providers, provider as provider_file, stale as stale_rules
from .prepare import CHUNK, Back, Context, Front, front_process
from .tokenize import Tokenizer, one_thread_per_batch, resolve_tokenizer

SCENARIOS = ("no_cache", "reported", "simulated", "ideal")
#: Inputs from this size on are audited in two processes by default: below it, forking and the
#: second process's start cost about what they save (an 85 MB log audits in 1.45 s in one
#: process, 1.6 s in two; a 490 MB one in 5.7 s and 4.9 s).
TWO_PROCESSES_BYTES = 128 * 2**20
#: Distinct segment path sequences shared among requests (see ``_Pipeline.shape``).
SHAPES = 8192


@dataclass
class AuditOptions:
    """Everything ``promptcache audit`` can set (sizes in tokens, times in seconds).

    Attributes:
        cache_model: provider or engine rules to apply to every request (``--cache-model``),
            else inferred per request from its model.
        tokenizer: ``--tokenizer`` (encoding name, ``approx``, or a path).
        ttl: override of the TTL (0 disables expiry).
        capacity_tokens: LRU capacity per cache namespace.
        block_size: engine block size override.
        prices_file: custom prices YAML.
        model: model name for logs without one (hashed traces).
        read: reading options (format, hashed block size, strict).
        top: how many shared prefixes to rank.
        diagnose: find and price what breaks the cache (``findings``).
        show_text: quote values in findings unredacted.
        workers: processes for one run: 1 runs everything here; 2 reads, renders and
            tokenizes in a forked second process while this one simulates and diagnoses (the
            same results; about 30% faster on fleet-size logs); ``None`` (the default) uses 2
            on machines with two or more cores for inputs of :data:`TWO_PROCESSES_BYTES` or
            more. More than 2 counts as 2 (``--dask`` scales further).
        calibrate: infer each namespace's minimum, granularity and TTL from the reported usage
            (``AuditResult.calibration``; :mod:`promptcache.calibrate`).
        rules_overlay: a rules overlay written by ``--write-overlay`` (``--rules-overlay``):
            its figures replace the documented ones where it matches.
        engine_pool: bounded engines run the engine's own pool (vLLM's block pool, SGLang's
            radix tree); False: a plain LRU over cached blocks (what promptcache's own replay
            engine keeps, which the replay compares with).
    """

    cache_model: str | None = None
    tokenizer: str | None = None
    ttl: float | None = None
    capacity_tokens: int | None = None
    block_size: int | None = None
    prices_file: str | None = None
    model: str | None = None
    read: ReadOptions = field(default_factory=ReadOptions)
    top: int = 10
    diagnose: bool = True
    show_text: bool = False
    workers: int | None = None
    calibrate: bool = False
    rules_overlay: str | None = None
    engine_pool: bool = True

    def __post_init__(self) -> None:
        """Reject values no run could use, naming the option.

        Raises:
            ConfigError: for a negative or non-numeric TTL, a capacity, block size or hashed
                block size below 1, or a negative ``top``.
        """
        if self.ttl is not None and (isinstance(self.ttl, bool) or not isinstance(self.ttl, (int, float))
                                     or not self.ttl >= 0):  # NaN fails every comparison
            raise ConfigError(f"--ttl must be a number of seconds >= 0 (0 or inf: never expire), got {self.ttl!r}")
        if self.ttl == float("inf"):
            self.ttl = 0  # never expire: what 0 means to the rules
        for name, v in (("--capacity-tokens", self.capacity_tokens), ("--block-size", self.block_size),
                        ("--hash-block-size", self.read.hash_block_tokens)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigError(f"{name} must be a whole number >= 1, got {v!r}")
        if isinstance(self.top, bool) or not isinstance(self.top, int) or self.top < 0:
            raise ConfigError(f"--top must be a whole number >= 0, got {self.top!r}")
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int)
                                         or self.workers < 1):
            raise ConfigError(f"--workers must be a whole number >= 1, got {self.workers!r}")


@dataclass
class ScenarioTotals:
    """Token and money totals of one scenario (tokens; USD)."""

    requests: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    priced_requests: int = 0
    request_hit_sum: float = 0.0

    def add(self, prompt: int, cached: int, write: int, cost: Decimal | None) -> None:
        """Account one request."""
        self.requests += 1
        self.prompt_tokens += prompt
        self.cached_tokens += cached
        self.cache_write_tokens += write
        if prompt:
            self.request_hit_sum += cached / prompt
        if cost is not None:
            self.cost_usd += cost
            self.priced_requests += 1

    def merge(self, other: ScenarioTotals) -> None:
        """Account another total's requests."""
        self.requests += other.requests
        self.prompt_tokens += other.prompt_tokens
        self.cached_tokens += other.cached_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.request_hit_sum += other.request_hit_sum
        self.cost_usd += other.cost_usd
        self.priced_requests += other.priced_requests

    @property
    def uncached_tokens(self) -> int:
        """Prompt tokens billed at the plain input price."""
        return self.prompt_tokens - self.cached_tokens - self.cache_write_tokens

    @property
    def hit_ratio(self) -> float:
        """Token-weighted hit ratio: cached / prompt tokens."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def request_hit_ratio(self) -> float:
        """Mean over requests of each request's cached / prompt tokens."""
        return self.request_hit_sum / self.requests if self.requests else 0.0

    @property
    def cost(self) -> Decimal | None:
        """Total cost, or ``None`` when no request could be priced."""
        return self.cost_usd if self.priced_requests else None


@dataclass
class PrefixStretch:
    """A stretch of prompt shared by several requests (a chain of prefix-tree edges)."""

    namespace: str
    start_token: int
    tokens: int
    reused_by: int
    served: int
    first_segment: str | None
    last_segment: str | None
    example_id: str
    example_line: int
    example_path: str
    value_usd: Decimal | None
    realized_usd: Decimal | None

    @property
    def lost_usd(self) -> Decimal | None:
        """Money the simulated rules leave on the table for this stretch."""
        if self.value_usd is None or self.realized_usd is None:
            return None
        return self.value_usd - self.realized_usd


@dataclass
class AuditResult:
    """What :func:`audit` returns: per-request outcomes, totals and context for reports.

    Attributes:
        inputs: per-file reading statistics.
        outcomes: per-request outcomes, in arrival order.
        scenarios: totals per scenario name (:data:`SCENARIOS`).
        namespaces: per namespace, totals for ``no_cache``, ``simulated`` and ``ideal``.
        rules: the cache rules used, by namespace.
        tokenizers: tokenizer name → (exact, note).
        top_prefixes: shared prefixes ranked by money (or tokens when unpriced).
        warnings: one-line warnings for the user.
        unknown_models: models without a price.
        span_seconds: time from the first to the last arrival (``None`` without times).
        findings: filled by diagnosis (issue-level features add to it).
        prices_source: where the prices came from.
        book: the prices used (per-request costs: :func:`request_costs`).
        accounting: every lost token by gap and cause
            (:class:`~promptcache.diagnose.accounting.Accounting`), or ``None`` without diagnosis.
        calibration: with ``calibrate``, per namespace what the reported usage shows
            (:class:`~promptcache.calibrate.Calibration`), else ``None``.
    """

    inputs: list[InputStats]
    outcomes: list[Outcome]
    scenarios: dict[str, ScenarioTotals]
    namespaces: dict[str, dict[str, ScenarioTotals]]
    rules: dict[str, CacheRules]
    tokenizers: dict[str, tuple[bool, str]]
    top_prefixes: list[PrefixStretch]
    warnings: list[str]
    unknown_models: list[str]
    span_seconds: float | None
    findings: list[Any] = field(default_factory=list)
    prices_source: str = ""
    book: PriceBook | None = None
    accounting: Any = None
    calibration: list[Any] | None = None

    @property
    def tokenizer_exact(self) -> bool:
        """True when every count came from an exact tokenizer (or a hashed trace)."""
        return all(exact for exact, _ in self.tokenizers.values())


class _Pipeline:
    """Holds the per-run state: contexts, rules, simulator, accumulators."""

    def __init__(self, opts: AuditOptions):
        self.opts = opts
        self.providers = load_providers()
        _SELECTING.update(pid for pid, pf in self.providers.items() if any(m.get("select", "any") != "any"
                                                                          for _, m in pf.models))
        if opts.cache_model and provider_file(opts.cache_model).is_router:  # validate early
            raise ConfigError(f"--cache-model {opts.cache_model} is a router: it applies its upstream's rules; "
                              "choose the upstream's (anthropic, openai, bedrock ...)")
        self.contexts: dict[tuple[str, str], Context] = {}
        self.tok_cache: dict[tuple[str | None, str | None], Tokenizer | None] = {}
        self.rules: dict[tuple[str, str | None, str | None], CacheRules] = {}
        self.ns_rules: dict[str, CacheRules] = {}
        self.ns_labels: dict[str, str] = {}
        self._route_last: tuple[Request, Route] | None = None  # route_for's last request and answer
        self.shown_ids: dict[tuple[str, str], str] = {}  # (identifier, value) -> how labels show it
        self.shown_owner: dict[str, tuple[str, str]] = {}  # shown form -> (identifier, value)
        self.ideal_tokenizers: dict[str, str] = {}  # model -> the tokenizer of its first ideal cache
        self.tokenizer_first: dict[str, int] = {}  # tokenizer -> index of the first request it counted
        self.sim = Simulator()
        self.router = Router(self.providers)
        self.overlay = None
        if opts.rules_overlay:
            from .calibrate import load_overlay

            self.overlay = load_overlay(opts.rules_overlay)
        self.warnings: list[str] = []
        self._warned: set[str] = set()
        self.index = 0
        self._shapes: dict[tuple[str, ...], tuple[str, ...]] = {}

    def shape(self, paths: tuple[str, ...]) -> tuple[str, ...]:
        """One shared tuple per distinct sequence of segment paths: every request keeps its
        own (tree nodes name their creator's segments), and requests of one shape (the same
        tools and message count) are many. At most :data:`SHAPES` are kept."""
        got = self._shapes.get(paths)
        if got is None:
            if len(self._shapes) >= SHAPES:
                return paths
            got = self._shapes[paths] = paths
        return got

    def warn(self, msg: str) -> None:
        """Record a warning once."""
        if msg not in self._warned:
            self._warned.add(msg)
            self.warnings.append(msg)

    def route_for(self, req: Request) -> Route:
        """The rules a request gets (:mod:`promptcache.simulate.routing`): ``--cache-model``,
        else its model name, the provider the log names, or the upstream behind a router.
        (Asked several times per request in a row: the last answer is kept.)"""
        last = self._route_last
        if last is not None and last[0] is req:
            return last[1]
        got = self._route(req)
        self._route_last = (req, got)
        return got

    def _route(self, req: Request) -> Route:
        if self.opts.cache_model:
            return Route(self.providers[self.opts.cache_model])
        upstream = req.response.upstream if req.response is not None else None
        got = self.router.resolve(req.provider, req.model, upstream)
        if got is None:
            if req.hashed is not None:
                raise ConfigError("hashed traces carry no model: choose the cache rules with --cache-model "
                                  f"({', '.join(sorted(self.providers))})")
            if req.provider and self.router.file_id(req.provider) is None:
                self.warn(f"provider {req.provider!r} (model {req.model!r}) has no cache rules file; applying openai "
                          "rules (use --cache-model)")
            else:
                self.warn(f"model {req.model!r} names no known provider; applying openai rules (use --cache-model)")
            return Route(self.providers["openai"])
        if req.model and got.via is None and self.router.by_model(req.model) is None \
                and provider_for_model(req.model) is None:
            pid = got.file.id
            if pid in FIRST_PARTY:  # an API shape self-hosted servers speak too (OpenAI-compatible)
                hint = f"use --cache-model vllm or sglang for a self-hosted engine, or --cache-model {pid} to confirm"
            else:  # a host the log itself names (Bedrock's invocation logs, Vertex's): no self-hosted engine
                hint = f"its rules for models it does not list apply; --cache-model {pid} confirms them"
            self.warn(f"model {req.model!r} is in no provider's model list; applying {pid} rules (from the "
                      f"log's format or provider field): {hint}")
        return got

    def provider_for(self, req: Request) -> ProviderFile:
        """The provider file whose rules apply to a request."""
        return self.route_for(req).file

    def context_for(self, pf: ProviderFile, req: Request) -> Context:
        """Tokenizer and chat format for a request under a provider file."""
        default = pf.tokenizer
        if default is None and self.opts.tokenizer is None:
            own = provider_for_model(req.model)
            default = self.providers[own].tokenizer if own in self.providers else "approx"
            self.warn(f"{pf.id} simulates a self-hosted model: pass its tokenizer with --tokenizer for exact "
                      f"counts (using {default} for {req.model or 'these requests'})")
        key = (self.opts.tokenizer or default, req.model if (self.opts.tokenizer or default) == "tiktoken" else None)
        tok = self.tok_cache.get(key)
        if key not in self.tok_cache:
            tok = self.tok_cache[key] = resolve_tokenizer(self.opts.tokenizer, default=default, model=req.model)
        assert tok is not None
        ck = (pf.id, tok.name)
        ctx = self.contexts.get(ck)
        if ctx is None:
            ctx = self.contexts[ck] = Context(pf, tok)
        return ctx

    def rules_for(self, pf: ProviderFile, req: Request) -> CacheRules:
        """Rules for a request (cached per provider, model, retention and cache mode): the
        retention it asks for (``prompt_cache_retention``, or ``prompt_cache_options.ttl``),
        whether it carries explicit breakpoints (Qwen's explicit cache), and OpenAI's
        explicit-only mode (``prompt_cache_options.mode: "explicit"``)."""
        opts = req.params.get("prompt_cache_options") if req.params else None
        opts = opts if isinstance(opts, dict) else {}
        retention = req.cache_retention or (str(opts["ttl"]) if opts.get("ttl") else None)
        explicit = any(p.breakpoint is not None for p in req.parts) if pf.id in _SELECTING else False
        explicit_only = opts.get("mode") == "explicit"
        key = (pf.id, req.model, retention, explicit, explicit_only)
        r = self.rules.get(key)
        if r is None:
            o = self.opts
            r = pf.rules_for(req.model, ttl=o.ttl, capacity_tokens=o.capacity_tokens, block_size=o.block_size,
                             retention=retention, explicit=explicit, explicit_only=explicit_only)
            if self.overlay is not None:
                r = self.overlay.apply(r, pf.id, req.model)
            if not o.engine_pool:
                r = replace(r, engine_pool=False)
            self.rules[key] = r
            ratio = pf.ratio_for(req.model) if pf.tokenizer and pf.tokenizer.startswith("approx") else None
            if ratio is not None and self.opts.tokenizer is None:
                self.warn(f"{req.model}: token counts are approximate ({pf.tokenizer.partition(':')[2] or 'approx'}); "
                          f"{pf.id}'s own tokenizer gives {ratio['low']}-{ratio['high']}x as many tokens for this "
                          f"model ({ratio['source']}, checked {ratio['checked']}), so prompt sizes, minimums and "
                          f"costs may be under-counted by up to {round((float(ratio['high']) - 1) * 100)}%")
        return r

    def price_context(self, pf: ProviderFile, req: Request, rules: CacheRules) -> tuple[tuple[str, str], ...]:
        """What picks among a model's prices (genai-prices price variants): the request's
        ``service_tier`` (OpenAI, Azure: flex, priority ...), Qwen's explicit cache reads."""
        tier = next((v for name, v in pf.partitions(req) if name == "service_tier"), None)
        ctx: tuple[tuple[str, str], ...] = (("service_tier", tier),) if tier is not None else ()
        if pf.id in _SELECTING and rules.mode != "prefix":
            ctx += (("cache_mode", "explicit"),)
        return ctx

    def cache_model(self, route: Route, pf: ProviderFile, req: Request) -> str:
        """The model a request's caches are keyed by: its model without a routing prefix the
        rules file declares (``route.prefixes``) where no router stands between (LiteLLM's
        ``xai/grok-4`` reaches xAI as ``grok-4``: one model, one cache); ``-`` without a model.
        The namespace label and the ideal cache (:func:`ideal_key`) both take it, so a request
        never shares a simulated cache it does not share in the ideal one."""
        model = req.model or "-"
        head, sep, rest = model.partition("/")
        if sep and rest and not route.via and head.lower() in pf.route.get("prefixes", ()):
            return rest
        return model

    def namespace(self, route: Route, pf: ProviderFile, req: Request, rules: CacheRules) -> str:
        """The cache namespace label of a request: rules (and router), model (without a
        routing prefix the rules file declares: ``xai/grok-4`` and ``grok-4`` on xAI's rules are
        one model in one cache), and what the
        provider partitions by (``cache_key``, ``service_tier``, ``affinity:<name>``: a routing
        identifier the log carries, such as xAI's ``x-grok-conv-id`` or Fireworks'
        ``x-session-affinity``), the upstream behind a router, and the cache mode where a
        provider keeps explicit and implicit caches apart.

        A cache key or a routing identifier is often a user's id or e-mail address: the label
        shows it as its kind and salted fingerprint (``/key=<cache key #3fa2c1d0>``, as findings
        show it: :mod:`promptcache.diagnose.redact`), the value itself only with ``show_text``
        (``--show-text``). Two values whose fingerprints collide get ``-2``, ``-3`` ... in order
        of first use, so that the label still tells namespaces apart."""
        ns = f"{route.label}/{self.cache_model(route, pf, req)}"
        if route.via and route.upstream:
            ns += f"/upstream={route.upstream}"
        if "cache_key" in pf.namespace and req.cache_key:
            ns += f"/key={self.shown('cache_key', req.cache_key)}"
        for name, v in pf.partitions(req):
            if v is not None:
                ns += f"/tier={v}" if name == "service_tier" else f"/{name}={self.shown(name, v)}"
        if pf.id in _SELECTING and rules.mode != "prefix":
            ns += "/explicit"
        return ns


    def shown(self, name: str, value: str) -> str:
        """How a namespace label shows identifier ``name``'s ``value`` (see :meth:`namespace`):
        the value with ``show_text``, else ``<kind #fingerprint>``, unique within the run."""
        if self.opts.show_text:
            return value
        got = self.shown_ids.get((name, value))
        if got is None:
            base = identifier(name, value).render(False)  # type: ignore[union-attr]
            got, n = base, 1
            while got in self.shown_owner:
                n += 1
                got = f"{base[:-1]}-{n}>"
            self.shown_ids[(name, value)] = got
            self.shown_owner[got] = (name, value)
        return got


#: Provider files with ``select`` entries (explicit and implicit caches, Qwen): filled on load.
_SELECTING: set[str] = set()


def ideal_key(model: str, ctx: Context | None, prompt: Prompt) -> tuple[str, str]:
    """The ideal cache a request's prompt is looked up in: its model (as its caches are keyed,
    :meth:`_Pipeline.cache_model`), and what makes its units
    comparable with other prompts' (the tokenizer's name; a hashed trace's block size). Requests
    of one model share one ideal cache whatever upstream or rules file serves them (a router's
    switch between upstreams is a gap to the ideal, never a second ideal); two tokenizers'
    ids cannot share a tree (:meth:`_Pipeline.warn` says so where one model gets two)."""
    return (model, ctx.tokenizer.name if ctx is not None else f"blocks:{prompt.unit_tokens}")


def _divergence(prompt: Prompt, ctx: Context | None, at: int) -> Divergence:
    """Where token ``at`` falls: segment path, character offset inside the part, token index."""
    if ctx is None or not prompt.segments:
        return Divergence(f"block[{at // prompt.unit_tokens}]", None, at)
    i = min(bisect_right(prompt.seg_ends, at), len(prompt.segments) - 1)
    seg = prompt.segments[i]
    start = prompt.seg_ends[i - 1] if i else 0
    k = at - start - len(seg.head)
    if k < 0:
        return Divergence(seg.path, None, at)
    text_len = prompt.seg_ends[i] - start - len(seg.head) - len(seg.tail)
    if k >= text_len:
        path, off = seg.locate(len(seg.text))
        return Divergence(path, off, at)
    off_b = (start + len(seg.head)) * 4
    ids = np.frombuffer(prompt.units, dtype="<u4", count=k, offset=off_b).tolist()
    char = len(ctx.tokenizer.decode(ids)) if ids else 0
    char = min(char, len(seg.text))
    path, off = seg.locate(char)
    return Divergence(path, off, at)


def _stretches(pipe: _Pipeline, book: PriceBook, top: int) -> list[PrefixStretch]:
    """Rank shared stretches of the ideal trees by money (tokens when unpriced).

    Within one tree every stretch is priced at the same rate, so its ``top`` stretches by
    tokens × reuses are its ``top`` by money: only those are priced and named.
    """
    found: list[PrefixStretch] = []
    for (model, _), ic in pipe.sim.ideal.items():
        tree = ic.tree
        # priced (and named) by the rules of the namespace its first request was served in
        pid = pipe.ns_rules[next(iter(ic.namespaces))].provider
        pf = pipe.providers.get(pid)
        rates = book.rates(pid if pf and pf.kind == "provider" else None, model if model != "-" else None)
        delta = None
        if rates is not None:
            read = rates.base("cache_read")
            inp = rates.base("input")
            if inp is not None:
                delta = inp - (read if read is not None else inp)
        unit_tokens = ic.unit_tokens
        sign = -1 if delta is not None and delta < 0 else 1
        cands: list[tuple[int, int, Any, int]] = []  # (rank, -order, first node, edge units)
        order = 0
        width = tree.width
        scale = sign * unit_tokens
        stack = list(tree.root.children.values())
        pop = stack.pop
        while stack:
            first = node = pop()
            units = node.nbytes // width
            kids = node.children
            while len(kids) == 1:  # a chain read by the same requests: one stretch
                (kid,) = kids.values()
                if kid.uses != node.uses or kid.hits != node.hits:
                    break
                node = kid
                units += node.nbytes // width
                kids = node.children
            if first.uses:
                cands.append((scale * units * first.uses, order, first, units))
                order -= 1
            stack.extend(kids.values())
        for _, _, first, n_units in sorted(heapq.nlargest(top, cands), key=lambda c: -c[1]):
            ref: RequestRef = first.creator
            tokens = n_units * unit_tokens
            start = first.start * unit_tokens
            val = delta * tokens * first.uses / 1_000_000 if delta is not None else None
            real = delta * tokens * first.hits / 1_000_000 if delta is not None else None
            seg_first = ref.segment_at(start) or f"block[{first.start}]"
            seg_last = ref.segment_at(start + tokens - 1) or f"block[{first.start + n_units - 1}]"
            found.append(PrefixStretch(f"{pid}/{model}", start, tokens, first.uses, first.hits,
                                       seg_first, seg_last, ref.id, ref.line, ref.path, val, real))
    found.sort(key=stretch_rank, reverse=True)
    return found[:top]


def stretch_rank(s: PrefixStretch) -> tuple[Decimal, int]:
    """Sort key of shared prefixes: what caching them is worth, then tokens × reuses."""
    return (s.value_usd if s.value_usd is not None else Decimal(0), s.tokens * s.reused_by)


class Pipeline:
    """Runs ingest → render → tokenize → simulate over log files, one :class:`Step` per request.

    Reading, rendering and tokenizing (:class:`~promptcache.prepare.Front`) run in a second
    process when :meth:`two_processes` says so; the results are the same either way.

    Args:
        paths: log files, merged in arrival order.
        opts: audit options.

    Raises:
        ConfigError: for bad options or rules files (on construction or while streaming).
        InputError: for unreadable files, or malformed records with ``strict``.
    """

    def __init__(self, paths: Sequence[str | Path], opts: AuditOptions | None = None,
                 requests: Iterable[Request] | None = None, partition: tuple[int, int] | None = None):
        self.opts = opts or AuditOptions()
        self.opts.read.model = self.opts.read.model or self.opts.model
        self.state = _Pipeline(self.opts)
        self.inputs = [InputStats(str(p)) for p in paths]
        self.paths = list(paths)
        self.requests = requests
        self.partition = partition  # (index, count): only the requests of one namespace partition
        self.first_t: float | None = None
        self.last_t: float | None = None

    @classmethod
    def from_requests(cls, requests: Iterable[Request], opts: AuditOptions | None = None, label: str = "<proposed>") -> Pipeline:
        """A pipeline over requests already in memory (arrival order), e.g. rewritten ones."""
        pipe = cls([label], opts, requests)
        return pipe

    def chunks(self) -> Iterator[list[Request]]:
        """The requests to audit, in arrival order, in chunks of :data:`~promptcache.prepare.CHUNK`."""
        if self.requests is not None:
            stream = iter(self.requests)
        else:
            stream = read_inputs(self.paths, self.inputs, self.opts.read)
        if self.partition is not None:
            k, n = self.partition
            stream = (r for r in stream if self.partition_of(r, n) == k)
        while True:
            chunk = list(itertools.islice(stream, CHUNK))
            if not chunk:
                return
            yield chunk

    def two_processes(self) -> bool:
        """Whether reading, rendering and tokenizing run in a second process (``workers``): only
        over files, where the platform can fork, and not inside a ``--dask`` partition."""
        import multiprocessing as mp

        w = self.opts.workers
        if self.requests is not None or self.partition is not None or w == 1 \
                or "fork" not in mp.get_all_start_methods():
            return False
        if w is None:
            if (os.cpu_count() or 1) < 2:
                return False
            size = 0
            for p in self.paths:
                with contextlib.suppress(OSError):
                    size += os.path.getsize(p)
            return size >= TWO_PROCESSES_BYTES
        return w >= 2

    def steps(self, progress: Callable[[int], None] | None = None) -> Iterator[Step]:
        """Stream every request through the pipeline, in arrival order.

        With :meth:`two_processes`, the first chunk is prepared here (loading the tokenizers and
        warming the memos), then a forked process carries on reading, rendering and tokenizing
        from where this one stopped and sends :class:`~promptcache.prepare.Delta` s back, while
        this one simulates the first chunk.
        """
        front, back = Front(self.state), Back(self.state)
        chunks = self.chunks()
        done = 0
        split = self.two_processes()
        with contextlib.ExitStack() as stack:
            received = None
            for chunk in chunks:
                deltas = front.prepare(chunk)
                if split:  # each process has a core of its own: one tokenizer thread (the fork inherits it)
                    stack.enter_context(one_thread_per_batch())
                    state = self.state
                    received = front_process(lambda: (front, chunks, lambda: (self.inputs, state.warnings)))
                    next(received)  # forked: the child reads on while this chunk is simulated here
                back.fill(deltas)
                for d in deltas:
                    yield self._simulate(*back.assemble(d))
                back.drop(front.take_dropped())
                done += len(chunk)
                if progress:
                    progress(done)
                if received is not None:
                    break
            if received is None:
                return
            for kind, deltas, dropped in received:
                if kind == "end":
                    inputs, warnings = deltas
                    self.inputs[:] = inputs
                    for w in warnings:
                        self.state.warn(w)
                    break
                back.fill(deltas)
                for d in deltas:
                    yield self._simulate(*back.assemble(d))
                back.drop(dropped)
                done += len(deltas)
                if progress:
                    progress(done)

    def partition_of(self, req: Request, n: int) -> int:
        """The partition (of ``n``) of a request: a stable hash of its model, which every cache
        it touches is keyed by (its ideal cache holds the model's traffic whatever upstream or
        rules file serves it; each simulated namespace is one model's), so every cache, ideal
        and simulated, lives in one partition. The model is hashed without the routing prefixes
        any rules file declares, all of them from the front: that is never finer than
        :meth:`_Pipeline.cache_model` (which drops one, where its own file declares it), so
        ``xai/grok-4`` and ``grok-4`` land in one partition as they share one cache."""
        heads = self.state.router.prefixes  # every rules file's routing prefixes, lower case
        model = req.model or "-"
        while True:
            head, sep, rest = model.partition("/")
            if not (sep and rest and head.lower() in heads):
                break
            model = rest
        return zlib.crc32(model.encode()) % n

    def _simulate(self, req: Request, pf: ProviderFile, ctx: Context | None, prompt: Prompt) -> Step:
        pipe = self.state
        rules = pipe.rules_for(pf, req)
        route = pipe.route_for(req)
        model = pipe.cache_model(route, pf, req)
        ns = pipe.namespace(route, pf, req, rules)
        got = pipe.ns_rules.get(ns)
        if got is None:
            pipe.ns_rules[ns] = rules
            pipe.ns_labels[ns] = ns
        ns = pipe.ns_labels[ns]  # one string per namespace: every request's reference shares it
        idx = pipe.index
        pipe.index += 1
        paths = prompt.seg_paths if prompt.seg_paths is not None else tuple(s.path for s in prompt.segments)
        ref = RequestRef(idx, req.id, req.source.line, req.source.path, array("I", prompt.seg_ends), pipe.shape(paths))
        key = ideal_key(model, ctx, prompt)
        if key not in pipe.sim.ideal:
            pipe.tokenizer_first.setdefault(key[1], idx)
            first = pipe.ideal_tokenizers.setdefault(key[0], key[1])
            if first != key[1]:
                pipe.warn(f"model {model!r} is tokenized two ways ({first}, {key[1]}: the rules files of its "
                          "upstreams name different tokenizers): requests tokenized one way share no ideal cache "
                          "with the others, so a switch between them is not counted as lost (--tokenizer counts "
                          "them all one way)")
        cached, write, write_1h, shared, reason, other, flags = pipe.sim.step(
            ref=ref, prompt=prompt, rules=rules, namespace=ns, ideal_key=key, now=req.arrival)
        ic = pipe.sim.ideal[key]
        div = _divergence(prompt, ctx, shared) if shared < prompt.n_tokens and ic.requests > 1 else None
        if req.arrival is not None:
            self.first_t = req.arrival if self.first_t is None else min(self.first_t, req.arrival)
            self.last_t = req.arrival if self.last_t is None else max(self.last_t, req.arrival)
        usage = req.usage
        if usage is not None and not usage.cache_reported:  # cache usage not logged: no reported scenario
            pipe.warn(f"{req.source.path}: records report prompt tokens but no cache fields (cache usage not "
                      "logged): no reported cache usage for them, none assumed 0")
            usage = None
        if usage is not None and usage.summed:
            fixed = counted_twice(usage, prompt.n_tokens)
            if fixed is not None:  # the input count already held the cache counts: read it as the whole prompt
                usage = fixed
                flags = (*flags, COUNTED_TWICE)
        out = Outcome(idx, req.id, req.source.path, req.source.line, ns, pf.id, req.model, req.arrival,
                      prompt.n_tokens, cached, write, write_1h, shared, 0, div,
                      other.index if other is not None else None, reason, usage, flags,
                      req.usage.output_tokens if req.usage else 0, pipe.price_context(pf, req, rules))
        return Step(req, prompt, ctx, rules, out, other)

    def finish(self, outcomes: Sequence[Outcome]) -> None:
        """Fill the oracle writes of the ideal scenario once the stream has ended."""
        for idx, tokens in self.state.sim.ideal_writes().items():
            o = outcomes[idx]
            o.ideal_write_tokens = min(tokens, o.prompt_tokens - o.shared_prefix_tokens)


def request_tokens(o: Outcome, rules: Mapping[str, CacheRules], book: PriceBook
                   ) -> tuple[Rates | None, list[tuple[str, int, int, int, int]]]:
    """One request's tokens under every scenario, and its prices: what :func:`request_costs`
    and :func:`price` price.

    Returns:
        ``(rates, [(scenario, prompt_tokens, cached_tokens, write_tokens, write_1h_tokens)])``
        for ``no_cache``, ``simulated`` and ``ideal``, plus ``reported`` when the log has
        usage; write tokens are 0 where the rules bill writes as plain input; ``rates`` is
        ``None`` when the model has no price.
    """
    bw = rules[o.namespace].bills_writes
    pf = load_providers()[o.provider]
    rates: Rates | None = book.rates(o.provider if pf.kind == "provider" else None, o.model, o.arrival,
                                     o.price_context)
    n = o.prompt_tokens
    rows = [("no_cache", n, 0, 0, 0),
            ("simulated", n, o.cached_tokens, o.write_tokens, o.write_1h_tokens) if bw else ("simulated", n, o.cached_tokens, 0, 0),
            ("ideal", n, o.shared_prefix_tokens, o.ideal_write_tokens if bw else 0, 0)]
    if o.usage is not None:
        u = o.usage
        rows.append(("reported", u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cache_write_1h_tokens))
    return rates, rows


def request_costs(o: Outcome, rules: Mapping[str, CacheRules], book: PriceBook) -> dict[str, tuple[int, int, int, Decimal | None]]:
    """One request priced under every scenario (the per-request reports; :func:`price` totals
    the same tokens at the same prices).

    Args:
        o: the request's outcome.
        rules: cache rules by namespace (``AuditResult.rules``).
        book: prices.

    Returns:
        ``{scenario: (prompt_tokens, cached_tokens, billed_write_tokens, cost_usd)}`` for
        ``no_cache``, ``simulated`` and ``ideal``, plus ``reported`` when the log has usage;
        ``cost_usd`` is ``None`` when the model has no price. Write tokens are 0 where the
        rules bill writes as plain input.
    """
    rates, rows = request_tokens(o, rules, book)
    return {name: (n, cached, w, rates.cost(n, cached, w, w1) if rates else None) for name, n, cached, w, w1 in rows}


def price(outcomes: Sequence[Outcome], rules: Mapping[str, CacheRules], book: PriceBook) -> tuple[dict[str, ScenarioTotals], dict[str, dict[str, ScenarioTotals]]]:
    """Totals per scenario and per namespace, priced.

    Money is summed per total and unit prices (a tier of a model's prices) and priced once:
    each request's cost is an exact ``Decimal`` linear in its tokens, so the cost of the summed
    tokens is the sum of the requests' costs (:func:`request_costs`), without a ``Decimal``
    sum per request and scenario.

    Args:
        outcomes: the requests to total (any subset of an audit's).
        rules: cache rules by namespace (``AuditResult.rules``).
        book: prices.
    """
    scen = {s: ScenarioTotals() for s in SCENARIOS}
    nss: dict[str, dict[str, ScenarioTotals]] = {}
    # (id of the totals, id of the unit prices) -> [totals, unit prices, plain, read, write 5m, write 1h]
    owed: dict[tuple[int, int], list[Any]] = {}
    reported = scen["reported"]
    for o in outcomes:
        per = nss.get(o.namespace)
        if per is None:
            per = nss[o.namespace] = {s: ScenarioTotals() for s in ("no_cache", "simulated", "ideal")}
        rates, rows = request_tokens(o, rules, book)
        priced_n = -1  # the prompt size ``units`` are the unit prices of (rows but "reported" share it)
        for name, n, cached, w, w1 in rows:
            t = reported if name == "reported" else per[name]  # the others: summed over namespaces below
            t.add(n, cached, w, None)
            if rates is None:
                continue
            t.priced_requests += 1
            if n != priced_n:
                units, priced_n = rates.unit_prices(n), n
            key = (id(t), id(units))
            acc = owed.get(key)
            if acc is None:
                acc = owed[key] = [t, units, 0, 0, 0, 0]
            acc[2] += n - cached - w
            acc[3] += cached
            acc[4] += w - w1
            acc[5] += w1
    for t, units, plain, read, write, write_1h in owed.values():
        t.cost_usd += tokens_cost(units, plain, read, write, write_1h)
    for per in nss.values():
        for name, t in per.items():
            scen[name].merge(t)
    return scen, nss


def audit(paths: Sequence[str | Path], opts: AuditOptions | None = None,
          progress: Callable[[int], None] | None = None) -> AuditResult:
    """Audit request logs: simulate every request under its cache rules, price it, and find
    what breaks the cache.

    Args:
        paths: log files (JSONL, JSON arrays, ``.gz``), audited together in arrival order.
        opts: options (see :class:`AuditOptions`).
        progress: called with the number of requests done so far, every chunk.

    Returns:
        An :class:`AuditResult`.

    Raises:
        ConfigError: for bad options, rules or prices files.
        InputError: for unreadable files, or malformed records with ``strict``.
    """
    return run(Pipeline(paths, opts), progress=progress)


@dataclass
class Partial:
    """What one pipeline run produced, before pricing and grouping: the unit a run split by
    namespace (``--dask``) sends back to be merged.

    Attributes:
        outcomes: per-request outcomes, in this run's arrival order.
        candidates: diagnosis instances (``None`` when diagnosis is off).
        stretches: this run's top shared prefixes.
        rules: cache rules by namespace.
        tokenizers: tokenizer name → (exact, note).
        warnings: one-line warnings.
        inputs: per-file reading statistics.
        first_t, last_t: first and last arrival seen.
        calibration: with ``calibrate``, what the reported usage shows per namespace.
        tokenizer_first: index of the first request each tokenizer counted (``tokenizers``
            are in that order, as merged partitions put them back).
    """

    outcomes: list[Outcome]
    candidates: list[Any] | None
    stretches: list[PrefixStretch]
    rules: dict[str, CacheRules]
    tokenizers: dict[str, tuple[bool, str]]
    warnings: list[str]
    inputs: list[InputStats]
    first_t: float | None
    last_t: float | None
    calibration: list[Any] | None = None
    tokenizer_first: dict[str, int] = field(default_factory=dict)


#: Garbage collector thresholds while streaming (see :func:`fewer_collections`).
GC_THRESHOLDS = (5_000_000, 50, 100)
#: Where :func:`collect` leaves a run's state (prefix trees, memos, the diagnoser's prompts)
#: instead of freeing it, when the process ends right after the run without tearing the
#: interpreter down (the command line's audit, without proposals: see ``cli._one_pipeline``):
#: freeing those objects one by one takes 0.17 s after a 100k-request audit and serves
#: nothing. ``None``: freed as usual.
KEPT_TO_EXIT: list[Any] | None = None


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the garbage collector's young generation less often while streaming: the audit keeps
    many long-lived objects (tree nodes, outcomes), and with the default threshold every full
    collection walks all of them, which makes long logs quadratically slower.

    The young generation waits for 5 million new objects. The objects the audit makes are
    long-lived or freed by reference counting: the prefix tree unlinks the nodes it drops, so it
    leaves no reference cycles behind. At a threshold of 100,000, the back half of a
    100k-request audit spent 2 s in about 100 young collections; at 5 million it spends 0.01 s,
    and its peak memory is the same.

    The thresholds are put back afterwards, unless they were already as high (the command line
    sets them for its whole run: putting the defaults back triggers a full collection over every
    object the audit holds, a second at 100k requests, just before the process ends).
    """
    old = gc.get_threshold()
    if old[0] >= GC_THRESHOLDS[0]:
        yield
        return
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def collect(pipe: Pipeline, *, progress: Callable[[int], None] | None = None,
            observers: Sequence[Callable[[Step], None]] = (), book: PriceBook | None = None) -> Partial:
    """Run a pipeline to the end: simulate, diagnose and fill the oracle writes.

    Args:
        pipe: the pipeline (over files, in-memory requests, or one partition).
        progress: called with the number of requests done so far.
        observers: called with every :class:`Step` in arrival order (template inference, ...).
        book: prices (default: from the options' prices file).
    """
    opts = pipe.opts
    book = book or PriceBook(opts.prices_file)
    diag = None
    if opts.diagnose:
        from .diagnose.engine import Diagnoser

        diag = Diagnoser(pipe.state.providers, book, show_text=opts.show_text)
    outcomes = []
    calibrator = None
    if opts.calibrate:
        from .calibrate import Calibrator

        calibrator = Calibrator()
        observers = (*observers, calibrator.observe)
    with fewer_collections():
        for step in pipe.steps(progress):
            outcomes.append(step.outcome)
            if diag is not None:
                diag.observe(step)
            for obs in observers:
                obs(step)
    pipe.finish(outcomes)
    state = pipe.state
    if KEPT_TO_EXIT is not None:
        KEPT_TO_EXIT.extend((pipe, diag))
    first = state.tokenizer_first
    tokenizers = {c.tokenizer.name: (c.tokenizer.exact, c.tokenizer.note)
                  for c in sorted(state.contexts.values(), key=lambda c: first.get(c.tokenizer.name, len(outcomes)))}
    if outcomes and not state.contexts:
        tokenizers = {"hashed-blocks": (True, "token counts from the trace's input_length")}
    return Partial(outcomes, diag.finish_candidates() if diag is not None else None, _stretches(state, book, opts.top),
                   dict(state.ns_rules), tokenizers, list(state.warnings), pipe.inputs, pipe.first_t, pipe.last_t,
                   calibrator.results() if calibrator is not None else None, dict(first))


#: Reported input tokens more than this share above the rendered prompt are counted (the
#: rendering framing and tokenizer differences stay well below it; a prompt partly missing
#: from the log does not).
OVER_REPORTED = 0.20


def over_reported(outcomes: Sequence[Outcome], inputs: Sequence[InputStats]) -> None:
    """Count, per file, the requests whose reported input tokens exceed their rendered prompt
    by more than :data:`OVER_REPORTED` (set on ``inputs``: ``over_reported`` and an example)."""
    by_path = {st.path: st for st in inputs}
    counts: dict[str, list[Any]] = {}
    for o in outcomes:
        u = o.usage
        if u is not None and u.input_tokens > (1 + OVER_REPORTED) * o.prompt_tokens and u.input_tokens - o.prompt_tokens > 16:
            c = counts.get(o.path)
            if c is None:
                counts[o.path] = [1, (o.line, u.input_tokens, o.prompt_tokens)]
            else:
                c[0] += 1
    for path, (n, ex) in counts.items():
        st = by_path.get(path)
        if st is not None:
            st.over_reported, st.over_reported_example = n, ex


#: The outcome flag of a request whose reported input count already included its cache reads
#: and writes (:func:`~promptcache.ingest.usage.counted_twice`): its usage was read as such.
COUNTED_TWICE = "usage_cache_counted_twice"


def cache_counted_twice(outcomes: Sequence[Outcome], inputs: Sequence[InputStats]) -> None:
    """Count, per file, the requests whose reported input count was found to include their
    cache reads and writes (flagged :data:`COUNTED_TWICE`; set on ``inputs``:
    ``counted_twice`` and an example)."""
    counts: dict[str, list[Any]] = {}
    for o in outcomes:
        if o.flags and COUNTED_TWICE in o.flags and o.usage is not None:
            c = counts.get(o.path)
            if c is None:
                u = o.usage
                counts[o.path] = [1, (o.line, u.input_tokens, u.cache_read_tokens + u.cache_write_tokens,
                                      o.prompt_tokens)]
            else:
                c[0] += 1
    for st in inputs:
        if st.path in counts:
            st.counted_twice, st.counted_twice_example = counts[st.path]


def cached_outside_log(outcomes: Sequence[Outcome], candidates: Sequence[Any]) -> list[str]:
    """A warning when requests of a breakpoint provider carry no breakpoint in the logged body
    yet report cache reads (the diagnosis's ``breakpoint-outside-log`` instances): the reported
    hit ratio over them, and that the simulated rules understate what was cached."""
    idx = {c.index for c in candidates if c.rule.id == "breakpoint-outside-log"}
    if not idx:
        return []
    read = total = 0
    for o in outcomes:
        if o.index in idx and o.usage is not None:
            read, total = read + o.usage.cache_read_tokens, total + o.usage.input_tokens
    ratio = f"{read / total:.1%}" if total else "-"
    return [f"{len(idx)} request(s) carry no cache_control breakpoint in the logged body, yet their reported usage "
            f"shows {read:,} of {total:,} prompt tokens read from the cache ({ratio}): caching was applied outside "
            "the logged body (a gateway's or SDK's automatic caching); no breakpoint-missing loss is booked for them, "
            "and the simulated rules (and 'left on the table') understate what was cached"]


#: Reader formats of batch APIs' files: the provider whose ``batch_price`` applies, and the API's name.
BATCH_FORMATS = {"anthropic-batch": ("anthropic", "Anthropic's Message Batches API"),
                 "anthropic-batch-results": ("anthropic", "Anthropic's Message Batches API"),
                 "openai-batch-output": ("openai", "OpenAI's Batch API")}


def batch_prices(inputs: Sequence[InputStats]) -> list[str]:
    """One warning per batch API whose files the run read: it bills below the standard prices
    every cost here is at (the provider file's ``batch_price``, with its source), so the costs
    overstate those requests' bill; their tokens and cache hits are as shown."""
    providers = load_providers()
    files: dict[str, list[str]] = {}
    for st in inputs:
        for fmt in st.formats:
            if fmt in BATCH_FORMATS:
                paths = files.setdefault(BATCH_FORMATS[fmt][1], [])
                if st.path not in paths:
                    paths.append(st.path)
    out = []
    for pid, name in dict.fromkeys(BATCH_FORMATS.values()):
        pf = providers.get(pid)
        bp = pf.batch_price if pf is not None else None
        if name not in files or not bp:
            continue
        out.append(f"{', '.join(files[name])}: requests of {name}, which bills {bp['what']} at "
                   f"{bp['multiplier']:.0%} of the standard price ({bp['source']}, checked {bp['checked']}); every cost "
                   "here is at the standard price, so it overstates these requests' bill (their tokens and cache hits "
                   "are as shown)")
    return out


def assemble(part: Partial, opts: AuditOptions, book: PriceBook) -> AuditResult:
    """Price a (merged) :class:`Partial` and build the :class:`AuditResult`."""
    from .diagnose.accounting import build as accounting
    from .diagnose.findings import aggregate

    scen, nss = price(part.outcomes, part.rules, book)
    warnings = list(part.warnings)
    if book.unknown:
        warnings.append(f"no price for model(s) {', '.join(sorted(book.unknown))}: token counts only for them "
                        "(add prices with --prices FILE)")
    used = {r.provider for r in part.rules.values()}
    warnings.extend(stale_rules([pf for pid, pf in load_providers().items() if pid in used], part.last_t))
    if book.from_overlay:
        warnings.append(f"priced from promptcache's price overlay (not in genai-prices {book.genai_version}): "
                        f"{', '.join(sorted(book.from_overlay))}")
    missing = sum(st.missing_arrival for st in part.inputs)
    if missing:
        warnings.append(f"{missing} request(s) have no arrival time: each is audited right after the request "
                        "before it in its file, and TTLs are not evaluated for them")
    cache_counted_twice(part.outcomes, part.inputs)
    over_reported(part.outcomes, part.inputs)
    warnings.extend(cached_outside_log(part.outcomes, part.candidates or ()))
    for st in part.inputs:  # read but not audited: usage-only requests, records that are no LLM call
        if st.requests == 0 and not st.readable and st.duplicate_of is None:
            warnings.append(f"{st.path}: no requests found" + (f" ({st.skipped_lines} record(s) skipped)"
                                                               if st.skipped_lines else " (an empty file?)"))
        warnings.extend(st.notes())
    warnings.extend(batch_prices(part.inputs))
    span = (part.last_t - part.first_t) if part.first_t is not None and part.last_t is not None else None
    return AuditResult(
        inputs=part.inputs, outcomes=part.outcomes, scenarios=scen, namespaces=nss, rules=part.rules,
        tokenizers=part.tokenizers, top_prefixes=part.stretches[:opts.top], warnings=warnings,
        unknown_models=sorted(book.unknown), span_seconds=span,
        prices_source=f"genai-prices {book.genai_version}" + (f" + {opts.prices_file}" if opts.prices_file else "")
        + (f" + {OVERLAY_SOURCE} for {', '.join(sorted(book.from_overlay))}" if book.from_overlay else ""),
        findings=aggregate(part.candidates) if part.candidates is not None else [],
        book=book, accounting=accounting(part.candidates) if part.candidates is not None else None,
        calibration=part.calibration,
    )


def run(pipe: Pipeline, *, progress: Callable[[int], None] | None = None,
        observers: Sequence[Callable[[Step], None]] = (), book: PriceBook | None = None) -> AuditResult:
    """Run a pipeline to the end and build its :class:`AuditResult` (:func:`collect` then
    :func:`assemble`)."""
    book = book or PriceBook(pipe.opts.prices_file)
    return assemble(collect(pipe, progress=progress, observers=observers, book=book), pipe.opts, book)
