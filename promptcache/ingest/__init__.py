"""Log readers: any supported log file → a stream of :class:`~promptcache.model.Request`.

The producer of each record is detected per record (:mod:`.registry`; ``--input-format``
forces one): the reader of the record before is asked first (a file mostly holds one shape),
and only a record it does not claim goes to the whole registry. Every record read ends as
exactly one of: a request, a usage-only record, joined to another record's request, a duplicate
of a call counted already, skipped with a reason, or malformed (:mod:`.outcomes`), counted per
file in :class:`InputStats`; nothing is dropped silently, and a malformed record never stops the
file unless ``strict`` is set.
"""

from __future__ import annotations

import heapq
import itertools
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

import orjson

from ..errors import BadRecord, ConfigError, InputError
from ..model import Request, Source, Usage
from . import fields as _fields
from .jsonio import ReadNotes, TextLine, iter_records, local_path
from .outcomes import Keyed, Skipped
from .reader import Reader
from .registry import READERS, claimants
from .seen import SAME_CALL_SECONDS, SeenCalls
from .usage import check_usage

#: Keep at most this many bad-line messages per file (all are counted).
MAX_REPORTED_ERRORS = 50
#: Requests held to restore arrival order in logs written slightly out of order (gateways log
#: on completion, so neighbours swap by their latency), and to join records of one call that
#: arrive apart (a span and the log record with its content, a batch request and its result).
REORDER_WINDOW = 4096
#: Keys of superseded wrapper records remembered per file (a wrapper that comes after its leaf).
SUPERSEDED_KEPT = 65536
#: A file is "mostly not requests" when more than this share of its records are usage-only,
#: skipped or malformed (records joined to a request, and duplicates of one, belong to requests).
MOSTLY = 0.5
#: Examples kept per kind of problem.
EXAMPLES = 5
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(reason: str) -> str:
    """A reason without control characters (``\x1b`` and the like shown as ``\x1b``): reasons
    may quote record values, and they are printed to terminals."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", reason) if _CONTROL.search(reason) else reason


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
    """What reading one file produced. Every record read is counted once in
    ``requests + usage_only + joined + duplicates + sum(skipped) + skipped_lines`` (``records``).

    Attributes:
        path: the file.
        format: the first format read in it (``None`` when nothing was recognised).
        formats: records per format (a file may mix shapes).
        records: records read: lines, array items, CSV rows, and each span, observation or row
            of a record that holds several.
        requests: requests passed on (with a prompt or block hashes).
        usage_only: requests the log records without their prompt (OpenTelemetry spans without
            content capture, LiteLLM rows without stored prompts, batch results alone): not
            passed on, so not simulated; ``usage_only_usage`` sums their reported usage.
        joined: records joined to another record's request (a batch output to its input, a log
            record with a span's content, a server's "finished" line to its "received" line).
        duplicates: records of a call already counted: a wrapper generation or span over the
            same call as its leaf, or the same call logged again (``same_calls`` of them: the id,
            prompt and time of a request counted already, e.g. by another producer's export of
            the same traffic; :mod:`.seen`).
        skipped: records of a known producer that are no LLM request, by reason.
        skipped_lines: malformed records (``errors``: the first ``(line, reason)`` pairs).
        missing_arrival: requests without an arrival time.
        out_of_order: requests that arrived earlier than one already passed on beyond the
            reorder window.
        same_calls: records that log a call another record of the run logged already (same
            id, prompt and time; counted in ``duplicates``, not passed on;
            ``same_call_example``: ``(id, line, path, line)``: the id and this file's line of the
            first such record, and where the record counted for that call is).
        duplicate_ids: requests whose id an earlier request of the run had with another prompt
            or time: audited (``duplicate_id_example``: ``(id, line)`` of the first).
        same_prompts: requests with another id but the prompt and time of a request in another
            file: audited, but the two files may log the same calls (``same_prompt_example``:
            ``(line, path, line)``: this file's line and the other's).
        bad_usage: requests whose reported usage is impossible (left out of the ``reported``
            scenario; ``bad_usage_examples``: ``(line, reason)``).
        prefix_on_server: requests whose prompt continues a server-side conversation the log
            does not hold (OpenAI ``previous_response_id`` of a response not in the log).
        ambiguous: records two readers claimed, by ``"a|b"`` (read as the first).
        duplicate_of: set when this path is the same file as an earlier input (not read again).
        times: what reading the times found (zones, unusable times; :class:`~.fields.TimeNotes`).
        decoding: what decoding needed (:class:`~.jsonio.ReadNotes`).
        over_reported: requests whose reported input tokens exceed the rendered prompt by more
            than 20% (set by the pipeline after tokenizing; ``over_reported_example``:
            ``(line, reported, rendered)``).
        counted_twice: requests whose reported input count already included their cache reads
            and writes (Bedrock ConverseStream metadata for some models; set by the pipeline
            after tokenizing, :func:`~.usage.counted_twice`): read as the whole prompt
            (``counted_twice_example``: ``(line, input count, cache reads + writes, rendered)``).
    """

    path: str
    format: str | None = None
    formats: dict[str, int] = field(default_factory=dict)
    records: int = 0
    requests: int = 0
    usage_only: int = 0
    usage_only_usage: Usage = field(default_factory=lambda: Usage(0))
    joined: int = 0
    duplicates: int = 0
    same_calls: int = 0
    same_call_example: tuple[str, int, str, int] | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_lines: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    missing_arrival: int = 0
    out_of_order: int = 0
    duplicate_ids: int = 0
    duplicate_id_example: tuple[str, int] | None = None
    same_prompts: int = 0
    same_prompt_example: tuple[int, str, int] | None = None
    bad_usage: int = 0
    bad_usage_examples: list[tuple[int, str]] = field(default_factory=list)
    prefix_on_server: int = 0
    ambiguous: dict[str, int] = field(default_factory=dict)
    duplicate_of: str | None = None
    times: _fields.TimeNotes = field(default_factory=_fields.TimeNotes)
    decoding: ReadNotes = field(default_factory=ReadNotes)
    over_reported: int = 0
    over_reported_example: tuple[int, int, int] | None = None
    counted_twice: int = 0
    counted_twice_example: tuple[int, int, int, int] | None = None

    # -- the names earlier releases used -------------------------------------------------------
    @property
    def no_content(self) -> int:
        """``usage_only`` (the name of earlier releases)."""
        return self.usage_only

    @property
    def no_content_usage(self) -> Usage:
        """``usage_only_usage`` (the name of earlier releases)."""
        return self.usage_only_usage

    @property
    def ignored(self) -> dict[str, int]:
        """``skipped`` (the name of earlier releases)."""
        return self.skipped

    # -- counting ------------------------------------------------------------------------------
    def add_error(self, line: int, reason: str) -> None:
        """Count a malformed record and keep its message if there is room."""
        self.skipped_lines += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append((line, printable(reason)))

    def add_usage_only(self, req: Request) -> None:
        """Count a request that has no prompt content, and add up its reported usage (an
        impossible one is counted in ``bad_usage`` instead)."""
        self.usage_only += 1
        u, t = req.usage, self.usage_only_usage
        problem = check_usage(u) if u is not None else None
        if problem is not None:  # a response read alone (batch results) is not checked on the way here
            self.bad_usage += 1
            if len(self.bad_usage_examples) < EXAMPLES:
                self.bad_usage_examples.append((req.source.line, problem))
            return
        if u is not None:
            self.usage_only_usage = Usage(t.input_tokens + u.input_tokens, t.output_tokens + u.output_tokens,
                                          t.cache_read_tokens + u.cache_read_tokens,
                                          t.cache_write_tokens + u.cache_write_tokens,
                                          t.cache_write_1h_tokens + u.cache_write_1h_tokens)

    add_no_content = add_usage_only

    def skip(self, reason: str) -> None:
        """Count a record skipped for ``reason``."""
        reason = printable(reason)
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    @property
    def accounted(self) -> int:
        """Records with an outcome: requests, usage-only, joined, duplicates, skipped, malformed."""
        return (self.requests + self.usage_only + self.joined + self.duplicates + sum(self.skipped.values())
                + self.skipped_lines)

    @property
    def readable(self) -> int:
        """Records a reader recognised (all but the malformed and unknown ones)."""
        return self.accounted - self.skipped_lines

    def record(self) -> dict[str, Any]:
        """This file's entry of the JSON report's ``inputs[]``."""
        return {
            "path": self.path, "format": self.format, "formats": dict(self.formats), "records": self.records,
            "requests": self.requests, "usage_only": self.usage_only,
            "usage_only_usage": {"input_tokens": self.usage_only_usage.input_tokens,
                                 "cached_tokens": self.usage_only_usage.cache_read_tokens,
                                 "cache_write_tokens": self.usage_only_usage.cache_write_tokens},
            "joined": self.joined, "duplicates": self.duplicates, "skipped": dict(self.skipped),
            "skipped_lines": self.skipped_lines, "errors": [{"line": ln, "reason": r} for ln, r in self.errors],
            "missing_arrival": self.missing_arrival, "out_of_order": self.out_of_order,
            "duplicate_ids": self.duplicate_ids, "same_calls": self.same_calls,
            "same_prompts": self.same_prompts, "bad_usage": self.bad_usage, "prefix_on_server": self.prefix_on_server,
            "over_reported": self.over_reported, "cache_counted_twice": self.counted_twice,
            "untimed": self.times.unusable, "naive_times": self.times.naive,
            "duplicate_of": self.duplicate_of,
        }

    def notes(self) -> list[str]:
        """One-line warnings about this file: what was read but is not audited, and every
        oddity found (empty when there is nothing to say)."""
        p = self.path
        if self.duplicate_of is not None:
            return [f"{p}: the same file as {self.duplicate_of}: audited once"]
        out = []
        if self.usage_only:
            u = self.usage_only_usage
            out.append(f"{p}: {self.usage_only:,} request(s) carry no prompt content (usage only, e.g. OpenTelemetry "
                       f"spans recorded without content capture, batch results without their requests): not simulated; "
                       f"their reported usage is {u.input_tokens:,} prompt tokens, {u.cache_read_tokens:,} cached, "
                       f"{u.cache_write_tokens:,} written")
        if self.skipped:
            what = ", ".join(f"{reason}: {n:,}" for reason, n in sorted(self.skipped.items()))
            out.append(f"{p}: skipped {sum(self.skipped.values()):,} record(s) that hold no LLM request to audit ({what})")
        wrappers = self.duplicates - self.same_calls
        if wrappers:
            out.append(f"{p}: {wrappers:,} record(s) log a call another record logs too (a wrapper generation "
                       "or span over its leaf call): counted once")
        if self.same_calls and self.same_call_example:
            rid, ln, first, first_ln = self.same_call_example
            where = f"line {first_ln}" if first == p else f"{first} line {first_ln}"
            out.append(f"{p}: {self.same_calls:,} record(s) log a call counted already: the same id, prompt and time "
                       f"(within {SAME_CALL_SECONDS:g} s) as an earlier record (e.g. {rid!r} at line {ln}, first at "
                       f"{where}): counted once, as duplicates")
        other = self.usage_only + sum(self.skipped.values()) + self.skipped_lines
        if self.records and other > MOSTLY * self.records:
            out.append(f"{p}: {other:,} of its {self.records:,} record(s) are no request with a prompt (usage-only, "
                       "skipped or malformed; see the inputs table, and `promptcache formats FILE`)")
        if self.ambiguous:
            what = ", ".join(f"{k.replace('|', ' and ')}: {n:,}" for k, n in self.ambiguous.items())
            out.append(f"{p}: record(s) match two formats ({what}); read as the first (force one with --input-format)")
        if self.bad_usage:
            ex = "; ".join(f"line {ln}: {r}" for ln, r in self.bad_usage_examples)
            out.append(f"{p}: {self.bad_usage:,} request(s) report impossible usage ({ex}): left out of the "
                       "'reported' scenario")
        if self.prefix_on_server:
            out.append(f"{p}: {self.prefix_on_server:,} request(s) continue a server-side conversation whose earlier "
                       "turns the log does not hold (previous_response_id or conversation): simulated on what they "
                       "send only, so their prompt and cost are understated (their reported usage is not)")
        if self.over_reported and self.over_reported_example:
            ln, rep, ren = self.over_reported_example
            out.append(f"{p}: {self.over_reported:,} request(s) report more than 20% more input tokens than their "
                       f"rendered prompt (e.g. line {ln}: {rep:,} reported, {ren:,} rendered): part of the prompt is not "
                       "in the log (server-side state, tools or images the log abbreviates) or the reader is wrong")
        if self.counted_twice and self.counted_twice_example:
            ln, given, cache, ren = self.counted_twice_example
            out.append(f"{p}: {self.counted_twice:,} request(s) report an input count that appears to include their "
                       f"cache reads and writes (e.g. line {ln}: input {given:,} + cache read/write {cache:,} = "
                       f"{given + cache:,} tokens, against a rendered prompt of {ren:,}: the input count alone is the "
                       f"prompt): read as {given:,} prompt tokens, not summed (Bedrock documents inputTokens as the "
                       "uncached remainder; ConverseStream metadata for some models counts the cache tokens in it)")
        if self.duplicate_ids and self.duplicate_id_example:
            rid, ln = self.duplicate_id_example
            out.append(f"{p}: {self.duplicate_ids:,} request(s) reuse the id of an earlier request with another "
                       f"prompt or time (e.g. {rid!r} at line {ln}): each is audited")
        if self.same_prompts and self.same_prompt_example:
            ln, other, other_ln = self.same_prompt_example
            out.append(f"{p}: {self.same_prompts:,} of its {self.requests:,} request(s) have the prompt and time "
                       f"(within {SAME_CALL_SECONDS:g} s) of a request in {other} under another id (e.g. line {ln} "
                       f"and its line {other_ln}): the two files may log the same calls; each is audited (if they "
                       "do, audit one of them)")
        if self.out_of_order:
            out.append(f"{p}: {self.out_of_order:,} request(s) arrived more than {REORDER_WINDOW:,} requests out of "
                       "order: audited in file order there")
        out += self.times.notes(p)
        out += self.decoding.notes(p)
        return out


def detect(rec: Any) -> str | None:
    """Name the format of one record (the first reader of :data:`~.registry.READERS` that
    claims it), or ``None`` when none does."""
    got = claimants(rec)
    return got[0][0].name if got else None


#: Format name → reader (callable as ``reader(record, source, options)`` → requests).
PARSERS: dict[str, Reader] = {r.name: r for r in READERS}


def available_formats() -> list[str]:
    """Names accepted by ``--input-format``."""
    return sorted(PARSERS)


class _Entry:
    """A request held in a file's window: joinable by its keys until it leaves."""

    __slots__ = ("req", "reader", "keys", "alive")

    def __init__(self, req: Request, reader: Reader, keys: tuple[str, ...]):
        self.req = req
        self.reader = reader
        self.keys = keys
        self.alive = True


class Responses:
    """Records of response-only files (batch outputs and results, Response objects), read before
    the other inputs so that requests in any file join them by key.

    Attributes:
        table: key → ``[request, reader, stats of its file, used]``.
    """

    def __init__(self) -> None:
        self.table: dict[str, list[Any]] = {}

    def add(self, keyed: Keyed, reader: Reader, stats: InputStats) -> None:
        """Keep a response by its keys; one without keys is a usage-only record, one whose key a
        response kept already has is a duplicate (a batch's result written twice)."""
        if not keyed.keys:
            stats.add_usage_only(keyed.request)
            return
        if any(k in self.table for k in keyed.keys):
            stats.duplicates += 1
            return
        entry = [keyed.request, reader, stats, False]
        for k in keyed.keys:
            self.table[k] = entry

    def take(self, keys: tuple[str, ...]) -> tuple[Request, Reader] | None:
        """The response with one of ``keys`` not joined yet (marked joined), else ``None``."""
        for k in keys:
            e = self.table.get(k)
            if e is not None and not e[3]:
                e[3] = True
                e[2].joined += 1
                return e[0], e[1]
        return None

    def finish(self) -> None:
        """Count the responses no request joined as usage-only records of their files."""
        seen: set[int] = set()
        for e in self.table.values():
            if id(e) in seen:
                continue
            seen.add(id(e))
            if not e[3]:
                e[2].add_usage_only(e[0])


class _FileReader:
    """Reads one file: per-record detection, outcomes, the reorder and join window."""

    def __init__(self, path: str, stats: InputStats, opts: ReadOptions, responses: Responses | None,
                 collect: bool = False):
        self.path = path
        self.stats = stats
        self.opts = opts
        self.responses = responses
        self.collect = collect  # a response-only file: keyed records go to ``responses``
        self.readers: dict[str, Reader] = {}
        self.recent: list[Reader] = []  # the file's readers, most recently used first
        self.window: list[tuple[float, int, _Entry]] = []
        self.index: dict[str, _Entry] = {}
        self.superseded: OrderedDict[str, _Entry] = OrderedDict()  # wrapper key → its leaf
        self.seq = itertools.count()
        self.last_out = float("-inf")
        self.last_in = float("-inf")

    # -- detection -----------------------------------------------------------------------------
    def instance(self, proto: Reader) -> Reader:
        r = self.readers.get(proto.name)
        if r is None:
            r = self.readers[proto.name] = proto.for_file()
        return r

    def detect(self, rec: Any) -> Reader | None:
        """The reader of a record the current one did not claim: a reader already used in this
        file that claims it, else the registry's claimants (two: counted as ambiguous)."""
        for r in self.recent[1:]:
            try:
                mine = r.claim(rec) is not None
            except Exception:  # noqa: BLE001 - see run()
                mine = False
            if mine:
                self.recent.remove(r)
                self.recent.insert(0, r)
                return r
        got = claimants(rec)
        if not got:
            return None
        if len(got) > 1:
            key = "|".join(r.name for r, _ in got)
            self.stats.ambiguous[key] = self.stats.ambiguous.get(key, 0) + 1
        r = self.instance(got[0][0])
        if r in self.recent:
            self.recent.remove(r)
        self.recent.insert(0, r)
        return r

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> Iterator[Request]:
        st, opts = self.stats, self.opts
        forced: Reader | None = None
        if opts.input_format:
            forced = self.instance(PARSERS[opts.input_format])
            st.format = forced.name
        notes = st.times
        current: Reader | None = forced
        dec = st.decoding
        last_good = 0
        for line, rec in iter_records(self.path, reuse_history=True, notes=dec):
            st.records += 1
            if isinstance(rec, BadRecord):
                if dec.truncated:  # the partial line a cut-off .gz ends with
                    self.truncated(last_good)
                    self.stats.add_error(line, f"incomplete record: the compressed file is truncated ({dec.truncated})")
                else:
                    self.malformed(line, str(rec))
                continue
            last_good = line
            if forced is None:
                try:
                    mine = current is not None and current.claim(rec) is not None
                except Exception:  # noqa: BLE001 - a claim never raises; one that does claims nothing
                    mine = False
                if not mine:
                    found = self.detect(rec)
                    if found is None and current is not None and current.records != "text" \
                            and not isinstance(rec, TextLine):
                        # no reader claims it: the file's shape so far reads it, or says what is wrong with it
                        found = current
                    current = found
                    if current is None:
                        self.malformed(line, "a text line no log format matches" if isinstance(rec, TextLine)
                                       else "not a record of any known format (see `promptcache formats FILE`; "
                                            "--input-format forces one)")
                        continue
                    if st.format is None:
                        st.format = current.name
                r = current
            else:
                r = forced
                if (r.records == "text") != isinstance(rec, TextLine):
                    self.malformed(line, f"not a record --input-format {r.name} reads "
                                         f"({'a text line' if isinstance(rec, TextLine) else 'a JSON or CSV record'})")
                    continue
            st.formats[r.name] = st.formats.get(r.name, 0) + 1
            notes.line = line
            _fields.NOTES = notes
            try:
                got = r.read(rec, Source(self.path, line), opts)
            except BadRecord as e:
                self.malformed(line, str(e))
                continue
            except RecursionError:
                self.malformed(line, "nested too deep to read")
                continue
            except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as e:
                self.malformed(line, f"cannot be read ({type(e).__name__}: {e})")
                continue
            finally:
                _fields.NOTES = None
            if isinstance(got, list):
                if not got:
                    st.skip("a record that holds no request (an empty export or page)")
                    continue
                st.records += len(got) - 1  # every item is a record of its own
                for item in got:
                    yield from self.outcome(item, r, line)
            else:
                yield from self.outcome(got, r, line)
        if dec.truncated:
            self.truncated(last_good)
        while self.window:
            yield from self.pop()

    def truncated(self, last_good: int) -> None:
        """A compressed file cut off after line ``last_good``: noted for its warning, or an
        error under ``strict``."""
        dec = self.stats.decoding
        if self.opts.strict:
            raise InputError(f"the compressed file is truncated ({dec.truncated}) after line {last_good:,}",
                             path=self.path, line=last_good + 1)
        dec.last_good_line = last_good

    def malformed(self, line: int, reason: str) -> None:
        if self.opts.strict:
            raise InputError(reason, path=self.path, line=line)
        self.stats.add_error(line, reason)

    def outcome(self, item: Any, reader: Reader, line: int) -> Iterator[Request]:
        st = self.stats
        if isinstance(item, Skipped):
            st.skip(item.reason)
            return
        if isinstance(item, Exception):
            self.malformed(line, str(item))
            return
        if isinstance(item, Keyed):
            req, keys, supersedes = item.request, item.keys, item.supersedes
        else:
            req, keys, supersedes = item, (), ()
        if self.collect:
            assert self.responses is not None
            self.responses.add(Keyed(req, keys), reader, st)
            return
        for k in keys:
            if k in self.superseded:  # a wrapper whose leaf came first
                st.duplicates += 1
                leaf = self.superseded[k]
                if leaf is not None and leaf.alive and not leaf.req.parts and leaf.req.hashed is None and req.parts:
                    leaf.req = leaf.reader.merge(leaf.req, req)  # the leaf logged no prompt: the wrapper's stands in
                return
        wrapped: list[str] = []
        for k in supersedes:
            e = self.index.get(k)
            if e is not None and e.alive:
                e.alive = False
                st.duplicates += 1
                for kk in e.keys:
                    self.index.pop(kk, None)
                if not req.parts and req.hashed is None and e.req.parts:
                    req = reader.merge(req, e.req)  # the leaf logged no prompt: the wrapper's stands in
            else:
                wrapped.append(k)
        for k in keys:
            e = self.index.get(k)
            if e is not None and e.alive:  # a second record of the same call
                e.req = e.reader.merge(e.req, req)
                st.joined += 1
                return
        if keys and self.responses is not None:
            got = self.responses.take(keys)
            if got is not None:
                req = reader.merge(req, got[0])
        entry = _Entry(req, reader, keys)
        for k in keys:
            self.index[k] = entry
        for k in wrapped:  # its wrapper may come later: it is a duplicate then
            self.superseded[k] = entry
            if len(self.superseded) > SUPERSEDED_KEPT:
                self.superseded.popitem(last=False)
        if req.arrival is None:  # keeps its place after the request before it in the file
            t = self.last_in
        else:
            t = self.last_in = req.arrival
        heapq.heappush(self.window, (t, next(self.seq), entry))
        if len(self.window) > REORDER_WINDOW:
            yield from self.pop()

    def pop(self) -> Iterator[Request]:
        t, _, e = heapq.heappop(self.window)
        for k in e.keys:
            if self.index.get(k) is e:
                del self.index[k]
        if not e.alive:
            return
        e.alive = False  # passed on: nothing merges into it any more
        st = self.stats
        req = e.req
        problem = check_usage(req.usage) if req.usage is not None else None
        if problem is not None:
            st.bad_usage += 1
            if len(st.bad_usage_examples) < EXAMPLES:
                st.bad_usage_examples.append((req.source.line, problem))
            req = replace(req, usage=None)
        if req.params:
            try:
                orjson.dumps(req.params)
            except TypeError:
                self.malformed(req.source.line, "request parameters nested too deep (or not JSON) to compare")
                return
        if not req.parts and req.hashed is None:
            st.add_usage_only(req)
            return
        if t < self.last_out:
            st.out_of_order += 1
        self.last_out = max(self.last_out, t)
        yield req


def _count(stream: Iterator[Request], stats_of: dict[str, InputStats], seen: SeenCalls) -> Iterator[Request]:
    """Count the requests the files pass on, each in its file's stats, in the run's arrival
    order (so that of one call logged by two files, the one read first, or given first when
    both log the same time, is the one counted): a request with the id, prompt and time of one
    counted already is a duplicate and not passed on; a reused id, or another file's prompt and
    time under another id, is counted and passed on (:class:`~.seen.SeenCalls`)."""
    for req in stream:
        st = stats_of[req.source.path]
        verdict, earlier = seen.check(req, st.path)
        if verdict == "same-call":  # the same call, logged by another record (another producer's export)
            st.duplicates += 1
            st.same_calls += 1
            if st.same_call_example is None and earlier is not None:
                st.same_call_example = (req.id, req.source.line, *earlier)
            continue
        st.requests += 1
        if req.arrival is None:
            st.missing_arrival += 1
        if req.prefix_on_server:
            st.prefix_on_server += 1
        if verdict == "id-reused":
            st.duplicate_ids += 1
            if st.duplicate_id_example is None:
                st.duplicate_id_example = (req.id, req.source.line)
        elif verdict == "same-prompt" and earlier is not None:
            st.same_prompts += 1
            if st.same_prompt_example is None:
                st.same_prompt_example = (req.source.line, earlier[0], earlier[1])
        yield req


def read_requests(path: str | Path, stats: InputStats, opts: ReadOptions | None = None, *,
                  responses: Responses | None = None, seen: SeenCalls | None = None) -> Iterator[Request]:
    """Stream the requests of one log file, in arrival order where the log has arrival times.

    A record may hold several requests (an OTLP export, a ShareGPT conversation, a Langfuse
    page): each is passed on with the record's line. Usage-only requests, joined records,
    duplicates, skipped and malformed records are counted in ``stats`` (see
    :class:`InputStats`) and not passed on.

    Args:
        path: a log file (JSONL, JSON, CSV, text log, ``.gz``), or ``-`` for standard input.
        stats: filled while reading (formats, counts, bad lines).
        opts: reading options.
        responses: responses read from other files, which requests of this one may join.
        seen: the calls the run has counted so far (:class:`~.seen.SeenCalls`): a request with
            the id, prompt and time of one of them is a duplicate; a reused id is counted.

    Raises:
        InputError: when the file cannot be opened, or on the first bad record with ``strict``.
        ConfigError: for an unknown forced format.
    """
    opts = opts or ReadOptions()
    if opts.input_format and opts.input_format not in PARSERS:
        raise ConfigError(f"unknown input format {opts.input_format!r}; available: {', '.join(available_formats())}")
    path = str(path)
    yield from _count(_FileReader(path, stats, opts, responses).run(), {path: stats},
                      seen if seen is not None else SeenCalls())


def _same_file(a: str, b: str) -> bool:
    if a == b:
        return True
    if "-" in (a, b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _responses_only(path: str, opts: ReadOptions) -> bool:
    """Whether a file's first readable record is of a response-only reader (batch outputs and
    results, Response objects)."""
    if opts.input_format:
        return PARSERS[opts.input_format].responses_only
    try:
        for _, rec in itertools.islice(iter_records(path), 8):
            if isinstance(rec, BadRecord):
                continue
            got = claimants(rec)
            return bool(got) and got[0][0].responses_only
    except InputError:
        return False
    return False


def read_inputs(paths: Sequence[str | Path], stats: Sequence[InputStats], opts: ReadOptions | None = None
                ) -> Iterator[Request]:
    """Stream the requests of a run's input files, merged in arrival order.

    The same file given twice is read once (the second's stats say ``duplicate_of``). A call
    two files both log (two producers' exports of the same traffic: the same id, prompt and
    time) is counted once, the later record as a duplicate; the same prompt and time under
    another id is counted in ``same_prompts`` and said (:mod:`.seen`).
    Response-only files (batch outputs and results) are read first, so that the requests of
    the other files join them by key (``custom_id``); a response no request joined counts as a
    usage-only record of its file.

    Raises:
        InputError: for an unreadable file, a bad record with ``strict``, or when no input holds
            a single record any reader recognises (empty files, or nothing but malformed lines).
        ConfigError: for an unknown forced format.
    """
    opts = opts or ReadOptions()
    if opts.input_format and opts.input_format not in PARSERS:
        raise ConfigError(f"unknown input format {opts.input_format!r}; available: {', '.join(available_formats())}")
    sp = [str(p) for p in paths]
    unique: list[int] = []
    for i, p in enumerate(sp):
        first = next((j for j in unique if _same_file(sp[j], p)), None)
        if first is None:
            unique.append(i)
        else:
            stats[i].duplicate_of = sp[first]
    if "-" in sp:
        local_path("-")  # read standard input once, before anything forks
    responses = Responses()
    seen = SeenCalls(by_prompt=len(unique) > 1)
    streams = []
    first = [i for i in unique if _responses_only(sp[i], opts)]
    for i in first:
        for _ in _FileReader(sp[i], stats[i], opts, responses, collect=True).run():
            pass
    for i in unique:
        if i not in first:
            streams.append(_FileReader(sp[i], stats[i], opts, responses).run())
    yield from _count(merge_by_arrival(streams), {sp[i]: stats[i] for i in unique}, seen)
    responses.finish()
    if not any(st.readable for st in stats):
        raise InputError("no record in any input is one a log format recognises: "
                         + "; ".join(_why_empty(st) for st in stats if st.duplicate_of is None))


def _why_empty(st: InputStats) -> str:
    if not st.records:
        return f"{st.path}: empty"
    first = f" (line {st.errors[0][0]}: {st.errors[0][1]})" if st.errors else ""
    return f"{st.path}: {st.skipped_lines:,} unreadable record(s){first}"


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
