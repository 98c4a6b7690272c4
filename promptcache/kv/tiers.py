"""Offload tiers (CPU memory, SSD) under the GPU KV cache, and loading versus recomputing.

Units: tier capacities are GiB (2**30 bytes) on the command line; bandwidths GB/s (10**9
bytes per second, as PCIe and NVMe bandwidths are quoted); everything returned is in bytes,
tokens or seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError
from .arch import Architecture
from .memory import GiB, ParamCount, attention_flops_coefficient

#: Prefix lengths of the recompute-versus-load table, tokens.
PREFIX_LENGTHS = (256, 1024, 4096, 16384, 32768, 131072)


@dataclass(frozen=True)
class TierSpec:
    """One offload tier as given (``--cpu-tier GB[:GBps]``).

    Attributes:
        name: ``cpu`` or ``ssd``.
        capacity_bytes: bytes of KV cache it holds.
        bandwidth_bytes_per_s: read bandwidth into the GPUs, or ``None`` when not given.
    """

    name: str
    capacity_bytes: int
    bandwidth_bytes_per_s: float | None


def parse_tier(spec: str, name: str) -> TierSpec:
    """Parse ``GB[:GBps]`` (GiB of capacity, optional GB/s of bandwidth).

    Raises:
        ConfigError: for a malformed or non-positive value, naming the option.
    """
    opt = f"--{name}-tier"
    parts = str(spec).split(":")
    if len(parts) > 2:
        raise ConfigError(f"{opt} takes GB[:GBps], got {spec!r}")
    try:
        cap = float(parts[0])
        bw = float(parts[1]) if len(parts) == 2 and parts[1] != "" else None
    except ValueError:
        raise ConfigError(f"{opt} takes GB[:GBps] (numbers), got {spec!r}") from None
    if not cap > 0 or (bw is not None and not bw > 0) or not math.isfinite(cap) or (bw is not None and not math.isfinite(bw)):
        raise ConfigError(f"{opt}: capacity and bandwidth must be positive, got {spec!r}")
    return TierSpec(name, round(cap * GiB), bw * 1e9 if bw is not None else None)


@dataclass(frozen=True)
class TierShare:
    """Where the log's cache hits are served from.

    Attributes:
        name: ``gpu``, ``cpu`` or ``ssd``.
        capacity_tokens: the tier's own capacity, tokens.
        cumulative_tokens: capacity of this tier and every tier above it.
        hit_tokens: prompt tokens served from this tier.
        hit_ratio: ``hit_tokens / prompt_tokens``.
    """

    name: str
    capacity_tokens: int
    cumulative_tokens: int
    hit_tokens: int
    hit_ratio: float


def split_hits(tiers: list[tuple[str, int]], cached_at: dict[int, int], prompt_tokens: int) -> list[TierShare]:
    """Split cache hits between tiers from a capacity sweep.

    LRU is a stack algorithm (Mattson et al., 1970): the cache of capacity ``C`` always holds
    the ``C`` most recently used blocks, so it contains every smaller LRU cache (inclusion).
    A hierarchy where blocks evicted from the GPU move down to CPU memory, then to SSD, and
    move back up on a hit, holds the same blocks as one LRU cache of the summed capacity, the
    GPU holding the most recent ``C_gpu`` of them. A block found at stack depth ``d`` is
    therefore served by the GPU if ``d ≤ C_gpu``, by the CPU if ``d ≤ C_gpu + C_cpu``, by the
    SSD if ``d ≤ C_gpu + C_cpu + C_ssd``, and missed beyond. Summed over the log::

        gpu = H(C_gpu)
        cpu = H(C_gpu + C_cpu) − H(C_gpu)
        ssd = H(C_gpu + C_cpu + C_ssd) − H(C_gpu + C_cpu)

    where ``H(C)`` is the sweep's cached tokens at capacity ``C``. An inclusive tier (one that
    also keeps what the GPU holds, as LMCache's CPU backend does) adds only its size beyond
    the GPU's: give it that difference.

    Args:
        tiers: ``(name, capacity_tokens)`` from the GPU down.
        cached_at: cached tokens at each cumulative capacity (from the sweep).
        prompt_tokens: prompt tokens over the log.

    Returns:
        One :class:`TierShare` per tier. A negative difference (possible only when eviction
        is not a pure stack algorithm, e.g. SGLang evicting whole radix nodes) is kept as
        computed, so it shows.
    """
    out = []
    cum = 0
    prev = 0
    for name, cap in tiers:
        cum += cap
        h = cached_at[cum]
        out.append(TierShare(name, cap, cum, h - prev, (h - prev) / prompt_tokens if prompt_tokens else 0.0))
        prev = h
    return out


@dataclass(frozen=True)
class LoadRow:
    """Recompute versus load for one prefix length (seconds)."""

    prefix_tokens: int
    recompute_s: float
    load_s: float

    @property
    def faster(self) -> str:
        """``load`` or ``recompute`` (``load`` on a tie)."""
        return "load" if self.load_s <= self.recompute_s else "recompute"


@dataclass(frozen=True)
class BreakEven:
    """Loading a cached prefix from a tier against recomputing it on the GPUs.

    Attributes:
        tier: tier name.
        bandwidth_bytes_per_s: tier read bandwidth.
        break_even_tokens: prefix length from which loading is faster (0: faster at every
            length).
        rows: the comparison at :data:`PREFIX_LENGTHS`.
    """

    tier: str
    bandwidth_bytes_per_s: float
    break_even_tokens: int
    rows: list[LoadRow]


def recompute_seconds(arch: Architecture, params: ParamCount, tokens: int, flops_per_s: float) -> float:
    """Seconds to recompute the KV of a ``tokens``-token prefix: ``(2 × active_layers × L +
    c × L²) / flops_per_s`` (see :func:`~promptcache.kv.memory.prefill_flops`)."""
    return (2.0 * params.active_layers * tokens + attention_flops_coefficient(arch) * float(tokens) ** 2) / flops_per_s


def load_seconds(kv_bytes_per_token: int, tokens: int, bandwidth_bytes_per_s: float) -> float:
    """Seconds to read a ``tokens``-token prefix's KV: ``kv_bytes_per_token × L / bandwidth``."""
    return kv_bytes_per_token * tokens / bandwidth_bytes_per_s


def break_even(arch: Architecture, params: ParamCount, kv_bytes_per_token: int, *, tier: str,
               bandwidth_bytes_per_s: float, flops_per_s: float,
               lengths: tuple[int, ...] = PREFIX_LENGTHS) -> BreakEven:
    """Where loading a prefix from a tier starts beating recomputing it.

    Per token, loading costs ``k / B`` seconds (``k`` KV bytes per token, ``B`` bandwidth)
    whatever the length; recomputing costs ``(2P + cL) / F`` (``P`` active layer parameters,
    ``c`` the attention coefficient, ``F`` effective FLOP/s), growing with ``L`` because
    attention is quadratic. Loading wins for ``L > (F·k/B − 2P) / c``; when ``F·k/B ≤ 2P`` it
    wins at every length.

    Args:
        arch, params: the model.
        kv_bytes_per_token: KV bytes per token (all GPUs together).
        tier: tier name.
        bandwidth_bytes_per_s: tier read bandwidth, bytes/s.
        flops_per_s: effective FLOP/s of the GPUs (peak × MFU × GPUs).
        lengths: prefix lengths for the table.

    Raises:
        ConfigError: for a non-positive bandwidth or FLOP rate.
    """
    if not bandwidth_bytes_per_s > 0 or not flops_per_s > 0:
        raise ConfigError("tier bandwidth, --gpu-tflops and --mfu must be positive")
    c = attention_flops_coefficient(arch)
    x = (flops_per_s * kv_bytes_per_token / bandwidth_bytes_per_s - 2.0 * params.active_layers) / c
    be = max(0, math.floor(x) + 1) if x >= 0 else 0
    rows = [LoadRow(L, recompute_seconds(arch, params, L, flops_per_s),
                    load_seconds(kv_bytes_per_token, L, bandwidth_bytes_per_s)) for L in lengths]
    return BreakEven(tier, bandwidth_bytes_per_s, be, rows)
