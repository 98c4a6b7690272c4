"""The openai engine's HTTP client against a small fake OpenAI-compatible server on loopback
(token-id prompts, usage.prompt_tokens_details.cached_tokens, cache_salt, reset, /metrics)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from promptcache.errors import ConfigError
from promptcache.replay.engine import EngineRequest
from promptcache.replay.openai_engine import OpenAIEngine, parse_prometheus


class FakeServer:
    """Serves a prefix cache of whole 16-token blocks: hit = the longest prefix of full blocks
    seen before (a plain set of prefixes, so the test does not reuse the engine's pool),
    capped one token short; salted prompts are keyed apart; outputs are a function of the
    prompt."""

    def __init__(self, *, report_usage: bool = True, honour_salt: bool = True):
        self.seen: set[tuple] = set()
        self.report_usage = report_usage
        self.honour_salt = honour_salt
        self.hits = 0
        self.calls: list[dict] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _send(self, code, body, ctype="application/json"):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models":
                    return self._send(200, {"data": [{"id": "fake-model"}]})
                if self.path == "/metrics":
                    text = (f"# HELP x\nvllm:prefix_cache_hits_total{{model_name=\"fake\"}} {outer.hits}\n"
                            "vllm:prefix_cache_queries_total{model_name=\"fake\"} 1\n").encode()
                    return self._send(200, text, "text/plain")
                self._send(404, {"error": "no"})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                if self.path == "/reset_prefix_cache":
                    outer.seen.clear()
                    return self._send(200, b"", "text/plain")
                if self.path != "/v1/completions":
                    return self._send(404, {"error": "no"})
                outer.calls.append(body)
                ids = body["prompt"]
                salt = body.get("cache_salt") if outer.honour_salt else None
                B = 16
                hit = 0
                for k in range(1, (len(ids) - 1) // B + 1):
                    if (salt, tuple(ids[:k * B])) in outer.seen:
                        hit = k * B
                    else:
                        break
                for k in range(1, len(ids) // B + 1):
                    outer.seen.add((salt, tuple(ids[:k * B])))
                outer.hits += hit
                toks = [(sum(ids) + i) % 1000 for i in range(body["max_tokens"])]
                usage = {"prompt_tokens": len(ids), "completion_tokens": len(toks)}
                if outer.report_usage:
                    usage["prompt_tokens_details"] = {"cached_tokens": hit}
                self._send(200, {"choices": [{"text": "".join(chr(97 + t % 26) for t in toks),
                                              "logprobs": {"tokens": [f"token_id:{t}" for t in toks]}}],
                                 "usage": usage})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def prompt(seed: int, n: int) -> list[int]:
    return np.random.default_rng(seed).integers(0, 1000, n).tolist()


def test_parse_prometheus_sums_labels():
    text = "# TYPE a counter\na_total{x=\"1\"} 2\na_total{x=\"2\"} 3.5\nb 1e3\nbad line here\n"
    assert parse_prometheus(text) == {"a_total": 5.5, "b": 1000.0}


def test_cached_tokens_salted_baseline_and_reset():
    with FakeServer() as srv:
        eng = OpenAIEngine(srv.url)
        assert eng.model == "fake-model" and eng.info["metrics_exposed"]
        p = prompt(0, 70)
        r1 = eng.run(EngineRequest("a", p, decode_tokens=3))
        r2 = eng.run(EngineRequest("b", p, decode_tokens=3))
        assert (r1.cached_tokens, r2.cached_tokens) == (0, 64)  # (70 - 1) // 16 = 4 blocks
        assert r2.output_ids == [(sum(p) + i) % 1000 for i in range(3)]
        assert r2.outputs_match is True and r2.prefill_s_uncached is not None
        salts = [c.get("cache_salt") for c in srv.calls]
        assert sum(1 for s in salts if s and s.startswith("promptcache-uncached-")) == 4
        assert eng.reset() is True
        assert eng.run(EngineRequest("c", p, uncached=False)).cached_tokens == 0


def test_metrics_fallback_when_usage_lacks_cached_tokens():
    with FakeServer(report_usage=False) as srv:
        eng = OpenAIEngine(srv.url, model="fake-model")
        p = prompt(1, 40)
        eng.run(EngineRequest("a", p, uncached=False))
        r = eng.run(EngineRequest("b", p, uncached=False))
        assert r.cached_tokens == 32  # from the change of vllm:prefix_cache_hits


def test_server_ignoring_salt_gets_no_baseline():
    with FakeServer(honour_salt=False) as srv:
        eng = OpenAIEngine(srv.url, model="fake-model")
        p = prompt(2, 50)
        eng.run(EngineRequest("a", p))
        r = eng.run(EngineRequest("b", p))
        assert r.prefill_s_uncached is None and r.outputs_match is None
        assert any("ignores cache_salt" in n for n in r.notes) or eng.salt_ok is False


def test_unreachable_server_is_a_config_error():
    with pytest.raises(ConfigError):
        OpenAIEngine("http://127.0.0.1:9/v1", timeout=2)


def test_prometheus_counters_reported_in_info():
    with FakeServer() as srv:
        eng = OpenAIEngine(srv.url, model="fake-model")
        p = prompt(3, 40)
        eng.run(EngineRequest("a", p, uncached=False, decode_tokens=1))
        eng.run(EngineRequest("b", p, uncached=False, decode_tokens=1))
        assert eng.info["prometheus"]["vllm:prefix_cache_hits"] == 32
        eng.run(EngineRequest("c", p, uncached=False, decode_tokens=3))  # the output call hits too
        assert eng.info["prometheus"]["vllm:prefix_cache_hits"] == 32 + 32 + 32
