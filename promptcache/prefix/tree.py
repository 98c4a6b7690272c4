"""A radix tree over token ids: exact longest-common-prefix lookup with TTL expiry and LRU
eviction, the shared core of every prefix cache the simulator models.

Sequences are ``bytes`` of fixed-width little-endian units (uint32 token ids, or uint64 block
hashes for hashed traces), so edge comparisons run as ``bytes.startswith`` (a memcmp) and only
the one edge where a prompt diverges is compared unit by unit (numpy). A prompt of 100k tokens
that shares 99k with the tree costs a handful of dict lookups and memcmps, not 99k Python steps.

Semantics (mirroring SGLang's ``RadixCache`` and vLLM's block pool):

- ``access`` returns the live longest common prefix (in units) and then stores the given prefix
  of the sequence, touching every node on its path (time for TTL, a tick for LRU).
- Liveness under TTL: a node is live while ``now - last_access <= ttl``. A request touches its
  whole path, so a parent is never older than its children and a walk stops at the first
  expired node.
- LRU eviction (``capacity_units``): the least recently touched leaf loses its tail. With
  ``evict_block`` > 0 it loses one block at a time (vLLM frees a finished request's blocks in
  reverse order, so its deepest block goes first); with 0 it loses the whole leaf node
  (SGLang ``evict``). Block-granular trees store only block-aligned prefixes, so every leaf
  ends on a block boundary and ``size`` counts blocks exactly.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import itertools
import mmap
import os
import tempfile
import weakref
from typing import Any, Iterator

from .lcp import common_prefix


class Node:
    """One edge of the tree: ``key`` (units) starting at depth ``start`` (units)."""

    __slots__ = ("key", "start", "children", "parent", "last", "tick", "creator", "uses", "hits", "recent",
                 "spill", "nbytes")

    def __init__(self, key: bytes, start: int, parent: Node | None, last: float, tick: int, creator: Any):
        self.key = key
        self.nbytes = len(key)  # the edge's length in bytes (also while its bytes are spilled)
        self.spill = -1  # offset of the edge's bytes in the spill file, or -1 when in memory
        self.start = start
        self.children: dict[bytes, Node] = {}
        self.parent = parent
        self.last = last
        self.tick = tick
        self.creator = creator
        # Later requests that read the whole edge, and those the simulated rules served it to.
        # Exact: a request that stops inside an edge splits it there when it stores its own
        # continuation, so every read covers whole edges once the access is done.
        self.uses = 0
        self.hits = 0
        self.recent: Node | None = None  # most recently touched child


class _SpillFile:
    """An anonymous temporary file that spilled edges are appended to and read back from.

    Where the platform allows, it is written with ``O_DIRECT`` (from a page-aligned buffer,
    each batch padded to whole pages) and read through a second, buffered descriptor: on ext4
    a buffered write costs about 2.6 ms of kernel time per MB (1.9 s for the 720 MB a
    100k-request audit spills), a direct one about 0.03 ms per MB and a wait on the disk.
    Elsewhere (tmpfs, macOS) it is an unbuffered ``tempfile.TemporaryFile``.
    """

    ALIGN = 4096
    BUFFER = 4 << 20  # bytes written per O_DIRECT call

    def __init__(self) -> None:
        self.end = 0
        self.direct = False
        self._file: Any = None
        self._buf: mmap.mmap | None = None  # the aligned write buffer (O_DIRECT)
        fd = -1
        try:
            fd = os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR | os.O_DIRECT, 0o600)  # type: ignore[attr-defined]
            rfd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
        except (AttributeError, OSError):
            if fd >= 0:
                os.close(fd)
            self._file = tempfile.TemporaryFile(prefix="promptcache-spill-", buffering=0)
            self.wfd = self.rfd = self._file.fileno()
            return
        self.direct = True
        self.wfd, self.rfd = fd, rfd
        self._fds = [fd, rfd]
        weakref.finalize(self, _close_fds, self._fds)

    def write(self, keys: list[bytes]) -> int:
        """Append ``keys`` back to back; returns the offset of the first."""
        at = self.end
        if self.direct and self._write_direct(keys, at):
            return at
        data = b"".join(keys)
        self._pwrite_all(memoryview(data), at)  # unbuffered: readable at once
        self.end = at + len(data)
        return at

    def _write_direct(self, keys: list[bytes], at: int) -> bool:
        """Write ``keys`` at ``at`` with ``O_DIRECT`` through one :data:`BUFFER`-byte aligned
        buffer, the last page padded; False (and buffered writes from now on) where the file
        system takes the flag but not the write."""
        if self._buf is None:
            self._buf = mmap.mmap(-1, self.BUFFER)  # page-aligned, as O_DIRECT needs; kept: new pages fault
        view = memoryview(self._buf)
        pos = at  # where the buffer's contents go in the file
        fill = 0
        try:
            for k in keys:
                i = 0
                while i < len(k):
                    m = min(len(k) - i, self.BUFFER - fill)
                    view[fill:fill + m] = memoryview(k)[i:i + m]
                    fill += m
                    i += m
                    if fill == self.BUFFER:
                        self._pwrite_all(view, pos)
                        pos += fill
                        fill = 0
            if fill:
                size = -(-fill // self.ALIGN) * self.ALIGN
                self._pwrite_all(view[:size], pos)
                pos += size
        except OSError:
            self.direct = False
            self.wfd = os.open(f"/proc/self/fd/{self.rfd}", os.O_WRONLY)
            self._fds.append(self.wfd)
            return False
        finally:
            view.release()
        self.end = pos
        return True

    def _pwrite_all(self, data: memoryview, offset: int) -> None:
        written = 0
        while written < len(data):
            written += os.pwrite(self.wfd, data[written:], offset + written)

    def read(self, offset: int, n: int) -> bytes:
        """``n`` bytes at ``offset``."""
        return os.pread(self.rfd, n, offset)


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class PrefixTree:
    """Radix tree of unit sequences with TTL and LRU capacity.

    Args:
        width: bytes per unit (4 for token ids, 8 for hashed block ids).
        ttl: seconds an untouched entry stays live, or ``None`` for no expiry.
        capacity_units: LRU capacity in units, or ``None`` for unbounded.
        evict_block: units per eviction step (vLLM block size in units), or 0 to evict whole
            leaf nodes (SGLang).
        spill_after: for an unbounded tree (no TTL, no capacity), move edges no request has
            touched in this many accesses to a temporary file; they are read back (exactly) only
            when a later prompt walks into them.
    """

    def __init__(self, *, width: int = 4, ttl: float | None = None, capacity_units: int | None = None,
                 evict_block: int = 0, spill_after: int | None = None):
        self.width = width
        self.ttl = ttl
        self.capacity = capacity_units
        self.evict_block = evict_block
        self.root = Node(b"", 0, None, float("inf"), 0, None)
        self.size = 0  # units stored (blocks × evict_block for block trees)
        self.nodes = 1
        self._heap: list[tuple[int, int, Node]] = []
        self._seq = itertools.count()
        self._tick = 0
        self._since_sweep = 0
        self.evicted_units = 0
        self.expired_units = 0
        # Spilling (unbounded trees only): edges untouched for ``spill_after`` accesses move to a
        # temporary file, so memory holds the prefixes in use, not every prefix ever seen.
        self.spill_after = spill_after if ttl is None and capacity_units is None else None
        self._spill: _SpillFile | None = None
        self._cold: collections.deque[tuple[int, Node]] = collections.deque()
        self.spilled_bytes = 0

    # ----------------------------------------------------------------- public API

    def access(self, seq: bytes, store_units: int, now: float | None, creator: Any = None,
               hit_units: int | None = None) -> tuple[int, list[Node], Any]:
        """Look up ``seq``, then store its first ``store_units`` units, in one walk.

        Args:
            seq: the prompt's units as bytes.
            store_units: how many leading units to keep in the cache after this request
                (block-aligned for block trees).
            now: arrival time in seconds (``None``: no TTL evaluation).
            creator: what new nodes record as their creator (the caller's request reference).
            hit_units: when given, whole edges within ``[0, hit_units)`` count a hit
                (``Node.hits``): another simulation's hits attributed onto this tree.

        Returns:
            ``(lcp_units, path, other)``: the live longest common prefix in units, found before
            storing; the edges read whole, in order; and the ``creator`` of the earlier prompt
            this one diverged from (the edge it left mid-way, else the most recent other
            continuation at the node where it stopped, else the one whose prompt it extends or
            repeats; ``None`` when nothing is shared).

        Every edge read whole counts a use (``Node.uses``); an edge read in part is split where
        the reading stops (when this request stores past that point), so uses always cover
        whole edges.
        """
        W = self.width
        self._tick += 1
        tick = self._tick
        t = now if now is not None else 0.0
        store = store_units * W
        hit = -1 if hit_units is None else hit_units * W
        node = self.root
        pos = 0
        n = len(seq)
        path: list[Node] = []
        other: Any = None
        partial: Node | None = None
        ttl = self.ttl if now is not None else None  # _expired, inlined: it runs for every edge
        # the leading edges read whole that end inside the stored prefix, with no other
        # simulation's hit ending inside them, are touched as they are read (the store below
        # would touch them the same way): ``touched`` of them, ending at ``tdepth``
        touching = True
        touched = tdepth = 0
        append = path.append
        while pos < n:
            child = node.children.get(seq[pos:pos + W])
            if child is not None and ttl is not None and now - child.last > ttl:
                self._drop(child)
                child = None
            if child is None:
                r = node.recent
                if r is not None and r.parent is node and not self._expired(r, now):
                    other = r.creator
                break
            k = child.key if child.spill < 0 else self._read(child)
            if not seq.startswith(k, pos):
                other = child.creator
                partial = child
                break
            end = pos + len(k)
            if touching:
                if end <= store and not pos < hit < end:
                    child.uses += 1
                    if end <= hit:
                        child.hits += 1
                    if t > child.last:  # _touch, inlined
                        child.last = t
                    child.tick = tick
                    node.recent = child
                else:
                    touching = False
                    touched, tdepth = len(path), pos
            pos = end
            append(child)
            node = child
        if touching:
            touched, tdepth = len(path), pos
        if other is None and path:
            other = path[-1].creator  # the earlier prompt this one extends or repeats
        lcp = pos
        if partial is not None:
            lcp += self._lcp(seq, pos, partial.key if partial.spill < 0 else self._read(partial)) * W
        # --- store: touch the whole edges read, split where the stored prefix ends, add the rest
        depth = tdepth
        parent = path[touched - 1] if touched else self.root
        queue = path
        i = touched
        while i < len(queue):
            child = queue[i]
            i += 1
            end = depth + child.nbytes
            if depth < hit < min(end, store):
                # the other simulation's hit ends inside this edge: split there, so the hit
                # counts on the edge it covered and not on the rest
                if queue is path:
                    queue = list(path)
                queue.insert(i, child)
                child = self._split(child, (hit - depth) // W)
                end = depth + child.nbytes
            if end > store:
                if store > depth:
                    child = self._split(child, (store - depth) // W)
                    self._touch(parent, child, t, tick)
                    child.uses += 1
                    if end <= hit:
                        child.hits += 1
                parent = None  # the stored prefix ended inside the read path
                break
            child.uses += 1
            if end <= hit:
                child.hits += 1
            if t > child.last:  # _touch, inlined: it runs for every edge
                child.last = t
            child.tick = tick
            parent.recent = child
            depth = end
            parent = child
        if parent is not None and depth < store:
            if partial is not None and depth < lcp:
                if depth < hit < min(lcp, store):
                    upper = self._split(partial, (hit - depth) // W)
                    self._touch(parent, upper, t, tick)
                    upper.uses += 1
                    upper.hits += 1
                    depth = hit
                    parent = upper
                cut = min(lcp, store) - depth
                upper = self._split(partial, cut // W)
                self._touch(parent, upper, t, tick)
                upper.uses += 1
                if depth + cut <= hit:
                    upper.hits += 1
                depth += cut
                parent = upper
            if depth < store:
                leaf = Node(seq[depth:store], depth // W, parent, t, tick, creator)
                parent.children[seq[depth:depth + W]] = leaf
                parent.recent = leaf
                self.nodes += 1
                if self.spill_after is not None:
                    self._cold.append((tick, leaf))
                self.size += self._blocks(depth // W, store // W)
                parent = leaf
        if self.capacity is not None:
            last = parent if parent is not None else None
            if last is not None and last is not self.root and not last.children:
                self._push(last)
            self._evict()
        if self.spill_after is not None and tick % 1024 == 0:
            self._spill_cold(tick)
        return lcp // W, path, other

    @staticmethod
    def _touch(parent: Node, child: Node, t: float, tick: int) -> None:
        if t > child.last:
            child.last = t
        child.tick = tick
        parent.recent = child

    def sweep(self, now: float) -> None:
        """Drop every expired subtree (bounded memory under TTL)."""
        if self.ttl is None:
            return
        stack = [self.root]
        while stack:
            node = stack.pop()
            for child in list(node.children.values()):
                if self._expired(child, now):
                    self._drop(child)
                else:
                    stack.append(child)

    def iter_nodes(self) -> Iterator[Node]:
        """Every node but the root, parents before children."""
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children.values())

    def units_of(self, node: Node) -> int:
        """Length of a node's edge in units."""
        return node.nbytes // self.width

    # ----------------------------------------------------------------- spilling

    def _read(self, node: Node) -> bytes:
        """A spilled edge's bytes, from the spill file."""
        assert self._spill is not None
        return self._spill.read(node.spill, node.nbytes)

    def _materialize(self, node: Node) -> None:
        if node.spill >= 0:
            node.key = self._read(node)
            node.spill = -1

    def _spill_cold(self, tick: int) -> None:
        """Spill the edges no access has touched in ``spill_after`` ticks (oldest first)."""
        assert self.spill_after is not None
        cutoff = tick - self.spill_after
        cold = self._cold
        if self._spill is None:
            self._spill = _SpillFile()
        batch: list[Node] = []
        while cold and cold[0][0] < cutoff:
            _, node = cold.popleft()
            if node.parent is None or node.spill >= 0:
                continue
            if node.tick >= cutoff:
                cold.append((node.tick, node))  # touched since: check again later
                continue
            if node.nbytes < 256:
                continue
            batch.append(node)
        if not batch:
            return
        at = self._spill.write([node.key for node in batch])  # one write: a system call per edge costs more
        for node in batch:
            node.spill = at
            at += node.nbytes
            self.spilled_bytes += node.nbytes
            node.key = node.key[:self.width]  # the first unit stays: it names the edge

    # ----------------------------------------------------------------- internals

    def _expired(self, node: Node, now: float | None) -> bool:
        return self.ttl is not None and now is not None and now - node.last > self.ttl

    def _lcp(self, seq: bytes, pos: int, key: bytes) -> int:
        """Common prefix, in units, of ``seq[pos:]`` and ``key``."""
        return common_prefix(seq, key, self.width, pos)

    def _blocks(self, start: int, end: int) -> int:
        """Block boundaries in ``(start, end]`` (units); plain units when not block-granular."""
        B = self.evict_block
        if not B:
            return end - start
        return (end // B - start // B) * B

    def _split(self, child: Node, units: int) -> Node:
        """Split ``child`` after ``units`` units; return the new upper node."""
        W = self.width
        self._materialize(child)
        parent = child.parent
        assert parent is not None and 0 < units < len(child.key) // W
        upper = Node(child.key[:units * W], child.start, parent, child.last, child.tick, child.creator)
        upper.uses = child.uses
        upper.hits = child.hits
        if self.spill_after is not None:
            self._cold.append((upper.tick, upper))
        parent.children[child.key[:W]] = upper
        if parent.recent is child:
            parent.recent = upper
        upper.recent = child
        child.key = child.key[units * W:]
        child.nbytes = len(child.key)
        child.start += units
        child.parent = upper
        upper.children[child.key[:W]] = child
        self.nodes += 1
        return upper

    def _drop(self, node: Node) -> None:
        """Remove a node and its subtree (expired)."""
        parent = node.parent
        assert parent is not None
        del parent.children[node.key[:self.width]]
        stack = [node]
        while stack:
            x = stack.pop()
            u = self._blocks(x.start, x.start + len(x.key) // self.width)
            self.size -= u
            self.expired_units += len(x.key) // self.width
            self.nodes -= 1
            stack.extend(x.children.values())
            x.children = {}
            x.parent = None
        if self.capacity is not None:
            self._trim_unaligned(parent)

    def _push(self, node: Node) -> None:
        if self.capacity is not None:
            heapq.heappush(self._heap, (node.tick, next(self._seq), node))

    def _trim_unaligned(self, node: Node) -> None:
        """A block tree's node that became a leaf keeps only its whole blocks; a leaf holding
        no whole block goes (its tokens were only the head of a child's block)."""
        B = self.evict_block
        while node is not self.root and not node.children and node.parent is not None:
            end = node.start + len(node.key) // self.width
            aligned = end - end % B if B else end
            if aligned > node.start:
                if aligned < end:
                    node.key = node.key[:(aligned - node.start) * self.width]
                    node.nbytes = len(node.key)
                self._push(node)
                return
            parent = node.parent
            del parent.children[node.key[:self.width]]
            node.parent = None
            self.nodes -= 1
            node = parent

    def _evict(self) -> None:
        """Evict LRU leaves (by blocks or whole nodes) until ``size <= capacity``."""
        cap = self.capacity
        assert cap is not None
        W = self.width
        B = self.evict_block
        heap = self._heap
        while self.size > cap and heap:
            tick, _, node = heapq.heappop(heap)
            if node.parent is None or node.children or node.tick != tick:
                continue  # stale entry
            units = len(node.key) // W
            end = node.start + units
            if B:
                # drop the deepest block of this leaf
                new_end = end - B
                self.size -= B
                self.evicted_units += B
                if new_end > node.start:
                    node.key = node.key[:(new_end - node.start) * W]
                    node.nbytes = len(node.key)
                    heapq.heappush(heap, (node.tick, next(self._seq), node))
                    continue
                parent = node.parent
                del parent.children[node.key[:W]]
                node.parent = None
                self.nodes -= 1
                self._trim_unaligned(parent)
            else:
                self.size -= units
                self.evicted_units += units
                parent = node.parent
                del parent.children[node.key[:W]]
                node.parent = None
                self.nodes -= 1
                if parent is not self.root and not parent.children:
                    heapq.heappush(heap, (parent.tick, next(self._seq), parent))
