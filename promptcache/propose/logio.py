"""The proposed log: the input's own records, read again in the order the audit reads them,
rewritten, with keep-alive copies where the lifetime policy sends them, and written as JSONL.

What the proposal prices is the audit of exactly these bytes (:func:`write`): the figures it
prints are the figures ``promptcache audit`` gives on the written file.
"""

from __future__ import annotations

import copy
import gzip
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import orjson

from ..errors import BadRecord
from ..ingest import PARSERS, detect
from ..ingest.common import MAPPING
from ..ingest.fields import ID_KEYS, TIME_KEYS
from ..ingest.jsonio import iter_records
from ..model import Request, Source

#: Formats whose records hold one request body that the proposal can rewrite.
BODY_FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini", "litellm", "helicone", "portkey", "bedrock",
                "braintrust")


@dataclass
class Item:
    """One input record in the audit's order.

    Attributes:
        order: ``(arrival used for ordering, file index, line)``.
        file: index of its input file.
        line: its line (record index for JSON arrays).
        record: the parsed record (left as read; rewrites work on a copy).
        fmt: its format.
        requests: the requests the reader made of it.
    """

    order: tuple[float, int, int]
    file: int
    line: int
    record: Any
    fmt: str
    requests: list[Request]


@dataclass
class Out:
    """One record of the proposed log.

    Attributes:
        record: what is written.
        template: the template key of its request, or ``None``.
        conversation: its conversation id in the proposed log, or ``None``.
        arrival: its arrival time, or ``None``.
        changed: whether the proposal rewrote it.
        keepalive: whether it is a keep-alive copy the lifetime policy added.
        source: ``(file index, line)`` of the input record it comes from.
        api: its request shape.
        anchor: path of the last part of its template's stable content, or ``None``.
        requests: the requests it holds, as the proposed record holds them.
    """

    record: Any
    template: tuple[str, ...] | None
    conversation: int | None
    arrival: float | None
    changed: bool
    keepalive: bool = False
    source: tuple[int, int] = (0, 0)
    api: str = ""
    anchor: str | None = None
    requests: list[Request] = field(default_factory=list)


@dataclass
class Parsers:
    """One reader per format, made on first use (a reader with per-file state gets a fresh one)."""

    by_format: dict[str, Any] = field(default_factory=dict)

    def parse(self, rec: Any, fmt: str, path: str, line: int, opts: Any) -> list[Request]:
        """The requests a record holds (``Skipped`` and bad items dropped).

        Raises:
            BadRecord: when the record cannot be read.
        """
        parser = self.by_format.get(fmt)
        if parser is None:
            parser = PARSERS[fmt]
            if hasattr(parser, "for_file"):
                parser = parser.for_file()
            self.by_format[fmt] = parser
        got = parser(rec, Source(path, line), opts)
        items = got if isinstance(got, list) else [got]
        return [r for r in items if isinstance(r, Request)]


def items(paths: Sequence[str | Path], read_opts: Any) -> tuple[list[Item], int]:
    """Every readable record of the inputs, in the order the audit reads their requests
    (arrival, then file, then line; a record without a time keeps its place after the record
    before it in its file), and how many records could not be read.

    Each record is read in its own format, as the audit reads it (:func:`record_format`): a
    file that mixes Anthropic and OpenAI bodies gives each record its own reader."""
    out: list[Item] = []
    bad = 0
    for fi, path in enumerate(paths):
        parsers = Parsers()  # a reader with per-file state starts afresh in every file, as ingest's
        fmt: str | None = read_opts.input_format
        last = -math.inf
        for line, rec in iter_records(path):
            if isinstance(rec, BadRecord):
                continue
            if not read_opts.input_format:
                fmt = record_format(rec, fmt)
            if fmt is None:
                continue
            try:
                reqs = parsers.parse(rec, fmt, str(path), line, read_opts)
            except BadRecord:
                bad += 1
                continue
            times = [r.arrival for r in reqs if r.arrival is not None]
            t = min(times) if times else last
            last = t if times else last
            out.append(Item((t, fi, line), fi, line, rec, fmt, reqs))
    out.sort(key=lambda it: it.order)
    return out, bad


def record_format(rec: Any, previous: str | None) -> str | None:
    """The format of one record as the audit's reader registry detects it
    (:mod:`promptcache.ingest.registry`): the previous record's reader first (a file mostly
    holds one shape), else the reader that claims it, else the previous record's (a record no
    reader claims is read in its file's shape so far, which says what is wrong with it)."""
    if previous is not None:
        try:
            if PARSERS[previous].claim(rec) is not None:
                return previous
        except Exception:  # noqa: BLE001 - a claim never raises; one that does claims nothing
            pass
    return detect(rec) or previous


def dialect(rec: Any, fmt: str, api: str) -> str:
    """The body shape a record's edits speak: the reader's ``api``, except that a Bedrock
    invocation log holds a Converse body (``converse``: blocks without a type, ``cachePoint``
    checkpoints, ``toolConfig``) unless it is an InvokeModel body in Anthropic's own API
    (``anthropic_version``), as ``promptcache.ingest.bedrock`` reads them."""
    if fmt != "bedrock" or api != "anthropic":
        return api
    located = body_of(rec)
    body = located[0] if located is not None else {}
    if "anthropic_version" in body or str(rec.get("operation") or "").startswith("InvokeModel"):
        return "anthropic"
    return "converse"


def responses_only(fmt: str) -> bool:
    """Whether a format's records are responses only (batch outputs, Response objects), which
    ingest reads from a file of their own before the requests that join them."""
    r = PARSERS.get(fmt)
    return bool(r is not None and r.responses_only)


def copy_record(rec: Any) -> Any:
    """A deep copy of a JSON record (the readers' memos find parsed objects by identity)."""
    try:
        return orjson.loads(orjson.dumps(rec))
    except TypeError:
        return copy.deepcopy(rec)


def _holds_body(v: Any) -> bool:
    """Whether a stored request (LiteLLM's ``proxy_server_request``, JSON text or an object,
    the body itself or ``{url, headers, body}``) holds a body the LiteLLM reader reads."""
    try:
        v = orjson.loads(v) if isinstance(v, (str, bytes)) else v
        if isinstance(v, dict) and "messages" not in v and isinstance(v.get("body"), (str, bytes)):
            v = orjson.loads(v["body"])
        elif isinstance(v, dict) and "messages" not in v and isinstance(v.get("body"), dict):
            v = v["body"]
    except orjson.JSONDecodeError:
        return False
    return isinstance(v, dict) and any(k in v for k in ("messages", "input", "contents", "prompt"))


def body_of(rec: Any) -> tuple[dict[str, Any], Callable[[], None]] | None:
    """The request body inside a record, as the readers find it (``ingest.common.unwrap``), and
    a function that puts an edited body back (re-encoding it where the record holds it as JSON
    text), or ``None`` when the record holds no body object."""
    if not isinstance(rec, dict):
        return None
    holder: Any = rec
    key: Any = None
    if "body" in rec and ("custom_id" in rec or "url" in rec or "method" in rec):
        key = "body"
    else:
        for k in ("request", "request_body", "request_json", "request.body"):
            if k in rec and rec[k] is not None:
                key = k
                break
        inp = rec.get("input")
        if key is None and isinstance(inp, dict) and inp.get("inputBodyJson") is not None:  # Bedrock invocation logs
            holder, key = inp, "inputBodyJson"
        if key is None and _holds_body(rec.get("proxy_server_request")):  # LiteLLM spend logs
            key = "proxy_server_request"
    if key is None:
        return rec, lambda: None
    raw = holder[key]
    was_text = isinstance(raw, (str, bytes))
    try:
        body = orjson.loads(raw) if was_text else raw
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict):
        return None
    if key != "body" and "body" in body and isinstance(body.get("body"), (dict, str)) and "messages" not in body:
        inner_text = isinstance(body["body"], str)
        try:
            inner = orjson.loads(body["body"]) if inner_text else body["body"]
        except orjson.JSONDecodeError:
            return None
        if not isinstance(inner, dict):
            return None

        def put_inner() -> None:
            body["body"] = orjson.dumps(inner).decode() if inner_text else inner
            holder[key] = orjson.dumps(body).decode() if was_text else body

        return inner, put_inner

    def put() -> None:
        if was_text:
            holder[key] = orjson.dumps(body).decode()

    return body, put


#: Token counts a gateway row keeps beside the bodies (LiteLLM spend logs and
#: StandardLoggingPayload, Helicone exports, Portkey units): a rewritten record sets them to
#: null, keeping the keys its reader is detected by (``promptcache.ingest.usage``).
ROW_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens", "prompt_cache_read_tokens",
              "prompt_cache_write_tokens", "req_units", "res_units")


def drop_usage(rec: Any) -> None:
    """Reported usage describes the original prompt: a rewritten record drops it (the usage
    objects) or sets it to null (a row's own token columns), wherever a reader reads it, so
    that the proposed log's audit reports no usage for it (``tests/test_propose_trial.py``
    checks every rewritable producer shape of ``tests/data/formats``)."""
    if not isinstance(rec, dict):
        return
    for holder in (rec, rec.get("response"), rec.get("response_body"), rec.get("response.body"),
                   rec.get("response_json")):
        if isinstance(holder, dict):
            for k in ("usage", "usageMetadata"):
                holder.pop(k, None)
    for k in ROW_COUNTS:
        if rec.get(k) is not None:
            rec[k] = None
    _drop_key(rec, "metadata", "usage_object")  # LiteLLM: metadata.usage_object
    m = rec.get("metrics")
    if isinstance(m, dict) and "span_attributes" in rec:  # Braintrust: the counts in the span's metrics
        for k in ("prompt_tokens", "prompt_cached_tokens", "prompt_cache_creation_tokens", "tokens", "completion_tokens"):
            m.pop(k, None)
    inp, out = rec.get("input"), rec.get("output")
    if isinstance(inp, dict) and "inputBodyJson" in inp:  # Bedrock: the counts beside the bodies
        for k in ("inputTokenCount", "cacheReadInputTokenCount", "cacheWriteInputTokenCount"):
            inp.pop(k, None)
        if isinstance(out, dict):
            out.pop("outputTokenCount", None)
            _drop_key(out, "outputBodyJson", "usage")  # the response's own, read where ``input`` has no cache counts


def _drop_key(holder: dict, name: str, key: str) -> None:
    """Remove ``key`` from ``holder[name]``, an object or its JSON text (re-encoded without it)."""
    value = holder.get(name)
    if isinstance(value, str) and f'"{key}"' in value:
        try:
            got = orjson.loads(value)
        except orjson.JSONDecodeError:
            return
        if isinstance(got, dict) and got.pop(key, None) is not None:
            holder[name] = orjson.dumps(got).decode()
    elif isinstance(value, dict):
        value.pop(key, None)


#: Where a record names who served it (``Request.response.upstream``): a gateway record's
#: response (OpenRouter's ``provider``), LiteLLM's ``custom_llm_provider``, Helicone's
#: ``provider``, Portkey's ``ai_org`` (the readers in ``promptcache.ingest``).
UPSTREAM_FIELDS = (("response", "provider"), ("response_body", "provider"), ("response_json", "provider"),
                   ("response.body", "provider"), (None, "custom_llm_provider"), (None, "ai_org"))


def set_upstream(rec: Any, upstream: str) -> bool:
    """Name ``upstream`` as the one that served a record, where the readers read it (the first
    of :data:`UPSTREAM_FIELDS` the record holds; a response held as JSON text is re-encoded),
    so that the proposed log's audit places it in that upstream's cache. Returns whether the
    record changed; False, too, when it names no upstream at all."""
    if not isinstance(rec, dict):
        return False
    for holder_key, key in UPSTREAM_FIELDS:
        if holder_key is None:
            if isinstance(rec.get(key), str):
                if rec[key] == upstream:
                    return False
                rec[key] = upstream
                return True
            continue
        raw = rec.get(holder_key)
        text = isinstance(raw, (str, bytes))
        try:
            holder = orjson.loads(raw) if text else raw
        except orjson.JSONDecodeError:
            continue
        if isinstance(holder, dict) and isinstance(holder.get(key), str):
            if holder[key] == upstream:
                return False
            holder[key] = upstream
            if text:
                rec[holder_key] = orjson.dumps(holder).decode()
            return True
    if rec.get("provider") and isinstance(rec.get("provider"), str) and "request_body" in rec:  # Helicone
        if rec["provider"] == upstream:
            return False
        rec["provider"] = upstream
        return True
    return False


def _iso(t: float, like: str) -> str:
    dt = datetime.fromtimestamp(t, tz=timezone.utc)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if "." in like.split("T")[-1] or t != int(t):
        text += f".{int(round((t - int(t)) * 1000)) % 1000:03d}"
    return text + "Z"


def set_arrival(rec: Any, body: Any, t: float) -> bool:
    """Set a record's arrival time where the readers read it (the first time field of the
    record, then of its body; ``ingest.fields.TIME_KEYS``), in the field's own form (epoch
    seconds, milliseconds or microseconds, or ISO 8601). Returns False when it has none."""
    for m in (rec, body):
        if not isinstance(m, MAPPING):
            continue
        for k in TIME_KEYS:
            v = m.get(k)
            if v in (None, "") or isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                scale = 1e6 if v > 1e14 else 1e3 if v > 1e11 else 1
                new = t * scale
                m[k] = int(round(new)) if isinstance(v, int) else new
            else:
                s = str(v).strip()
                try:
                    float(s)
                    scale = 1e6 if float(s) > 1e14 else 1e3 if float(s) > 1e11 else 1
                    m[k] = str(int(round(t * scale))) if "." not in s else str(t * scale)
                except ValueError:
                    m[k] = _iso(t, s)
            return True
    return False


def tag_id(rec: Any, body: Any, suffix: str, default: str | None = None) -> None:
    """Append ``suffix`` to a record's id (keep-alive copies stay distinct and recognisable);
    a record with no id gets ``default + suffix`` as its ``id`` (``default``: the id the reader
    gave the original, ``<file>:<line>``), so every copy is named in the proposed log."""
    for m in (rec, body):
        if not isinstance(m, MAPPING):
            continue
        for k in ID_KEYS:
            v = m.get(k)
            if isinstance(v, (str, int)) and v != "":
                m[k] = f"{v}{suffix}"
                return
    if default is not None and isinstance(rec, MAPPING):
        rec["id"] = f"{default}{suffix}"


def encode(records: Sequence[Any]) -> bytes:
    """JSONL bytes of the records, one per line (non-ASCII kept, keys in their own order)."""
    import json

    out = []
    for r in records:
        try:
            out.append(orjson.dumps(r))
        except TypeError:  # integers beyond 64 bits
            out.append(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    return b"\n".join(out) + (b"\n" if out else b"")


def write(dest: str | Path, data: bytes) -> str:
    """Write JSONL bytes atomically, gzipped when ``dest`` ends in ``.gz``."""
    from ..fileio import write_atomic

    if str(dest).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    write_atomic(dest, data)
    return str(dest)
