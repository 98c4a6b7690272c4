"""Observed against documented: infer a provider's cache parameters from a log's reported usage.

``promptcache audit LOG --calibrate`` feeds every request (its tokens, arrival and the usage the
provider reported) to a :class:`Calibrator`; per cache namespace it infers:

- ``min_tokens``: the smallest prefix the provider ever served or wrote (reported cache read,
  or read plus write), and as a lower bound the longest prefix shared with an earlier request
  that was never served (a range ``(low, value]``);
- ``granularity``: the unit cached counts come in, the greatest common divisor of every non-zero
  reported read (OpenAI 128, Mistral 64; 1 for token-level caches);
- ``ttl_seconds``: the longest idle gap after which a prefix still hit, and the shortest after
  which it missed (a range ``[low, high)``), a gap being the time since the last request that
  shared at least that prefix (every request that uses a prefix refreshes it);

each with the number of requests behind it, and "not enough data" where the log cannot tell
(fewer than :data:`MIN_EVIDENCE` requests, or no hit / no miss to bound a range). Where the
documented rules (``rules/providers``) disagree with what the log shows, :func:`disagreements`
says so; :func:`write_overlay` writes the inferred values as a dated rules overlay that a later
audit applies with ``--rules-overlay FILE`` (:func:`load_overlay`, :func:`apply_overlay`).

Misses for other reasons (routing to another machine, eviction under load) look like expiry
here: a miss bound is an upper bound of what the log shows, not a proof.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from .errors import ConfigError
from .prefix.tree import PrefixTree

#: Requests needed behind a figure before it is reported.
MIN_EVIDENCE = 3
#: ``kind`` of an overlay file.
OVERLAY_KIND = "promptcache-rules-overlay/v1"
NOT_ENOUGH = "not enough data"


@dataclass
class Figure:
    """One inferred parameter.

    Attributes:
        value: the inference (tokens or seconds), or ``None`` with ``note`` saying why.
        low, high: the range the log bounds it to (``None``: unbounded on that side).
        requests: requests behind it.
        note: ``not enough data`` and why, or how it was bounded.
    """

    value: float | None = None
    low: float | None = None
    high: float | None = None
    requests: int = 0
    note: str = ""

    def record(self) -> dict[str, Any]:
        """As JSON."""
        return {"value": self.value, "low": self.low, "high": self.high, "requests": self.requests,
                "note": self.note or None}


@dataclass
class Calibration:
    """What one namespace's reported usage shows.

    Attributes:
        namespace: the cache namespace (``openai/gpt-4o``).
        provider, model: its rules file and model.
        requests: requests seen; ``with_usage``: of them, with reported usage.
        min_tokens, granularity, ttl_seconds: the inferred figures.
        documented: the documented values (``min_tokens``, ``granularity``, ``ttl_seconds``).
        disagreements: one line per documented value the log contradicts.
    """

    namespace: str
    provider: str
    model: str | None
    requests: int = 0
    with_usage: int = 0
    min_tokens: Figure = field(default_factory=Figure)
    granularity: Figure = field(default_factory=Figure)
    ttl_seconds: Figure = field(default_factory=Figure)
    documented: dict[str, Any] = field(default_factory=dict)
    disagreements: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """As JSON (the audit's ``calibration`` array)."""
        return {"namespace": self.namespace, "provider": self.provider, "model": self.model,
                "requests": self.requests, "requests_with_usage": self.with_usage,
                "min_tokens": self.min_tokens.record(), "granularity": self.granularity.record(),
                "ttl_seconds": self.ttl_seconds.record(), "documented": self.documented,
                "disagreements": self.disagreements}


class _Namespace:
    __slots__ = ("provider", "model", "rules", "tree", "requests", "with_usage", "cached", "missed_shared", "reads",
                 "hit_gaps", "miss_gaps", "unit_tokens")

    def __init__(self, provider: str, model: str | None, rules: Any, width: int, unit_tokens: int):
        self.provider, self.model, self.rules = provider, model, rules
        self.tree = PrefixTree(width=width)
        self.unit_tokens = unit_tokens
        self.requests = self.with_usage = 0
        self.cached: list[int] = []          # prefix sizes served or written (read + write)
        self.missed_shared: list[int] = []   # shared prefixes of requests that read nothing
        self.reads: list[int] = []           # non-zero reads
        self.hit_gaps: list[float] = []
        self.miss_gaps: list[tuple[float, int, int]] = []   # (idle gap, shared tokens, read tokens)


class Calibrator:
    """Collects the evidence, request by request (a pipeline observer: ``observe(step)``)."""

    def __init__(self) -> None:
        self.ns: dict[str, _Namespace] = {}

    def observe(self, step: Any) -> None:
        """Take one :class:`~promptcache.pipeline.Step` (its prompt, outcome and rules)."""
        o, p = step.outcome, step.prompt
        servable = None if step.rules.mode == "prefix" else o.cached_tokens
        self.add(o.namespace, o.provider, o.model, step.rules, p.units, p.width, p.unit_tokens, p.n_tokens,
                 o.arrival, o.usage, servable)

    def add(self, namespace: str, provider: str, model: str | None, rules: Any, units: bytes, width: int,
            unit_tokens: int, n_tokens: int, arrival: float | None, usage: Any, servable: int | None = None) -> None:
        """One request: its prompt as units, its arrival (seconds) and reported usage.

        ``servable``: where the rules cache only at breakpoints, message endings or units (not
        any prefix), the tokens the documented mechanics could serve this request (its simulated
        read): a shared prefix past it that missed says nothing of the minimum or the lifetime (a
        request without a breakpoint reads nothing, whatever its length). ``None``: the shared
        prefix (prefix caches)."""
        st = self.ns.get(namespace)
        if st is None:
            st = self.ns[namespace] = _Namespace(provider, model, rules, width, unit_tokens)
        st.requests += 1
        tree = st.tree
        W = width
        # before storing this prompt: the longest prefix shared with any earlier request, and when
        # prefixes of each length were last used
        lcp_units = _lcp(tree, units, W)
        shared = min(lcp_units * unit_tokens, n_tokens)
        if servable is not None:
            shared = min(shared, servable)
        if usage is not None:
            st.with_usage += 1
            read = int(usage.cache_read_tokens or 0)
            write = int(usage.cache_write_tokens or 0)
            if read > 0 or write > 0:
                st.cached.append(read + write)
            if read > 0:
                st.reads.append(read)
            elif shared > 0:
                st.missed_shared.append(shared)
            if arrival is not None:
                if read > 0:
                    t = _last_use(tree, units, W, max(1, math.ceil(read / unit_tokens)))
                    if t is not None:
                        st.hit_gaps.append(arrival - t)
                if 0 < shared and read < shared:
                    t = _last_use(tree, units, W, read // unit_tokens + 1)
                    if t is not None:  # kept with the shared prefix: judged against the final minimum
                        st.miss_gaps.append((arrival - t, shared, read))
        tree.access(units, len(units) // W, arrival if arrival is not None else None)

    def results(self) -> list[Calibration]:
        """Every namespace's :class:`Calibration`, documented rules compared."""
        out = []
        for name, st in self.ns.items():
            c = Calibration(name, st.provider, st.model, st.requests, st.with_usage)
            c.min_tokens = _min_figure(st)
            c.granularity = _gran_figure(st)
            c.ttl_seconds = _ttl_figure(st, c.min_tokens.value, c.granularity.value)
            r = st.rules
            c.documented = {"min_tokens": getattr(r, "min_tokens", None), "granularity": getattr(r, "granularity", None),
                            "ttl_seconds": getattr(r, "ttl_seconds", None), "source": getattr(r, "source", None),
                            "checked": getattr(r, "checked", None)}
            c.disagreements = disagreements(c)
            out.append(c)
        return out


def _lcp(tree: PrefixTree, seq: bytes, W: int) -> int:
    """Units of ``seq`` the tree holds (no side effects)."""
    node, pos, n = tree.root, 0, len(seq)
    from .prefix.lcp import common_prefix

    while pos < n:
        child = node.children.get(seq[pos:pos + W])
        if child is None:
            return pos // W
        k = child.key
        if not seq.startswith(k, pos):
            return (pos + common_prefix(seq, k, W, pos) * W) // W
        pos += len(k)
        node = child
    return pos // W


def _last_use(tree: PrefixTree, seq: bytes, W: int, depth: int) -> float | None:
    """When a request last used at least the first ``depth`` units of ``seq``: the stamp of the
    edge holding unit ``depth`` (every request splits the tree where it leaves it, so whoever
    touched that edge read it whole), or ``None`` when the tree does not hold that prefix."""
    node, pos = tree.root, 0
    target = depth * W
    while True:
        child = node.children.get(seq[pos:pos + W])
        if child is None:
            return None
        end = pos + len(child.key)
        if end >= target:
            if not seq.startswith(child.key[:target - pos], pos):
                return None
            return child.last
        if not seq.startswith(child.key, pos):
            return None
        pos, node = end, child


def _min_figure(st: _Namespace) -> Figure:
    if len(st.cached) < MIN_EVIDENCE:
        return Figure(requests=len(st.cached), note=f"{NOT_ENOUGH}: {len(st.cached)} request(s) with a cache read or write")
    value = min(st.cached)
    below = [s for s in st.missed_shared if s < value]
    low = max(below) if below else None
    note = "" if low is not None else "no shorter shared prefix was seen to miss: the minimum may be lower"
    return Figure(float(value), float(low) if low is not None else None, float(value), len(st.cached), note)


def _gran_figure(st: _Namespace) -> Figure:
    if len(st.reads) < MIN_EVIDENCE or len(set(st.reads)) < 2:
        return Figure(requests=len(st.reads), note=f"{NOT_ENOUGH}: {len(set(st.reads))} distinct non-zero read(s)")
    g = 0
    for r in st.reads:
        g = math.gcd(g, r)
    return Figure(float(g), float(g), float(g), len(st.reads), "greatest common divisor of the reads")


def _ttl_figure(st: _Namespace, min_tokens: float | None, gran: float | None) -> Figure:
    """A miss counts where the shared prefix, floored to the granularity, reached the minimum
    and went past what was read (else the minimum or the granularity explains it); where the
    log does not show the minimum or the granularity, the documented ones are used."""
    g = int(gran or getattr(st.rules, "granularity", 1) or 1)
    m = min_tokens if min_tokens is not None else (getattr(st.rules, "min_tokens", 0) or 0)
    hits = st.hit_gaps
    misses = [gap for gap, shared, read in st.miss_gaps if (shared // g) * g >= max(m, 1) and (shared // g) * g > read]
    low = max(hits) if hits else None
    # a miss at a gap shorter than a gap that hit was not expiry (routing, eviction): not a bound
    bounding = [g for g in misses if low is None or g > low]
    high = min(bounding) if bounding else None
    n = len(hits) + len(bounding)
    if low is None or high is None:
        side = "no hit" if low is None else "no miss after an idle gap"
        return Figure(None, low, high, n, f"{NOT_ENOUGH}: {side} to bound the lifetime"
                      + (f" (at least {low:g} s)" if low is not None else "")
                      + (f" (at most {high:g} s)" if high is not None else ""))
    note = "" if len(misses) == len(bounding) else f"{len(misses) - len(bounding)} miss(es) within a gap that hit: not expiry"
    return Figure(low, low, high, n, note)


def disagreements(c: Calibration) -> list[str]:
    """Lines where the documented rules contradict the log (empty when they agree or the log
    cannot tell)."""
    out = []
    d = c.documented
    m = c.min_tokens
    if m.value is not None and d.get("min_tokens") is not None:
        doc = d["min_tokens"]
        if m.value < doc:
            out.append(f"min_tokens: a {int(m.value):,}-token prefix was cached where the rules say at least {doc:,}")
        elif m.low is not None and m.low >= doc:
            out.append(f"min_tokens: a {int(m.low):,}-token shared prefix never hit where the rules cache from {doc:,} "
                       f"(the log shows {int(m.low) + 1:,}-{int(m.value):,})")
    g = c.granularity
    if g.value is not None and d.get("granularity"):
        doc = d["granularity"]
        if int(g.value) % doc:
            out.append(f"granularity: reads come in {int(g.value):,}-token units, not multiples of the documented {doc:,}")
        elif int(g.value) > doc and doc == 1:
            out.append(f"granularity: reads come in {int(g.value):,}-token units where the rules count single tokens")
    t = c.ttl_seconds
    doc = d.get("ttl_seconds")
    if doc is not None and (t.low is not None or t.high is not None) and t.requests >= MIN_EVIDENCE:
        if t.low is not None and t.low > doc:
            out.append(f"ttl_seconds: a prefix still hit after {t.low:,.0f} s idle where the rules expire it after {doc:,.0f} s")
        if t.high is not None and t.high <= doc and (t.low is None or t.low < t.high):
            out.append(f"ttl_seconds: prefixes missed after {t.high:,.0f} s idle where the rules keep them {doc:,.0f} s")
    return out


def write_overlay(results: Sequence[Calibration], path: Path, logs: Sequence[str]) -> int:
    """Write the inferred figures as a dated rules overlay (atomically); returns the entries
    written (namespaces with at least one figure)."""
    from .fileio import write_atomic

    entries = []
    for c in results:
        e: dict[str, Any] = {"provider": c.provider, "match": [(c.model or "*").split("/")[-1].lower()],
                             "namespace": c.namespace}
        if c.min_tokens.value is not None:
            e["min_tokens"] = int(c.min_tokens.value)
        if c.granularity.value is not None:
            e["granularity"] = int(c.granularity.value)
        if c.ttl_seconds.value is not None:
            e["ttl_seconds"] = float(c.ttl_seconds.value)
            e["ttl_range"] = [c.ttl_seconds.low, c.ttl_seconds.high]
        if len(e) == 3:
            continue
        e["evidence"] = {k: getattr(c, k).requests for k in ("min_tokens", "granularity", "ttl_seconds")}
        entries.append(e)
    doc = {"kind": OVERLAY_KIND, "checked": date.today().isoformat(), "source": [str(x) for x in logs],
           "notes": "Inferred by promptcache audit --calibrate from the logs' reported usage; applied with "
                    "--rules-overlay. ttl_seconds is the longest idle gap that still hit (ttl_range: that, and "
                    "the shortest gap that missed).",
           "entries": entries}
    write_atomic(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), inputs=logs)
    return len(entries)


@dataclass(frozen=True)
class Overlay:
    """A loaded rules overlay: ``(provider, model patterns, overrides)`` entries."""

    path: str
    checked: str
    entries: tuple[tuple[str, tuple[str, ...], Mapping[str, Any]], ...]

    def apply(self, rules: Any, provider: str, model: str | None) -> Any:
        """``rules`` with the first matching entry's figures (``min_tokens``, ``granularity``,
        ``ttl_seconds``) in place of the documented ones."""
        name = (model or "").split("/")[-1].lower()
        for prov, pats, over in self.entries:
            if prov == provider and any(fnmatch.fnmatchcase(name, p) for p in pats):
                return replace(rules, **{k: over[k] for k in ("min_tokens", "granularity", "ttl_seconds") if k in over},
                               source=f"{self.path} (calibrated)", checked=self.checked)
        return rules


def load_overlay(path: str | Path) -> Overlay:
    """Read a rules overlay written by :func:`write_overlay`.

    Raises:
        ConfigError: naming the file and what is wrong.
    """
    p = Path(path)
    try:
        d = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{p}: {e}") from None
    if not isinstance(d, dict) or d.get("kind") != OVERLAY_KIND:
        raise ConfigError(f"{p}: not a rules overlay (kind: {OVERLAY_KIND}); write one with --write-overlay")
    entries = []
    for i, e in enumerate(d.get("entries") or []):
        if not isinstance(e, dict) or not isinstance(e.get("provider"), str) or not e.get("match"):
            raise ConfigError(f"{p}: entries[{i}] needs 'provider' and 'match'")
        for k in ("min_tokens", "granularity"):
            if k in e and (not isinstance(e[k], int) or e[k] < (1 if k == "granularity" else 0)):
                raise ConfigError(f"{p}: entries[{i}].{k} must be a whole number")
        if "ttl_seconds" in e and (not isinstance(e["ttl_seconds"], (int, float)) or e["ttl_seconds"] < 0):
            raise ConfigError(f"{p}: entries[{i}].ttl_seconds must be a number of seconds")
        pats = e["match"] if isinstance(e["match"], list) else [e["match"]]
        entries.append((e["provider"], tuple(str(x).lower() for x in pats), e))
    return Overlay(str(p), str(d.get("checked", "")), tuple(entries))


def calibrate_records(results: Iterable[Calibration]) -> list[dict[str, Any]]:
    """The JSON ``calibration`` array."""
    return [c.record() for c in results]
