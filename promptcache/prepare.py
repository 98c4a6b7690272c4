"""The pipeline's front half: render and tokenize requests into prompts, as deltas.

An agent session re-sends its whole history on every turn, so the *n*-th request of a session
holds the *n−1*-th one's prompt plus a few messages. The front half works on what each request
adds:

- :class:`Front` renders each request (the chat format reuses the segments of the request it
  extends, see :meth:`~promptcache.render.FramedFormat.render`), finds the earlier request
  ("tip") whose segments it extends, tokenizes only the segments never seen before, and emits a
  :class:`Delta`: the tip it extends and what it adds. A request that extends a tip but for a
  few segments (a system prompt that starts with the current time) is sent as that tip with
  those segments replaced.
- :class:`Back` keeps the assembled prompts of the live tips and turns each delta into the
  full :class:`~promptcache.simulate.Prompt` the simulator reads.

The two run in one process, or in two (:func:`front_process`) with the deltas pickled between
them: a delta carries only what its request adds, so the transfer costs about what the log's
new text costs, not what its re-sent history does.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import itertools
import os
import pickle
import queue
import struct
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

import numpy as np

from .fileio import write_all
from .model import Part, Request, Segment, pickle_as_fields, with_parts
from .render import FramedFormat, make_format
from .simulate import Prompt
from .simulate.rules import ProviderFile
from .tips import PATCHES, PrefixTips, changed
from .tokenize import TokenMemo, Tokenizer

CHUNK = 512  # requests rendered and tokenized per batch
UNITS_CACHE = 20_000  # framed segment units kept per context (the oldest half goes when full)
TIP_PROBES = 24  # how many segments shorter than a request a tip it extends may be
# Tips kept per context (the oldest half goes when full). On the 100k-request benchmark log the
# hit rate stops rising at 1024 (0.721 at 256, 0.745 at 512, 0.763 from 1024 up); a log with
# more sessions live at once loses speed, never results.
TIPS = 1024
QUEUE_CHUNKS = 4  # prepared chunks either process holds ahead of the other
# Share of new segments the front half leaves to the back half to tokenize, where the two run in
# two processes: it starts here and moves by DEFER_STEP per chunk, up while the back half has at
# most BACKLOG - 1 chunks sent and not yet simulated, down while it has more than BACKLOG (see
# _front_main).
DEFER = 0.0
DEFER_STEP = 0.1
BACKLOG = 2


class _FrontTip:
    """A request as later requests may extend it: its parts and the id the back half knows it by
    (its segments but the last, the generation prompt, are the key it is kept under)."""

    __slots__ = ("parts", "tid")

    def __init__(self, parts: Sequence[Part], tid: int):
        self.parts = parts
        self.tid = tid


class Context:
    """Per (provider file, tokenizer): the chat format, the token memo and the tips.

    Attributes:
        pf: the provider file.
        tokenizer: the tokenizer.
        format: the chat format (:func:`~promptcache.render.make_format`).
        memo: token ids of texts seen before.
        units: framed unit bytes per segment object (segments repeat as the same objects across
            requests); each entry keeps its segment alive.
        needs_keys: whether the rules key cache entries by the prompt up to each segment
            (breakpoint and boundary caches).
        appends: whether requests can extend earlier ones' segments (framed formats; a chat
            template renders each prompt whole).
    """

    def __init__(self, pf: ProviderFile, tokenizer: Tokenizer):
        self.pf = pf
        self.tokenizer = tokenizer
        self.format = make_format(tokenizer, pf.layout)
        # 16 MB: segments repeat as the same objects and are found in ``units`` first; what the
        # text memo finds beyond that is recent (on the benchmark log, 64 MB found 1.5% more)
        self.memo = TokenMemo(tokenizer, budget_bytes=16 * 2**20)
        self._frame_bytes: dict[tuple[int, ...], bytes] = {}
        self.units: dict[int, tuple[Segment, bytes]] = {}
        self.needs_keys = any(m.get("mode") != "prefix" for _, m in pf.models)
        self.appends = isinstance(self.format, FramedFormat)
        self.dropped: list[int] = []  # ids of tips let go, for the back half to forget
        self.tips: PrefixTips[_FrontTip] = PrefixTips(TIP_PROBES, TIPS, lambda t: self.dropped.append(t.tid))

    def frame(self, ids: tuple[int, ...]) -> bytes:
        """Framing ids as unit bytes (memoized)."""
        b = self._frame_bytes.get(ids)
        if b is None:
            b = self._frame_bytes[ids] = np.asarray(ids, dtype="<u4").tobytes()
        return b

    def piece(self, seg: Segment, token_bytes: bytes) -> bytes:
        """A segment's framed unit bytes: its head framing, its text's token bytes, its tail."""
        return self.frame(seg.head) + token_bytes + self.frame(seg.tail)

    def tip_for(self, segs: list[Segment]) -> tuple[int, _FrontTip, list[int]] | None:
        """``(length, tip, patches)`` of the longest tip whose segments lead ``segs`` (all but
        its last segment; ``length`` counts the tip's segments), or else of one they lead but
        for at most :data:`PATCHES` segments (``patches``: their positions, ascending); or
        ``None``."""
        found = self.tips.find(segs, longest=len(segs) - 1)
        if found is not None:
            return found[0], found[1], []
        return self.tips.find_patched(segs, len(segs) - 1, PATCHES)

    def add_tip(self, segs: list[Segment], parts: Sequence[Part], extended: list[Segment] | None, tid: int) -> bool:
        """Keep a request as a tip under its segments but the last, letting go of the tip it
        extended (``extended``: that tip's segments). False when it has nothing to keep."""
        if extended is not None:
            self.tips.remove(extended)
        if len(segs) < 2:
            return False
        self.tips.add(segs[:-1], _FrontTip(parts, tid))
        return True


def chained_keys(pieces: Sequence[bytes], start: bytes = b"") -> list[bytes]:
    """Chained 16-byte BLAKE2b digests of a prompt up to the end of each segment, from each
    segment's framed unit bytes (``pieces``: framing and token ids, what a KV cache holds; the
    byte-level BPE tokenizers give different texts different ids), continuing from ``start``
    (the key of the segment before ``pieces[0]``; empty at the start)."""
    keys: list[bytes] = []
    h = start
    for b in pieces:
        h = hashlib.blake2b(h + b, digest_size=16).digest()
        keys.append(h)
    return keys


@dataclass(slots=True)
class Delta:
    """One request as the front half hands it on: the tip it extends and what it adds.

    A request may also extend a tip with a few of the tip's segments (and parts) replaced: a
    session whose system prompt starts with the current time differs from its previous turn in
    that one segment and part.

    Attributes:
        request: the request; with ``packed``, only its parts at ``part_patches`` and after
            ``keep_parts``.
        base: id of the tip it extends, or -1.
        keep_parts: leading parts it shares with that tip's request (but those at
            ``part_patches``).
        segments: its segments at ``seg_patches`` (replacing the tip's there), then those after
            the tip's (all of them when ``base`` is -1).
        pieces: framed unit bytes of each of ``segments`` (little-endian uint32 token ids).
        tip: the id it is kept under for later requests, or -1.
        packed: whether ``request`` holds only the parts at ``part_patches`` and after
            ``keep_parts``.
        seg_patches: positions (ascending) of the tip's segments it replaces.
        part_patches: positions (ascending) of the tip request's parts it replaces.
        untokenized: positions in ``segments`` the front half left for the back half to
            tokenize (their ``pieces`` are ``None`` until :meth:`Back.fill`).
    """

    request: Request
    base: int = -1
    keep_parts: int = 0
    segments: list[Segment] | None = None
    pieces: list[bytes] | None = None
    tip: int = -1
    packed: bool = False
    seg_patches: tuple[int, ...] = ()
    part_patches: tuple[int, ...] = ()
    untokenized: tuple[int, ...] = ()

    def pack(self) -> Delta:
        """The delta to send to another process: without the parts the tip already has."""
        if self.keep_parts and not self.packed:
            parts = self.request.parts
            sent = parts[self.keep_parts:]
            if self.part_patches:
                sent = type(parts)([parts[i] for i in self.part_patches] + list(sent))
            return Delta(with_parts(self.request, sent), self.base, self.keep_parts, self.segments, self.pieces,
                         self.tip, True, self.seg_patches, self.part_patches, self.untokenized)
        return self


pickle_as_fields(Delta)  # 1.3 -> 0.5 µs to pickle, 1.2 -> 0.2 µs to unpickle


class Pipe(Protocol):
    """What the front and back halves ask of the pipeline state (:class:`~promptcache.pipeline._Pipeline`)."""

    def provider_for(self, req: Request) -> ProviderFile: ...  # noqa: D102

    def context_for(self, pf: ProviderFile, req: Request) -> Context: ...  # noqa: D102


class Front:
    """Renders and tokenizes chunks of requests into :class:`Delta` s.

    Args:
        pipe: the pipeline state that resolves provider files and contexts.
    """

    def __init__(self, pipe: Pipe):
        self.pipe = pipe
        self._tids = itertools.count()
        self._contexts: dict[int, Context] = {}  # the contexts whose tips this front keeps
        #: Share (0 to 1) of new segments left to the back half to tokenize (:meth:`Back.fill`):
        #: only where the two halves run in two processes, and never texts tokenized in chunks
        #: (their chunks are memoized here).
        self.defer = 0.0
        self._owed = 0.0  # deferred segments owed at that share

    def take_dropped(self) -> list[int]:
        """Ids of the tips let go since the last call (the back half may forget them)."""
        out: list[int] = []
        for ctx in self._contexts.values():
            out += ctx.dropped
            ctx.dropped.clear()
        return out

    def prepare(self, chunk: list[Request]) -> list[Delta]:
        """Deltas of a chunk of requests, in order (one tokenizer batch per context)."""
        pipe = self.pipe
        out: list[Delta] = []
        ctxs: list[Context | None] = []
        todo: dict[int, tuple[Context, dict[int, Segment]]] = {}
        for req in chunk:
            if req.hashed is not None:
                out.append(Delta(req))
                ctxs.append(None)
                continue
            ctx = pipe.context_for(pipe.provider_for(req), req)
            segs = ctx.format.render(req)
            found = ctx.tip_for(segs) if ctx.appends else None
            d = Delta(req)
            if found is not None:
                k, base, patches = found
                d.base = base.tid
                kp = len(base.parts)
                parts = req.parts
                if parts[:kp] == base.parts:
                    d.keep_parts = kp
                elif len(parts) >= kp:
                    diff = changed(base.parts, parts[:kp])
                    if len(diff) <= PATCHES:
                        d.keep_parts, d.part_patches = kp, tuple(diff)
                new = segs[k:]
                if patches:
                    d.seg_patches = tuple(patches)
                    new = [segs[i] for i in patches] + new
            else:
                new = segs
            d.segments = new
            if ctx.appends:
                self._contexts[id(ctx)] = ctx
                tid = next(self._tids)
                if ctx.add_tip(segs, req.parts, segs[:found[0]] if found is not None else None, tid):
                    d.tip = tid
            units = ctx.units
            for s in new:
                got = units.get(id(s))
                if got is None or got[0] is not s:
                    todo.setdefault(id(ctx), (ctx, {}))[1][id(s)] = s
            out.append(d)
            ctxs.append(ctx)
        for ctx, new_segs in todo.values():  # one tokenizer batch per context, only for segments not seen
            segs_new = list(new_segs.values())
            if self.defer:
                segs_new = self._keep(ctx, segs_new)
            ids = ctx.memo.encode([s.text for s in segs_new])
            for s, tb in zip(segs_new, ids):
                ctx.units[id(s)] = (s, ctx.piece(s, tb))
        for d, c in zip(out, ctxs):
            if c is None or d.segments is None:
                continue
            cache = c.units
            d.pieces = [cache[id(s)][1] for s in d.segments]
            if None in d.pieces:  # left to the back half, in this chunk or an earlier one
                d.untokenized = tuple(i for i, b in enumerate(d.pieces) if b is None)
        for ctx in {id(c): c for c, _ in todo.values()}.values():
            if len(ctx.units) > UNITS_CACHE:  # evict after the chunk is assembled, oldest half first
                for k in list(itertools.islice(ctx.units, len(ctx.units) - UNITS_CACHE // 2)):
                    del ctx.units[k]
        return out

    def _keep(self, ctx: Context, segs: list[Segment]) -> list[Segment]:
        """The segments this half tokenizes; the others (a :attr:`defer` share of those short
        enough) are marked in ``ctx.units`` as the back half's, for good: the back half's memo
        has their texts if they come again."""
        mine: list[Segment] = []
        owed = self._owed
        limit = ctx.memo.CHUNKED
        units = ctx.units
        for s in segs:
            if len(s.text) < limit:
                owed += self.defer
                if owed >= 1.0:
                    owed -= 1.0
                    units[id(s)] = (s, None)
                    continue
            mine.append(s)
        self._owed = owed
        return mine


class _Assembled:
    """A tip as the back half keeps it: parts, segments, pieces, token ends, paths (all but the
    last segment), and the chained keys once computed."""

    __slots__ = ("parts", "segs", "pieces", "ends", "paths", "keys")

    def __init__(self, parts: Sequence[Part], segs: list[Segment], pieces: list[bytes], ends: list[int],
                 paths: tuple[str, ...]):
        self.parts = parts
        self.segs = segs
        self.pieces = pieces
        self.ends = ends
        self.paths = paths
        self.keys: list[bytes] | None = None


class Back:
    """Turns :class:`Delta` s back into prompts, keeping the tips the front half still knows.

    Args:
        pipe: the pipeline state that resolves provider files and contexts.
    """

    def __init__(self, pipe: Pipe):
        self.pipe = pipe
        self.tips: dict[int, _Assembled] = {}

    def fill(self, deltas: Sequence[Delta]) -> None:
        """Tokenize the segments the front half left to this half (``Delta.untokenized``), one
        batch per context, before :meth:`assemble`."""
        pipe = self.pipe
        batches: dict[int, tuple[Context, list[tuple[list[bytes | None], int, Segment]]]] = {}
        for d in deltas:
            if not d.untokenized:
                continue
            req = d.request
            ctx = pipe.context_for(pipe.provider_for(req), req)
            batch = batches.setdefault(id(ctx), (ctx, []))[1]
            pieces: list[bytes | None] = d.pieces  # type: ignore[assignment]
            segs = d.segments or []
            batch += [(pieces, i, segs[i]) for i in d.untokenized]
        for ctx, batch in batches.values():
            ids = ctx.memo.encode([s.text for _, _, s in batch])
            for (pieces, i, s), tb in zip(batch, ids):
                pieces[i] = ctx.piece(s, tb)

    def drop(self, tids: Iterable[int]) -> None:
        """Forget tips the front half let go."""
        for t in tids:
            self.tips.pop(t, None)

    def assemble(self, d: Delta) -> tuple[Request, ProviderFile, Context | None, Prompt]:
        """The request (whole again), its provider file, context and prompt.

        Raises:
            KeyError: when the delta names a tip this back half never received (a bug).
        """
        pipe = self.pipe
        req = d.request
        pf = pipe.provider_for(req)
        if d.segments is None:
            hp = req.hashed
            assert hp is not None
            units = np.asarray(hp.block_ids, dtype="<u8").tobytes()
            return req, pf, None, Prompt(units, 8, hp.block_tokens, hp.input_tokens)
        base = self.tips[d.base] if d.base >= 0 else None
        if d.packed:
            assert base is not None
            parts = list(base.parts[:d.keep_parts])
            sent = req.parts
            m = len(d.part_patches)
            for i, p in zip(d.part_patches, sent):
                parts[i] = p
            parts += sent[m:]
            req = with_parts(req, type(sent)(parts))  # the type the request was read with
        ctx = pipe.context_for(pf, req)
        new = d.segments
        pieces_new = d.pieces or []
        valid = -1  # with patches: how many of the base's leading segments the request keeps
        if base is not None and d.seg_patches:
            m = len(d.seg_patches)
            segs, pieces = base.segs.copy(), base.pieces.copy()
            for i, s, b in zip(d.seg_patches, new, pieces_new):
                segs[i], pieces[i] = s, b
            segs += new[m:]
            pieces += pieces_new[m:]
            valid = d.seg_patches[0]
            ends = base.ends[:valid] + list(itertools.accumulate((len(b) >> 2 for b in pieces[valid:]),
                                                                  initial=base.ends[valid - 1] if valid else 0))[1:]
            paths = tuple(s.path for s in segs)
        elif base is not None:
            segs = base.segs + new
            pieces = base.pieces + pieces_new
            ends = base.ends + list(itertools.accumulate((len(b) >> 2 for b in pieces_new),
                                                         initial=base.ends[-1] if base.ends else 0))[1:]
            paths = base.paths + tuple(s.path for s in new)
        else:
            segs = new
            pieces = pieces_new
            ends = list(itertools.accumulate(len(b) >> 2 for b in pieces))
            paths = tuple(s.path for s in segs)
        own = None
        if d.tip >= 0:
            own = self.tips[d.tip] = _Assembled(req.parts, segs[:-1], pieces[:-1], ends[:-1], paths[:-1])
        keys = self._key_source(pieces, base, own, valid) if ctx.needs_keys else None
        return req, pf, ctx, Prompt(b"".join(pieces), 4, 1, ends[-1] if ends else 0, segs, ends, (), keys, paths)

    @staticmethod
    def _key_source(pieces: list[bytes], base: _Assembled | None, own: _Assembled | None,
                    valid: int = -1) -> Callable[[], list[bytes]]:
        """Chained keys on demand, continuing the base tip's keys when it has them (only its
        first ``valid`` keys, when not -1: the segments after those were replaced)."""

        def keys() -> list[bytes]:
            if base is not None and base.keys is not None:
                k = len(base.keys) if valid < 0 else min(valid, len(base.keys))
                out = base.keys[:k] + chained_keys(pieces[k:], base.keys[k - 1] if k else b"")
            else:
                out = chained_keys(pieces)
            if own is not None:
                own.keys = out[:-1]
            return out

        return keys


# ---------------------------------------------------------------------- the second process

class _Channel:
    """One end of a pipe carrying length-prefixed messages between the two processes.

    ``multiprocessing.Connection`` reads a message in pieces of the pipe's buffer (64 KiB),
    each a new ``bytes`` gathered in a ``BytesIO`` and copied out again; the 100k-request log
    sends 942 MB. Here the pipe's buffer is raised to 1 MiB where Linux allows
    (``F_SETPIPE_SZ``), and a message is read straight into one ``bytearray`` (``readinto``):
    0.8 -> 0.2 s of CPU to receive 196 messages of 4.8 MB, 0.3 -> 0.15 s to send them.

    Args:
        fd: the pipe's read or write descriptor; the channel owns it.
    """

    PIPE_BYTES = 1 << 20
    _HEADER = struct.Struct("<Q")

    def __init__(self, fd: int):
        self.fd = fd
        self._file = io.FileIO(fd, "rb", closefd=False)

    @classmethod
    def pipe(cls) -> tuple[_Channel, _Channel]:
        """A new pipe's ``(read end, write end)``."""
        r, w = os.pipe()
        with contextlib.suppress(AttributeError, OSError):  # not Linux, or above pipe-max-size
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, cls.PIPE_BYTES)  # type: ignore[attr-defined]
        return cls(r), cls(w)

    def send(self, buf: bytes) -> None:
        """Write one message (blocks while the pipe is full).

        Raises:
            OSError: when the other end is closed (``BrokenPipeError``).
        """
        write_all(self.fd, self._HEADER.pack(len(buf)))
        write_all(self.fd, buf)

    def recv(self) -> bytearray:
        """Read one message.

        Raises:
            EOFError: when the write end is closed before a whole message came.
        """
        (n,) = self._HEADER.unpack(self._read(self._HEADER.size))
        return self._read(n)

    def _read(self, n: int) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self._file.readinto(view[got:])
            if not k:
                raise EOFError("the other process closed the pipe")
            got += k
        return buf

    def close(self) -> None:
        """Close the descriptor (once)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


def _front_main(conn: _Channel, make: Callable[[], tuple[Front, Iterator[list[Request]], Callable[[], Any]]],
                taken: Any = None, other: _Channel | None = None) -> None:
    """The front process: prepare chunks and send them, then what the reading found.

    A thread sends while the next chunk is prepared (a pipe write releases the GIL), so neither
    process waits for the other to take a chunk. The two halves share the tokenizing: while the
    back half keeps up (``taken``: the chunks it has simulated, in shared memory), the front
    leaves it a growing share of the new segments (:attr:`Front.defer`); once chunks wait for
    it, a shrinking one. ``other``: the pipe's read end, inherited in the fork and closed
    here, so that the parent's going away breaks the pipe.
    """
    if other is not None:
        other.close()
    out: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUE_CHUNKS)
    failed: list[BaseException] = []

    def sender() -> None:
        try:
            while (buf := out.get()) is not None:
                conn.send(buf)
        except BaseException as e:  # noqa: BLE001 - the parent went away
            failed.append(e)
            while out.get() is not None:  # drain, so the producer never blocks
                pass

    th = threading.Thread(target=sender, name="promptcache-front-sender", daemon=True)
    th.start()
    try:
        front, chunks, finish = make()
        front.defer = DEFER
        sent = 0
        for chunk in chunks:
            if failed:
                return
            if taken is not None:  # chunks sent and not yet simulated: the back half's backlog
                backlog = sent - taken.value
                if backlog < BACKLOG:
                    front.defer = min(1.0, front.defer + DEFER_STEP)
                elif backlog > BACKLOG:
                    front.defer = max(0.0, front.defer - DEFER_STEP)
            deltas = [d.pack() for d in front.prepare(chunk)]
            out.put(pickle.dumps(("chunk", deltas, front.take_dropped()), protocol=pickle.HIGHEST_PROTOCOL))
            sent += 1
        out.put(pickle.dumps(("end", finish()), protocol=pickle.HIGHEST_PROTOCOL))
    except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            payload = pickle.dumps(("error", e), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            payload = pickle.dumps(("error", RuntimeError("".join(traceback.format_exception(e)))))
        out.put(payload)
    finally:
        out.put(None)
        th.join()
        conn.close()


def front_process(make: Callable[[], tuple[Front, Iterator[list[Request]], Callable[[], Any]]]
                  ) -> Iterator[tuple[str, Any, Any]]:
    """Run the front half in a forked process.

    Args:
        make: called in the child: returns the :class:`Front`, its chunks of requests, and a
            function whose result is sent once the chunks are done (what the reading found).
            The child is a fork, so these may be the parent's own objects, half consumed: the
            child carries on from where the parent stopped.

    Yields:
        ``("started", None, None)`` once the process runs, then ``("chunk", deltas,
        dropped_tip_ids)`` per chunk, then ``("end", result, None)``.

    Raises:
        Whatever the front half raised, re-raised here; RuntimeError when it died.
    """
    import multiprocessing as mp

    mpc = mp.get_context("fork")
    recv, send = _Channel.pipe()
    taken = mpc.RawValue("q", 0)  # chunks simulated here, read there (see _front_main)
    proc = mpc.Process(target=_front_main, args=(send, make, taken, recv), daemon=True, name="promptcache-front")
    proc.start()
    send.close()
    inbox: queue.Queue[bytearray | None] = queue.Queue(maxsize=QUEUE_CHUNKS)
    stop = threading.Event()

    def receiver() -> None:  # reads ahead while this process simulates (a pipe read releases the GIL)
        try:
            while not stop.is_set():
                buf = recv.recv()
                while not stop.is_set():
                    try:
                        inbox.put(buf, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except (EOFError, OSError):
            pass
        finally:
            with contextlib.suppress(queue.Full):
                inbox.put(None, timeout=1)

    th = threading.Thread(target=receiver, name="promptcache-front-receiver", daemon=True)
    th.start()
    try:
        yield "started", None, None
        while True:
            buf = inbox.get()
            if buf is None:
                proc.join(5)
                raise RuntimeError(f"the front process ended without a result (exit code {proc.exitcode})")
            msg = pickle.loads(buf)
            if msg[0] == "error":
                raise msg[1]
            if msg[0] == "end":
                yield "end", msg[1], None
                return
            yield msg
            taken.value += 1  # asked for the next: this one is simulated
    finally:
        stop.set()
        if proc.is_alive():
            proc.terminate()
        proc.join()
        th.join(1)  # the write end is closed now: the receiver sees the end of the pipe
        recv.close()
