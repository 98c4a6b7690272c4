"""The in-process engine: a Hugging Face causal LM on torch with a block-hashed prefix cache.

Per request (token ids from the audit pipeline):

1. without the cache (when asked): prefill the whole prompt into a fresh KV cache, take the
   last position's logits, greedy-decode a few tokens: the baseline time and the reference
   output;
2. with the cache: look the prompt's chained block hashes up in the pool
   (:class:`~promptcache.replay.pool.PrefixCache`; hits capped at ``(n - 1) // B`` blocks),
   assemble the hit blocks' KV into a ``DynamicCache``, prefill only the remaining tokens,
   greedy-decode the same number of tokens; then store the prompt's new full blocks' KV in the
   pool (LRU over a byte budget), and release the request's blocks in reverse order;
3. compare: the last-token logits (max absolute difference) and the greedy tokens.

The cached run prefills its uncached tokens in chunks (``prefill_chunk``: 512 tokens on CPU and
2,048 on CUDA by default, as engines with chunked prefill do) whenever part of the prompt came from the cache: a single
forward pass over a prefilled ``DynamicCache`` gets an explicit attention mask, with which SDPA
computes the whole square of new tokens against each other instead of its causal half (measured
2026-11-29, SmolLM2 on 1 CPU thread, 4,232 new tokens after 32 cached ones: 26.6 s in one pass,
18.3 s in 512-token chunks, 18.6 s for the whole prompt without the cache). A prompt with no
cache hit runs in one pass, exactly like the uncached baseline.

Timing: ``prefill_s`` covers looking up and assembling the cached KV and the forward passes over
the uncached tokens; ``ttft_s`` adds picking the first token; storing the new blocks is not
timed (an engine with paged attention writes KV in place). On CUDA every timer synchronises.
Only the last position's logits are computed (``logits_to_keep=1``) in both runs.

KV layout per cached block: one tensor ``[layers, 2, kv_heads, block_size, head_dim]`` on the
model's device, so a block's size in bytes is ``kv_bytes_per_token × block_size`` exactly and
the byte budget converts to the simulator's capacity as
``capacity_tokens = (budget_bytes // (kv_bytes_per_token × B)) × B`` (cached full blocks only).

Works with transformers 5.17 and later (the cache keyword is ``cache=`` where the model's
``forward`` has it, else ``past_key_values=``) and torch 2.11 and later.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError, InputError
from .engine import EngineRequest, EngineResult
from .models import LoadedModel
from .pool import Block, PrefixCache


def tune_malloc() -> bool:
    """Keep freed memory in the process (glibc ``mallopt``): allocations up to 32 MiB come from
    the heap instead of fresh ``mmap`` pages, and the heap is not trimmed back to the system.

    PyTorch's CPU allocator calls ``malloc`` for every tensor; with glibc's defaults each large
    activation is a fresh mapping whose pages fault in on first touch, which on virtual machines
    costs seconds per GiB and makes prefill times erratic (measured on this project's
    machines, 2026-11-29: 1 GiB of fresh pages 0.7-2.6 s; reused heap memory 0.02-0.05 s). The
    same effect is why PyTorch's CPU tuning guide recommends jemalloc or tcmalloc
    (https://docs.pytorch.org/tutorials/recipes/recipes/tuning_guide.html, checked
    2026-11-29). It applies to both runs alike, with and without the cache.

    Returns:
        True when the settings were applied (Linux with glibc), else False. Set
        ``PROMPTCACHE_MALLOC_TUNING=0`` to skip.
    """
    import os
    import sys

    if os.environ.get("PROMPTCACHE_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        ok = libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1
        ok = libc.mallopt(M_TRIM_THRESHOLD, (1 << 31) - 1) == 1 and ok
        return ok
    except (OSError, AttributeError):
        return False


def capacity_blocks_for(budget_bytes: int | None, kv_bytes_per_token: int, block_size: int) -> int | None:
    """Cached full blocks a byte budget holds: ``budget // (kv_bytes_per_token × B)``.

    Raises:
        ConfigError: when the budget is smaller than one block.
    """
    if budget_bytes is None:
        return None
    per_block = kv_bytes_per_token * block_size
    blocks = budget_bytes // per_block
    if blocks < 1:
        raise ConfigError(f"--kv-budget {budget_bytes:,} bytes is smaller than one {block_size}-token block "
                          f"({per_block:,} bytes for this model)")
    return int(blocks)


class HFEngine:
    """The ``hf`` engine (see the module docstring).

    Args:
        loaded: the model (:func:`promptcache.replay.models.load_model`).
        block_size: tokens per cached block.
        kv_budget_bytes: LRU byte budget of the prefix cache per namespace, or ``None`` for
            unbounded.
        warmup: run a short throwaway prefill first so the first request's timings are fair.
        prefill_chunk: tokens per forward pass when prefilling after a cache hit (``None``: 512
            on CPU, 2,048 on CUDA, where kernel launches cost more than the masked work saved).
        threads: CPU threads for torch (``None``: torch's default, one per core).

    Raises:
        ConfigError: for a budget below one block or a model whose KV cache is not a plain
            per-layer key/value cache.
    """

    name = "hf"
    exact = True

    def __init__(self, loaded: LoadedModel, *, block_size: int = 16, kv_budget_bytes: int | None = None,
                 warmup: bool = True, prefill_chunk: int | None = None, threads: int | None = None):
        import torch

        if threads is not None:
            if threads < 1:
                raise ConfigError("--threads must be at least 1")
            torch.set_num_threads(threads)
        if prefill_chunk is None:
            prefill_chunk = 2048 if loaded.device.startswith("cuda") else 512
        self.prefill_chunk = max(1, int(prefill_chunk))
        self.torch = torch
        self.loaded = loaded
        self.model = loaded.model
        self.model_name = loaded.ref.name
        self.device = loaded.device
        self.block_size = block_size
        cap = capacity_blocks_for(kv_budget_bytes, loaded.kv_bytes_per_token, block_size)
        self.capacity_tokens = cap * block_size if cap is not None else None
        self.cache = PrefixCache(block_size, cap)
        self.context = getattr(self.model.config, "max_position_embeddings", None)
        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._keep_kw = ("logits_to_keep" if "logits_to_keep" in params
                         else "num_logits_to_keep" if "num_logits_to_keep" in params else None)
        from transformers import DynamicCache

        try:
            DynamicCache(config=self.model.config)
            self._new_cache: Callable[[], Any] = lambda: DynamicCache(config=self.model.config)
        except TypeError:
            self._new_cache = DynamicCache
        self.info: dict[str, Any] = {
            "dtype": loaded.dtype, "kv_bytes_per_token": loaded.kv_bytes_per_token,
            "kv_budget_bytes": kv_budget_bytes, "capacity_tokens": self.capacity_tokens,
            "load_s": round(loaded.load_s, 3), "load_note": loaded.note, "torch": torch.__version__,
            "threads": torch.get_num_threads(), "prefill_chunk": self.prefill_chunk,
        }
        try:
            import transformers

            self.info["transformers"] = transformers.__version__
        except Exception:  # pragma: no cover - version lookup only
            pass
        if not self.device.startswith("cuda"):
            self.info["malloc_tuning"] = tune_malloc()
        if warmup:
            self.warmup()

    # ------------------------------------------------------------------ helpers

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()

    def _forward(self, ids: Any, cache: Any) -> Any:
        kw: dict[str, Any] = {self._cache_kw: cache, "use_cache": True}
        if self._keep_kw:
            kw[self._keep_kw] = 1
        out = self.model(input_ids=ids, **kw)
        return out.logits[0, -1]

    def _forward_chunked(self, ids: Any, cache: Any) -> Any:
        """Last-token logits of ``ids`` appended to ``cache`` in ``prefill_chunk`` pieces."""
        n = ids.shape[1]
        step = self.prefill_chunk
        logits = None
        for i in range(0, n, step):
            logits = self._forward(ids[:, i:i + step], cache)
        return logits

    @staticmethod
    def _layers(cache: Any) -> list[tuple[Any, Any]]:
        """(keys, values) per layer, each ``[1, kv_heads, tokens, head_dim]``."""
        if hasattr(cache, "layers"):
            out = []
            for layer in cache.layers:
                k, v = getattr(layer, "keys", None), getattr(layer, "values", None)
                if k is None or v is None or not hasattr(k, "shape"):
                    raise ConfigError("this model's KV cache is not a plain per-layer key/value cache; "
                                      "the hf engine supports full-attention decoder models")
                out.append((k, v))
            return out
        return list(zip(cache.key_cache, cache.value_cache))

    def _cache_from_blocks(self, blocks: list[Block]) -> Any:
        """A fresh ``DynamicCache`` holding the blocks' KV (layer by layer, so no transient
        copy of the whole prefix is made)."""
        cache = self._new_cache()
        if blocks:
            cat = self.torch.cat
            for li in range(blocks[0].payload.shape[0]):
                kv = cat([b.payload[li] for b in blocks], dim=2)  # [2, kv_heads, tokens, head_dim]
                cache.update(kv[0].unsqueeze(0), kv[1].unsqueeze(0), li)
        return cache

    def _payloads(self, cache: Any, first: int, end: int) -> Callable[[int], Any]:
        """Block index → its KV ``[layers, 2, kv_heads, B, head_dim]`` (a contiguous copy)."""
        B = self.block_size
        torch = self.torch
        kv = torch.stack([torch.stack((k[0, :, first * B:end * B], v[0, :, first * B:end * B]))
                          for k, v in self._layers(cache)])

        def get(j: int) -> Any:
            return kv[:, :, :, (j - first) * B:(j - first + 1) * B].clone()
        return get

    def _decode(self, first: int, cache: Any, n: int) -> list[int]:
        out = [first]
        for _ in range(n - 1):
            ids = self.torch.tensor([[out[-1]]], device=self.device)
            out.append(int(self._forward(ids, cache).argmax()))
        return out

    def _prefill(self, ids: Any, cache: Any) -> tuple[Any, int, float, float]:
        """(logits, first token, prefill seconds, TTFT seconds) of one forward pass."""
        self._sync()
        t0 = time.perf_counter()
        logits = self._forward(ids, cache)
        self._sync()
        t1 = time.perf_counter()
        first = int(logits.argmax())
        t2 = time.perf_counter()
        return logits, first, t1 - t0, t2 - t0

    # ------------------------------------------------------------------ engine API

    def warmup(self) -> None:
        """A throwaway 64-token prefill, with and without a cached half, and one decode step."""
        torch = self.torch
        vocab = self.loaded.vocab_size
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, vocab, (1, 64), generator=g).to(self.device)
        with torch.inference_mode():
            c = self._new_cache()
            logits = self._forward(ids[:, :32], c)
            logits = self._forward(ids[:, 32:], c)
            self._decode(int(logits.argmax()), c, 2)
            self._forward(ids, self._new_cache())
        self._sync()

    def reset(self) -> bool:
        """Empty the prefix cache."""
        self.cache.reset()
        return True

    def run(self, req: EngineRequest) -> EngineResult:
        """Replay one prompt (see the module docstring).

        Raises:
            InputError: for an empty prompt or token ids outside the model's vocabulary.
        """
        torch = self.torch
        ids = [int(i) for i in req.token_ids]
        n = len(ids)
        if n == 0:
            raise InputError(f"request {req.id}: empty prompt")
        top = max(ids)
        if top >= self.loaded.vocab_size:
            raise InputError(f"request {req.id}: token id {top} is outside the model's vocabulary "
                             f"({self.loaded.vocab_size}); use the model's own tokenizer")
        decode = max(1, int(req.decode_tokens))
        repeats = max(1, int(getattr(req, "repeats", 1)))
        units = np.asarray(ids, dtype="<u4").tobytes()
        all_ids = torch.tensor([ids], device=self.device)
        inf = float("inf")
        pre_u = ttft_u = pre_c = ttft_c = inf
        logits_u: Any = None
        out_u: list[int] | None = None
        with torch.inference_mode():
            lease = self.cache.begin(units, req.namespace)
            try:
                k = lease.cached_tokens
                for rep in range(repeats):
                    last = rep == repeats - 1
                    if req.uncached:
                        c0 = self._new_cache()
                        logits_u, first_u, p, t = self._prefill(all_ids, c0)
                        pre_u, ttft_u = min(pre_u, p), min(ttft_u, t)
                        if last:
                            out_u = self._decode(first_u, c0, decode)
                        del c0
                    self._sync()
                    t0 = time.perf_counter()
                    c = self._cache_from_blocks(lease.hits)
                    logits = self._forward_chunked(all_ids[:, k:], c) if k else self._forward(all_ids, c)
                    self._sync()
                    t1 = time.perf_counter()
                    first = int(logits.argmax())
                    t2 = time.perf_counter()
                    pre_c, ttft_c = min(pre_c, t1 - t0), min(ttft_c, t2 - t0)
                    if not last:
                        del c
                stored = 0
                if len(lease.hashes) > len(lease.hits):
                    stored = self.cache.commit(lease, self._payloads(c, len(lease.hits), len(lease.hashes)))
                else:
                    self.cache.commit(lease, lambda j: None)
            except BaseException:
                self.cache.release(lease)
                raise
            out = self._decode(first, c, decode)
            del c
            diff = None
            if logits_u is not None:
                diff = float((logits.float() - logits_u.float()).abs().max())
        measured_u = req.uncached
        notes = []
        if self.context and n > self.context:
            notes.append(f"prompts longer than the model's context ({self.context:,} tokens) were replayed: the "
                         "cache comparison holds, but the model's outputs there mean nothing")
        return EngineResult(notes=notes, 
            prompt_tokens=n, cached_tokens=k, prefill_s=pre_c, ttft_s=ttft_c, output_ids=out,
            prefill_s_uncached=pre_u if measured_u else None, ttft_s_uncached=ttft_u if measured_u else None,
            output_ids_uncached=out_u, logits_max_abs_diff=diff, cached_blocks_stored=stored, logits=logits)

    def close(self) -> None:
        """Drop the cache and the model."""
        self.cache.reset()
        self.model = None
