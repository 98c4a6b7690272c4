"""The prefix lockfile: each prompt's stable prefix (token count and SHA-256 of its text) and,
per ``cache_control`` breakpoint, the same up to that breakpoint.

``promptcache lock PATHS`` writes it (JSON, keys sorted, one entry per ``file::prompt``, file
paths relative to the lockfile); ``promptcache lint`` compares against it when it exists and
reports ``prefix-shrunk`` (the stable prefix lost tokens) and ``locked-breakpoint-moved`` (a
breakpoint sits at another block or token), with what the change costs per day at the
configured request rate: the cacheable tokens lost (under the provider's minimum and
granularity) priced at the input price instead of the cache-read price.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any, Sequence

from .. import __version__
from ..diagnose.rules import Rule
from ..errors import InputError
from .checks import Metrics, Target, breakpoints, finding, sha256
from .config import Settings
from .model import Doc, LintFinding

SCHEMA = "promptcache.lock/v1"


def entry(doc: Doc, target: Target, m: Metrics) -> dict[str, Any]:
    """The lockfile entry of one prompt."""
    return {
        "provider": target.provider,
        "model": target.model,
        "tokenizer": target.tokenizer.name,
        "stable_prefix": {"tokens": m.stable_tokens, "exact": m.stable_exact, "sha256": sha256(m.stable_text)},
        "breakpoints": [{"part": b["part"], "tokens": b["tokens"], "exact": b["exact"], "sha256": b["sha256"]}
                        for b in breakpoints(doc, m)],
    }


def key_for(doc: Doc, lock_dir: Path) -> str:
    """``relative/path::prompt`` (relative to the lockfile's directory)."""
    p = Path(doc.path).resolve()
    try:
        rel = p.relative_to(lock_dir.resolve()).as_posix()
    except ValueError:
        rel = p.as_posix()
    return f"{rel}::{doc.name}"


def render(entries: dict[str, dict[str, Any]]) -> str:
    """The lockfile's text."""
    return json.dumps({"schema": SCHEMA, "generated_by": f"promptcache {__version__}",
                       "prompts": dict(sorted(entries.items()))}, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of a lockfile.

    Raises:
        InputError: when it cannot be read or is not a promptcache lockfile.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read lockfile: {e.strerror}", path=str(path)) from None
    except json.JSONDecodeError as e:
        raise InputError(f"lockfile is not JSON ({e.msg})", path=str(path), line=e.lineno) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("prompts"), dict):
        raise InputError(f"not a {SCHEMA} lockfile; write one with `promptcache lock`", path=str(path))
    return data["prompts"]


def cacheable(tokens: int, target: Target) -> int:
    """Tokens of a stable prefix the provider can cache (0 below the minimum, floored to its
    granularity)."""
    r = target.rules
    if tokens < r.min_tokens:
        return 0
    g = max(1, r.granularity)
    return tokens // g * g


def cost_per_day(lost_tokens: int, target: Target, requests_per_day: float) -> Decimal | None:
    """What ``lost_tokens`` fewer cached tokens per request cost per day (USD), or ``None``
    when the model has no known price."""
    if lost_tokens <= 0:
        return Decimal(0)
    from ..pricing import PriceBook

    rates = PriceBook().rates(target.provider, target.model) if target.model else None
    if rates is None:
        return None
    per = rates.cost(lost_tokens, 0) - rates.cost(lost_tokens, lost_tokens)
    return per * Decimal(str(requests_per_day))


def _money(cost: Decimal | None, target: Target, rate: float) -> str:
    if cost is None:
        return f"unpriced (no price known for `{target.model or target.provider}`; set `model`)"
    return f"${cost:,.2f}/day at {rate:,.0f} requests/day"


def compare(doc: Doc, target: Target, m: Metrics, locked: dict[str, Any], rules: Sequence[Rule],
            settings: Settings) -> list[LintFinding]:
    """Findings for one prompt against its lockfile entry."""
    by_check = {r.options.get("check"): r for r in rules if r.kind == "template"}
    out: list[LintFinding] = []
    anchor = m.items[m.first_slot].piece.slot.span if m.first_slot is not None else doc.span  # type: ignore[union-attr]
    rate = settings.requests_per_day
    old = int((locked.get("stable_prefix") or {}).get("tokens", 0))
    rule = by_check.get("prefix-shrunk")
    if rule is not None and m.stable_tokens < old:
        lost = cacheable(old, target) - cacheable(m.stable_tokens, target)
        cost = cost_per_day(lost, target, rate)
        out.append(finding(rule, anchor, doc.name,
                           {"locked_tokens": old, "current_tokens": m.stable_tokens, "tokens_lost": lost,
                            "cost": _money(cost, target, rate), "cost_usd_per_day": None if cost is None else float(cost),
                            "requests_per_day": rate},
                           doc=doc.name, token_index=m.stable_tokens, tokens_at_risk=old - m.stable_tokens))
    rule = by_check.get("breakpoint-moved")
    if rule is not None:
        now = breakpoints(doc, m)
        now_by_part = {b["part"]: b for b in now}
        for lb in locked.get("breakpoints") or []:
            cur = now_by_part.get(lb.get("part"))
            if cur is not None and cur["tokens"] == lb.get("tokens"):
                continue
            lt = int(lb.get("tokens", 0))
            moved_to = cur or (now[0] if now else None)
            ct = moved_to["tokens"] if moved_to else 0
            lost = max(0, cacheable(lt, target) - cacheable(ct, target))
            cost = cost_per_day(lost, target, rate)
            span = moved_to["span"] if moved_to else anchor
            out.append(finding(rule, span, str(lb.get("part")),
                               {"locked_part": lb.get("part"), "locked_tokens": lt,
                                "current_part": moved_to["part"] if moved_to else "(none)", "current_tokens": ct,
                                "tokens_lost": lost, "cost": _money(cost, target, rate),
                                "cost_usd_per_day": None if cost is None else float(cost), "requests_per_day": rate},
                               doc=doc.name, part=moved_to["part"] if moved_to else None, token_index=ct))
    return out
