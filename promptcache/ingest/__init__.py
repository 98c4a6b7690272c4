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
from collections.abc import Mapping
from typing import Any, Callable, Iterator

from ..errors import BadRecord, InputError
from ..model import Request, Response, Source, Usage
from .bodies import BODY_APIS, base_fields, body_format, default_id, parse_body
from .common import MAPPING, Skipped, provider_for_model, unwrap
from .fields import ID_KEYS, first
from .hashed import MOONCAKE_BLOCK_TOKENS, BailianReader, looks_bailian, parse_hashed
from .helicone import looks_helicone, parse_helicone
from .jsonio import iter_records
from .langfuse import looks_langfuse, parse_langfuse
from .litellm import looks_litellm, parse_litellm
from .otel import looks_otel, parse_otel
from .prompt import looks_prompt, parse_prompt
from .sharegpt import looks_sharegpt, parse_sharegpt

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
        hash_block_tokens: tokens per block for hashed traces (default 512 for Mooncake, 16
            for Bailian).
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
        no_content: requests the log records without their prompt (OpenTelemetry spans
            without content capture, LiteLLM rows without stored prompts, Langfuse
            generations without ``input``): not passed on, so not simulated.
        no_content_usage: the reported usage of those requests, summed (tokens).
        ignored: records (or items inside one) of a known format that are no LLM request,
            by reason (Langfuse ``SPAN`` observations, OpenTelemetry tool and agent spans).
    """

    path: str
    format: str | None = None
    requests: int = 0
    skipped_lines: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    missing_arrival: int = 0
    out_of_order: int = 0
    no_content: int = 0
    no_content_usage: Usage = field(default_factory=lambda: Usage(0))
    ignored: dict[str, int] = field(default_factory=dict)

    def add_error(self, line: int, reason: str) -> None:
        """Count a malformed record and keep its message if there is room."""
        self.skipped_lines += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append((line, reason))

    def add_no_content(self, req: Request) -> None:
        """Count a request that has no prompt content, and add up its reported usage."""
        self.no_content += 1
        u, t = req.usage, self.no_content_usage
        if u is not None:
            self.no_content_usage = Usage(t.input_tokens + u.input_tokens, t.output_tokens + u.output_tokens,
                                          t.cache_read_tokens + u.cache_read_tokens,
                                          t.cache_write_tokens + u.cache_write_tokens,
                                          t.cache_write_1h_tokens + u.cache_write_1h_tokens)

    def notes(self) -> list[str]:
        """One-line notes for the user about what was read but is not audited (empty when all
        was): requests without prompt content with their reported usage, and ignored records."""
        out = []
        if self.no_content:
            u = self.no_content_usage
            out.append(f"{self.path}: {self.no_content:,} request(s) carry no prompt content (e.g. OpenTelemetry spans "
                       f"recorded without content capture): not simulated; their reported usage is "
                       f"{u.input_tokens:,} prompt tokens, {u.cache_read_tokens:,} cached, "
                       f"{u.cache_write_tokens:,} written")
        if self.ignored:
            what = ", ".join(f"{reason}: {n:,}" for reason, n in sorted(self.ignored.items()))
            out.append(f"{self.path}: skipped {sum(self.ignored.values()):,} record(s) that are no LLM call ({what})")
        return out


#: What a parser returns: one request, or a list of requests (a record holding several, like an
#: OTLP export or a ShareGPT conversation) in which :class:`~promptcache.ingest.common.Skipped`
#: marks an item that is no LLM call and a :class:`~promptcache.errors.BadRecord` instance a
#: malformed item (counted at the record's line; the other items are kept).
ParseResult = Request | list[Request | Skipped | BadRecord]
#: ``(record, source, options) → ParseResult``; raises BadRecord for a malformed record. A parser
#: that keeps per-file state (Bailian sessions) has a ``for_file()`` method returning a fresh one.
Parser = Callable[[Any, Source, ReadOptions], ParseResult]


def _looks_hashed(rec: Mapping[str, Any]) -> bool:
    return "hash_ids" in rec and "input_length" in rec


def detect(rec: Any) -> str | None:
    """Name the format of one record, or ``None`` when it is none of the known ones.

    Order matters: hashed traces (Bailian before Mooncake), then the log formats that wrap a
    body (OpenTelemetry, LiteLLM, Langfuse, Helicone), ShareGPT, then bare or wrapped bodies
    (OpenAI Responses, Anthropic, OpenAI Chat, Gemini), and last plain ``{"prompt"}`` lines.
    Keys per format: ``docs/formats.md``.
    """
    if not isinstance(rec, MAPPING):
        return None
    if _looks_hashed(rec):
        return "bailian" if looks_bailian(rec) else "mooncake"
    if looks_otel(rec):
        return "otel"
    if looks_litellm(rec):
        return "litellm"
    if looks_langfuse(rec):
        return "langfuse"
    if looks_helicone(rec):
        return "helicone"
    if looks_sharegpt(rec):
        return "sharegpt"
    try:
        body, _, wrapper = unwrap(rec)
    except BadRecord:
        return None
    fmt = body_format(body, str(wrapper.get("url", "")))
    if fmt is not None:
        return fmt
    if looks_prompt(body):
        return "prompt"
    return None


def _body_parser(fmt: str) -> Parser:
    """The parser of bare and wrapped request bodies of one format."""
    api, default_provider = BODY_APIS[fmt]

    def parse(rec: Any, src: Source, opts: ReadOptions) -> Request:
        body, resp, wrapper = unwrap(rec)
        b = parse_body(body, fmt)
        base = base_fields(body, resp, wrapper, src, opts.model)
        base["provider"] = base["provider"] or default_provider
        if fmt == "gemini" and wrapper.get("key") is not None and first((wrapper, body), ID_KEYS) is None:
            base["id"] = str(wrapper["key"])  # Gemini Batch API lines: {"key", "request"}
        if fmt in ("openai-chat", "openai-responses"):
            # (issue 17, the smallest change for diagnosis until the per-producer readers fill
            # these: the routing identifiers, the server-side chain and a chat response's turn)
            base["affinity"] = {k: str(body[k]) for k in ("user", "safety_identifier") if body.get(k) is not None}
            prev = body.get("previous_response_id")
            base["previous_response_id"] = str(prev) if prev is not None else None
            if isinstance(resp, MAPPING) and resp is not rec:
                ch = resp.get("choices")
                msg = ch[0].get("message") if isinstance(ch, list) and ch and isinstance(ch[0], MAPPING) else None
                turn: tuple = ()
                if isinstance(msg, MAPPING) and fmt == "openai-chat":
                    from .openai import _chat_message
                    try:
                        turn = tuple(_chat_message(len(body.get("messages") or ()), msg))
                    except BadRecord:
                        turn = ()
                up = resp.get("provider")
                base["response"] = Response(id=str(resp["id"]) if resp.get("id") is not None else None,
                                            upstream=str(up) if isinstance(up, str) else None, parts=turn)
        return Request(format=fmt, api=api, parts=b.parts, params=b.params, cache_key=b.cache_key,
                       cache_retention=b.retention, **base)

    parse.__name__ = parse.__qualname__ = f"parse_{fmt.replace('-', '_')}"
    parse.__doc__ = f"A bare or wrapped {fmt} request body → a Request (raises BadRecord when malformed)."
    return parse


def _parse_mooncake(rec: Any, src: Source, opts: ReadOptions) -> Request:
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    hp, arrival, _ = parse_hashed(rec, opts.hash_block_tokens or MOONCAKE_BLOCK_TOKENS)
    rid = rec.get("id", rec.get("request_id"))
    return Request(
        id=str(rid) if rid is not None else default_id(src), source=src,
        format="mooncake", api="hashed", provider=provider_for_model(opts.model), model=opts.model,
        arrival=arrival, hashed=hp, session=str(rec["chat_id"]) if rec.get("chat_id") is not None else None,
    )


#: Format name → parser. Later issues add formats here; detection lives in :func:`detect`.
PARSERS: dict[str, Parser] = {
    "openai-chat": _body_parser("openai-chat"),
    "openai-responses": _body_parser("openai-responses"),
    "anthropic": _body_parser("anthropic"),
    "gemini": _body_parser("gemini"),
    "mooncake": _parse_mooncake,
    "bailian": BailianReader(),
    "litellm": parse_litellm,
    "langfuse": parse_langfuse,
    "helicone": parse_helicone,
    "otel": parse_otel,
    "sharegpt": parse_sharegpt,
    "prompt": parse_prompt,
}


def available_formats() -> list[str]:
    """Names accepted by ``--input-format``."""
    return sorted(PARSERS)


def _for_file(parser: Parser) -> Parser:
    """The parser to use for one file: a fresh one for parsers with per-file state."""
    fresh = getattr(parser, "for_file", None)
    return fresh() if callable(fresh) else parser


def read_requests(path: str | Path, stats: InputStats, opts: ReadOptions | None = None) -> Iterator[Request]:
    """Stream the requests of one log file, in arrival order where the log has arrival times.

    A record may hold several requests (an OTLP export, a ShareGPT conversation, a Langfuse
    page): each is passed on with the record's line. Requests without prompt content are
    counted in ``stats.no_content`` with their usage and not passed on; records that are no
    LLM call are counted in ``stats.ignored``; malformed records, or malformed items of a
    record, in ``stats.errors`` (see :class:`InputStats`).

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
    parser: Parser | None = _for_file(PARSERS[opts.input_format]) if opts.input_format else None
    stats.format = opts.input_format
    seq = itertools.count()
    window: list[tuple[float, int, Request]] = []
    last_out = float("-inf")

    last_in = float("-inf")

    def emit(req: Request) -> Iterator[Request]:
        nonlocal last_out, last_in
        if req.arrival is None:  # keeps its place after the request before it in the file
            stats.missing_arrival += 1
            t = last_in
        else:
            t = last_in = req.arrival
        heapq.heappush(window, (t, next(seq), req))
        if len(window) > REORDER_WINDOW:
            t, _, r = heapq.heappop(window)
            if t < last_out:
                stats.out_of_order += 1
            last_out = max(last_out, t)
            yield r

    for line, rec in iter_records(spath, reuse_history=True):
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
            parser = _for_file(PARSERS[fmt])
        try:
            got = parser(rec, Source(spath, line), opts)
        except BadRecord as e:
            if opts.strict:
                raise InputError(str(e), path=spath, line=line) from None
            stats.add_error(line, str(e))
            continue
        for item in got if isinstance(got, list) else (got,):
            if isinstance(item, BadRecord):
                if opts.strict:
                    raise InputError(str(item), path=spath, line=line)
                stats.add_error(line, str(item))
            elif isinstance(item, Skipped):
                stats.ignored[item.reason] = stats.ignored.get(item.reason, 0) + 1
            elif not item.parts and item.hashed is None:
                stats.add_no_content(item)
            else:
                stats.requests += 1
                yield from emit(item)
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
