"""The data that flows through the pipeline.

ingest → :class:`Request` → render → :class:`Segment` → tokenize → :class:`TokenizedRequest`
→ simulate → :class:`Outcome` → price → report.

Plain immutable records (:func:`record`): no I/O and no third-party imports. Conventions:
token counts are named ``*_tokens``; times are UTC seconds since the epoch (``float``); lines
and columns start at 1; money is :class:`decimal.Decimal` in USD.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, dataclass_transform

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def record(cls: type[_T]) -> type[_T]:
    """A value class: a slotted dataclass, compared and hashed by its fields, frozen for type
    checkers (PEP 681 ``frozen_default``) and by convention, not at run time.

    ``dataclass(frozen=True)`` sets each field in ``__init__`` through ``object.__setattr__``:
    690 ns to build a 9-field :class:`Segment` against 127 ns for the plain slotted class
    (Python 3.11), and a 100k-request audit builds about 3M parts, segments and requests, in
    the reading process and again when the other process unpickles them.
    """
    return dataclass(slots=True, unsafe_hash=True)(cls)


#: Where a request's content part came from, in the provider's vocabulary.
PartKind = Literal[
    "tool",  # one tool / function definition
    "system",  # system prompt (Anthropic ``system``; OpenAI system/developer messages)
    "user",
    "assistant",
    "tool_call",  # an assistant's tool_use / function_call
    "tool_result",  # a tool's output fed back
    "image",
    "document",
    "param",  # a request parameter that is rendered into the prefix (response format, ...)
]


@record
class Breakpoint:
    """An explicit cache breakpoint after a part (Anthropic ``cache_control``, OpenAI
    ``prompt_cache_breakpoint``).

    Attributes:
        ttl_seconds: requested lifetime in seconds (Anthropic: 300 for ``5m``, 3600 for ``1h``).
        automatic: True for Anthropic's top-level ``cache_control`` that the API moves to the
            last cacheable block.
    """

    ttl_seconds: int | None = None
    automatic: bool = False


@record
class Part:
    """One content unit of a request, as the log holds it.

    Attributes:
        kind: what the part is (:data:`PartKind`).
        path: where it sits in the request body, e.g. ``tools[3]``, ``system[0]``,
            ``messages[5].content[0]``.
        text: the text the provider serializes for it (JSON for tool definitions and tool calls,
            kept in the log's own key order because key order changes the tokens).
        role: the chat role of the message holding it (``system``, ``developer``, ``user``,
            ``assistant``, ``tool``), or ``None`` for tools and parameters.
        message: index of the message it belongs to in ``messages``/``input``, else ``None``.
        breakpoint: explicit cache breakpoint placed after this part, if any.
    """

    kind: str
    path: str
    text: str
    role: str | None = None
    message: int | None = None
    breakpoint: Breakpoint | None = None


@record
class Usage:
    """Reported token usage, normalised to one meaning whatever the provider.

    ``input_tokens`` is the *total* prompt size including cache reads and writes (OpenAI's
    ``prompt_tokens`` meaning; Anthropic's ``input_tokens`` excludes both and is summed up by
    the reader). All counts in tokens.

    Attributes:
        input_tokens: all prompt tokens.
        output_tokens: completion tokens.
        cache_read_tokens: prompt tokens served from the cache.
        cache_write_tokens: prompt tokens written to the cache (all TTLs).
        cache_write_1h_tokens: the part of ``cache_write_tokens`` written with a 1-hour TTL.
        cache_reported: ``False`` when the record reports prompt tokens but no cache field at
            all (a producer that omits them, e.g. a LiteLLM spend-log row without a usage
            object): reads and writes are then unknown, not 0, and the request has no
            ``reported`` scenario and no reported gap.
        summed: ``True`` when the reader summed ``input_tokens`` from the record's uncached
            count plus its cache reads and writes (Anthropic's and Bedrock's meaning): a
            producer that already counted the cache tokens into its input count (Bedrock
            ConverseStream metadata for some models) then reports them twice, which only the
            rendered prompt's size can tell (:func:`promptcache.ingest.usage.counted_twice`).
            Not compared: two usages with the same counts are equal.
    """

    input_tokens: int
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_reported: bool = True
    summed: bool = field(default=False, compare=False)

    @property
    def uncached_tokens(self) -> int:
        """Prompt tokens billed at the plain input price."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)


@record
class CacheVerdict:
    """The provider's own account of one request's cache lookup, where the response carries it.

    Anthropic cache diagnostics (beta header ``cache-diagnosis-2026-04-07``: response
    ``diagnostics.cache_miss_reason.type`` and ``cache_missed_input_tokens``;
    https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics, checked 2026-12-01)
    and OpenAI prompt-cache diagnostics (Responses, GPT-5.6+: ``prompt_cache_diagnostics``;
    https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics, checked 2026-12-01).

    Attributes:
        source: who gave it: ``anthropic`` or ``openai``.
        kind: the verdict's type as the provider spells it (``cache_hit``, ``cache_miss``,
            ``comparison_response_not_found``, ``unavailable``; Anthropic's miss reasons are
            verdicts of kind ``cache_miss``, and its null ``diagnostics`` where a previous
            message was named, ``no_divergence``).
        reason: the provider's reason (``system_changed``, ``tools_changed``,
            ``prompt_cache_key_changed``, ``input_changed`` ...), or ``None``.
        missed_tokens: prompt tokens the provider says missed the cache, or ``None``.
        reusable_tokens: tokens the provider says a compared earlier request could have served
            (OpenAI ``comparison_reusable_tokens``), or ``None``.
        compared_to: the earlier message or response id the provider compared with, or ``None``.
    """

    source: str
    kind: str
    reason: str | None = None
    missed_tokens: int | None = None
    reusable_tokens: int | None = None
    compared_to: str | None = None


@record
class Response:
    """What the log holds of a request's response, as far as cache analysis needs it.

    Attributes:
        id: the response's id (OpenAI Responses ``resp_...``, Anthropic ``msg_...``), which a
            later request may name as ``previous_response_id``; ``None`` when not logged.
        upstream: who actually served the request when a router or gateway names it
            (OpenRouter's ``provider``, a gateway's upstream deployment), else ``None``.
        parts: the assistant turn as the model returned it, read the way the same reader reads
            an assistant message in a request (same kinds, paths relative to a message
            ``messages[n]``, same text serialization), so that the next request's replay of this
            turn can be compared part by part; empty when the log has no response content.
        verdict: the provider's own cache diagnostics for this request, if returned.
        deployment: the gateway's deployment of the model that served it, where the gateway
            balances one model over several (LiteLLM ``model_id`` / ``hidden_params.model_id``
            and ``api_base``: one upstream account or endpoint each, whose caches are apart),
            else ``None``.
    """

    id: str | None = None
    upstream: str | None = None
    parts: tuple[Part, ...] = ()
    verdict: CacheVerdict | None = None
    deployment: str | None = None


@record
class HashedPrompt:
    """A prompt known only by its chained block hashes (Mooncake / Bailian traces).

    Attributes:
        block_ids: one id per block; equal ids at equal positions mean an equal prefix up to
            and including that block.
        block_tokens: tokens per block (512 for Mooncake, 16 for Bailian).
        input_tokens: prompt length in tokens; the last block may be partial.
        output_tokens: the trace's ``output_length`` (0 when absent).
    """

    block_ids: tuple[int, ...]
    block_tokens: int
    input_tokens: int
    output_tokens: int = 0


@record
class Source:
    """Where a request came from: file path and 1-based line (record index for JSON arrays)."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@record
class Request:
    """One logged LLM call, normalised across log formats.

    Attributes:
        id: the log's request id, else ``<file>:<line>``.
        source: file and line.
        format: the reader that produced it (``openai-chat``, ``anthropic``, ``mooncake`` ...).
        api: the request shape: ``chat`` (OpenAI Chat Completions), ``responses``,
            ``anthropic``, ``gemini``, ``hashed``.
        provider: the provider the log names, as logged (lower case: LiteLLM's ``azure``,
            ``vertex_ai``, OpenTelemetry's ``aws.bedrock``; a rules file id or alias, resolved by
            :mod:`promptcache.simulate.routing`), else the one the log's format or the model name
            implies (``openai``, ``anthropic``, ``gemini``, ``deepseek``, ``bedrock``,
            ``vertex_ai`` ...), or ``None`` when unknown.
        model: model name as logged, or ``None``.
        arrival: arrival time, UTC seconds since the epoch, or ``None`` when the log has none.
        parts: content parts in the log's order (empty for hashed prompts).
        hashed: block hashes for hashed traces, else ``None``.
        cache_key: ``prompt_cache_key`` / ``cache_salt`` / conversation id that partitions the
            provider's cache, or ``None``.
        session: session / conversation / user id used to group requests, or ``None``.
        params: request parameters that invalidate the cache when they change (``tool_choice``,
            ``thinking``, ``response_format`` ...), JSON-serialisable.
        usage: reported usage, or ``None``.
        cache_retention: requested retention (OpenAI ``prompt_cache_retention``), or ``None``.
        response: what the log holds of the response (id, upstream, returned turn, the
            provider's cache verdict), or ``None``.
        previous_response_id: OpenAI Responses ``previous_response_id`` (the prefix lives on the
            server), or ``None``.
        affinity: identifiers other than ``cache_key`` that a provider or gateway may route or
            partition by, as logged (OpenAI ``user`` and ``safety_identifier``, a
            ``session_id``/``x-session-affinity`` header ...): name → value.
        prefix_on_server: ``True`` when part of the prompt lives on the provider's servers and
            not in the log: a server-side conversation whose earlier turns the log does not hold
            (OpenAI Responses ``previous_response_id`` naming a response not in the log, a
            ``conversation``, ``item_reference`` items, a stored ``prompt``), or a Gemini
            ``cachedContent``: ``parts`` are only what the request sent, so the prompt the
            provider processed (and cached) is longer than they show. ``False`` when the prompt is whole, including a chain rebuilt from the logged
            responses (``previous_response_id`` is still set then).
        rendered: the parts hold the prompt as the engine received it, its chat template already
            applied (vLLM's and SGLang's request logs, Ollama's debug lines): counted as logged,
            with no chat framing and no generation prompt added.
    """

    id: str
    source: Source
    format: str
    api: str
    provider: str | None
    model: str | None
    arrival: float | None
    parts: tuple[Part, ...] = ()
    hashed: HashedPrompt | None = None
    cache_key: str | None = None
    session: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    usage: Usage | None = None
    cache_retention: str | None = None
    response: Response | None = None
    previous_response_id: str | None = None
    affinity: Mapping[str, str] = field(default_factory=dict)
    prefix_on_server: bool = False
    rendered: bool = False


_REQUEST_FIELDS: Any = None  # (attrgetter of Request's fields, index of ``parts``), on first use


def with_parts(req: Request, parts: tuple[Part, ...]) -> Request:
    """``dataclasses.replace(req, parts=parts)``, at half the cost (the pipeline rebuilds a
    request per delta on both sides of the process boundary)."""
    global _REQUEST_FIELDS
    if _REQUEST_FIELDS is None:
        import operator
        from dataclasses import fields

        names = [f.name for f in fields(Request)]
        _REQUEST_FIELDS = (operator.attrgetter(*names), names.index("parts"))
    get, at = _REQUEST_FIELDS
    values = list(get(req))
    values[at] = parts
    return Request(*values)


@record
class Segment:
    """One rendered unit of the prompt, in the provider's prefix order.

    ``head`` and ``tail`` are the chat-format framing token ids around ``text`` (role
    headers, end-of-message markers); ``text`` is tokenized with the real tokenizer.

    Attributes:
        path: the part's path (``system[0]``) or a synthetic one (``<generation-prompt>``).
        kind: the part's kind, or ``frame`` for pure framing.
        text: text to tokenize.
        head: framing token ids before the text.
        tail: framing token ids after the text.
        breakpoint: explicit cache breakpoint after this segment.
        role: chat role of the message, if any.
        message: message index, if any.
        spans: ``(path, start, end)`` character ranges of the parts inside ``text`` when one
            segment holds several parts or framing text (chat templates); empty means the
            whole text is ``path``.
    """

    path: str
    kind: str
    text: str
    head: tuple[int, ...] = ()
    tail: tuple[int, ...] = ()
    breakpoint: Breakpoint | None = None
    role: str | None = None
    message: int | None = None
    spans: tuple[tuple[str, int, int], ...] = ()

    def locate(self, char: int) -> tuple[str, int]:
        """Map a character offset in ``text`` to ``(part path, offset inside that part)``."""
        for path, start, end in self.spans:
            if start <= char < end or (char == end and end == start):
                return path, char - start
        if self.spans:
            # Framing text between parts: name the nearest part that starts after it.
            after = [s for s in self.spans if s[1] >= char]
            path, start, _ = after[0] if after else self.spans[-1]
            return path, max(0, char - start)
        return self.path, char


@record
class Divergence:
    """Where a prompt stops matching the best earlier prompt.

    Attributes:
        segment: path of the segment holding the first differing token.
        char_offset: character offset of that token inside the segment's text (0-based),
            or ``None`` when the token is framing or the prompt is hashed.
        token_index: index of the first differing token in the whole prompt (0-based).
    """

    segment: str
    char_offset: int | None
    token_index: int


def pickle_as_fields(*classes: type) -> None:
    """Pickle slotted dataclasses as ``(class, field values)``: the dataclass default goes
    through a Python ``__getstate__`` that builds a dict per object, which made pickling the
    pipeline's deltas between processes cost more than reading the log (the classes must take
    their fields, in order, as ``__init__`` arguments)."""
    import operator
    from dataclasses import fields

    for cls in classes:
        get = operator.attrgetter(*(f.name for f in fields(cls)))
        cls.__reduce__ = lambda self, get=get: (type(self), get(self))  # type: ignore[method-assign]


pickle_as_fields(Breakpoint, Part, Usage, CacheVerdict, Response, HashedPrompt, Source, Request, Segment, Divergence)
