"""Caches whose entries exist only at block boundaries: Anthropic breakpoints and OpenAI
GPT-5.6+ message-ending breakpoints.

Anthropic (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, checked
2026-11-29):

1. "Cache writes happen only at your breakpoint": one entry per breakpoint, keyed by the whole
   prefix up to that block.
2. A read checks each breakpoint and, on a miss, "walks backward one block at a time" through a
   20-block window ("counting the breakpoint itself as the first") for an entry an earlier
   request wrote.
3. Tokens up to the longest hit are read; from there to the last breakpoint written (1-hour part
   first: A = hit, B = highest 1-hour breakpoint after A, C = last breakpoint → 1 h write B−A,
   5 m write C−B); after the last breakpoint, plain input.
4. Lifetimes (5 m or 1 h) restart on every read; a prefix shorter than the model's minimum is
   not cached and no error is returned.

OpenAI GPT-5.6+ (https://developers.openai.com/api/docs/guides/prompt-caching, checked
2026-11-29): an implicit breakpoint "at the end of the latest eligible message" (user messages,
the last tool response of a group, the end of the initial developer block), lookups at it and
"up to 20 earlier eligible message endings" plus explicit breakpoints, at most four writes.
"""

from __future__ import annotations

from typing import Sequence

from ..model import Segment
from .rules import CacheRules


class EntryStore:
    """Cache entries keyed by a prefix digest: ``key → [expires_at, ttl_seconds]``."""

    def __init__(self) -> None:
        self.entries: dict[bytes, list[float]] = {}

    def live(self, key: bytes, now: float | None) -> bool | None:
        """True if live, False if present but expired, ``None`` if never written."""
        e = self.entries.get(key)
        if e is None:
            return None
        return now is None or now <= e[0]

    def write(self, key: bytes, now: float | None, ttl: float) -> None:
        """Create or refresh an entry (a longer TTL never shrinks)."""
        t = 0.0 if now is None else now
        e = self.entries.get(key)
        if e is None:
            self.entries[key] = [t + ttl, ttl]
        else:
            e[0] = max(e[0], t + max(ttl, e[1]))
            e[1] = max(ttl, e[1])

    def refresh(self, key: bytes, now: float | None) -> None:
        """Restart an entry's lifetime (a read)."""
        e = self.entries.get(key)
        if e is not None and now is not None:
            e[0] = max(e[0], now + e[1])

    def sweep(self, now: float) -> None:
        """Forget expired entries."""
        self.entries = {k: e for k, e in self.entries.items() if e[0] >= now}


def message_endings(segments: Sequence[Segment], roles: Sequence[str] = ("user", "tool")) -> list[int]:
    """Indices of segments that end an eligible message: a user message, the last tool
    response of a consecutive group, and the end of the initial developer/system block (OpenAI),
    plus an assistant message where ``roles`` has ``assistant`` (DeepSeek's units at the end of
    the model's output)."""
    out: list[int] = []
    n = len(segments)
    initial_done = False
    for i, s in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < n else None
        same_msg = nxt is not None and nxt.message is not None and nxt.message == s.message and nxt.role == s.role
        if same_msg:
            continue
        role = s.role
        if role in ("system", "developer") and not initial_done:
            if nxt is None or nxt.role not in ("system", "developer"):
                out.append(i)
                initial_done = True
            continue
        if s.kind != "tool" and s.kind != "param":
            initial_done = True
        if role == "user" or (role == "assistant" and "assistant" in roles):
            out.append(i)
        elif role == "tool" and (nxt is None or nxt.role != "tool"):
            out.append(i)
    return out


class BoundarySim:
    """Breakpoint (Anthropic) and boundary (OpenAI GPT-5.6+) caches over segment boundaries."""

    def __init__(self, rules: CacheRules, force_ttl: float | None = None):
        self.rules = rules
        self.store = EntryStore()
        self._steps = 0
        self.force_ttl = force_ttl  # what-if: every breakpoint at this TTL

    def _plan(self, segs: Sequence[Segment], r: CacheRules) -> tuple[list[int], list[tuple[int, float]], list[str]]:
        """(lookup segment indices, (write segment index, ttl) pairs, flags) for one prompt."""
        forced = self.force_ttl
        if forced is None and r.ttl_forced:  # --ttl: every entry, whatever its breakpoint asks (None: never expire)
            forced = float("inf") if r.ttl_seconds is None else float(r.ttl_seconds)
        default_ttl = forced or float(r.ttl_seconds or 300)
        flags: list[str] = []
        explicit = [i for i, s in enumerate(segs) if s.breakpoint is not None]
        if r.mode == "breakpoints":
            if r.max_breakpoints is not None and len(explicit) > r.max_breakpoints:
                flags.append("breakpoints_over_limit")
                explicit = explicit[: r.max_breakpoints]
            lookups: list[int] = []
            for b in explicit:
                lookups.extend(range(b, max(-1, b - (r.lookback or 1)), -1))
            writes = [(b, float(forced or segs[b].breakpoint.ttl_seconds or default_ttl)) for b in explicit]  # type: ignore[union-attr]
            ttls = [t for _, t in writes]
            if any(a < b for a, b in zip(ttls, ttls[1:])):
                flags.append("ttl_order")  # longer TTLs must come first
            return lookups, writes, flags
        # boundaries (OpenAI GPT-5.6+): implicit breakpoint at the latest eligible ending
        # explicit-only mode (prompt_cache_options.mode "explicit"): no implicit breakpoint and no
        # earlier message endings; without explicit breakpoints nothing is looked up or written
        ends = message_endings(segs, r.endings) if r.implicit else []
        implicit = ends[-1:] if ends else []
        earlier = ends[-1 - (r.lookback or 20):-1] if ends else []
        lookups = sorted(set(implicit + earlier + explicit), reverse=True)
        write_idx = sorted(set(implicit + explicit))
        if "assistant" in r.endings:  # the previous output's unit (persisted when it was returned)
            last_out = [i for i in ends if segs[i].role == "assistant"][-1:]
            write_idx = sorted(set(write_idx + last_out))
        if r.max_writes is not None and len(write_idx) > r.max_writes:
            flags.append("writes_over_limit")
            write_idx = write_idx[-r.max_writes:]
        return lookups, [(i, default_ttl) for i in write_idx], flags

    def step(self, p, now: float | None, rules: CacheRules | None = None  # p: Prompt
             ) -> tuple[int, int, int, str | None, tuple[str, ...]]:
        """Simulate one prompt → ``(cached, write, write_1h, reason, flags)`` (tokens), under the
        namespace's rules or the request's own (``rules``: explicit-only mode, a TTL choice)."""
        r = rules or self.rules
        segs, ends, keys = p.segments, p.seg_ends, p.keys()
        if not segs:
            from ..errors import ConfigError

            raise ConfigError(f"cache model {r.provider} needs request bodies; hashed traces work with prefix caches "
                              "(openai before GPT-5.6, gemini, xai, mistral, groq, fireworks, together, vllm, sglang)")
        lookups, writes, flags = self._plan(segs, r)
        store = self.store
        hit, hit_key, expired_at = 0, None, 0
        for j in lookups:
            if ends[j] <= hit:
                continue
            state = store.live(keys[j], now)
            if state:
                hit, hit_key = ends[j], keys[j]
            elif state is False:
                expired_at = max(expired_at, ends[j])
        valid = [(i, ttl) for i, ttl in writes if ends[i] >= r.min_tokens
                 and (r.max_cached_tokens is None or ends[i] <= r.max_cached_tokens)]
        write = write_1h = 0
        if valid:
            c = max(ends[i] for i, _ in valid)
            b1h = max([ends[i] for i, ttl in valid if ttl >= 3600 and ends[i] > hit] or [hit])
            write_1h = max(0, b1h - hit) if r.bills_writes else 0
            write = max(0, c - hit) if r.bills_writes else 0
            for i, ttl in valid:
                store.write(keys[i], now, ttl)
        if hit_key is not None and r.refresh_on_hit:
            store.refresh(hit_key, now)
        self._steps += 1
        if now is not None and self._steps % 4096 == 0:
            store.sweep(now)
        reason = None
        if not writes and not lookups:
            reason = "no_breakpoint"
        elif expired_at > hit:
            reason = "expired"
        elif valid and hit < max(ends[i] for i, _ in valid):
            # an entry beyond the hit that no lookup reached: the lookback window was too short
            searched = set(lookups)
            last = max(i for i, _ in valid)
            if any(ends[j] > hit and j not in searched and store.live(keys[j], now) for j in range(last)):
                reason = "lookback"
        elif not valid and writes:
            reason = "below_min"
        return hit, write, write_1h, reason, tuple(flags)
