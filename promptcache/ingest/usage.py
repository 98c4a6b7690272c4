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

import math
from collections.abc import Mapping
from typing import Any

import orjson

from ..errors import BadRecord
from ..model import Usage
from .common import MAPPING


#: More tokens than any model reads or writes in one request: a count above it is impossible.
MAX_TOKENS = 100_000_000


def _int(v: Any, what: str) -> int:
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
        raise BadRecord(f"usage field {what} is not a token count: {v!r}")
    return int(v)


def check_usage(u: Usage) -> str | None:
    """Why a reported usage is impossible, or ``None`` when it is possible: no prompt tokens
    at all (every request reads at least one: a producer that writes 0 for a count it did not
    have, or a failed call's zeros), a count beyond :data:`MAX_TOKENS`, more cached and written
    tokens than prompt tokens, or more 1-hour writes than writes. (Counts are non-negative by
    construction.) An impossible usage is left out of the ``reported`` scenario: no hit ratio
    above 100%, no negative cost and no prompt billed at $0 follow from it.

    >>> check_usage(Usage(10, 0, 99_999))
    '99,999 cached + 0 written of 10 prompt tokens'
    >>> check_usage(Usage(0, 12))
    '0 prompt tokens (a request reads at least one)'
    >>> check_usage(Usage(2000, 5, 1536, 0)) is None
    True
    >>> check_usage(Usage(int(1e300), 1))
    'input_tokens 1e+300 is more than any model reads in a request (100,000,000)'
    """
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        n = getattr(u, name)
        if n > MAX_TOKENS:
            return f"{name} {_count(n)} is more than any model reads in a request ({MAX_TOKENS:,})"
    if u.input_tokens == 0 and u.cache_read_tokens == 0 and u.cache_write_tokens == 0:
        return "0 prompt tokens (a request reads at least one)"
    if u.cache_read_tokens + u.cache_write_tokens > u.input_tokens:
        return f"{u.cache_read_tokens:,} cached + {u.cache_write_tokens:,} written of {u.input_tokens:,} prompt tokens"
    if u.cache_write_1h_tokens > u.cache_write_tokens:
        return f"{u.cache_write_1h_tokens:,} 1-hour writes of {u.cache_write_tokens:,} written tokens"
    return None


#: How far a reported count may stand from the rendered prompt's token count and still be taken
#: for it: the rendered count comes from promptcache's tokenizer (approximate for providers that
#: publish none) and chat-template framing, so a few percent either way, plus a constant for the
#: framing of short prompts.
TOKENIZER_TOLERANCE = 0.10
TOKENIZER_SLACK = 16


def counted_twice(u: Usage, rendered: int) -> Usage | None:
    """The usage read right when the record's input count already includes its cache reads and
    writes, or ``None``.

    Anthropic and Bedrock document the input count as the uncached remainder: the prompt is
    ``inputTokens + cacheReadInputTokens + cacheWriteInputTokens`` ("When prompt caching is
    enabled, the inputTokens field represents only the non-cached input tokens",
    https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html, checked 2026-12-01),
    and the reader sums them (``u.summed``). Some producers put the whole prompt in the input
    count anyway: Bedrock ConverseStream metadata for OpenAI models (measured on openai.gpt-5.6:
    ``inputTokens`` 4,995 with ``cacheWriteInputTokens`` 4,993, where the non-streaming call
    reported 2; maximhq/bifrost PR #6942, 2026-09-07), and gateways that fold the cache counts
    into the input count (maximhq/bifrost #4746). The sum then counts the cache tokens twice.

    Told by the rendered prompt (``rendered`` tokens): the input count alone is the prompt
    (within :data:`TOKENIZER_TOLERANCE`), while the sum is not, and the input count holds at
    least the cache counts. When the cache counts are too small for the two readings to differ
    beyond the tolerance, nothing is changed.

    >>> counted_twice(Usage(10_076, 4, 0, 5_037, summed=True), 5_085)
    Usage(input_tokens=5039, output_tokens=4, cache_read_tokens=0, cache_write_tokens=5037, \
cache_write_1h_tokens=0, cache_reported=True, summed=False)
    >>> counted_twice(Usage(5_039, 4, 5_000, 0, summed=True), 5_085) is None  # read as documented
    True
    """
    cache = u.cache_read_tokens + u.cache_write_tokens
    if not u.summed or cache == 0 or rendered <= 0:
        return None
    given = u.input_tokens - cache  # the record's own input count
    tol = TOKENIZER_TOLERANCE * rendered + TOKENIZER_SLACK
    if given < cache or abs(given - rendered) > tol or abs(u.input_tokens - rendered) <= tol:
        return None
    return Usage(given, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cache_write_1h_tokens,
                 u.cache_reported)


def _count(n: int) -> str:
    """A token count as a report prints it: with thousands separators, or in exponent form when
    it has more digits than a line holds (``1e300`` read from a log is a 301-digit integer)."""
    if n < 10 ** 15:
        return f"{n:,}"
    try:
        return f"{float(n):.3g}"
    except OverflowError:  # beyond any float: its order of magnitude
        return f"about 1e{int(math.log10(n))}"


def normalize_usage(u: Any) -> Usage | None:
    """Normalise one ``usage`` / ``usageMetadata`` object; ``None`` when it holds no prompt count.

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    if not isinstance(u, MAPPING):
        return None
    g = u.get
    # Anthropic (and Bedrock Converse-style camelCase). An OpenAI-shaped usage that carries
    # Anthropic's counts beside ``prompt_tokens`` (LiteLLM's ``Usage``) is read as OpenAI's below.
    if ("cache_read_input_tokens" in u or "cache_creation_input_tokens" in u) \
            and not ("prompt_tokens" in u and "input_tokens" not in u):
        read = _int(g("cache_read_input_tokens"), "cache_read_input_tokens")
        write = _int(g("cache_creation_input_tokens"), "cache_creation_input_tokens")
        cc = g("cache_creation")
        w1h = _int(cc.get("ephemeral_1h_input_tokens"), "ephemeral_1h_input_tokens") if isinstance(cc, MAPPING) else 0
        rest = _int(g("input_tokens"), "input_tokens")
        return Usage(rest + read + write, _int(g("output_tokens"), "output_tokens"), read, write, w1h, summed=True)
    if "cacheReadInputTokens" in u or "cacheWriteInputTokens" in u:
        read = _int(g("cacheReadInputTokens"), "cacheReadInputTokens")
        write = _int(g("cacheWriteInputTokens"), "cacheWriteInputTokens")
        rest = _int(g("inputTokens"), "inputTokens")
        return Usage(rest + read + write, _int(g("outputTokens"), "outputTokens"), read, write, summed=True)
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
        d = g("prompt_tokens_details")
        d = d if isinstance(d, MAPPING) else {}
        cached = _int(d.get("cached_tokens"), "cached_tokens")
        if not cached:  # Together's top-level field; LiteLLM's Anthropic count beside prompt_tokens
            cached = _int(g("cached_tokens", g("cache_read_input_tokens")), "cached_tokens")
        write, w1h = _openai_writes(u, d)
        total = _int(g("prompt_tokens"), "prompt_tokens")
        return Usage(total, _int(g("completion_tokens"), "completion_tokens"),
                     cached, write, min(w1h, write))
    # OpenAI Responses API.
    if "input_tokens" in u:
        d = g("input_tokens_details") or {}
        cached = _int(d.get("cached_tokens"), "cached_tokens") if isinstance(d, MAPPING) else 0
        write = _int(d.get("cache_write_tokens"), "cache_write_tokens") if isinstance(d, MAPPING) else 0
        return Usage(_int(g("input_tokens"), "input_tokens"), _int(g("output_tokens"), "output_tokens"), cached, write)
    return None


#: Where OpenAI-shaped usage puts cache writes, by producer: OpenAI GPT-5.6+ and OpenRouter
#: ``prompt_tokens_details.cache_write_tokens``
#: (https://developers.openai.com/api/docs/guides/prompt-caching; OpenRouter SDK
#: ``PromptTokensDetails.cacheWriteTokens``); Anthropic models behind OpenAI-compatible
#: endpoints, Anthropic's own name nested there: GitHub Copilot's chat log
#: (``prompt_tokens_details.cache_creation_input_tokens`` with ``anthropic_cache_creation``,
#: jher7/tokenyst-copilot issue 16), mozilla-ai any-llm (``prompt_tokens_details``
#: ``cache_creation_input_tokens``, PR 896) and, at the top level, LiteLLM's ``Usage``; LiteLLM's
#: ``prompt_tokens_details.cache_creation_tokens`` (https://docs.litellm.ai/docs/completion/prompt_caching).
#: Checked 2026-12-02.
_OPENAI_WRITES = ("cache_write_tokens", "cache_creation_input_tokens", "cache_creation_tokens")


def _openai_writes(u: Mapping[str, Any], d: Mapping[str, Any]) -> tuple[int, int]:
    """``(writes, 1-hour writes)`` of an OpenAI-shaped usage ``u`` with prompt details ``d``
    (:data:`_OPENAI_WRITES`, nested first, then at the top level; the 1-hour share from
    ``anthropic_cache_creation`` / ``cache_creation_token_details`` / ``cache_creation``)."""
    write = 0
    for src in (d, u):
        for k in _OPENAI_WRITES:
            if src.get(k) is not None:
                write = _int(src.get(k), k)
                break
        if write:
            break
    w1h = 0
    for src in (d, u):
        for k in ("anthropic_cache_creation", "cache_creation_token_details", "cache_creation"):
            cc = src.get(k)
            if isinstance(cc, MAPPING) and cc.get("ephemeral_1h_input_tokens") is not None:
                w1h = _int(cc.get("ephemeral_1h_input_tokens"), "ephemeral_1h_input_tokens")
                break
    return write, w1h


def find_usage(*objs: Any) -> Usage | None:
    """The first usage found in the given response/wrapper objects (``usage``,
    ``usageMetadata``, or the object itself)."""
    for o in objs:
        if not isinstance(o, MAPPING):
            continue
        for cand in (o.get("usage"), o.get("usageMetadata"), o.get("usage_metadata")):
            got = normalize_usage(cand)
            if got is not None:
                return got
        if isinstance(o.get("message"), MAPPING):  # Anthropic stream message_start / Claude Code lines
            got = normalize_usage(o["message"].get("usage"))
            if got is not None:
                return got
    return None


# ---------------------------------------------------------------------------------------------
# Gateway and telemetry usage shapes. Each states its meaning and source; all return the one
# normalised meaning of :class:`Usage` (``input_tokens`` = the whole prompt).


def count(v: Any, what: str) -> int | None:
    """A token count from a number or a numeric string (exports stringify 64-bit integers);
    ``None`` when absent.

    Raises:
        BadRecord: when present but not a non-negative number.
    """
    if v is None or v == "":
        return None
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise BadRecord(f"usage field {what} is not a token count: {v!r}") from None
    return _int(v, what)


def including_cache(reported: int, read: int, write: int) -> int:
    """The whole prompt from a count documented to include cache reads and writes.

    A count smaller than its own cache parts cannot include them (the provider's own
    "uncached remainder" meaning leaked through, e.g. an Anthropic ``input_tokens`` copied
    verbatim), so it is then read as the remainder and the parts are added.

    >>> including_cache(1000, 800, 100), including_cache(50, 800, 100)
    (1000, 950)
    """
    return reported if reported >= read + write else reported + read + write


def litellm_usage(rec: Mapping[str, Any], usage_object: Any) -> Usage | None:
    """Usage of a LiteLLM spend-log row or StandardLoggingPayload.

    ``prompt_tokens``/``completion_tokens`` come from the record (else the usage object); cache
    reads from ``cache_read_input_tokens`` or ``prompt_tokens_details.cached_tokens``, writes
    from ``cache_creation_input_tokens`` or ``prompt_tokens_details.cache_creation_tokens``, the
    1-hour share from ``cache_creation_token_details.ephemeral_1h_input_tokens``, all read from
    the usage object (``metadata.usage_object`` in spend logs, ``response.usage`` otherwise).
    LiteLLM's Anthropic adapter adds reads and writes into ``prompt_tokens`` (litellm
    ``llms/anthropic/chat/transformation.py`` ``calculate_usage``; older releases added only
    reads), so ``prompt_tokens`` is read with :func:`including_cache`. Sources:
    https://docs.litellm.ai/docs/proxy/logging_spec and
    https://docs.litellm.ai/docs/completion/prompt_caching (checked 2026-11-29).

    Returns ``None`` when the row reports no tokens at all (failed calls). A row with token
    counts but no cache field at all (no usage object, or one without ``prompt_tokens_details``
    and Anthropic's counts) has ``cache_reported=False``: LiteLLM's ``Usage`` always writes
    those fields, so their absence means the cache usage was not logged, not that it was 0.

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    uo = usage_object if isinstance(usage_object, MAPPING) else {}
    d = uo.get("prompt_tokens_details")
    d = d if isinstance(d, MAPPING) else {}
    prompt = count(rec.get("prompt_tokens"), "prompt_tokens")
    if prompt is None:
        prompt = count(uo.get("prompt_tokens"), "usage_object.prompt_tokens")
    out = count(rec.get("completion_tokens"), "completion_tokens")
    if out is None:
        out = count(uo.get("completion_tokens"), "usage_object.completion_tokens")
    read = count(uo.get("cache_read_input_tokens"), "cache_read_input_tokens")
    if read is None:
        read = count(d.get("cached_tokens"), "prompt_tokens_details.cached_tokens")
    write = count(uo.get("cache_creation_input_tokens"), "cache_creation_input_tokens")
    if write is None:
        write = count(d.get("cache_creation_tokens"), "prompt_tokens_details.cache_creation_tokens")
    details = d.get("cache_creation_token_details") or uo.get("cache_creation")
    w1h = count(details.get("ephemeral_1h_input_tokens"), "ephemeral_1h_input_tokens") if isinstance(details, MAPPING) else None
    # LiteLLM's Usage always carries its cache fields (prompt_tokens_details, Anthropic's counts);
    # a row with token counts and none of them (no usage object logged) reports no cache usage
    known = read is not None or write is not None or "prompt_tokens_details" in uo
    read, write, w1h = read or 0, write or 0, w1h or 0
    if not prompt and not out and not read and not write:
        return None
    return Usage(including_cache(prompt or 0, read, write), out or 0, read, write, min(w1h, write), known)


def langfuse_usage(details: Any) -> Usage | None:
    """Usage of a Langfuse observation's ``usageDetails`` (usage types as ingested).

    Langfuse sums every usage type whose name contains ``input`` as input
    (https://langfuse.com/docs/model-usage-and-cost, checked 2026-11-29), and its integrations
    ingest ``input`` without the cached tokens plus the cache types beside it
    (``input_cached_tokens``, ``cache_read_input_tokens``, ``input_cache_read``,
    ``cache_creation_input_tokens``, ``input_cache_creation``, ...). So: the prompt is the sum of
    the ``input`` types; reads are the types naming ``cache_read`` or ``cached``; writes those
    naming ``cache_creation``/``cache_write``/``cache_creat``; a TTL split (a name with ``1h`` or
    ``5m``) counts once, under the aggregate when one is present; output is ``output`` (else the
    sum of ``output`` types). Legacy ``{"input", "output"}`` usage reads the same way.

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    if not isinstance(details, MAPPING) or not details:
        return None
    plain = read = write = split_total = split_1h = out_sum = 0
    out_plain: int | None = None
    seen_input = False
    for k, v in details.items():
        kl = str(k).lower()
        n = count(v, f"usageDetails.{k}")
        if n is None:
            continue
        if "input" not in kl and "prompt" not in kl:
            if kl in ("output", "completion", "output_tokens", "completion_tokens"):
                out_plain = n
            elif "output" in kl or "completion" in kl:
                out_sum += n
            continue
        seen_input = True
        if "cache_read" in kl or "cached" in kl:
            read += n
        elif "cache_creat" in kl or "cache_write" in kl:
            if "1h" in kl or "5m" in kl:
                split_total += n
                split_1h += n if "1h" in kl else 0
            else:
                write += n
        else:
            plain += n
    if not seen_input:
        return None
    if not write:
        write = split_total
    return Usage(plain + read + write, out_plain if out_plain is not None else out_sum, read, write, min(split_1h, write))


def helicone_usage(rec: Mapping[str, Any]) -> Usage | None:
    """Usage of a Helicone request export row: ``prompt_tokens`` are the uncached prompt tokens
    and ``prompt_cache_read_tokens``/``prompt_cache_write_tokens`` come on top (Helicone
    ``packages/cost`` ``costOfPrompt``: "regular prompt tokens (these are the fresh, uncached
    tokens)"; https://docs.helicone.ai/gateway/concepts/prompt-caching, checked 2026-11-29).
    ``None`` when the row has none of these columns.

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    prompt = count(rec.get("prompt_tokens"), "prompt_tokens")
    read = count(rec.get("prompt_cache_read_tokens"), "prompt_cache_read_tokens")
    write = count(rec.get("prompt_cache_write_tokens"), "prompt_cache_write_tokens")
    if prompt is None and read is None and write is None:
        return None
    out = count(rec.get("completion_tokens"), "completion_tokens") or 0
    read, write = read or 0, write or 0
    return Usage((prompt or 0) + read + write, out, read, write)


#: OpenTelemetry GenAI usage attributes, current name first, then legacy and OpenInference names
#: (https://github.com/open-telemetry/semantic-conventions-genai docs/registry/attributes/gen-ai.md;
#: https://arize-ai.github.io/openinference/spec/attributes/semantic-conventions.html; checked 2026-11-29).
#: The Vercel AI SDK's ``ai.usage.*`` come last (``inputTokens`` includes ``cachedInputTokens``:
#: https://ai-sdk.dev/docs/ai-sdk-core/telemetry, v5 ``ai.usage.cachedInputTokens``, v6
#: ``ai.usage.inputTokenDetails.cacheReadTokens`` / ``cacheWriteTokens``; checked 2026-12-01),
#: except from v5's Anthropic provider (:func:`_sdk5_anthropic`).
OTEL_INPUT = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
              "ai.usage.inputTokens", "ai.usage.promptTokens")
OTEL_OUTPUT = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion",
               "ai.usage.outputTokens", "ai.usage.completionTokens")
OTEL_CACHE_READ = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                   "gen_ai.usage.input_tokens.cached", "llm.token_count.prompt_details.cache_read",
                   "llm.token_count.prompt_details.cache_input", "ai.usage.inputTokenDetails.cacheReadTokens",
                   "ai.usage.cachedInputTokens")
OTEL_CACHE_WRITE = ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens",
                    "gen_ai.usage.input_tokens.cache_write", "llm.token_count.prompt_details.cache_write",
                    "ai.usage.inputTokenDetails.cacheWriteTokens")


def otel_usage(attrs: Mapping[str, Any]) -> Usage | None:
    """Usage of an OpenTelemetry GenAI span from its attributes (current and legacy names,
    :data:`OTEL_INPUT` ...). The conventions say ``gen_ai.usage.input_tokens`` "SHOULD include
    all types of input tokens, including cached tokens", so it is read with
    :func:`including_cache`; AI SDK spans' provider metadata (:func:`_sdk_cache`) and AI SDK 5's
    Anthropic provider (:func:`_sdk5_anthropic`) report the uncached remainder. ``None`` when
    the span reports no input count and no cache count; ``cache_reported=False`` when it
    reports an input count and neither cache count.

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    def pick(keys: tuple[str, ...]) -> int | None:
        for k in keys:
            n = count(attrs.get(k), k)
            if n is not None:
                return n
        return None

    inp, read, write = pick(OTEL_INPUT), pick(OTEL_CACHE_READ), pick(OTEL_CACHE_WRITE)
    meta = _sdk_meta(attrs.get("ai.response.providerMetadata"))  # parsed once, read by both below
    if meta:
        got = _sdk_cache(meta, inp, pick(OTEL_OUTPUT),
                         sdk4=read is None and write is None and "ai.usage.promptTokens" in attrs)
        if got is not None:
            return got
    if _sdk5_anthropic(attrs, meta):
        # AI SDK 5's Anthropic provider: inputTokens is Messages' input_tokens (the uncached
        # remainder), cachedInputTokens its cache reads, the writes only in provider metadata
        a = meta.get("anthropic")
        w5 = a.get("cacheCreationInputTokens") if isinstance(a, MAPPING) else None
        if read is not None or w5 is not None:
            return uncached_plus(inp, read, w5, pick(OTEL_OUTPUT), "ai.usage")
    if inp is None and read is None and write is None:
        return None
    # the cache counts are optional ("Recommended") attributes: a span with neither says
    # nothing of the cache (not logged), which is not 0 cached
    reported = read is not None or write is not None
    read, write = read or 0, write or 0
    return Usage(including_cache(inp or 0, read, write), pick(OTEL_OUTPUT) or 0, read, write, cache_reported=reported)


def _sdk_cache(meta: Mapping[str, Any], prompt: int | None, output: int | None, sdk4: bool) -> Usage | None:
    """Usage of a Vercel AI SDK ``doGenerate`` span from ``ai.response.providerMetadata`` (as
    :func:`_sdk_meta` parses it), or ``None``:

    - the Anthropic provider's raw Messages usage (``anthropic.usage``: ``input_tokens``, the
      uncached remainder, and ``cache_read_input_tokens`` / ``cache_creation_input_tokens``),
      whatever else the span says: it is the provider's own bill;
    - with ``sdk4`` (AI SDK 4 names, ``ai.usage.promptTokens``, and no cache count among the
      span's usage attributes), ``anthropic.cacheCreationInputTokens`` / ``cacheReadInputTokens``
      on top of ``promptTokens`` (Anthropic's ``input_tokens``), or ``openai.cachedPromptTokens``
      inside it (OpenAI's ``prompt_tokens``)
      (https://ai-sdk.dev/providers/ai-sdk-providers/anthropic#cache-control,
      https://ai-sdk.dev/providers/ai-sdk-providers/openai, checked 2026-12-02).

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    a = meta.get("anthropic")
    raw = a.get("usage") if isinstance(a, MAPPING) else None
    if isinstance(raw, MAPPING) and "input_tokens" in raw and \
            ("cache_read_input_tokens" in raw or "cache_creation_input_tokens" in raw):
        return uncached_plus(raw.get("input_tokens"), raw.get("cache_read_input_tokens"),
                             raw.get("cache_creation_input_tokens"), raw.get("output_tokens", output),
                             "ai.response.providerMetadata.anthropic.usage")
    if not sdk4:
        return None
    if isinstance(a, MAPPING) and ("cacheReadInputTokens" in a or "cacheCreationInputTokens" in a):
        return uncached_plus(prompt, a.get("cacheReadInputTokens"), a.get("cacheCreationInputTokens"), output,
                             "ai.response.providerMetadata.anthropic")
    o = meta.get("openai")
    if isinstance(o, MAPPING) and "cachedPromptTokens" in o:
        read = count(o.get("cachedPromptTokens"), "ai.response.providerMetadata.openai.cachedPromptTokens") or 0
        return Usage(including_cache(prompt or 0, read, 0), output or 0, read, 0)
    return None


#: v6 names: their ``ai.usage.inputTokens`` is the whole prompt, whichever provider served it.
_SDK6_DETAILS = ("ai.usage.inputTokenDetails.noCacheTokens", "ai.usage.inputTokenDetails.cacheReadTokens",
                 "ai.usage.inputTokenDetails.cacheWriteTokens")


def _sdk5_anthropic(attrs: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    """Whether a span is an AI SDK 5 call through the Anthropic provider (``ai.usage.inputTokens``
    without v6's ``inputTokenDetails``; ``ai.model.provider`` ``anthropic.messages`` or
    ``vertex.anthropic.messages``, or ``anthropic`` in its provider metadata). Its
    ``inputTokens`` is Anthropic's ``input_tokens``, the uncached remainder, and
    ``cachedInputTokens`` the cache reads; the writes are in
    ``providerMetadata.anthropic.cacheCreationInputTokens`` only (@ai-sdk/anthropic 2.x
    ``doGenerate`` and ``doStream``: https://github.com/vercel/ai/blob/002ebb662831968620b3f711a92b4f4c78637f14/packages/anthropic/src/anthropic-messages-language-model.ts,
    checked 2026-12-02; v6 reports the whole prompt with its details)."""
    if "ai.usage.inputTokens" not in attrs or any(k in attrs for k in _SDK6_DETAILS):
        return False
    prov = attrs.get("ai.model.provider")
    if isinstance(prov, str) and prov.lower().endswith("anthropic.messages"):
        return True
    return "anthropic" in meta


def _sdk_meta(meta: Any) -> Mapping[str, Any]:
    """``ai.response.providerMetadata`` as an object (a JSON string in the span, an object in
    some exports); empty when it is absent or not an object."""
    if isinstance(meta, (str, bytes)):
        try:
            meta = orjson.loads(meta)
        except orjson.JSONDecodeError:
            return {}
    return meta if isinstance(meta, MAPPING) else {}


def uncached_plus(rest: Any, read: Any, write: Any, output: Any, what: str) -> Usage | None:
    """Usage from an uncached-remainder count plus cache reads and writes (Anthropic's meaning,
    Bedrock's ``inputTokenCount``, Braintrust's ``prompt_tokens`` of Anthropic calls,
    Helicone's ``prompt_tokens``); ``None`` when all are absent.

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    r0, r1, r2 = count(rest, f"{what} input"), count(read, f"{what} cache read"), count(write, f"{what} cache write")
    if r0 is None and r1 is None and r2 is None:
        return None
    r1, r2 = r1 or 0, r2 or 0
    return Usage((r0 or 0) + r1 + r2, count(output, f"{what} output") or 0, r1, r2, summed=True)


def total_with(total: Any, read: Any, write: Any, output: Any, what: str) -> Usage | None:
    """Usage from a prompt count documented to include cache reads and writes (OpenAI's
    meaning; read with :func:`including_cache`); ``None`` when all are absent.

    Raises:
        BadRecord: when a count is negative or not a number.
    """
    t, r1, r2 = count(total, f"{what} input"), count(read, f"{what} cache read"), count(write, f"{what} cache write")
    if t is None and r1 is None and r2 is None:
        return None
    r1, r2 = r1 or 0, r2 or 0
    return Usage(including_cache(t or 0, r1, r2), count(output, f"{what} output") or 0, r1, r2)
