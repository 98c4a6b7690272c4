"""The ``vllm`` engine: vLLM's offline ``LLM`` with automatic prefix caching on.

vLLM is imported only when this engine is built (its wheels are CUDA builds with their own
torch; they cannot run on CPU-only machines). Facts used (vLLM docs and source, checked
2026-11-29):

- ``LLM(model, enable_prefix_caching=True, block_size=B, skip_tokenizer_init=True, ...)``;
  prompts given as ``TokensPrompt(prompt_token_ids=..., cache_salt=...)``
  (https://docs.vllm.ai/en/latest/api/vllm/inputs/data.html);
- ``RequestOutput.num_cached_tokens``: prompt tokens served from the prefix cache
  (https://docs.vllm.ai/en/latest/api/vllm/outputs.html);
- ``LLM.reset_prefix_cache()`` empties the cache
  (https://docs.vllm.ai/en/latest/api/vllm/entrypoints/llm.html);
- ``load_format="dummy"`` initialises random weights from a config (for ``random:`` models);
- a ``cache_salt`` is an extra key of the first block hash, so a fresh salt gives a guaranteed
  miss: that is how the uncached baseline is run.

Per request: one timed 1-token generation with the cache (prefill + first token ≈ TTFT), a
``decode_tokens`` generation for the greedy output, and the same two with a fresh salt for the
uncached baseline. The salted runs add blocks to vLLM's pool, and vLLM's capacity is its GPU
memory, so its counts are compared with the simulator's but not required to be equal.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .engine import EngineRequest, EngineResult
from .models import ModelRef


class VLLMEngine:
    """vLLM offline engine (see the module docstring).

    Raises:
        ConfigError: when vLLM is not installed or cannot load the model.
    """

    name = "vllm"
    exact = False

    def __init__(self, ref: ModelRef, *, block_size: int = 16, capacity_tokens: int | None = None,
                 dtype: str | None = None, seed: int = 0, gpu_memory_utilization: float = 0.85,
                 vocab_size: int | None = None):
        try:
            from vllm import LLM, SamplingParams  # type: ignore[import-not-found]
            from vllm.inputs import TokensPrompt  # type: ignore[import-not-found]
        except ImportError:
            raise ConfigError("--engine vllm needs vLLM (pip install vllm, on a CUDA machine)") from None
        self._SamplingParams = SamplingParams
        self._TokensPrompt = TokensPrompt
        self.model_name = ref.name
        self.block_size = block_size
        self.capacity_tokens = capacity_tokens
        self.device = "cuda (vllm)"
        kw: dict[str, Any] = dict(enable_prefix_caching=True, block_size=block_size, seed=seed,
                                  gpu_memory_utilization=gpu_memory_utilization, skip_tokenizer_init=True)
        if dtype and dtype != "auto":
            kw["dtype"] = dtype
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if ref.kind == "random":
            self._tmp = tempfile.TemporaryDirectory(prefix="promptcache-vllm-")
            cfg = dict(ref.config)
            cfg.setdefault("model_type", "llama")
            cfg.setdefault("architectures", ["LlamaForCausalLM"])
            if vocab_size:
                cfg["vocab_size"] = vocab_size
            (Path(self._tmp.name) / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
            model = self._tmp.name
            kw["load_format"] = "dummy"
        else:
            assert ref.path is not None
            model = str(ref.path)
        t0 = time.perf_counter()
        try:
            self.llm = LLM(model=model, **kw)
        except Exception as e:  # vLLM raises many types
            raise ConfigError(f"vLLM could not load {ref.name}: {type(e).__name__}: {e}") from None
        self.info: dict[str, Any] = {"load_s": round(time.perf_counter() - t0, 3), "dtype": dtype or "auto"}
        try:
            import vllm  # type: ignore[import-not-found]

            self.info["vllm"] = vllm.__version__
        except Exception:  # pragma: no cover
            pass

    def _prompt(self, ids: list[int], salt: str | None) -> Any:
        p = self._TokensPrompt(prompt_token_ids=ids)
        if salt:
            p["cache_salt"] = salt
        return p

    def _gen(self, ids: list[int], salt: str | None, max_tokens: int) -> tuple[Any, float]:
        sp = self._SamplingParams(temperature=0.0, max_tokens=max_tokens, detokenize=False)
        t0 = time.perf_counter()
        out = self.llm.generate([self._prompt(ids, salt)], sp, use_tqdm=False)[0]
        return out, time.perf_counter() - t0

    def reset(self) -> bool:
        """``LLM.reset_prefix_cache()``."""
        try:
            got = self.llm.reset_prefix_cache()
        except Exception:
            return False
        return got is not False  # older versions return None

    def run(self, req: EngineRequest) -> EngineResult:
        """Replay one prompt (see the module docstring)."""
        ids = [int(i) for i in req.token_ids]
        salt = req.namespace or None
        d = max(1, req.decode_tokens)
        # one timed call only: a second one would find this request's own blocks cached
        first_out, best = self._gen(ids, salt, 1)
        cached = int(getattr(first_out, "num_cached_tokens", 0) or 0)
        out_ids = list(first_out.outputs[0].token_ids)
        if d > 1:
            out_ids = list(self._gen(ids, salt, d)[0].outputs[0].token_ids)
        res = EngineResult(prompt_tokens=len(ids), cached_tokens=cached, prefill_s=best, ttft_s=best, output_ids=out_ids)
        if req.uncached:
            best_u = float("inf")
            out_u: list[int] = []
            for _ in range(max(1, req.repeats)):
                o, dt = self._gen(ids, f"promptcache-uncached-{uuid.uuid4().hex}", 1)
                best_u = min(best_u, dt)
                out_u = list(o.outputs[0].token_ids)
            if d > 1:
                out_u = list(self._gen(ids, f"promptcache-uncached-{uuid.uuid4().hex}", d)[0].outputs[0].token_ids)
            res.prefill_s_uncached = res.ttft_s_uncached = best_u
            res.output_ids_uncached = out_u
        return res

    def close(self) -> None:
        """Drop the engine."""
        self.llm = None
        if self._tmp is not None:
            self._tmp.cleanup()
