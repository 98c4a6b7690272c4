"""Log readers: any supported log file → a stream of :class:`~promptcache.model.Request`.

The format is detected per file from its first valid record (``--input-format`` forces one).
Malformed records are counted in :class:`InputStats` with file:line and reason, and never stop
the file unless ``strict`` is set.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import BadRecord, InputError
from ..model import Request, Source
from . import anthropic as _anthropic
from . import openai as _openai
from .common import provider_for_model, unwrap
from .fields import find_arrival, find_session, first, ID_KEYS
from .hashed import MOONCAKE_BLOCK_TOKENS, parse_hashed
from .jsonio import iter_records
from .usage import find_usage

#: Keep at most this many bad-line messages per file (all are counted).
MAX_REPORTED_ERRORS = 50
#: Requests held to restore arrival order in logs written slightly out of order (gateways log
#: on completion, so neighbours swap by their latency).
REORDER_WINDOW = 4096


@dataclass
class ReadOptions:
    """Options that change how records are read.

    Attributes:
        input_format: force a format name instead of detecting it.
        hash_block_tokens: tokens per block for hashed traces (Mooncake default 512).
        strict: raise on the first malformed record instead of skipping it.
        model: model name to use where the log has none (hashed traces).
    """

    input_format: str | None = None
    hash_block_tokens: int | None = None
    strict: bool = False
    model: str | None = None


@dataclass
class InputStats:
    """What reading one file produced.

    Attributes:
        path: the file.
        format: detected or forced format name (``None`` when nothing valid was found).
        requests: requests read.
        skipped_lines: malformed records skipped.
        errors: the first :data:`MAX_REPORTED_ERRORS` ``(line, reason)`` pairs.
        missing_arrival: requests without an arrival time.
        out_of_order: requests that arrived earlier than one already passed on beyond the
            reorder window.
    """

    path: str
    format: str | None = None
    requests: int = 0
    skipped_lines: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    missing_arrival: int = 0
    out_of_order: int = 0

    def add_error(self, line: int, reason: str) -> None:
        """Count a malformed record and keep its message if there is room."""
        self.skipped_lines += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append((line, reason))


Parser = Callable[[Any, Source, ReadOptions], Request]


def _looks_hashed(rec: Mapping[str, Any]) -> bool:
    return "hash_ids" in rec and "input_length" in rec


def _looks_anthropic(body: Mapping[str, Any]) -> bool:
    if "messages" not in body:
        return False
    if "system" in body or isinstance(body.get("cache_control"), Mapping):
        return True
    model = str(body.get("model", ""))
    if provider_for_model(model) == "anthropic" and "max_tokens" in body:
        return True
    for m in body.get("messages") or []:
        if isinstance(m, Mapping) and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, Mapping) and (b.get("type") in ("tool_use", "tool_result") or "cache_control" in b):
                    return True
    return False


def detect(rec: Any) -> str | None:
    """Name the format of one record, or ``None`` when it is none of the known ones."""
    if not isinstance(rec, Mapping):
        return None
    if _looks_hashed(rec):
        return "mooncake"
    try:
        body, _, wrapper = unwrap(rec)
    except BadRecord:
        return None
    url = str(wrapper.get("url", ""))
    if "responses" in url or ("input" in body and "messages" not in body) or "instructions" in body:
        return "openai-responses"
    if _looks_anthropic(body):
        return "anthropic"
    if "messages" in body:
        return "openai-chat"
    return None


def _base(body: Mapping[str, Any], resp: Any, wrapper: Mapping[str, Any], src: Source,
          fmt: str, api: str, opts: ReadOptions) -> dict[str, Any]:
    model = body.get("model") or (resp.get("model") if isinstance(resp, Mapping) else None) or wrapper.get("model") or opts.model
    rid = first((wrapper, resp if isinstance(resp, Mapping) else None, body), ID_KEYS)
    return dict(
        id=str(rid) if rid is not None else f"{Path(src.path).name}:{src.line}",
        source=src, format=fmt, api=api, model=str(model) if model else None,
        provider=provider_for_model(str(model) if model else None),
        arrival=find_arrival(wrapper, body, resp if isinstance(resp, Mapping) else None),
        session=find_session(wrapper, body),
        usage=find_usage(resp, wrapper),
    )


def _parse_openai_chat(rec: Any, src: Source, opts: ReadOptions) -> Request:
    body, resp, wrapper = unwrap(rec)
    base = _base(body, resp, wrapper, src, "openai-chat", "chat", opts)
    base["provider"] = base["provider"] or "openai"
    return Request(parts=tuple(_openai.parse_chat(body)), params=_openai.params_of(body),
                   cache_key=_cache_key(body), cache_retention=body.get("prompt_cache_retention"), **base)


def _parse_openai_responses(rec: Any, src: Source, opts: ReadOptions) -> Request:
    body, resp, wrapper = unwrap(rec)
    base = _base(body, resp, wrapper, src, "openai-responses", "responses", opts)
    base["provider"] = base["provider"] or "openai"
    return Request(parts=tuple(_openai.parse_responses(body)), params=_openai.params_of(body),
                   cache_key=_cache_key(body), cache_retention=body.get("prompt_cache_retention"), **base)


def _parse_anthropic(rec: Any, src: Source, opts: ReadOptions) -> Request:
    body, resp, wrapper = unwrap(rec)
    base = _base(body, resp, wrapper, src, "anthropic", "anthropic", opts)
    base["provider"] = base["provider"] or "anthropic"
    return Request(parts=tuple(_anthropic.parse_anthropic(body)), params=_anthropic.params_of(body), **base)


def _parse_mooncake(rec: Any, src: Source, opts: ReadOptions) -> Request:
    if not isinstance(rec, Mapping):
        raise BadRecord("record is not a JSON object")
    hp, arrival, _ = parse_hashed(rec, opts.hash_block_tokens or MOONCAKE_BLOCK_TOKENS)
    rid = rec.get("id", rec.get("request_id"))
    return Request(
        id=str(rid) if rid is not None else f"{Path(src.path).name}:{src.line}", source=src,
        format="mooncake", api="hashed", provider=provider_for_model(opts.model), model=opts.model,
        arrival=arrival, hashed=hp, session=str(rec["chat_id"]) if rec.get("chat_id") is not None else None,
    )


def _cache_key(body: Mapping[str, Any]) -> str | None:
    v = body.get("prompt_cache_key") or body.get("cache_salt")
    return None if v is None else str(v)


#: Format name → parser. Later issues add formats here; detection lives in :func:`detect`.
PARSERS: dict[str, Parser] = {
    "openai-chat": _parse_openai_chat,
    "openai-responses": _parse_openai_responses,
    "anthropic": _parse_anthropic,
    "mooncake": _parse_mooncake,
}


def available_formats() -> list[str]:
    """Names accepted by ``--input-format``."""
    return sorted(PARSERS)


def read_requests(path: str | Path, stats: InputStats, opts: ReadOptions | None = None) -> Iterator[Request]:
    """Stream the requests of one log file, in arrival order where the log has arrival times.

    Args:
        path: JSONL, JSON array or ``.gz`` file.
        stats: filled while reading (format, counts, bad lines).
        opts: reading options.

    Raises:
        InputError: when the file cannot be opened, or on the first bad record with ``strict``.
        ConfigError: for an unknown forced format.
    """
    from ..errors import ConfigError

    opts = opts or ReadOptions()
    if opts.input_format and opts.input_format not in PARSERS:
        raise ConfigError(f"unknown input format {opts.input_format!r}; available: {', '.join(available_formats())}")
    spath = str(path)
    parser: Parser | None = PARSERS[opts.input_format] if opts.input_format else None
    stats.format = opts.input_format
    seq = itertools.count()
    window: list[tuple[float, int, Request]] = []
    last_out = float("-inf")

    def emit(req: Request) -> Iterator[Request]:
        nonlocal last_out
        if req.arrival is None:
            stats.missing_arrival += 1
            yield req
            return
        heapq.heappush(window, (req.arrival, next(seq), req))
        if len(window) > REORDER_WINDOW:
            t, _, r = heapq.heappop(window)
            if t < last_out:
                stats.out_of_order += 1
            last_out = max(last_out, t)
            yield r

    for line, rec in iter_records(spath):
        if isinstance(rec, BadRecord):
            if opts.strict:
                raise InputError(str(rec), path=spath, line=line)
            stats.add_error(line, str(rec))
            continue
        if parser is None:
            fmt = detect(rec)
            if fmt is None:
                reason = "not a request of any known format (use --input-format)"
                if opts.strict:
                    raise InputError(reason, path=spath, line=line)
                stats.add_error(line, reason)
                continue
            stats.format = fmt
            parser = PARSERS[fmt]
        try:
            req = parser(rec, Source(spath, line), opts)
        except BadRecord as e:
            if opts.strict:
                raise InputError(str(e), path=spath, line=line) from None
            stats.add_error(line, str(e))
            continue
        stats.requests += 1
        yield from emit(req)
    while window:
        t, _, r = heapq.heappop(window)
        if t < last_out:
            stats.out_of_order += 1
        last_out = max(last_out, t)
        yield r


def merge_by_arrival(streams: list[Iterator[Request]]) -> Iterator[Request]:
    """Merge per-file streams into one arrival-ordered stream (requests without a time keep
    their place relative to their own file)."""
    if len(streams) == 1:
        yield from streams[0]
        return
    seq = itertools.count()

    def keyed(it: Iterator[Request], fileno: int) -> Iterator[tuple[float, int, int, Request]]:
        last = float("-inf")
        for r in it:
            t = r.arrival if r.arrival is not None else last
            last = t
            yield (t, fileno, next(seq), r)

    for *_, r in heapq.merge(*(keyed(s, i) for i, s in enumerate(streams))):
        yield r
