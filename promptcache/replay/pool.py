"""A paged prefix cache's block pool, written independently of the simulator.

This is the bookkeeping half of the in-process engine's prefix cache (the other half, the KV
tensors, lives with the model in :mod:`promptcache.replay.hf`). It follows vLLM V1's block pool
(``vllm/v1/core/block_pool.py``, ``vllm/v1/core/kv_cache_utils.py`` and
``vllm/v1/core/kv_cache_manager.py``, https://github.com/vllm-project/vllm, checked 2026-11-29;
https://docs.vllm.ai/en/latest/design/prefix_caching.html):

- every full block of a prompt is keyed by its chained hash
  (:func:`promptcache.prefix.blocks.block_hashes`); partial blocks are never cached;
- a lookup takes the longest run of leading cached blocks, capped at ``(n - 1) // B`` blocks
  for an ``n``-token prompt (``max_cache_hit_length = num_tokens - 1``: the last prompt token
  is always recomputed, so the model has a position to produce logits from);
- a hit block is *touched*: its reference count goes up and, if it was free, it leaves the
  free queue;
- new blocks come from the head of the free queue; a block popped there that still holds a
  hash is evicted (its hash leaves the cache); never-used blocks are handed out first, as
  vLLM's queue starts with every block in id order and freed blocks go to its tail;
- when a request finishes its blocks are freed in *reverse* order and appended to the tail of
  the free queue, so the queue is LRU across requests and, within a request, the deepest block
  of a chain is evicted first.

Two deliberate differences, both so that the pool holds exactly what the simulator's
block-granular LRU tree (:mod:`promptcache.prefix.tree`, ``rules/providers/vllm.yaml``) holds,
which is the point of comparing the two:

- only prompt blocks are cached (vLLM also caches full blocks of generated tokens, which a
  replayed log's later prompts almost never match), and the pool's capacity counts cached full
  blocks only (vLLM's pool also holds running requests' partial and decode blocks);
- a recomputed last block whose hash is already cached (a prompt that is a whole number of
  blocks and fully cached) touches the cached block instead of caching a duplicate; vLLM keeps
  the duplicate ("We currently don't de-duplicate the blocks in the cache", ``block_pool.py``),
  which costs it one extra pool block until that block is evicted.

Nothing here imports torch: a block's ``payload`` is whatever the engine stores (its KV).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from ..prefix.blocks import block_hashes


class Block:
    """One pool block: id, reference count, hash when cached, free-queue links, payload."""

    __slots__ = ("id", "ref_cnt", "hash", "prev", "next", "payload")

    def __init__(self, block_id: int):
        self.id = block_id
        self.ref_cnt = 0
        self.hash: bytes | None = None
        self.prev: Block | None = None
        self.next: Block | None = None
        self.payload: Any = None

    def __repr__(self) -> str:
        return f"Block({self.id}, ref={self.ref_cnt}, hash={self.hash.hex()[:8] if self.hash else None})"


class FreeQueue:
    """Doubly linked list of free blocks, eviction order from head to tail (O(1) removal
    from the middle, as vLLM's ``FreeKVCacheBlockQueue``)."""

    def __init__(self) -> None:
        self.head = Block(-1)
        self.tail = Block(-1)
        self.head.next = self.tail
        self.tail.prev = self.head
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Block]:
        b = self.head.next
        while b is not None and b is not self.tail:
            yield b
            b = b.next

    def popleft(self) -> Block | None:
        """Remove and return the head block, or ``None`` when empty."""
        b = self.head.next
        if b is self.tail or b is None:
            return None
        self.remove(b)
        return b

    def remove(self, b: Block) -> None:
        """Unlink a block that is in the queue."""
        assert b.prev is not None and b.next is not None, "block is not in the free queue"
        b.prev.next = b.next
        b.next.prev = b.prev
        b.prev = b.next = None
        self.size -= 1

    def append(self, b: Block) -> None:
        """Link a block at the tail."""
        last = self.tail.prev
        assert last is not None
        last.next = b
        b.prev = last
        b.next = self.tail
        self.tail.prev = b
        self.size += 1


class BlockPool:
    """A pool of ``num_blocks`` blocks (``None``: unbounded) with a hash → cached block map.

    Attributes:
        num_blocks: capacity in blocks, or ``None``.
        cached: block hash → cached block.
        free: the free queue (eviction candidates and empty blocks).
        evicted_blocks: cached blocks evicted so far.
    """

    def __init__(self, num_blocks: int | None):
        if num_blocks is not None and num_blocks < 0:
            raise ValueError("num_blocks must be >= 0")
        self.num_blocks = num_blocks
        self.blocks: list[Block] = []
        self.cached: dict[bytes, Block] = {}
        self.free = FreeQueue()
        self.evicted_blocks = 0

    def lookup(self, hashes: Sequence[bytes], max_blocks: int) -> list[Block]:
        """The cached blocks of the longest leading run of ``hashes``, at most ``max_blocks``."""
        out: list[Block] = []
        for h in hashes[:max(0, max_blocks)]:
            b = self.cached.get(h)
            if b is None:
                break
            out.append(b)
        return out

    def touch(self, b: Block) -> None:
        """Take a reference on a block, pulling it out of the free queue if it was free."""
        if b.ref_cnt == 0 and b.prev is not None:
            self.free.remove(b)
        b.ref_cnt += 1

    def allocate(self) -> Block | None:
        """A block for new content (referenced once): a never-used one while the pool has
        room, else the free queue's head, evicting its cached content; ``None`` when every
        block is in use."""
        if self.num_blocks is None or len(self.blocks) < self.num_blocks:
            b = Block(len(self.blocks))
            self.blocks.append(b)
        else:
            b = self.free.popleft()
            if b is None:
                return None
            if b.hash is not None:
                if self.cached.get(b.hash) is b:
                    del self.cached[b.hash]
                b.hash = None
                b.payload = None
                self.evicted_blocks += 1
        b.ref_cnt = 1
        return b

    def cache(self, b: Block, h: bytes, payload: Any) -> None:
        """Mark an allocated block as holding the full block with hash ``h``."""
        assert b.hash is None and h not in self.cached
        b.hash = h
        b.payload = payload
        self.cached[h] = b

    def free_blocks(self, ordered: Sequence[Block]) -> None:
        """Release a finished request's blocks, given in prompt order: they are freed in
        reverse, so the deepest block sits nearest the head of the free queue."""
        for b in reversed(ordered):
            b.ref_cnt -= 1
            assert b.ref_cnt >= 0
            if b.ref_cnt == 0:
                self.free.append(b)

    @property
    def cached_blocks(self) -> int:
        """Blocks currently holding cached content."""
        return len(self.cached)


@dataclass
class Lease:
    """One request's hold on the pool between :meth:`PrefixCache.begin` and
    :meth:`PrefixCache.commit`.

    Attributes:
        pool: the namespace's pool.
        hashes: chained hashes of the prompt's full blocks.
        hits: the cached blocks served to the request (its first ``len(hits)`` blocks).
        n_tokens: prompt length, tokens.
        block_size: tokens per block.
        held: every block the request references, in prompt order.
        done: committed or released.
    """

    pool: BlockPool
    hashes: list[bytes]
    hits: list[Block]
    n_tokens: int
    block_size: int
    held: list[Block] = field(default_factory=list)
    done: bool = False

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens served from the cache."""
        return len(self.hits) * self.block_size


class PrefixCache:
    """The engine's prefix cache: one :class:`BlockPool` per cache namespace.

    The simulator keeps one cache per namespace (model and ``prompt_cache_key`` under the vLLM
    rules), each with the full ``--capacity-tokens``; a pool per namespace, each with
    ``capacity_blocks``, holds the same blocks. The namespace is also the first block's salt,
    as vLLM's ``cache_salt`` isolates groups of requests.

    Args:
        block_size: tokens per block.
        capacity_blocks: cached full blocks each namespace may hold, or ``None`` for unbounded.

    Raises:
        ValueError: for a block size below 1 or a negative capacity.
    """

    def __init__(self, block_size: int, capacity_blocks: int | None):
        if block_size < 1:
            raise ValueError("block_size must be at least 1")
        if capacity_blocks is not None and capacity_blocks < 0:
            raise ValueError("capacity_blocks must be >= 0")
        self.block_size = block_size
        self.capacity_blocks = capacity_blocks
        self.pools: dict[str, BlockPool] = {}

    def reset(self) -> None:
        """Drop every cached block (a fresh cache)."""
        self.pools.clear()

    def pool(self, namespace: str) -> BlockPool:
        """The pool of a namespace (created empty on first use)."""
        p = self.pools.get(namespace)
        if p is None:
            p = self.pools[namespace] = BlockPool(self.capacity_blocks)
        return p

    def begin(self, units: bytes, namespace: str = "") -> Lease:
        """Look a prompt up and take references on its hit blocks.

        Args:
            units: token ids as little-endian uint32 bytes.
            namespace: cache namespace (also the salt of the first block hash).

        Returns:
            A :class:`Lease`; ``lease.cached_tokens`` prompt tokens are served from the cache.
        """
        n = len(units) // 4
        pool = self.pool(namespace)
        hashes = block_hashes(units, self.block_size, salt=namespace or None)
        hits = pool.lookup(hashes, (n - 1) // self.block_size if n else 0)
        for b in hits:
            pool.touch(b)
        return Lease(pool, hashes, hits, n, self.block_size, list(hits))

    def commit(self, lease: Lease, payload: Callable[[int], Any]) -> int:
        """Cache the request's new full blocks, then release all its blocks.

        Args:
            lease: from :meth:`begin`.
            payload: block index (0-based, in the prompt) → what the block stores (its KV);
                called once per newly cached block, in order.

        Returns:
            How many blocks were newly cached (fewer than the prompt's uncached full blocks
            when the pool is too small to hold the prompt).
        """
        assert not lease.done, "lease committed twice"
        pool = lease.pool
        new = 0
        for j in range(len(lease.hits), len(lease.hashes)):
            h = lease.hashes[j]
            got = pool.cached.get(h)
            if got is not None:  # the recomputed last block is already cached: reuse it
                pool.touch(got)
                lease.held.append(got)
                continue
            b = pool.allocate()
            if b is None:  # every block is held by this request: the deeper blocks stay uncached
                break
            pool.cache(b, h, payload(j))
            lease.held.append(b)
            new += 1
        pool.free_blocks(lease.held)
        lease.done = True
        return new

    def release(self, lease: Lease) -> None:
        """Give back a lease's references without caching anything (a failed request)."""
        if not lease.done:
            lease.pool.free_blocks(lease.held)
            lease.done = True
