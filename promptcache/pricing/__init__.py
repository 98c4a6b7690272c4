"""Prices: genai-prices' bundled snapshot (no network refresh), then promptcache's price overlay
(``rules/prices/overlay.yaml``: models genai-prices lacks, explicit-cache storage per hour, in
genai-prices' own data format), overridable per model from a YAML file of custom or negotiated
prices. Money is :class:`~decimal.Decimal` USD; rates are USD per million tokens.

genai-prices (https://github.com/pydantic/genai-prices) carries dated prices with
``input_mtok``, ``cache_read_mtok``, ``cache_write_mtok`` (5-minute / standard write) and
``cache_write_1h_mtok``, tiered by total input size (a "cliff": crossing a tier prices every
token at that tier). Its own ``calc_unit_price`` applies the tiers here.
"""

from __future__ import annotations

import bisect
import fnmatch
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError

MTOK = 1_000_000
#: Our provider ids → genai-prices provider ids (qwen: the overlay's ``alibaba``).
GENAI_PROVIDER = {"openai": "openai", "anthropic": "anthropic", "gemini": "google", "deepseek": "deepseek",
                  "bedrock": "aws", "azure": "azure", "vertex-claude": "google", "vertex-gemini": "google",
                  "xai": "x-ai", "mistral": "mistral", "kimi": "moonshotai", "groq": "groq", "fireworks": "fireworks",
                  "together": "together", "qwen": "alibaba"}
#: The shipped overlay.
OVERLAY = Path(__file__).resolve().parent.parent / "_rules" / "prices" / "overlay.yaml"
#: ``Rates.source`` of a price from the overlay.
OVERLAY_SOURCE = "promptcache price overlay (rules/prices/overlay.yaml)"


def tokens_cost(units: tuple[Decimal, Decimal, Decimal, Decimal], plain: int, read: int, write_5m: int,
                write_1h: int) -> Decimal:
    """USD of input tokens at ``units`` (:meth:`Rates.unit_prices`: input, cache read, 5-minute
    write, 1-hour write, USD per million tokens): ``plain`` billed as input, ``read`` from the
    cache, ``write_5m`` and ``write_1h`` written. Exact (``Decimal``) and linear in the tokens.

    >>> tokens_cost((Decimal(3), Decimal("0.3"), Decimal("3.75"), Decimal(6)), 100, 600, 0, 300)
    Decimal('0.00228')
    """
    pi, pr, pw, pw1 = units
    return (pi * plain + pr * read + pw * write_5m + pw1 * write_1h) / MTOK


@dataclass(frozen=True)
class Rates:
    """Per-million-token prices for one model at one time (``Decimal``, or genai-prices
    ``TieredPrices``; ``None`` = not priced separately).

    Attributes:
        model: the priced model's id.
        input, output: plain input and output prices.
        cache_read: cache-hit price (``None``: hits cost the input price).
        cache_write: 5-minute / standard cache-write price (``None``: the input price).
        cache_write_1h: 1-hour cache-write price (``None``: ``cache_write``).
        source: ``genai-prices <version>``, :data:`OVERLAY_SOURCE`, or the override file.
        cache_storage: explicit-cache storage, USD per million tokens per hour (overlay), or
            ``None``.
    """

    model: str
    input: Any
    output: Any
    cache_read: Any
    cache_write: Any
    cache_write_1h: Any
    source: str
    cache_storage: Any = None

    def cost(self, prompt_tokens: int, cached: int, write: int = 0, write_1h: int = 0,
             bills_writes: bool = True) -> Decimal:
        """Input-side cost in USD of one request.

        Args:
            prompt_tokens: all prompt tokens.
            cached: tokens read from the cache.
            write: tokens written to the cache (all TTLs; includes ``write_1h``).
            write_1h: the 1-hour part of ``write``.
            bills_writes: False when the provider bills writes as plain input.

        >>> r = Rates("m", Decimal(3), Decimal(15), Decimal("0.3"), Decimal("3.75"), Decimal(6), "t")
        >>> r.cost(1000, 600, 300, 300)   # 100×3 + 600×0.3 + 300×6, per million
        Decimal('0.00228')
        """
        if not bills_writes:
            write = write_1h = 0
        return tokens_cost(self.unit_prices(prompt_tokens), prompt_tokens - cached - write, cached,
                           write - write_1h, write_1h)

    def unit_prices(self, total: int) -> tuple[Decimal, Decimal, Decimal, Decimal]:
        """(input, cache read, 5-minute write, 1-hour write) USD per million tokens for a request
        of ``total`` prompt tokens: genai-prices' ``calc_unit_price`` applies the tier (a cliff on
        the total), memoized per tier (and at once for untiered prices): the same tuple object
        for every request of a tier."""
        memo = self.__dict__
        flat = memo.get("_flat")
        if flat is not None:
            return flat
        starts = memo.get("_starts")
        if starts is None:  # every tier's start, of every price, ascending (repeats kept)
            starts = memo["_starts"] = sorted(t.start for v in (self.input, self.cache_read, self.cache_write,
                                                                 self.cache_write_1h) for t in getattr(v, "tiers", ()))
        tier = bisect.bisect_left(starts, total)  # how many starts ``total`` is above
        cache = memo.setdefault("_tiers", {})
        got = cache.get(tier)
        if got is None:
            from genai_prices.types import calc_unit_price

            read = self.cache_read if self.cache_read is not None else self.input
            write = self.cache_write if self.cache_write is not None else self.input
            write_1h = self.cache_write_1h if self.cache_write_1h is not None else write
            got = cache[tier] = tuple(Decimal(calc_unit_price(p, MTOK, total, MTOK)) for p in (self.input, read, write, write_1h))
            if not any(getattr(v, "tiers", None) for v in (self.input, self.cache_read, self.cache_write, self.cache_write_1h)):
                self.__dict__["_flat"] = got
        return got

    def base(self, attr: str) -> Decimal | None:
        """The untiered price of ``attr`` (for display)."""
        v = getattr(self, attr)
        return getattr(v, "base", v)


def _dec(v: Any, where: str) -> Decimal | None:
    if v is None:
        return None
    try:
        d = Decimal(str(v))
    except InvalidOperation:
        raise ConfigError(f"{where}: {v!r} is not a price") from None
    if d < 0:
        raise ConfigError(f"{where}: negative price")
    return d


class PriceBook:
    """Looks up :class:`Rates`, custom file first, then genai-prices.

    Args:
        prices_file: YAML ``{models: {<name or glob>: {input, output, cache_read, cache_write,
            cache_write_1h, source}}}``, USD per million tokens.

    Raises:
        ConfigError: for an unreadable or invalid prices file.
    """

    def __init__(self, prices_file: str | Path | None = None, overlay: str | Path | None = OVERLAY):
        self.custom: list[tuple[str, Rates]] = []
        self._cache: dict[tuple[str | None, str, int, Any], Rates | None] = {}
        self.unknown: set[str] = set()
        self.from_overlay: set[str] = set()
        self._overlay = load_overlay(overlay) if overlay else []
        if prices_file:
            self._load(Path(prices_file))
        from importlib.metadata import version

        try:
            self.genai_version = version("genai-prices")
        except Exception:
            self.genai_version = "?"

    def _load(self, path: Path) -> None:
        try:
            d = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"{path}: {e}") from None
        models = d.get("models") if isinstance(d, dict) else None
        if not isinstance(models, dict):
            raise ConfigError(f"{path}: expected a top-level 'models' mapping of model name → prices")
        allowed = {"input", "output", "cache_read", "cache_write", "cache_write_1h", "source"}
        for name, p in models.items():
            where = f"{path}: models.{name}"
            if not isinstance(p, dict) or "input" not in p:
                raise ConfigError(f"{where}: needs at least 'input' (USD per million tokens)")
            bad = set(p) - allowed
            if bad:
                raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(bad))}; allowed: {', '.join(sorted(allowed))}")
            self.custom.append((str(name).lower(), Rates(
                str(name), _dec(p["input"], where), _dec(p.get("output"), where) or Decimal(0),
                _dec(p.get("cache_read"), where), _dec(p.get("cache_write"), where),
                _dec(p.get("cache_write_1h"), where), str(p.get("source", path)))))

    def rates(self, provider: str | None, model: str | None, when: float | None = None,
              context: tuple[tuple[str, str], ...] = ()) -> Rates | None:
        """Prices for a model at a time (UTC seconds; ``None`` = now), or ``None`` if unknown.

        Args:
            provider: our provider id (``openai``, ``bedrock`` ...), or ``None``.
            model: the model name as logged.
            when: the request's arrival (prices change over time), or ``None`` for now.
            context: genai-prices price context, e.g. ``(("service_tier", "flex"),)``, or the
                overlay's ``(("cache_mode", "explicit"),)`` (Qwen's explicit cache reads).

        Lookup: the custom prices file, then genai-prices, then the overlay (for models
        genai-prices lacks; their ids are collected in :attr:`from_overlay`); a model none of
        them knows is collected in :attr:`unknown`. Storage per hour comes from the overlay
        whichever source priced the tokens.
        """
        if not model:
            return None
        hour = int(when // 3600) if when and when > 1e9 else -1
        key = (provider, model, hour, context)
        if key in self._cache:
            return self._cache[key]
        name = model.lower()
        got: Rates | None = next((r for pat, r in self.custom if fnmatch.fnmatchcase(name, pat)), None)
        if got is None:
            ts = datetime.fromtimestamp(when, timezone.utc) if hour >= 0 else datetime.now(timezone.utc)
            got = self._genai(provider, model, ts, context)
            over = self._from_overlay(provider, model, ts, context)
            if got is None and over is not None and over.input is not None:
                got = over
                self.from_overlay.add(model)
            elif got is not None and over is not None and over.cache_storage is not None:
                got = replace(got, cache_storage=over.cache_storage)
        if got is None:
            self.unknown.add(model)
        self._cache[key] = got
        return got

    @staticmethod
    def _refs(model: str) -> list[str]:
        """Names to look a model up by: as logged, then without each leading path component
        (``groq/openai/gpt-oss-120b``, ``openai/gpt-oss-120b``, ``gpt-oss-120b``)."""
        parts = model.split("/")
        return ["/".join(parts[i:]) for i in range(len(parts))]

    def _genai(self, provider: str | None, model: str, ts: datetime, context: tuple[tuple[str, str], ...]) -> Rates | None:
        from genai_prices.data_snapshot import get_snapshot

        snap = get_snapshot()
        pid = GENAI_PROVIDER.get(provider or "")
        info = None
        for p, refs in ((pid, self._refs(model)), (None, [model])) if pid else ((None, [model]),):
            for ref in refs:
                try:
                    _, info = snap.find_provider_model(ref, None, p, None)
                    break
                except LookupError:
                    continue
            if info is not None:
                break
        if info is None:
            return None
        mp = info.get_prices(ts, price_context=dict(context) or None)
        return Rates(info.id, mp.input_mtok, mp.output_mtok, mp.cache_read_mtok, mp.cache_write_mtok,
                     mp.cache_write_1h_mtok, f"genai-prices {self.genai_version}")

    def _from_overlay(self, provider: str | None, model: str, ts: datetime,
                      context: tuple[tuple[str, str], ...]) -> Rates | None:
        pid = GENAI_PROVIDER.get(provider or "")
        name = model.lower().split("/")[-1]
        for prov in self._overlay:
            if pid and prov.id != pid:
                continue
            for m in prov.models:
                if m.is_match(name) or m.is_match(model.lower()):
                    mp = m.get_prices(ts, price_context=dict(context) or None)
                    return Rates(m.id, getattr(mp, "input_mtok", None), getattr(mp, "output_mtok", None) or Decimal(0),
                                 getattr(mp, "cache_read_mtok", None), getattr(mp, "cache_write_mtok", None),
                                 getattr(mp, "cache_write_1h_mtok", None), OVERLAY_SOURCE,
                                 getattr(mp, "cache_storage_mtok_hour", None))
        return None


def load_overlay(path: str | Path) -> list[Any]:
    """The overlay's providers, validated by genai-prices' own schema
    (``genai_prices.types._providers_from_raw``).

    Raises:
        ConfigError: naming the file when it cannot be read or does not validate.
    """
    p = Path(path)
    try:
        d = yaml.safe_load(p.read_text(encoding="utf-8"))
        from genai_prices.types import _providers_from_raw

        return list(_providers_from_raw(d["providers"]))
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{p}: not a genai-prices provider list ({type(e).__name__}: {e})") from None
