"""Plain prompt lines: ``{"prompt": str, "output_tokens"?: int}`` (vLLM ``bench serve
--dataset-name custom`` JSONL, https://docs.vllm.ai/en/latest/benchmarking/cli/; landscape.md
§3.11; checked 2026-11-29), and legacy Completions bodies (``{"model", "prompt": str |
[str, ...]}``, https://platform.openai.com/docs/api-reference/completions/create).

A prompt is one user part with no chat history; a list of prompts is one request per prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Source
from . import reader as _reader
from .bodies import default_id
from .common import MAPPING, provider_for_model, unwrap
from .reader import Reader
from .fields import ID_KEYS, find_arrival, find_session, first
from .usage import find_usage


def looks_prompt(rec: Mapping[str, Any]) -> bool:
    """A record whose ``prompt`` is text or a list, with no chat ``messages``."""
    return isinstance(rec.get("prompt"), (str, list)) and "messages" not in rec


def parse_prompt(rec: Any, src: Source, opts: Any) -> list[Request]:
    """One prompt line → Requests (``format="prompt"``, ``api="chat"``), one per prompt.

    ``parts``: one ``user`` part at path ``prompt`` (``prompt[k]`` in a list); ``model``: the
    record's, else ``--model``, else none; ``id``: the usual id fields, else ``<file>:<line>``
    (``#k`` added per prompt of a list); ``arrival``/``session``/``usage``: the usual fields
    when present.

    Raises:
        BadRecord: when ``prompt`` is not text or a list of texts (token-id prompts are not
            supported: they have no text to tokenize).
    """
    body, resp, wrapper = unwrap(rec)  # bare lines, or Batch input lines to /v1/completions
    p = body.get("prompt")
    if isinstance(p, str):
        prompts = [("prompt", p)]
    elif isinstance(p, list) and p and all(isinstance(x, str) for x in p):
        prompts = [(f"prompt[{k}]", x) for k, x in enumerate(p)]
    else:
        raise BadRecord("'prompt' is neither text nor a list of texts")
    model = body.get("model") or wrapper.get("model") or getattr(opts, "model", None)
    model = str(model) if model else None
    rid = first((wrapper, body), ID_KEYS)
    base = str(rid) if rid is not None else default_id(src)
    common = dict(source=src, format="prompt", api="chat", provider=provider_for_model(model), model=model,
                  arrival=find_arrival(wrapper, body), session=find_session(wrapper, body),
                  usage=find_usage(resp, wrapper))
    return [Request(id=base if len(prompts) == 1 else f"{base}#{k}", parts=(Part("user", path, text, "user", 0),), **common)
            for k, (path, text) in enumerate(prompts)]


class PromptReader(Reader):
    """Plain prompt lines and legacy Completions bodies (see the module docstring)."""

    name = "prompt"
    producer = "vLLM custom benchmark datasets; OpenAI legacy Completions bodies"
    shapes = "{prompt: text | [texts], output_tokens?}, bare or as Batch input lines to /v1/completions"
    looks_for = "prompt text or list, and no messages"

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or not _reader.FOREIGN.isdisjoint(rec):
            return None
        try:
            body, _, _ = unwrap(rec)
        except BadRecord:
            return None
        if looks_prompt(body) and not any(k in body for k in ("input", "contents", "instructions")):
            return "a prompt (text or list) without messages"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> list[Request]:
        return parse_prompt(rec, src, opts)
