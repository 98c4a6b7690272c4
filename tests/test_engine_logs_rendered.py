"""Engine request logs hold the prompt as the engine received it, its chat template already
applied (vLLM's ``Received request … prompt: '<|im_start|>system…'``, SGLang's ``obj.text``,
Ollama's debug ``prompt="…"``). It is counted as logged: no chat framing and no generation prompt
added again (before, every such prompt was framed as a user message: 22 tokens too many each).

The expected counts tokenize the logged strings here, with tiktoken's cl100k_base (the
approximate tokenizer for a self-hosted model the log does not name), parsed by this test's
own regular expressions rather than the readers.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

from promptcache.pipeline import AuditOptions, audit

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
from handcount import enc  # noqa: E402

FORMATS = Path(__file__).parent / "data" / "formats"


def _counts(texts: list[str]) -> list[int]:
    e = enc("cl100k_base")
    return [len(e.encode_ordinary(t)) for t in texts]


def test_vllm_prompts_are_counted_as_logged():
    path = FORMATS / "vllm_request_log.txt"
    texts = [ast.literal_eval(m.group(1)) for ln in path.read_text(encoding="utf-8").splitlines()
             if (m := re.search(r"prompt: ('.*?'), params:", ln))]
    assert len(texts) == 7 and texts[0].startswith("<|im_start|>system")
    res = audit([path], AuditOptions(workers=1, cache_model="vllm"))
    assert [o.prompt_tokens for o in res.outcomes] == _counts(texts) == [2999, 2995, 3047, 3048, 3100, 3100, 3146]


def test_sglang_prompts_are_counted_as_logged():
    path = FORMATS / "sglang_request_log.jsonl"
    texts = []  # one request per rid: the received event (the finished one repeats it)
    for ln in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(ln)
        obj = rec.get("obj") if isinstance(rec, dict) else None
        if rec.get("event") == "request.received" and isinstance(obj, dict) and isinstance(obj.get("text"), str):
            texts.append(obj["text"])
    res = audit([path], AuditOptions(workers=1, cache_model="sglang"))
    assert texts and [o.prompt_tokens for o in res.outcomes] == _counts(texts)


def test_ollama_debug_prompts_are_counted_as_logged():
    path = FORMATS / "ollama_server_debug.log"
    texts = [json.loads(m.group(1)) for ln in path.read_text(encoding="utf-8").splitlines()
             if ('msg="chat request"' in ln or 'msg="generate request"' in ln) and (m := re.search(r' prompt=("(?:[^"\\]|\\.)*")', ln))]
    res = audit([path], AuditOptions(workers=1, cache_model="llamacpp"))
    assert texts and [o.prompt_tokens for o in res.outcomes] == _counts(texts)
