"""The ``openai`` engine: any OpenAI-compatible server (vLLM, SGLang) over HTTP, with the
standard library's ``urllib`` (no new dependency).

Facts used (checked 2026-11-29):

- ``POST {base}/completions`` accepts the prompt as a list of token ids, so the server sees
  exactly the pipeline's tokens (vLLM: https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html;
  SGLang: https://docs.sglang.ai/basic_usage/openai_api_completions.html);
- the reply's ``usage.prompt_tokens_details.cached_tokens`` gives the prompt tokens served from
  the prefix cache (vLLM needs ``--enable-prompt-tokens-details``, SGLang
  ``--enable-cache-report``);
- the prefix cache is emptied with ``POST /reset_prefix_cache`` (vLLM, served when
  ``VLLM_SERVER_DEV_MODE=1``) or ``POST /flush_cache`` (SGLang);
- Prometheus counters at ``GET /metrics``: vLLM's ``vllm:prefix_cache_queries`` and
  ``vllm:prefix_cache_hits`` (tokens; https://docs.vllm.ai/en/latest/design/metrics.html),
  SGLang's ``sglang:cache_hit_rate``; where the reply has no ``cached_tokens`` the per-request
  change of ``vllm:prefix_cache_hits`` is used instead;
- a per-request ``cache_salt`` (vLLM) isolates requests; a fresh salt is a guaranteed miss,
  which is how the uncached baseline runs; a server that rejects or ignores it gets no
  baseline.

Times are wall-clock times of 1-token completions (prefill + first token + HTTP overhead),
so they approximate TTFT. Only reads the network when ``--base-url`` asks for it.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

from ..errors import ConfigError
from .engine import EngineRequest, EngineResult

_METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([0-9.eE+-]+|NaN|\+Inf|-Inf)\s*$")


def parse_prometheus(text: str) -> dict[str, float]:
    """Sum each metric's samples over its labels: ``name → value`` (``_total`` suffixes kept
    as exposed). Comment and malformed lines are ignored."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _METRIC.match(line.strip())
        if not m:
            continue
        try:
            v = float(m.group(3))
        except ValueError:
            continue
        out[m.group(1)] = out.get(m.group(1), 0.0) + v
    return out


def _metric(metrics: dict[str, float], *names: str) -> float | None:
    for n in names:
        for k in (n, n + "_total"):
            if k in metrics:
                return metrics[k]
    return None


class OpenAIEngine:
    """An OpenAI-compatible server (see the module docstring).

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1``.
        model: the served model name (default: the first of ``GET /models``).
        api_key: sent as a bearer token when given.
        block_size: the server's block size, for the simulation.
        capacity_tokens: simulator capacity to assume (``None``: unbounded).
        timeout: seconds per HTTP call.

    Raises:
        ConfigError: when the server cannot be reached or names no model.
    """

    name = "openai"
    exact = False

    def __init__(self, base_url: str, *, model: str | None = None, api_key: str | None = None,
                 block_size: int = 16, capacity_tokens: int | None = None, timeout: float = 600.0):
        self.base = base_url.rstrip("/")
        self.root = self.base[:-3] if self.base.endswith("/v1") else self.base
        self.api_key = api_key
        self.timeout = timeout
        self.block_size = block_size
        self.capacity_tokens = capacity_tokens
        self.device = self.base
        self.salt_ok: bool | None = None
        self._warned: set[str] = set()
        if model is None:
            try:
                got = self._call("GET", f"{self.base}/models")
                model = got["data"][0]["id"]
            except (KeyError, IndexError, TypeError):
                raise ConfigError(f"{self.base}/models lists no model; pass --served-model") from None
        self.model = model
        self.model_name = f"{model} @ {self.base}"
        self._m0 = self.metrics()
        self.info: dict[str, Any] = {"served_model": model, "metrics_exposed": self._m0 is not None}

    # ------------------------------------------------------------------ HTTP

    def _call(self, method: str, url: str, body: dict[str, Any] | None = None, *, raw: bool = False) -> Any:
        data = json.dumps(body).encode("utf-8") if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace")
            raise ConfigError(f"{method} {url}: HTTP {e.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ConfigError(f"{method} {url}: {e}") from None
        if raw:
            return payload.decode("utf-8", "replace")
        try:
            return json.loads(payload)
        except json.JSONDecodeError:
            raise ConfigError(f"{method} {url}: the reply is not JSON") from None

    def metrics(self) -> dict[str, float] | None:
        """The server's Prometheus metrics, or ``None`` where ``/metrics`` is not served."""
        try:
            return parse_prometheus(self._call("GET", f"{self.root}/metrics", raw=True))
        except ConfigError:
            return None

    def _note(self, msg: str, res: EngineResult) -> None:
        if msg not in self._warned:
            self._warned.add(msg)
            res.notes.append(msg)

    def _complete(self, ids: list[int], max_tokens: int, salt: str | None) -> tuple[dict[str, Any], float]:
        body: dict[str, Any] = {"model": self.model, "prompt": ids, "max_tokens": max_tokens, "temperature": 0,
                                "stream": False, "logprobs": 1, "return_tokens_as_token_ids": True}
        if salt:
            body["cache_salt"] = salt
        t0 = time.perf_counter()
        got = self._call("POST", f"{self.base}/completions", body)
        return got, time.perf_counter() - t0

    @staticmethod
    def _cached(got: dict[str, Any]) -> int | None:
        try:
            v = got["usage"]["prompt_tokens_details"]["cached_tokens"]
        except (KeyError, TypeError):
            return None
        return int(v) if v is not None else None

    @staticmethod
    def _tokens(got: dict[str, Any]) -> tuple[list[int], str]:
        """(token ids where the server returned them as ``token_id:N``, text)."""
        ch = (got.get("choices") or [{}])[0]
        text = ch.get("text") or ""
        ids: list[int] = []
        toks = ((ch.get("logprobs") or {}).get("tokens")) or []
        for t in toks:
            if isinstance(t, str) and t.startswith("token_id:"):
                try:
                    ids.append(int(t.split(":", 1)[1]))
                    continue
                except ValueError:
                    pass
            ids = []
            break
        return ids, text

    def _counters(self, now: dict[str, float] | None) -> None:
        """Prefix-cache counters since the engine started, into ``info["prometheus"]`` (tokens;
        every call the engine makes counts: the greedy-output and salted baseline calls too)."""
        if now is None or self._m0 is None:
            return
        out: dict[str, float] = {}
        for name in ("vllm:prefix_cache_queries", "vllm:prefix_cache_hits"):
            a, b = _metric(self._m0, name), _metric(now, name)
            if a is not None and b is not None:
                out[name] = b - a
        rate = _metric(now, "sglang:cache_hit_rate")
        if rate is not None:
            out["sglang:cache_hit_rate"] = rate
        if out:
            self.info["prometheus"] = out

    # ------------------------------------------------------------------ engine API

    def reset(self) -> bool:
        """``POST /reset_prefix_cache`` (vLLM) or ``POST /flush_cache`` (SGLang)."""
        for path in ("/reset_prefix_cache", "/flush_cache"):
            try:
                self._call("POST", f"{self.root}{path}", raw=True)
                return True
            except ConfigError:
                continue
        return False

    def run(self, req: EngineRequest) -> EngineResult:
        """Replay one prompt (see the module docstring)."""
        res = self._run(req)
        if self._m0 is not None:
            self._counters(self.metrics())
        return res

    def _run(self, req: EngineRequest) -> EngineResult:
        ids = [int(i) for i in req.token_ids]
        salt = req.namespace or None
        d = max(1, req.decode_tokens)
        before = self.metrics()
        got, dt = self._complete(ids, 1, salt)
        after = self.metrics()
        res = EngineResult(prompt_tokens=len(ids), cached_tokens=0, prefill_s=dt, ttft_s=dt, output_ids=[])
        cached = self._cached(got)
        if cached is None and before is not None and after is not None:
            h0 = _metric(before, "vllm:prefix_cache_hits")
            h1 = _metric(after, "vllm:prefix_cache_hits")
            if h0 is not None and h1 is not None:
                cached = int(h1 - h0)
        if cached is None:
            self._note("the server reports no cached tokens (vLLM: --enable-prompt-tokens-details; SGLang: "
                       "--enable-cache-report); measured counts read 0", res)
            cached = 0
        res.cached_tokens = cached
        out = got if d == 1 else self._complete(ids, d, salt)[0]
        res.output_ids, text = self._tokens(out)
        if not req.uncached or self.salt_ok is False:
            return res
        best = float("inf")
        ref: dict[str, Any] = {}
        for _ in range(max(1, req.repeats)):
            try:
                ref, du = self._complete(ids, 1, f"promptcache-uncached-{uuid.uuid4().hex}")
            except ConfigError:
                self.salt_ok = False
                self._note("the server rejects cache_salt: no uncached baseline", res)
                return res
            if self.salt_ok is None:
                c = self._cached(ref)
                if c:
                    self.salt_ok = False
                    self._note("the server ignores cache_salt: no uncached baseline", res)
                    return res
                self.salt_ok = True
            best = min(best, du)
        if d > 1:
            ref = self._complete(ids, d, f"promptcache-uncached-{uuid.uuid4().hex}")[0]
        ref_ids, ref_text = self._tokens(ref)
        res.prefill_s_uncached = res.ttft_s_uncached = best
        if res.output_ids and ref_ids:
            res.output_ids_uncached = ref_ids
        else:  # compare texts where the server returned no token ids
            res.output_ids = [ord(c) for c in text]
            res.output_ids_uncached = [ord(c) for c in ref_text]
        return res

    def close(self) -> None:
        """Nothing to free (the server keeps running)."""
