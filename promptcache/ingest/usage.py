"""Reported usage in every known shape, normalised to :class:`~promptcache.model.Usage`.

Meanings (sources, checked 2026-11-29):

- OpenAI Chat Completions: ``prompt_tokens`` includes ``prompt_tokens_details.cached_tokens``
  and (GPT-5.6+) ``cache_write_tokens``; Responses API: ``input_tokens`` with
  ``input_tokens_details``. https://developers.openai.com/api/docs/guides/prompt-caching
- Anthropic: ``input_tokens`` counts only tokens after the last breakpoint; the total is
  ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``, and
  ``cache_creation.ephemeral_{5m,1h}_input_tokens`` split the writes.
  https://platform.claude.com/docs/en/build-with-claude/prompt-caching
- DeepSeek: ``prompt_cache_hit_tokens + prompt_cache_miss_tokens = prompt_tokens``.
  https://api-docs.deepseek.com/guides/kv_cache
- Gemini: ``usageMetadata.promptTokenCount`` includes ``cachedContentTokenCount``.
  https://ai.google.dev/api/generate-content#UsageMetadata
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import BadRecord
from ..model import Usage


def _int(v: Any, what: str) -> int:
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise BadRecord(f"usage field {what} is not a token count: {v!r}")
    return int(v)


def normalize_usage(u: Any) -> Usage | None:
    """Normalise one ``usage`` / ``usageMetadata`` object; ``None`` when it holds no prompt count.

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    if not isinstance(u, Mapping):
        return None
    g = u.get
    # Anthropic (and Bedrock Converse-style camelCase).
    if "cache_read_input_tokens" in u or "cache_creation_input_tokens" in u:
        read = _int(g("cache_read_input_tokens"), "cache_read_input_tokens")
        write = _int(g("cache_creation_input_tokens"), "cache_creation_input_tokens")
        cc = g("cache_creation")
        w1h = _int(cc.get("ephemeral_1h_input_tokens"), "ephemeral_1h_input_tokens") if isinstance(cc, Mapping) else 0
        rest = _int(g("input_tokens"), "input_tokens")
        return Usage(rest + read + write, _int(g("output_tokens"), "output_tokens"), read, write, w1h)
    if "cacheReadInputTokens" in u or "cacheWriteInputTokens" in u:
        read = _int(g("cacheReadInputTokens"), "cacheReadInputTokens")
        write = _int(g("cacheWriteInputTokens"), "cacheWriteInputTokens")
        rest = _int(g("inputTokens"), "inputTokens")
        return Usage(rest + read + write, _int(g("outputTokens"), "outputTokens"), read, write)
    # DeepSeek.
    if "prompt_cache_hit_tokens" in u or "prompt_cache_miss_tokens" in u:
        hit = _int(g("prompt_cache_hit_tokens"), "prompt_cache_hit_tokens")
        miss = _int(g("prompt_cache_miss_tokens"), "prompt_cache_miss_tokens")
        total = _int(g("prompt_tokens"), "prompt_tokens") or hit + miss
        return Usage(total, _int(g("completion_tokens"), "completion_tokens"), hit, 0)
    # Gemini.
    if "promptTokenCount" in u or "prompt_token_count" in u:
        total = _int(g("promptTokenCount", g("prompt_token_count")), "promptTokenCount")
        cached = _int(g("cachedContentTokenCount", g("cached_content_token_count")), "cachedContentTokenCount")
        out = _int(g("candidatesTokenCount", g("candidates_token_count")), "candidatesTokenCount")
        return Usage(total, out, cached, 0)
    # OpenAI Chat Completions (and every OpenAI-compatible server).
    if "prompt_tokens" in u:
        d = g("prompt_tokens_details") or {}
        cached = _int(d.get("cached_tokens"), "cached_tokens") if isinstance(d, Mapping) else 0
        if not cached:
            cached = _int(g("cached_tokens"), "cached_tokens")  # Together's top-level field
        write = _int(d.get("cache_write_tokens"), "cache_write_tokens") if isinstance(d, Mapping) else 0
        return Usage(_int(g("prompt_tokens"), "prompt_tokens"), _int(g("completion_tokens"), "completion_tokens"), cached, write)
    # OpenAI Responses API.
    if "input_tokens" in u:
        d = g("input_tokens_details") or {}
        cached = _int(d.get("cached_tokens"), "cached_tokens") if isinstance(d, Mapping) else 0
        write = _int(d.get("cache_write_tokens"), "cache_write_tokens") if isinstance(d, Mapping) else 0
        return Usage(_int(g("input_tokens"), "input_tokens"), _int(g("output_tokens"), "output_tokens"), cached, write)
    return None


def find_usage(*objs: Any) -> Usage | None:
    """The first usage found in the given response/wrapper objects (``usage``,
    ``usageMetadata``, or the object itself)."""
    for o in objs:
        if not isinstance(o, Mapping):
            continue
        for cand in (o.get("usage"), o.get("usageMetadata"), o.get("usage_metadata")):
            got = normalize_usage(cand)
            if got is not None:
                return got
        if isinstance(o.get("message"), Mapping):  # Anthropic stream message_start / Claude Code lines
            got = normalize_usage(o["message"].get("usage"))
            if got is not None:
                return got
    return None
