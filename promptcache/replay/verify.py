"""The verify step: replay a log's prompts, in arrival order, on an engine with prefix caching
and compare what it measures with what the simulator predicts.

For each variant (the original log, then the proposed one when given) the audit pipeline
(:class:`promptcache.pipeline.Pipeline`) renders and tokenizes every request with the engine's
own tokenizer and chat template and simulates it under the vLLM rules with the engine's block
size and capacity; the engine then runs exactly those token ids. The engine's cache is emptied
before each variant, as each variant gets a fresh simulator.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..errors import ConfigError, InputError
from ..ingest import ReadOptions
from ..model import Request
from .engine import ENGINES, Engine, EngineRequest

#: Default LRU byte budget of the hf engine's prefix cache, per namespace (4 GiB: about 93k
#: tokens of SmolLM2-135M in float32, 32k tokens of a Llama-3-8B-class model in bfloat16).
DEFAULT_KV_BUDGET = 4 << 30

VARIANTS = ("original", "proposed")


def parse_size(text: str | int | None) -> int | None:
    """Bytes from ``4GiB``, ``512MB``, ``1e9``, ``123`` (``none``/``unbounded`` → ``None``).

    Raises:
        ConfigError: for text that is not a size.
    """
    if text is None or isinstance(text, int):
        return text
    t = text.strip().lower().replace("_", "")
    if t in ("none", "unbounded", "inf"):
        return None
    m = re.fullmatch(r"([0-9.]+(?:e[0-9]+)?)\s*([kmgt]?i?b?)?", t)
    if not m:
        raise ConfigError(f"{text!r} is not a size (examples: 4GiB, 512MB, 1e9)")
    num = float(m.group(1))
    unit = (m.group(2) or "").rstrip("b")
    mult = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
            "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}.get(unit)
    if mult is None:
        raise ConfigError(f"{text!r} is not a size (examples: 4GiB, 512MB, 1e9)")
    return int(num * mult)


@dataclass
class ReplayOptions:
    """Everything ``promptcache replay`` (and ``audit --verify``) can set.

    Attributes:
        engine: ``hf`` (default), ``vllm`` or ``openai``.
        model: ``--model`` spec (see :func:`promptcache.replay.models.resolve_model`); for the
            ``openai`` engine only its tokenizer is used.
        tokenizer: tokenizer override (a .gguf, model directory or tokenizer.json).
        block_size: prefix-cache block size, tokens (16, vLLM's default).
        kv_budget_bytes: hf engine: LRU byte budget per namespace (``None``: unbounded).
        capacity_tokens: vllm/openai engines: simulator capacity to assume (``None``:
            unbounded; their real capacity is the server's).
        decode_tokens: greedy tokens per request (the first one comes from prefill).
        limit: replay at most this many requests per variant (the first ones in arrival order).
        repeats: timed prefills of each kind per request (fastest counts).
        uncached: also run every prompt without the cache (baseline and correctness check).
        device, dtype, attn: hf engine placement, precision and attention implementation.
        threads: hf engine CPU threads (``None``: one per core).
        prefill_chunk: hf engine tokens per forward pass after a cache hit (``None``: 512 on
            CPU, 2,048 on CUDA).
        seed: initialisation seed of ``random:`` models.
        proposed: proposed log files (``propose --write-proposed``) to replay after the
            original.
        base_url, api_key, served_model: openai engine server, key and model name.
        gpu_memory_utilization: vllm engine memory share.
        read: log reading options.
    """

    engine: str = "hf"
    model: str | None = None
    tokenizer: str | None = None
    block_size: int = 16
    kv_budget_bytes: int | None = DEFAULT_KV_BUDGET
    capacity_tokens: int | None = None
    decode_tokens: int = 4
    limit: int | None = None
    repeats: int = 1
    uncached: bool = True
    device: str | None = None
    dtype: str | None = None
    attn: str | None = None
    threads: int | None = None
    prefill_chunk: int | None = None
    seed: int = 0
    proposed: list[str] = field(default_factory=list)
    base_url: str | None = None
    api_key: str | None = None
    served_model: str | None = None
    gpu_memory_utilization: float = 0.85
    read: ReadOptions = field(default_factory=ReadOptions)


@dataclass
class ReplayRecord:
    """One replayed request (tokens; seconds).

    Attributes:
        id, path, line: the request and where it is logged.
        variant: ``original`` or ``proposed``.
        namespace: cache namespace (the simulator's, used as the engine's cache salt).
        prompt_tokens: prompt length.
        cached_tokens_simulated: the simulator's cache read (vLLM rules, same block size and
            capacity as the engine).
        cached_tokens_measured: what the engine served from its prefix cache.
        prefill_s, prefill_s_uncached: prefill time with and without the cache.
        ttft_s, ttft_s_uncached: time to first token with and without the cache.
        outputs_match: greedy tokens with and without the cache are identical (``None`` when
            the uncached run was skipped).
        logits_max_abs_diff: largest difference of the last-token logits (hf engine).
        output_ids: greedy tokens with the cache.
        output_same_as_original: proposed requests: the greedy tokens equal the original
            request's (``None`` when there is no matching original).
        output_common_prefix_tokens: proposed requests: leading greedy tokens shared with the
            original request's.
    """

    id: str
    path: str
    line: int
    variant: str
    namespace: str
    prompt_tokens: int
    cached_tokens_simulated: int
    cached_tokens_measured: int
    prefill_s: float
    prefill_s_uncached: float | None
    ttft_s: float
    ttft_s_uncached: float | None
    outputs_match: bool | None
    logits_max_abs_diff: float | None
    output_ids: list[int]
    output_same_as_original: bool | None = None
    output_common_prefix_tokens: int | None = None

    @property
    def agree(self) -> bool:
        """Simulated and measured cached tokens are equal."""
        return self.cached_tokens_simulated == self.cached_tokens_measured


@dataclass
class Summary:
    """Totals over a set of replayed requests (tokens; seconds).

    Attributes:
        requests: requests replayed.
        prompt_tokens: their prompt tokens.
        cached_tokens_simulated, cached_tokens_measured: cache reads, summed.
        agreeing_requests: requests whose simulated and measured reads are equal.
        prefill_s, prefill_s_uncached: summed prefill times (``None`` when not measured).
        prefill_speedup: ``prefill_s_uncached / prefill_s``.
        ideal_speedup: the speedup the measured cached fraction implies if prefill time were
            proportional to the tokens computed: ``prompt_tokens / (prompt_tokens −
            cached_tokens_measured)``.
        speedup_ratio: ``prefill_speedup / ideal_speedup``.
        outputs_match_ratio: share of requests whose greedy tokens agree with and without the
            cache (``None`` when not measured).
        max_logits_diff: the largest last-token logit difference seen.
        ttft_s, ttft_s_uncached: summed time to first token.
    """

    requests: int = 0
    prompt_tokens: int = 0
    cached_tokens_simulated: int = 0
    cached_tokens_measured: int = 0
    agreeing_requests: int = 0
    prefill_s: float = 0.0
    prefill_s_uncached: float | None = None
    ttft_s: float = 0.0
    ttft_s_uncached: float | None = None
    outputs_matched: int = 0
    outputs_compared: int = 0
    max_logits_diff: float | None = None

    @classmethod
    def of(cls, records: Iterable[ReplayRecord]) -> Summary:
        """Totals of some records."""
        s = cls()
        for r in records:
            s.requests += 1
            s.prompt_tokens += r.prompt_tokens
            s.cached_tokens_simulated += r.cached_tokens_simulated
            s.cached_tokens_measured += r.cached_tokens_measured
            s.agreeing_requests += r.agree
            s.prefill_s += r.prefill_s
            s.ttft_s += r.ttft_s
            if r.prefill_s_uncached is not None:
                s.prefill_s_uncached = (s.prefill_s_uncached or 0.0) + r.prefill_s_uncached
            if r.ttft_s_uncached is not None:
                s.ttft_s_uncached = (s.ttft_s_uncached or 0.0) + r.ttft_s_uncached
            if r.outputs_match is not None:
                s.outputs_compared += 1
                s.outputs_matched += r.outputs_match
            if r.logits_max_abs_diff is not None:
                s.max_logits_diff = max(s.max_logits_diff or 0.0, r.logits_max_abs_diff)
        return s

    @property
    def prefill_speedup(self) -> float | None:
        """Measured prefill speedup from the cache."""
        if self.prefill_s_uncached is None or self.prefill_s <= 0:
            return None
        return self.prefill_s_uncached / self.prefill_s

    @property
    def ideal_speedup(self) -> float | None:
        """Speedup implied by the measured cached fraction (prefill ∝ tokens computed)."""
        if not self.prompt_tokens:
            return None
        rest = self.prompt_tokens - self.cached_tokens_measured
        return self.prompt_tokens / rest if rest > 0 else None

    @property
    def speedup_ratio(self) -> float | None:
        """Measured / ideal speedup."""
        a, b = self.prefill_speedup, self.ideal_speedup
        return a / b if a is not None and b else None

    @property
    def outputs_match_ratio(self) -> float | None:
        """Share of compared requests whose greedy tokens agree with and without the cache."""
        return self.outputs_matched / self.outputs_compared if self.outputs_compared else None


@dataclass
class ProposalChange:
    """How much the proposed prompts changed the model's output (greedy tokens).

    Attributes:
        compared: proposed requests with a matching original (same id, else same position).
        changed: of those, how many produced different greedy tokens.
        mean_common_prefix_tokens: mean leading tokens shared with the original's output.
        decode_tokens: greedy tokens generated per request.
    """

    compared: int = 0
    changed: int = 0
    mean_common_prefix_tokens: float | None = None
    decode_tokens: int = 0

    @property
    def changed_ratio(self) -> float | None:
        """Share of compared requests whose output changed."""
        return self.changed / self.compared if self.compared else None


@dataclass
class ReplayResult:
    """What :func:`verify` returns.

    Attributes:
        engine, model, device, block_size: what ran.
        exact: the engine's cached-token counts must equal the simulator's (hf engine).
        capacity_tokens: the simulator capacity used (``None``: unbounded).
        inputs: variant → log files.
        records: every replayed request, original ones first, each in arrival order.
        info: engine facts (dtype, KV bytes per token, budget, load time, versions).
        warnings: one-line warnings.
        decode_tokens: greedy tokens per request.
    """

    engine: str
    model: str
    device: str
    block_size: int
    exact: bool
    capacity_tokens: int | None
    inputs: dict[str, list[str]]
    records: list[ReplayRecord]
    info: dict[str, Any]
    warnings: list[str]
    decode_tokens: int

    def variant(self, name: str) -> list[ReplayRecord]:
        """The records of one variant."""
        return [r for r in self.records if r.variant == name]

    def summary(self, variant: str | None = None) -> Summary:
        """Totals over one variant, or over all records."""
        return Summary.of(self.records if variant is None else self.variant(variant))

    @property
    def proposal(self) -> ProposalChange | None:
        """Output changes of the proposed variant, or ``None`` without one."""
        prop = self.variant("proposed")
        if not prop:
            return None
        pc = ProposalChange(decode_tokens=self.decode_tokens)
        common = 0
        for r in prop:
            if r.output_same_as_original is None:
                continue
            pc.compared += 1
            pc.changed += not r.output_same_as_original
            common += r.output_common_prefix_tokens or 0
        if pc.compared:
            pc.mean_common_prefix_tokens = common / pc.compared
        return pc

    @property
    def disagreements(self) -> list[ReplayRecord]:
        """Requests whose measured cached tokens differ from the simulated ones."""
        return [r for r in self.records if not r.agree]

    @property
    def mismatched_outputs(self) -> list[ReplayRecord]:
        """Requests whose greedy tokens differ with and without the cache."""
        return [r for r in self.records if r.outputs_match is False]

    @property
    def ok(self) -> bool:
        """The cache is correct: outputs agree and, for exact engines, so do the counts."""
        return not self.mismatched_outputs and (not self.exact or not self.disagreements)


ProgressFn = Callable[[ReplayRecord], None]
#: Called as each variant starts (the model loaded): the variant's name and how many requests
#: it replays (``None`` where the log is standard input, which can be read only once).
VariantFn = Callable[[str, "int | None"], None]


def planned(paths: Sequence[str | Path], read: ReadOptions, limit: int | None) -> int:
    """How many requests replaying ``paths`` takes: those the logs hold, at most ``limit``
    (read, not tokenized: a replay spends seconds a request, this pass a few microseconds).

    Raises:
        InputError: as reading the logs does.
    """
    from ..ingest import InputStats, read_requests

    n = 0
    for p in paths:
        for _ in read_requests(p, InputStats(str(p)), read):
            n += 1
            if limit is not None and n >= limit:
                return n
    return n


def make_engine(opts: ReplayOptions, ref: Any = None) -> Engine:
    """Build the engine ``opts.engine`` (loads the model: slow).

    Args:
        opts: options.
        ref: a resolved :class:`promptcache.replay.models.ModelRef` (resolved from
            ``opts.model`` when ``None``).

    Raises:
        ConfigError: for an unknown engine, a missing runtime, model or server.
    """
    from .models import load_model, resolve_model

    if opts.engine not in ENGINES:
        raise ConfigError(f"--engine {opts.engine}: use one of {', '.join(ENGINES)}")
    if opts.block_size < 1:
        raise ConfigError("--block-size must be at least 1")
    if opts.engine == "openai":
        from .openai_engine import OpenAIEngine

        if not opts.base_url:
            raise ConfigError("--engine openai needs --base-url (for example http://localhost:8000/v1)")
        return OpenAIEngine(opts.base_url, model=opts.served_model, api_key=opts.api_key,
                            block_size=opts.block_size, capacity_tokens=opts.capacity_tokens)
    ref = ref or resolve_model(opts.model, opts.tokenizer)
    if opts.engine == "vllm":
        from .vllm_engine import VLLMEngine

        return VLLMEngine(ref, block_size=opts.block_size, capacity_tokens=opts.capacity_tokens, dtype=opts.dtype,
                          seed=opts.seed, gpu_memory_utilization=opts.gpu_memory_utilization,
                          vocab_size=_tokenizer_vocab(ref.tokenizer) if ref.kind == "random" else None)
    from .hf import HFEngine

    vocab = _tokenizer_vocab(ref.tokenizer) if ref.kind == "random" else None
    lm = load_model(ref, device=opts.device, dtype=opts.dtype, attn=opts.attn, vocab_size=vocab, seed=opts.seed)
    return HFEngine(lm, block_size=opts.block_size, kv_budget_bytes=opts.kv_budget_bytes, threads=opts.threads,
                    prefill_chunk=opts.prefill_chunk)


def _tokenizer_vocab(spec: str) -> int:
    """Vocabulary size (added tokens included) of a tokenizer spec."""
    from ..tokenize import resolve_tokenizer

    tok = resolve_tokenizer(spec, default=None, model=None)
    inner = getattr(tok, "tok", None)
    if inner is None or not hasattr(inner, "get_vocab_size"):
        raise ConfigError(f"tokenizer {spec}: a random model needs a Hugging Face tokenizer (.gguf, directory or tokenizer.json)")
    return int(inner.get_vocab_size(with_added_tokens=True))


def _pipeline(paths: Sequence[str | Path], requests: Iterable[Request] | None, tokenizer: str,
              opts: ReplayOptions, capacity_tokens: int | None, engine_pool: bool = True) -> Any:
    from ..pipeline import AuditOptions, Pipeline

    # the in-process engine keeps a plain LRU of cached blocks (engine_pool=False); vLLM and a
    # server are simulated with vLLM's own block pool
    aopts = AuditOptions(cache_model="vllm", tokenizer=tokenizer, block_size=opts.block_size,
                         capacity_tokens=capacity_tokens, engine_pool=engine_pool,
                         read=ReadOptions(input_format=opts.read.input_format,
                                          hash_block_tokens=opts.read.hash_block_tokens, strict=opts.read.strict,
                                          model=opts.read.model))
    if requests is not None:
        return Pipeline.from_requests(requests, aopts)
    return Pipeline(list(paths), aopts)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k


def verify(paths: Sequence[str | Path], options: ReplayOptions | None = None, *,
           proposed_requests: Iterable[Request] | None = None, engine: Engine | None = None,
           progress: ProgressFn | None = None, on_variant: VariantFn | None = None) -> ReplayResult:
    """Replay logs on an engine with prefix caching and compare with the simulation.

    This is the library entry point behind ``promptcache replay`` and ``promptcache audit
    --verify``.

    Args:
        paths: the original log files (JSONL, JSON arrays, ``.gz``), in arrival order together.
        options: :class:`ReplayOptions` (defaults: hf engine, SmolLM2, 16-token blocks).
        proposed_requests: proposed requests already in memory (instead of, or besides,
            ``options.proposed`` files; files win when both are given).
        engine: an engine already built (tests, or to keep a model loaded across calls);
            ``None`` builds one from the options.
        progress: called after each replayed request.
        on_variant: called as each variant starts, the model loaded, with its name and the
            number of requests it replays (:func:`planned`), for a progress bar.

    Returns:
        A :class:`ReplayResult`; ``result.ok`` is False when the cache proved wrong.

    Raises:
        ConfigError: bad options, missing model runtime or weights, unreachable server, or a
            log whose requests carry no text (hashed traces).
        InputError: unreadable logs, or malformed records with ``strict``.
    """
    opts = options or ReplayOptions()
    if opts.decode_tokens < 1:
        raise ConfigError("--decode-tokens must be at least 1")
    if opts.limit is not None and opts.limit < 1:
        raise ConfigError("--limit must be at least 1")
    if opts.repeats < 1:
        raise ConfigError("--repeats must be at least 1")
    if opts.prefill_chunk is not None and opts.prefill_chunk < 1:
        raise ConfigError("--prefill-chunk must be at least 1")
    if opts.kv_budget_bytes is not None and opts.kv_budget_bytes < 1:
        raise ConfigError("--kv-budget must be a size above 0 (or none for unbounded)")
    from .models import resolve_model

    if opts.engine == "openai" and not (opts.model or opts.tokenizer):
        ref = resolve_model(None)  # the server's tokenizer must match: SmolLM2 unless told otherwise
    else:
        ref = resolve_model(opts.model, opts.tokenizer)
    tokenizer = opts.tokenizer or ref.tokenizer
    own = engine is None
    eng = engine if engine is not None else make_engine(opts, ref)
    warnings: list[str] = []
    capacity = eng.capacity_tokens if eng.exact else opts.capacity_tokens
    if eng.exact and opts.capacity_tokens is not None:
        warnings.append("--capacity-tokens is for the vllm and openai engines; the hf engine's capacity comes from "
                        "--kv-budget")
    variants: list[tuple[str, Sequence[str | Path], Iterable[Request] | None]] = [("original", list(paths), None)]
    if opts.proposed:
        variants.append(("proposed", list(opts.proposed), None))
    elif proposed_requests is not None:
        variants.append(("proposed", ["<proposed>"], proposed_requests))
    records: list[ReplayRecord] = []
    tools_checked = False
    try:
        for vi, (variant, vpaths, vreqs) in enumerate(variants):
            if not eng.reset():
                warnings.append(f"{eng.name}: could not empty the prefix cache before the {variant} variant; "
                                "its first requests may hit blocks of earlier traffic")
            if on_variant is not None:
                if vreqs is not None:
                    vreqs = list(vreqs)
                    total = len(vreqs) if opts.limit is None else min(opts.limit, len(vreqs))
                elif any(str(p) == "-" for p in vpaths):
                    total = None
                else:
                    total = planned(vpaths, opts.read, opts.limit)
                on_variant(variant, total)
            pipe = _pipeline(vpaths, vreqs, tokenizer, opts, capacity, engine_pool=not eng.exact)
            steps = pipe.steps()
            if opts.limit is not None:
                steps = itertools.islice(steps, opts.limit)
            for step in steps:
                tmpl = getattr(getattr(step.context, "tokenizer", None), "chat_template", None)
                if not tools_checked and tmpl and "tools" not in tmpl and any(p.kind == "tool" for p in step.request.parts):
                    warnings.append("the model's chat template ignores tool definitions: they are not in the "
                                    "replayed prompts (tool-order cache breaks cannot show here)")
                tools_checked = tools_checked or any(p.kind == "tool" for p in step.request.parts)
                if step.context is None or step.prompt.width != 4:
                    raise ConfigError(f"{step.request.source.path}: hashed traces carry no prompt text to replay")
                ids = np.frombuffer(step.prompt.units, dtype="<u4").tolist()
                try:
                    res = eng.run(EngineRequest(step.request.id, ids, step.outcome.namespace, opts.decode_tokens,
                                                opts.uncached, opts.repeats))
                except InputError as e:
                    raise InputError(str(e), path=step.request.source.path, line=step.request.source.line) from None
                rec = ReplayRecord(
                    id=step.request.id, path=step.request.source.path, line=step.request.source.line,
                    variant=variant, namespace=step.outcome.namespace, prompt_tokens=step.prompt.n_tokens,
                    cached_tokens_simulated=step.outcome.cached_tokens, cached_tokens_measured=res.cached_tokens,
                    prefill_s=res.prefill_s, prefill_s_uncached=res.prefill_s_uncached, ttft_s=res.ttft_s,
                    ttft_s_uncached=res.ttft_s_uncached, outputs_match=res.outputs_match,
                    logits_max_abs_diff=res.logits_max_abs_diff, output_ids=list(res.output_ids))
                for note in res.notes:
                    if note not in warnings:
                        warnings.append(note)
                records.append(rec)
                if progress:
                    progress(rec)
            if not any(r.variant == variant for r in records):
                warnings.append(f"no requests to replay in {', '.join(str(p) for p in vpaths)}")
            for st in getattr(pipe, "inputs", []):
                if getattr(st, "skipped_lines", 0):
                    warnings.append(f"{st.path}: {st.skipped_lines} malformed line(s) skipped")
            for w in pipe.state.warnings:
                if w not in warnings:
                    warnings.append(w)
    finally:
        if own:
            eng.close()
    if not records:
        raise InputError("no requests to replay (nothing proved)", path=str(paths[0]) if paths else None)
    _match_proposals(records)
    return ReplayResult(
        engine=eng.name, model=eng.model_name, device=eng.device, block_size=eng.block_size, exact=eng.exact,
        capacity_tokens=capacity, inputs={v: [str(p) for p in ps] for v, ps, _ in variants}, records=records,
        info=dict(eng.info), warnings=warnings, decode_tokens=opts.decode_tokens)


def _match_proposals(records: list[ReplayRecord]) -> None:
    """Compare each proposed request's greedy tokens with its original's (same id, else same
    position among the variant's requests)."""
    orig = [r for r in records if r.variant == "original"]
    prop = [r for r in records if r.variant == "proposed"]
    by_id = {r.id: r for r in orig}
    for i, p in enumerate(prop):
        o = by_id.get(p.id) or (orig[i] if i < len(orig) else None)
        if o is None:
            continue
        p.output_common_prefix_tokens = _common_prefix(p.output_ids, o.output_ids)
        p.output_same_as_original = p.output_ids == o.output_ids
