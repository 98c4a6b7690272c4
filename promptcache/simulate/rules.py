"""Cache rules from ``rules/providers/*.yaml``: one file per provider or engine, every number
with the URL it came from and the date it was checked.

A file describes how requests render (section order, framing, which parameters are in the
prefix), which tokenizer applies, what partitions the cache (namespace), and, per model pattern,
the cache mechanics (:class:`CacheRules`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from ..datafiles import RULES_DIR, check_id, check_source, load_dir, read_mapping
from ..errors import ConfigError
from ..render import FRAMINGS, SECTIONS, Layout

__all__ = ["RULES_DIR", "MODES", "CacheRules", "ProviderFile", "load_providers", "provider", "parse_provider_file"]
MODES = ("prefix", "boundaries", "breakpoints", "slots", "units")

_FILE_KEYS = {"id", "name", "kind", "source", "checked", "notes", "render", "tokenizer", "namespace",
              "retention", "models", "min_tokens", "ttl_options", "route", "token_ratio", "upstreams",
              "upstream_providers", "sticky_seconds", "facts", "lifetimes", "lifetime_request", "batch_price"}
_MODEL_KEYS = {"match", "mode", "min_tokens", "granularity", "block_size", "full_blocks_only", "max_hit_offset",
               "ttl_seconds", "refresh_on_hit", "eviction", "bills_writes", "source", "checked", "lookback",
               "max_breakpoints", "max_writes", "select", "implicit", "max_cached_tokens", "notes", "endings",
               "slots", "slot_similarity", "checkpoint_sections"}
_ROUTE_KEYS = {"prefixes", "aliases", "models", "family"}
#: ``select`` of a ``models`` entry: which requests it applies to.
SELECT = ("any", "explicit", "implicit")


@dataclass(frozen=True)
class CacheRules:
    """The cache mechanics that apply to one model (all sizes in tokens, times in seconds).

    Attributes:
        provider: provider or engine id (``openai``, ``anthropic``, ``vllm`` ...).
        kind: ``provider`` or ``engine``.
        mode: ``prefix`` (longest live prefix, floored to ``granularity``), ``breakpoints``
            (entries only at explicit breakpoints, with lookback: Anthropic) or ``boundaries``
            (entries at message endings: OpenAI GPT-5.6+), ``slots`` (one cached prompt per
            slot, reused by longest common prefix: llama.cpp server, Ollama) or ``units``
            (DeepSeek's cache prefix units: a read matches a whole unit persisted at a request's
            end, its output's end or a common prefix of two requests:
            :mod:`promptcache.simulate.units`).
        min_tokens: shortest cacheable prefix.
        granularity: hits are whole multiples of this (OpenAI 128; engines' block size).
        full_blocks_only: only whole ``granularity`` blocks are stored (vLLM).
        max_hit_offset: tokens at the end of a prompt that are always recomputed (engines: 1).
        ttl_seconds: idle lifetime, or ``None`` for none.
        refresh_on_hit: whether a read restarts the lifetime.
        eviction: ``block`` or ``node`` LRU when ``capacity_tokens`` is set.
        capacity_tokens: LRU capacity, or ``None`` for unbounded.
        bills_writes: whether writes are billed at a cache-write price (else as plain input).
        lookback: blocks (breakpoints) or message endings (boundaries) searched back.
        max_breakpoints: most breakpoints a request may carry.
        max_writes: most cache writes per request.
        slots: cached prompts an engine keeps (``slots`` mode: llama.cpp, Ollama).
        slot_similarity: least share of a prompt a slot must hold to be reused rather than the
            least recently used slot (llama.cpp ``--slot-prompt-similarity``).
        implicit: boundaries mode adds its implicit breakpoint (OpenAI's default); False for
            ``prompt_cache_options.mode: "explicit"`` (only the request's own breakpoints; none:
            no caching and no writes).
        max_cached_tokens: longest cacheable prefix (Amazon Nova: 32K), or ``None``.
        endings: roles whose message endings are boundaries (``boundaries`` mode): OpenAI's
            user and tool messages; DeepSeek adds the model's own output (``assistant``).
        checkpoint_sections: the prompt sections a request may put a breakpoint in (Amazon
            Nova on Bedrock: ``system`` and ``messages``, no tools); what proposals may mark.
        engine_pool: a bounded engine runs the engine's own pool (vLLM's block pool, SGLang's
            radix tree: :mod:`promptcache.simulate.engines`); False: a plain LRU over cached
            blocks, as promptcache's own replay engine keeps them.
        lifetimes: the named cache lifetimes this model offers, ``(name, seconds)`` in the
            file's order (:meth:`ProviderFile.lifetimes_for`: OpenAI's ``prompt_cache_retention``
            values, breakpoint TTLs): what advice and the lifetime optimiser may choose from.
        lifetime_request: how a request asks for one, with ``{name}`` for its name
            (``prompt_cache_retention "{name}"``), or empty.
        ttl_forced: ``ttl_seconds`` comes from ``--ttl`` and applies to every entry, whatever
            lifetime a request's own breakpoints ask for (``None``: never expire).
        source, checked: where the numbers come from and when they were checked.
    """

    provider: str
    kind: str
    mode: str
    min_tokens: int = 0
    granularity: int = 1
    full_blocks_only: bool = False
    max_hit_offset: int = 0
    ttl_seconds: float | None = None
    refresh_on_hit: bool = True
    eviction: str | None = None
    capacity_tokens: int | None = None
    bills_writes: bool = False
    lookback: int | None = None
    max_breakpoints: int | None = None
    max_writes: int | None = None
    slots: int = 1
    slot_similarity: float = 0.0
    implicit: bool = True
    max_cached_tokens: int | None = None
    endings: tuple[str, ...] = ("user", "tool")
    checkpoint_sections: tuple[str, ...] = ("tools", "system", "messages")
    engine_pool: bool = True
    lifetimes: tuple[tuple[str, float], ...] = ()
    lifetime_request: str = ""
    ttl_forced: bool = False
    source: str = ""
    checked: str = ""

    def longer_lifetimes(self) -> list[tuple[str, float, str]]:
        """The named lifetimes this model offers that outlive its current TTL, shortest first:
        ``[(name, seconds, how a request asks for it)]`` (``("24h", 1800.0,
        'prompt_cache_retention "24h"')``); empty where it offers none (OpenAI's gpt-4.1-mini:
        in_memory only; engines)."""
        now = self.ttl_seconds
        if now is None:
            return []
        return sorted(((n, s, self.lifetime_request.replace("{name}", n) if self.lifetime_request else n)
                       for n, s in self.lifetimes if s > now), key=lambda x: x[1])

    def describe(self) -> str:
        """One line for reports, e.g. ``openai: prefix, min 1024, 128-token steps, TTL 600 s``."""
        bits = [self.mode]
        if self.min_tokens:
            bits.append(f"min {self.min_tokens}")
        if self.granularity > 1:
            bits.append(f"{self.granularity}-token {'blocks' if self.full_blocks_only else 'steps'}")
        if self.mode == "breakpoints":
            bits.append(f"≤{self.max_breakpoints} breakpoints, {self.lookback}-block lookback")
        if self.mode == "slots":
            bits.append(f"{self.slots} slot{'s' if self.slots != 1 else ''}")
        bits.append(f"TTL {int(self.ttl_seconds)} s" if self.ttl_seconds else "no TTL")
        if self.capacity_tokens:
            bits.append(f"LRU {self.capacity_tokens:,} tokens")
        return f"{self.provider}: " + ", ".join(bits)


@dataclass(frozen=True)
class ProviderFile:
    """One ``rules/providers/<id>.yaml`` file, validated."""

    id: str
    name: str
    kind: str
    source: str
    checked: str
    notes: str
    layout: Layout
    tokenizer: str | None
    namespace: tuple[str, ...]
    retention: Mapping[str, float]
    ttl_options: Mapping[str, int]
    models: tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...]
    min_tokens: tuple[tuple[tuple[str, ...], int], ...] = ()
    path: str = ""
    route: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    token_ratio: tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...] = ()
    upstreams: Mapping[str, str] = field(default_factory=dict)
    upstream_providers: Mapping[str, str] = field(default_factory=dict)
    sticky_seconds: float | None = None
    facts: tuple[Mapping[str, Any], ...] = ()
    lifetimes: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    lifetime_request: str = ""
    #: The provider's batch API price against the standard one: ``multiplier``, ``what`` it
    #: applies to, ``source``, ``checked`` (``None``: no batch API, or none known).
    batch_price: Mapping[str, Any] | None = None

    def partitions(self, req: Any) -> list[tuple[str, str | None]]:
        """``(field, value)`` of each field besides the model and the cache key that this
        provider keeps separate caches by (``namespace``), for a request
        (:class:`~promptcache.model.Request`): ``service_tier`` first (``None`` for the default
        tier, ``auto`` or ``default``), then each ``affinity:<name>`` routing identifier in the
        file's order (``None`` when the request carries none; header names match
        case-insensitively)."""
        out: list[tuple[str, str | None]] = []
        if "service_tier" in self.namespace:
            tier = req.params.get("service_tier") if req.params else None
            out.append(("service_tier", str(tier) if tier and str(tier) not in ("auto", "default") else None))
        for part in self.namespace:
            if part.startswith("affinity:"):
                name = part.partition(":")[2]
                v = None
                if req.affinity:
                    v = req.affinity.get(name)
                    if v is None:
                        v = next((x for k, x in req.affinity.items() if k.lower() == name), None)
                out.append((name, str(v) if v else None))
        return out

    @property
    def is_router(self) -> bool:
        """A router (OpenRouter) applies its upstream's rules, not its own."""
        return self.kind == "router"

    def lifetimes_for(self, model: str | None) -> dict[str, float]:
        """The named cache lifetimes a model offers → seconds: the file's ``retention`` (OpenAI
        ``prompt_cache_retention``) and ``ttl_options`` (breakpoint or ``prompt_cache_options``
        TTLs), narrowed by the first ``lifetimes`` entry that matches the model (OpenAI offers
        ``24h`` only on its extended-retention models; Bedrock the 1-hour TTL only on some
        Claude models); every one where no entry matches."""
        every: dict[str, float] = {**{k: float(v) for k, v in self.retention.items()},
                                   **{k: float(v) for k, v in self.ttl_options.items()}}
        name = (model or "").split("/")[-1].lower()
        allowed = next((opts for pats, opts in self.lifetimes if any(fnmatch.fnmatchcase(name, p) for p in pats)), None)
        return every if allowed is None else {k: v for k, v in every.items() if k in allowed}

    def ratio_for(self, model: str | None) -> Mapping[str, Any] | None:
        """How far the approximate tokenizer may be from the provider's for a model:
        ``{low, high, source, checked, quote}`` (provider tokens per approximate token), or
        ``None`` when no range is documented."""
        name = (model or "").split("/")[-1].lower()
        return next((r for pats, r in self.token_ratio if any(fnmatch.fnmatchcase(name, p) for p in pats)), None)

    def rules_for(self, model: str | None, *, ttl: float | None = None, capacity_tokens: int | None = None,
                  block_size: int | None = None, retention: str | None = None, explicit: bool = False,
                  explicit_only: bool = False) -> CacheRules:
        """The :class:`CacheRules` for a model, with command-line overrides applied.

        Args:
            model: model name as logged (``None`` matches only ``*``).
            ttl: ``--ttl`` seconds (0 disables expiry).
            capacity_tokens: ``--capacity-tokens``.
            block_size: ``--block-size`` (engines' block; sets granularity).
            retention: the request's retention choice (OpenAI ``prompt_cache_retention``;
                ``5m``/``1h`` where ``ttl_options``/``retention`` name them).
            explicit: the request carries explicit breakpoints (picks ``select: explicit``
                entries, Qwen's explicit cache).
            explicit_only: OpenAI ``prompt_cache_options.mode: "explicit"``: no implicit
                breakpoint.

        Raises:
            ConfigError: when no entry matches.
        """
        name = (model or "").split("/")[-1].lower()
        want = "explicit" if explicit else "implicit"
        spec = next((m for pats, m in self.models if any(fnmatch.fnmatchcase(name, p) for p in pats)
                     and m.get("select", "any") in ("any", want)), None)
        if spec is None:
            raise ConfigError(f"{self.path}: no 'models' entry matches {model!r}; add a '*' entry")
        min_tokens = spec.get("min_tokens")
        if min_tokens is None:
            min_tokens = next((t for pats, t in self.min_tokens if any(fnmatch.fnmatchcase(name, p) for p in pats)), 0)
        gran = int(spec.get("block_size") or spec.get("granularity") or 1)
        offered = self.lifetimes_for(model)
        r = CacheRules(
            provider=self.id, kind=self.kind, mode=spec["mode"], min_tokens=int(min_tokens), granularity=gran,
            full_blocks_only=bool(spec.get("full_blocks_only", False)), max_hit_offset=int(spec.get("max_hit_offset", 0)),
            ttl_seconds=spec.get("ttl_seconds"), refresh_on_hit=bool(spec.get("refresh_on_hit", True)),
            eviction=spec.get("eviction"), bills_writes=bool(spec.get("bills_writes", False)),
            lookback=spec.get("lookback"), max_breakpoints=spec.get("max_breakpoints"), max_writes=spec.get("max_writes"),
            slots=int(spec.get("slots", 1)), slot_similarity=float(spec.get("slot_similarity", 0.0)),
            implicit=bool(spec.get("implicit", True)) and not explicit_only, max_cached_tokens=spec.get("max_cached_tokens"),
            endings=tuple(spec.get("endings") or ("user", "tool")), lifetimes=tuple(offered.items()),
            checkpoint_sections=tuple(spec.get("checkpoint_sections") or ("tools", "system", "messages")),
            lifetime_request=self.lifetime_request,
            source=str(spec.get("source", self.source)), checked=str(spec.get("checked", self.checked)),
        )
        # a lifetime the model does not offer is not granted (OpenAI's "24h" on gpt-4.1-mini)
        if retention and retention in self.ttl_options and retention in offered and r.mode == "prefix":
            r = replace(r, ttl_seconds=float(self.ttl_options[retention]))
        if retention and retention in self.retention and retention in offered:
            r = replace(r, ttl_seconds=self.retention[retention])
        if ttl is not None:
            r = replace(r, ttl_seconds=float(ttl) if ttl > 0 and ttl != float("inf") else None, ttl_forced=True)
        if block_size is not None:
            if block_size < 1:
                raise ConfigError("--block-size must be at least 1")
            r = replace(r, granularity=block_size)
        if capacity_tokens is not None:
            if capacity_tokens < 1:
                raise ConfigError("--capacity-tokens must be at least 1")
            r = replace(r, capacity_tokens=capacity_tokens, eviction=r.eviction or "node")
        return r


def _patterns(v: Any, where: str) -> tuple[str, ...]:
    if isinstance(v, str):
        return (v.lower(),)
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return tuple(x.lower() for x in v)
    raise ConfigError(f"{where}: 'match' must be a pattern or a list of patterns")


def parse_provider_file(path: Path) -> ProviderFile:
    """Load and validate one provider file.

    Raises:
        ConfigError: naming the file and the bad key.
    """
    d = read_mapping(path, _FILE_KEYS)
    check_source(d, str(path))
    check_id(d, path)
    render = d.get("render") or {}
    order = tuple(render.get("order", ("params", "system", "tools", "messages")))
    if sorted(order) != sorted(SECTIONS):
        raise ConfigError(f"{path}: render.order must be a permutation of {', '.join(SECTIONS)}")
    framing = render.get("framing", "harmony")
    if framing not in FRAMINGS:
        raise ConfigError(f"{path}: render.framing {framing!r} unknown; available: {', '.join(FRAMINGS)}")
    models = []
    for i, m in enumerate(d.get("models") or []):
        where = f"{path}: models[{i}]"
        if not isinstance(m, dict):
            raise ConfigError(f"{where}: not a mapping")
        bad = set(m) - _MODEL_KEYS
        if bad:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(bad))}")
        if m.get("mode") not in MODES:
            raise ConfigError(f"{where}: 'mode' must be one of {', '.join(MODES)}")
        cs = m.get("checkpoint_sections")
        if cs is not None and (not isinstance(cs, list) or not cs or any(x not in ("tools", "system", "messages") for x in cs)):
            raise ConfigError(f"{where}: 'checkpoint_sections' must be a list of tools, system, messages")
        if m.get("select", "any") not in SELECT:
            raise ConfigError(f"{where}: 'select' must be one of {', '.join(SELECT)}")
        check_source(m, where)
        models.append((_patterns(m.get("match"), where), m))
    kind = str(d.get("kind", "provider"))
    if kind not in ("provider", "engine", "router"):
        raise ConfigError(f"{path}: 'kind' must be provider, engine or router")
    if not models and kind != "router":
        raise ConfigError(f"{path}: no 'models' entries")
    route = d.get("route") or {}
    if not isinstance(route, dict) or set(route) - _ROUTE_KEYS:
        raise ConfigError(f"{path}: 'route' may have {', '.join(sorted(_ROUTE_KEYS))}")
    ratios = []
    for i, e in enumerate(d.get("token_ratio") or []):
        where = f"{path}: token_ratio[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("low"), (int, float)) or not isinstance(e.get("high"), (int, float)):
            raise ConfigError(f"{where}: needs 'match', numeric 'low' and 'high'")
        check_source(e, where)
        ratios.append((_patterns(e.get("match"), where), e))
    facts = []
    for i, e in enumerate(d.get("facts") or []):
        where = f"{path}: facts[{i}]"
        if not isinstance(e, dict) or "fact" not in e:
            raise ConfigError(f"{where}: needs 'fact', 'source' and 'checked'")
        check_source(e, where)
        facts.append(e)
    mins = []
    for i, e in enumerate(d.get("min_tokens") or []):
        if not isinstance(e, dict) or not isinstance(e.get("tokens"), int):
            raise ConfigError(f"{path}: min_tokens[{i}] needs 'match' and integer 'tokens'")
        mins.append((_patterns(e.get("match"), f"{path}: min_tokens[{i}]"), int(e["tokens"])))
    lifetimes = []
    for i, e in enumerate(d.get("lifetimes") or []):
        where = f"{path}: lifetimes[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("options"), list):
            raise ConfigError(f"{where}: needs 'match' and a list 'options'")
        known = set(d.get("retention") or {}) | set(d.get("ttl_options") or {})
        bad = [o for o in e["options"] if str(o) not in known]
        if bad:
            raise ConfigError(f"{where}: options {bad} are not in 'retention' or 'ttl_options'")
        check_source(e, where)
        lifetimes.append((_patterns(e.get("match"), where), tuple(str(o) for o in e["options"])))
    batch = d.get("batch_price")
    if batch is not None:
        m = batch.get("multiplier") if isinstance(batch, dict) else None
        if not isinstance(m, (int, float)) or isinstance(m, bool) or not 0 < m <= 1 or not isinstance(batch.get("what"), str):
            raise ConfigError(f"{path}: batch_price needs a 'multiplier' in (0, 1], 'what' (what it applies to), "
                              "'source' and 'checked'")
        check_source(batch, f"{path}: batch_price")
    retention = {}
    for k, v in (d.get("retention") or {}).items():
        check_source(v, f"{path}: retention.{k}")
        retention[str(k)] = float(v["seconds"])
    return ProviderFile(
        id=d["id"], name=str(d.get("name", d["id"])), kind=kind, source=d["source"],
        checked=str(d["checked"]), notes=" ".join(str(d.get("notes", "")).split()),
        layout=Layout(order=order, params=tuple(render.get("params") or ()), framing=framing),
        tokenizer=d.get("tokenizer"), namespace=tuple(d.get("namespace") or ("model",)),
        retention=retention, ttl_options=dict(d.get("ttl_options") or {}), models=tuple(models),
        min_tokens=tuple(mins), path=str(path),
        route={k: tuple(str(x).lower() for x in (v if isinstance(v, list) else [v])) for k, v in route.items()},
        token_ratio=tuple(ratios), upstreams={str(k).lower(): str(v) for k, v in (d.get("upstreams") or {}).items()},
        upstream_providers={str(k).lower(): str(v) for k, v in (d.get("upstream_providers") or {}).items()},
        sticky_seconds=d.get("sticky_seconds"), facts=tuple(facts), lifetimes=tuple(lifetimes),
        lifetime_request=str(d.get("lifetime_request") or ""), batch_price=batch,
    )


@lru_cache(maxsize=None)
def load_providers(directory: str | None = None) -> dict[str, ProviderFile]:
    """Every provider file in ``directory`` (default: the shipped ``rules/providers``), by id.

    Raises:
        ConfigError: for the first invalid file.
    """
    return load_dir(directory, "providers", parse_provider_file, "provider files")


#: A rules file checked more than this many days before a log's newest request is flagged.
STALE_DAYS = 90


def stale(files: Iterable[ProviderFile], newest: float | None, days: int = STALE_DAYS) -> list[str]:
    """One warning per rules file checked more than ``days`` days before ``newest`` (a log's
    newest arrival, UTC seconds); none without a time."""
    if newest is None:
        return []
    from datetime import date as _date, datetime, timezone

    when = datetime.fromtimestamp(newest, timezone.utc).date()
    out = []
    for pf in files:
        checked = _date.fromisoformat(str(pf.checked))
        age = (when - checked).days
        if age > days:
            out.append(f"{Path(pf.path).name if pf.path else pf.id} was checked on {checked}, {age} days before the "
                       f"log's newest request ({when}): its cache facts may be out of date (more than {days} days)")
    return out


def provider(name: str) -> ProviderFile:
    """The provider file for ``--cache-model NAME``.

    Raises:
        ConfigError: listing the known names.
    """
    provs = load_providers()
    if name not in provs:
        raise ConfigError(f"unknown cache model {name!r}; available: {', '.join(sorted(provs))}")
    return provs[name]
