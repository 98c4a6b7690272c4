"""The engines' own cache code, driven request by request on CPU: vLLM's ``KVCacheManager`` (v1,
prefix caching on) and SGLang's ``RadixCache`` (its simulated constructor, no memory pools).

Installed from PyPI with ``--no-deps`` (``scripts/test`` does it; see docs/engines.md for the
versions and the small dependencies their imports need). Two things are arranged before
importing them, neither touching the cache code: ``torchvision`` (imported at module level by an
SGLang multimodal helper; its PyPI build needs CUDA torch) is an empty stand-in module, after
transformers has recorded it as absent; and SGLang's clock (``time.monotonic``, which stamps tree
nodes for LRU) is a counter advanced on every read, so eviction order is deterministic (the
simulator advances its own stamps at the same reads).

The engines run in a subprocess of their own (:func:`run`): their imports need a
transformers that sees pillow, and the stand-ins above, in a clean interpreter, whatever the test
process imported before.

Each request runs alone from start to end (the protocol the simulator models):

- vLLM: ``get_computed_blocks`` → ``allocate_slots`` for the whole prompt (``None``: refused) →
  ``free``;
- SGLang: ``match_prefix`` on the first ``n - 1`` tokens → ``inc_lock_ref`` → ``evict`` the
  shortfall when fewer slots are free than the prompt needs → ``insert`` the prompt →
  ``dec_lock_ref``; a prompt larger than the pool is refused.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import itertools
import sys
import types
from array import array
from typing import Any, Iterable, Sequence

import numpy as np


def _absent_torchvision() -> None:
    """An empty ``torchvision`` for SGLang's module-level ``import torchvision.transforms``."""
    try:
        from transformers.utils import import_utils

        import_utils.is_torchvision_available()  # cached as absent before the stand-in exists
    except Exception:  # pragma: no cover - transformers not installed
        pass
    if "torchvision" in sys.modules or importlib.util.find_spec("torchvision") is not None:
        return

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):  # type: ignore[no-untyped-def]
            if fullname.split(".")[0] == "torchvision":
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec):  # type: ignore[no-untyped-def]
            m = types.ModuleType(spec.name)
            m.__path__ = []
            return m

        def exec_module(self, module):  # type: ignore[no-untyped-def]
            pass

    sys.meta_path.append(_Finder())


def _engines_path() -> None:
    """Put the engines' install directory on the path: ``$PROMPTCACHE_ENGINES``, else the
    checkout's ``.engines`` (``scripts/test`` installs them there, apart from the test
    environment)."""
    import os
    from pathlib import Path

    d = os.environ.get("PROMPTCACHE_ENGINES") or str(Path(__file__).resolve().parents[1] / ".engines")
    if Path(d).is_dir() and d not in sys.path:
        sys.path.append(d)


def available() -> str | None:
    """``None`` when both engines import, else why not."""
    try:
        load()
    except Exception as e:  # ImportError and whatever a half-installed engine raises
        return f"{type(e).__name__}: {e}"
    return None


_LOADED: dict[str, Any] = {}


def load() -> dict[str, Any]:
    """Import both engines' cache modules once."""
    if _LOADED:
        return _LOADED
    import logging
    import warnings

    _engines_path()
    _absent_torchvision()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            import torch
            from vllm.sampling_params import SamplingParams
            from vllm.utils.hashing import sha256
            from vllm.v1.core.kv_cache_manager import KVCacheManager
            from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
            from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
            from vllm.v1.request import Request
            from sglang.srt.mem_cache import radix_cache
            from sglang.srt.mem_cache.base_prefix_cache import EvictParams, InsertParams, MatchPrefixParams
        finally:
            logging.disable(logging.NOTSET)
    import vllm
    import sglang

    _LOADED.update(locals())
    _LOADED["versions"] = {"vllm": vllm.__version__, "sglang": sglang.__version__}
    return _LOADED


def tokens(p: Any) -> list[int]:
    """A promptcache ``Prompt`` as the token ids the engines get: token prompts as they are;
    hashed prompts with each block id repeated once per token it covers (the last block its
    real length)."""
    dt = "<u4" if p.width == 4 else "<u8"
    ids = np.frombuffer(p.units, dtype=dt)
    if p.unit_tokens == 1:
        return ids.tolist()
    lens = np.full(len(ids), p.unit_tokens, dtype=np.int64)
    lens[-1] = p.n_tokens - p.unit_tokens * (len(ids) - 1)
    return np.repeat(ids, lens).tolist()


def vllm_cached(prompts: Iterable[Sequence[int]], capacity_tokens: int, block_size: int) -> list[int | None]:
    """Cached tokens per request from vLLM's own ``KVCacheManager`` (``None``: refused)."""
    L = load()
    torch = L["torch"]
    L["init_none_hash"](L["sha256"])
    spec = L["FullAttentionSpec"](block_size=block_size, num_kv_heads=1, head_size=8, dtype=torch.float16)
    cfg = L["KVCacheConfig"](num_blocks=capacity_tokens // block_size, kv_cache_tensors=[],
                             kv_cache_groups=[L["KVCacheGroupSpec"](["layer.0"], spec)])
    mgr = L["KVCacheManager"](cfg, max_model_len=1 << 30, scheduler_block_size=block_size,
                              hash_block_size=block_size, enable_caching=True)
    hasher = L["get_request_block_hasher"](block_size, L["sha256"])
    out: list[int | None] = []
    for i, toks in enumerate(prompts):
        req = L["Request"](f"r{i}", list(toks), L["SamplingParams"](max_tokens=1), None, block_hasher=hasher)
        blocks, n = mgr.get_computed_blocks(req)[:2]
        if mgr.allocate_slots(req, len(toks) - n, n, blocks) is None:
            out.append(None)
            continue
        mgr.free(req)
        out.append(n)
    return out


class _Pool:
    """The token-slot pool behind a simulated ``RadixCache``: counts free slots."""

    device = "cpu"

    def __init__(self, size: int):
        self.free = size

    def free_segment(self, value, start_pos=0):  # type: ignore[no-untyped-def]
        self.free += len(value)


def sglang_cached(prompts: Iterable[Sequence[int]], capacity_tokens: int, page_size: int = 1) -> list[int | None]:
    """Cached tokens per request from SGLang's own ``RadixCache`` (``None``: refused)."""
    L = load()
    rc, torch = L["radix_cache"], L["torch"]
    clock = itertools.count(1)
    real_time = rc.time
    rc.time = types.SimpleNamespace(monotonic=lambda: float(next(clock)), perf_counter=real_time.perf_counter,
                                    time=real_time.time)
    try:
        pool = _Pool(capacity_tokens)
        cache = rc.RadixCache.create_simulated(mock_allocator=pool, page_size=page_size)
        out: list[int | None] = []
        for toks in prompts:
            n = len(toks)
            if n > capacity_tokens:
                out.append(None)
                continue
            key = array("q", toks)
            m = cache.match_prefix(L["MatchPrefixParams"](key=rc.RadixKey(key[:n - 1])))
            hit, node = m.device_prefix_len, m.last_device_node
            cache.inc_lock_ref(node)
            need = n - hit
            if need > pool.free:
                cache.evict(L["EvictParams"](num_tokens=need - pool.free))
            assert need <= pool.free, "the pool cannot hold the request"
            pool.free -= need
            res = cache.insert(L["InsertParams"](key=rc.RadixKey(key), value=torch.arange(n)))
            pool.free += res.prefix_len - hit  # slots of tokens the tree already held are freed
            pool.free += n - (n // page_size) * page_size  # an unaligned tail is not kept
            cache.dec_lock_ref(node)
            out.append(hit)
        return out
    finally:
        rc.time = real_time


def run(kind: str, prompts: Sequence[Any], capacity_tokens: int, block_size: int = 1) -> list[int | None]:
    """Cached tokens per request from ``kind``'s own code (``vllm`` or ``sglang``), run in a
    fresh interpreter; ``prompts`` are promptcache ``Prompt`` s.

    Raises:
        RuntimeError: with the subprocess's error output when it fails.
    """
    import pickle
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="promptcache-engines-") as d:
        src, dst = Path(d) / "in.pickle", Path(d) / "out.pickle"
        src.write_bytes(pickle.dumps((kind, capacity_tokens, block_size,
                                      [(p.units, p.width, p.unit_tokens, p.n_tokens) for p in prompts])))
        proc = subprocess.run([sys.executable, __file__, str(src), str(dst)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{kind} run failed:\n{proc.stderr[-4000:]}")
        return pickle.loads(dst.read_bytes())


def check() -> str | None:
    """``None`` when both engines import in a fresh interpreter, else why not."""
    import subprocess

    proc = subprocess.run([sys.executable, __file__, "--check"], capture_output=True, text=True)
    return None if proc.returncode == 0 else (proc.stdout + proc.stderr).strip().splitlines()[-1]


def _main(argv: list[str]) -> int:
    import pickle
    from types import SimpleNamespace

    if argv == ["--check"]:
        why = available()
        print(why or "ok")
        return 0 if why is None else 1
    src, dst = argv
    kind, cap, block, rows = pickle.loads(open(src, "rb").read())
    prompts = [SimpleNamespace(units=u, width=w, unit_tokens=t, n_tokens=n) for u, w, t, n in rows]
    toks = [tokens(p) for p in prompts]
    out = vllm_cached(toks, cap, block) if kind == "vllm" else sglang_cached(toks, cap, block)
    with open(dst, "wb") as fh:
        pickle.dump(out, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
