"""Numbers for people, the same in every report format (text, HTML, Markdown)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def usd(v: Decimal | float | None) -> str:
    """Money: ``$1,234.57``; amounts under a dollar keep four decimals; ``—`` when unpriced.

    Rounds half up on the decimal value (``0.00025`` → ``$0.0003``) whether it arrives as a
    :class:`~decimal.Decimal` (the text report) or as the JSON record's float (HTML, Markdown).
    """
    if v is None:
        return "—"
    d = v if isinstance(v, Decimal) else Decimal(repr(float(v)))
    q = Decimal("0.0001") if abs(d) < 1 else Decimal("0.01")
    r = d.quantize(q, rounding=ROUND_HALF_UP)
    if r == 0:
        r = abs(r)  # no "$-0.0000"
    return f"${r:,}"


#: Why the simulated rules miss shared tokens (``Outcome.miss_reason``), in words.
MISS_REASONS = {
    "below_min": "shorter than the minimum",
    "expired": "expired (TTL)",
    "evicted": "evicted (capacity)",
    "granularity": "past the last whole block",
    "no_breakpoint": "no breakpoint",
    # breakpoint caches (Anthropic, Bedrock, Gemini) and boundary caches that write at message ends
    # with no breakpoint in the request (OpenAI's and Azure's newest models): one wording for both
    "after_last_breakpoint": "after the last cache write (a breakpoint, or a message end where the cache writes at message boundaries)",
    "lookback": "beyond the breakpoint lookback",
    "namespace": "in another cache namespace",
    "over_capacity": "prompt larger than the whole cache (refused)",
    "no_unit": "not yet in a persisted cache prefix unit (DeepSeek)",
}


def miss_reason(code: str) -> str:
    """A miss reason in words (``below_min`` → ``shorter than the minimum``)."""
    return MISS_REASONS.get(code, code.replace("_", " "))


def pct(x: float | None) -> str:
    """A ratio as a percentage with one decimal (``—`` for ``None``)."""
    return "—" if x is None else f"{100 * x:.1f}%"


def duration(s: float | None, none: str = "unknown span") -> str:
    """Seconds as ``1d 2h`` / ``2h 14m`` / ``5m 3s`` / ``42s`` (whole seconds, truncated); *none* for ``None``."""
    if s is None:
        return none
    s = int(s)
    if s >= 86400:
        return f"{s // 86400}d {s % 86400 // 3600}h"
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60}m"
    if s >= 60:
        return f"{s // 60}m {s % 60}s"
    return f"{s}s"


def speed(ratio: float) -> str:
    """A speed ratio (time without / time with) in words: ``2.50× faster``, ``1.72× slower``
    for a ratio under 1 (0.58), ``no faster`` within rounding of 1 (0 or less: ``slower``).

    >>> speed(2.5), speed(0.58), speed(1.001)
    ('2.50× faster', '1.72× slower', 'no faster')
    """
    if abs(ratio - 1) < 0.005:
        return "no faster"
    if ratio < 1:
        return f"{1 / ratio:.2f}× slower" if ratio > 0 else "slower"
    return f"{ratio:.2f}× faster"
