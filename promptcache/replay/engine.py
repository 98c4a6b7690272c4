"""The engine interface replay drives: one prompt (token ids) in, measured prefix-cache use,
prefill time and a short greedy decode out, with and without the cache.

Three engines implement it:

- ``hf`` (:mod:`promptcache.replay.hf`): an in-process Hugging Face causal LM with its own
  block-hashed prefix cache; its cached-token counts must equal the simulator's exactly;
- ``vllm`` (:mod:`promptcache.replay.vllm_engine`): vLLM's offline ``LLM`` with
  ``enable_prefix_caching=True`` (imported only when asked for);
- ``openai`` (:mod:`promptcache.replay.openai_engine`): any OpenAI-compatible server
  (vLLM, SGLang) over HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable


@dataclass
class EngineRequest:
    """One prompt to replay.

    Attributes:
        id: request id (for messages).
        token_ids: the prompt's token ids, exactly as the audit pipeline tokenized it.
        namespace: cache namespace; requests of different namespaces never share blocks.
        decode_tokens: greedy tokens to generate (at least 1; the first comes from prefill).
        uncached: also run the prompt without the cache (the baseline and the correctness check).
        repeats: timed prefills of each kind, interleaved; the fastest counts (timing noise from
            other processes only ever adds time).
    """

    id: str
    token_ids: Sequence[int]
    namespace: str = ""
    decode_tokens: int = 4
    uncached: bool = True
    repeats: int = 1


@dataclass
class EngineResult:
    """What an engine measured for one prompt (tokens; seconds).

    Attributes:
        prompt_tokens: prompt length.
        cached_tokens: prompt tokens served from the prefix cache.
        prefill_s: prefill time with the cache (looking up and assembling cached KV included).
        ttft_s: time to first token with the cache (prefill and picking the first token).
        output_ids: greedy tokens with the cache.
        prefill_s_uncached, ttft_s_uncached, output_ids_uncached: the same without the cache
            (``None`` when not measured).
        logits_max_abs_diff: largest absolute difference of the last prompt token's logits
            with and without the cache (``None`` where the engine does not expose logits).
        cached_blocks_stored: blocks this request added to the cache.
        notes: engine-specific remarks.
        logits: hf engine: the last prompt token's logits with the cache (a tensor of the
            vocabulary size), for callers that check them; ``None`` elsewhere.
    """

    prompt_tokens: int
    cached_tokens: int
    prefill_s: float
    ttft_s: float
    output_ids: list[int]
    prefill_s_uncached: float | None = None
    ttft_s_uncached: float | None = None
    output_ids_uncached: list[int] | None = None
    logits_max_abs_diff: float | None = None
    cached_blocks_stored: int | None = None
    notes: list[str] = field(default_factory=list)
    logits: Any = None

    @property
    def outputs_match(self) -> bool | None:
        """Greedy tokens with and without the cache are identical (``None``: not measured)."""
        if self.output_ids_uncached is None:
            return None
        return list(self.output_ids) == list(self.output_ids_uncached)


@runtime_checkable
class Engine(Protocol):
    """A model with a prefix cache that replay can drive.

    Attributes:
        name: ``hf``, ``vllm`` or ``openai``.
        model_name: what reports print.
        device: where it runs (``cpu``, ``cuda``, or the server URL).
        block_size: prefix-cache block size, tokens.
        exact: whether its cached-token counts must equal the simulator's (``hf`` only).
        capacity_tokens: the simulator capacity that matches the engine's cache, or ``None``.
        info: extra facts for the report (dtype, KV bytes per token, load time...).
    """

    name: str
    model_name: str
    device: str
    block_size: int
    exact: bool
    capacity_tokens: int | None
    info: dict[str, Any]

    def reset(self) -> bool:
        """Empty the prefix cache; ``False`` when the engine cannot."""
        ...

    def run(self, req: EngineRequest) -> EngineResult:
        """Replay one prompt."""
        ...

    def close(self) -> None:
        """Free what the engine holds."""
        ...


ENGINES = ("hf", "vllm", "openai")
