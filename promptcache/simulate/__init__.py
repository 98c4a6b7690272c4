"""Cache simulation: per cache namespace, replay tokenized prompts in arrival order against the
provider's or engine's rules and against an ideal cache.

- ``ideal``: unbounded, no minimum, no TTL, token-level: the structural upper bound of one
  model's traffic. One ideal tree per model (and tokenizer: token ids of two vocabularies do not
  share a tree), whatever upstream or rules file serves each request: a ``prompt_cache_key``
  that splits traffic is a choice, and so is a router that sends one model's requests to
  several upstreams (each keeping its own cache), so what either costs shows as the gap to the
  ideal.
- ``simulated``: the chosen :class:`~promptcache.simulate.rules.CacheRules`, one cache per
  namespace (model, and cache key where the provider partitions by it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..model import Divergence, Segment, Usage
from ..prefix.tree import PrefixTree
from .boundaries import BoundarySim
from .engines import REFUSED, EngineSim
from .rules import CacheRules
from .slots import SlotSim
from .units import UnitSim


@dataclass(slots=True)
class Prompt:
    """A tokenized request, ready to simulate.

    Attributes:
        units: the prompt as little-endian unit bytes (uint32 token ids, or uint64 block ids
            for hashed traces).
        width: bytes per unit (4 or 8).
        unit_tokens: tokens per unit (1 for token ids; the trace's block size when hashed).
        n_tokens: prompt length in tokens.
        segments: rendered segments (empty for hashed prompts).
        seg_ends: token offset where each segment ends (cumulative).
        seg_keys: chained 16-byte digest of the prompt up to the end of each segment (used by
            breakpoint and boundary caches); computed on first use when ``key_source`` is set.
        key_source: makes ``seg_keys`` on demand (prefix caches never need them).
        seg_paths: each segment's path, when the caller has them at hand (else taken from
            ``segments``).
    """

    units: bytes
    width: int
    unit_tokens: int
    n_tokens: int
    segments: Sequence[Segment] = ()
    seg_ends: Sequence[int] = ()
    seg_keys: Sequence[bytes] = ()
    key_source: Any = None
    seg_paths: tuple[str, ...] | None = None

    def keys(self) -> Sequence[bytes]:
        """``seg_keys``, computed now if they were left for later."""
        if not self.seg_keys and self.key_source is not None:
            self.seg_keys = self.key_source()
            self.key_source = None
        return self.seg_keys

    def tokens_of(self, units: int) -> int:
        """Tokens covered by the first ``units`` units."""
        return min(units * self.unit_tokens, self.n_tokens)


@dataclass(slots=True)
class RequestRef:
    """What the prefix tree remembers about a request: enough to name where it diverged.

    Attributes:
        index: arrival index in the whole audit.
        id: request id.
        line: log line.
        path: log file.
        seg_ends: token end offset of each segment (a compact ``array('I')`` in the pipeline).
        seg_paths: path of each segment.
        namespace: the simulated cache namespace it was served in (set by
            :meth:`Simulator.step`): whether a prefix shared with it is in another namespace's
            cache.
    """

    index: int
    id: str
    line: int
    path: str
    seg_ends: Sequence[int] = ()
    seg_paths: tuple[str, ...] = ()
    namespace: str = ""

    def segment_at(self, token: int) -> str | None:
        """Path of the segment holding a token index, or ``None`` (hashed)."""
        from bisect import bisect_right

        if not self.seg_ends:
            return None
        i = bisect_right(self.seg_ends, token)
        return self.seg_paths[min(i, len(self.seg_paths) - 1)]


@dataclass(slots=True)
class Outcome:
    """What happened to one request (token counts in tokens; times in seconds).

    Attributes:
        index: arrival index.
        id, path, line: request id and log location.
        namespace: cache namespace label (``openai/gpt-4o`` or ``openai/gpt-4o/key=...``).
        provider, model: rules provider id and model name.
        arrival: arrival time or ``None``.
        prompt_tokens: prompt length.
        cached_tokens: simulated cache reads.
        write_tokens: simulated tokens billed as cache writes (all TTLs).
        write_1h_tokens: the 1-hour part of ``write_tokens``.
        shared_prefix_tokens: exact longest prefix shared with any earlier request of the same
            model, whatever upstream or rules file served it (the ideal cache read).
        ideal_write_tokens: tokens an oracle writes (new tokens that some later request reads);
            final only after :meth:`Simulator.finish`.
        divergence: where the prompt leaves the best earlier prompt, or ``None``.
        diverged_from: index of that earlier request, or ``None``.
        miss_reason: why ``cached_tokens`` < ``shared_prefix_tokens`` (``below_min``,
            ``expired``, ``evicted``, ``granularity``, ``no_breakpoint``,
            ``after_last_breakpoint``, ``lookback``, ``namespace``, ``over_capacity``,
            ``no_unit``: DeepSeek persists the shared prefix as a unit only now), or ``None``.
        usage: reported usage, if the log has it.
        flags: rule-specific observations (``breakpoints_over_limit`` ...).
        output_tokens: reported output tokens (0 when not logged).
        price_context: what selects among a model's prices: ``(("service_tier", "flex"),)``,
            ``(("cache_mode", "explicit"),)`` (genai-prices price variants).
    """

    index: int
    id: str
    path: str
    line: int
    namespace: str
    provider: str
    model: str | None
    arrival: float | None
    prompt_tokens: int
    cached_tokens: int = 0
    write_tokens: int = 0
    write_1h_tokens: int = 0
    shared_prefix_tokens: int = 0
    ideal_write_tokens: int = 0
    divergence: Divergence | None = None
    diverged_from: int | None = None
    miss_reason: str | None = None
    usage: Usage | None = None
    flags: tuple[str, ...] = ()
    output_tokens: int = 0
    price_context: tuple[tuple[str, str], ...] = ()


#: The ideal cache moves prefixes that no request touched in this many requests (of its model) to
#: a temporary file: memory holds what is in use; the file is read back only when an old prefix
#: is reached again.
SPILL_AFTER = 4096
#: Every this many requests, expired entries are dropped from every namespace's cache (a
#: namespace that gets no more traffic would otherwise keep its expired prefixes forever).
SWEEP_EVERY = 4096


@dataclass
class IdealCache:
    """The unbounded token-level tree of one model's traffic (one tokenizer's ids), plus oracle
    write accounting.

    Attributes:
        width: bytes per unit (4: token ids; 8: hashed block ids).
        unit_tokens: tokens per unit.
        tree: the prefix tree.
        requests: requests looked up so far.
        namespaces: the simulated namespaces its requests were served in, in order of first
            arrival.
    """

    width: int
    unit_tokens: int = 1
    tree: PrefixTree = field(init=False)
    requests: int = 0
    namespaces: dict[str, None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tree = PrefixTree(width=self.width, spill_after=SPILL_AFTER)


class PrefixSim:
    """Longest-live-prefix caches: OpenAI (≤ GPT-5.5), Gemini, DeepSeek, vLLM, SGLang.

    hit = floor(min(live LCP, prompt − max_hit_offset) / granularity) × granularity, and 0
    below ``min_tokens``. ``full_blocks_only`` stores only whole granularity blocks (vLLM).
    """

    def __init__(self, rules: CacheRules, width: int, unit_tokens: int):
        self.rules = rules
        self.unit_tokens = unit_tokens
        cap_units = None
        evict_block = 0
        if rules.capacity_tokens is not None:
            cap_units = max(1, rules.capacity_tokens // unit_tokens)
            if rules.eviction == "block":
                evict_block = max(1, rules.granularity // unit_tokens)
                cap_units -= cap_units % evict_block
        elif rules.eviction == "block" and rules.full_blocks_only:
            evict_block = max(1, rules.granularity // unit_tokens)
        self.tree = PrefixTree(width=width, ttl=rules.ttl_seconds, capacity_units=cap_units, evict_block=evict_block)
        self._sweep_at = 4096

    def step(self, p: Prompt, now: float | None) -> tuple[int, int, int, int, bool]:
        """Simulate one prompt → ``(cached, write, write_1h, live_lcp_tokens, expired)`` where
        ``expired`` says an entry on the prompt's path had expired."""
        r = self.rules
        n = p.n_tokens
        g = max(1, r.granularity)
        store_tokens = (n // g) * g if r.full_blocks_only else n
        if n < r.min_tokens:
            store_tokens = 0
        u = p.unit_tokens
        store_units = store_tokens // u
        if store_tokens == n and n % u:
            store_units += 1  # the partial last hashed block is stored whole
        tree = self.tree
        expired_before = tree.expired_units
        lcp_units, _, _ = tree.access(p.units, store_units, now, None)
        expired = tree.expired_units > expired_before
        if tree.ttl is not None and now is not None and tree.nodes > self._sweep_at:
            tree.sweep(now)
            self._sweep_at = 2 * tree.nodes + 1024
        live = p.tokens_of(lcp_units)
        hit = (min(live, max(0, n - r.max_hit_offset)) // g) * g
        if hit < r.min_tokens:
            hit = 0
        write = max(0, store_tokens - hit) if r.bills_writes else 0
        # writes kept an hour or more are billed at the 1-hour write price (Kimi K3 "1h")
        write_1h = write if r.ttl_seconds is not None and r.ttl_seconds >= 3600 else 0
        return hit, write, write_1h, live, expired


def miss_reason(rules: CacheRules, *, cached: int, shared: int, live: int | None, expired: bool, keyed: bool) -> str | None:
    """Why the simulated read (``cached``) falls short of the ideal (``shared``), or ``None``.

    Args:
        rules: the rules simulated.
        cached: simulated cache read, tokens.
        shared: ideal read (longest prefix shared with any earlier request), tokens.
        live: live longest prefix in the simulated cache (prefix mode), else ``None``.
        expired: an entry on the prompt's path expired during this request.
        keyed: the prefix it shares most is held by a request of another simulated namespace (a
            cache key, a route or an upstream keeps it apart).
    """
    if cached >= shared:
        return None
    if shared < rules.min_tokens:
        return "below_min"
    if live is None:  # breakpoint / boundary caches: what the shared prefix extends past
        return "after_last_breakpoint"
    g = max(1, rules.granularity)
    if live < shared:
        if expired:
            return "expired"
        if rules.full_blocks_only and live >= (shared // g) * g:
            return "granularity"  # the shared tail is a partial block, never stored
        if rules.capacity_tokens is not None:
            return "evicted"
        if keyed:
            return "namespace"
        if rules.ttl_seconds is not None:
            return "expired"  # expired and swept before this request
        return "below_min"  # the earlier prompts were too short to be stored
    if cached == 0 and (live // g) * g < rules.min_tokens:
        return "below_min"
    return "granularity"


def make_sim(rules: CacheRules, width: int, unit_tokens: int) -> PrefixSim | BoundarySim | EngineSim | SlotSim | UnitSim:
    """The cache model for one namespace: a single-slot engine (llama.cpp, Ollama) its slots
    (:mod:`promptcache.simulate.slots`); a bounded engine without TTL runs the engine's own
    algorithm (:mod:`promptcache.simulate.engines`); other prefix caches the prefix tree;
    DeepSeek's cache prefix units their unit store (:mod:`promptcache.simulate.units`);
    breakpoint and boundary caches their entry store."""
    if rules.mode == "slots":
        return SlotSim(rules, width, unit_tokens)
    if rules.mode == "units":
        return UnitSim(rules)
    if rules.kind == "engine" and rules.capacity_tokens is not None and rules.ttl_seconds is None and rules.engine_pool:
        return EngineSim(rules, width, unit_tokens)
    if rules.mode == "prefix":
        return PrefixSim(rules, width, unit_tokens)
    return BoundarySim(rules)


class Simulator:
    """Replays prompts against the ideal cache and, per namespace, the simulated rules."""

    def __init__(self) -> None:
        self.ideal: dict[tuple[str, str | None], IdealCache] = {}
        self.sims: dict[str, PrefixSim | BoundarySim | EngineSim | SlotSim | UnitSim] = {}
        self._steps = 0

    def sweep(self, now: float) -> None:
        """Drop expired entries in every namespace, and namespaces left empty."""
        for ns, sim in list(self.sims.items()):
            if isinstance(sim, (EngineSim, SlotSim)):
                continue
            if isinstance(sim, PrefixSim):
                if sim.tree.ttl is None:
                    continue
                sim.tree.sweep(now)
                if sim.tree.nodes <= 1:
                    del self.sims[ns]
            else:
                (sim if isinstance(sim, UnitSim) else sim.store).sweep(now)
                if not sim.store.entries:
                    del self.sims[ns]

    def step(self, *, ref: RequestRef, prompt: Prompt, rules: CacheRules, namespace: str,
             ideal_key: tuple[str, ...], now: float | None) -> tuple[int, int, int, int, str | None, RequestRef | None, tuple[str, ...]]:
        """Simulate one request.

        Args:
            ref: the request as the trees remember it (its ``namespace`` is set to ``namespace``).
            prompt: the tokenized prompt.
            rules: its cache rules.
            namespace: its simulated cache namespace.
            ideal_key: its ideal cache: the model, and what makes token ids comparable (the
                tokenizer), whatever upstream or rules file serves it.
            now: arrival time.

        Returns:
            ``(cached, write, write_1h, shared, miss_reason, diverged_from, flags)``, tokens. A
            shared prefix the simulated rules miss because it is held by a request of another
            namespace (a cache key, a route or an upstream apart) has the reason ``namespace``.
        """
        self._steps += 1
        ref.namespace = namespace
        if now is not None and self._steps % SWEEP_EVERY == 0:
            self.sweep(now)
        sim = self.sims.get(namespace)
        if sim is None:
            sim = self.sims[namespace] = make_sim(rules, prompt.width, prompt.unit_tokens)
        flags: tuple[str, ...] = ()
        if isinstance(sim, SlotSim):
            cached, write, write_1h, live, _ = sim.step(prompt, now)
            reason, expired = None, False
        elif isinstance(sim, EngineSim):
            cached, write, write_1h, live, expired, flags = sim.step(prompt, now)
            reason = "over_capacity" if flags else None
        elif isinstance(sim, PrefixSim):
            cached, write, write_1h, live, expired = sim.step(prompt, now)
            reason = None
        elif isinstance(sim, UnitSim):
            cached, write, write_1h, reason, flags = sim.step(prompt, now, rules)
            live, expired = None, False
        else:
            cached, write, write_1h, reason, flags = sim.step(prompt, now, rules)
            live, expired = None, False
        ideal = self.ideal.get(ideal_key)
        if ideal is None:
            ideal = self.ideal[ideal_key] = IdealCache(prompt.width, prompt.unit_tokens)
        ideal.requests += 1
        if namespace not in ideal.namespaces:
            ideal.namespaces[namespace] = None
        lcp_units, _, other = ideal.tree.access(prompt.units, len(prompt.units) // prompt.width, None, ref,
                                                cached // prompt.unit_tokens)
        shared = prompt.tokens_of(lcp_units)
        # the prefix it shares most is held by a request served in another namespace's cache
        elsewhere = other is not None and other.namespace != namespace
        if isinstance(sim, UnitSim):  # the common prefix is persisted now; the reason follows from it
            reason = sim.detect(prompt, ref.index, shared, other.index if other is not None else None, now,
                                keyed=elsewhere)
        elif isinstance(sim, SlotSim):
            reason = None if cached >= shared else ("evicted" if live < shared else "granularity")
        elif reason is None:
            reason = miss_reason(rules, cached=cached, shared=shared, live=live, expired=expired, keyed=elsewhere)
        elif cached >= shared:
            reason = None
        return cached, write, write_1h, shared, reason, other, flags

    def ideal_writes(self) -> dict[int, int]:
        """Oracle writes per request index, in tokens: every edge that some later request read
        was worth writing once, by the request that created it."""
        out: dict[int, int] = {}
        for ic in self.ideal.values():
            ut = ic.unit_tokens
            for node in ic.tree.iter_nodes():
                if node.uses and node.creator is not None:
                    idx = node.creator.index
                    out[idx] = out.get(idx, 0) + ic.tree.units_of(node) * ut
        return out
