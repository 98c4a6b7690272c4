"""The provider's own cache verdict beside the cause the diagnosis located, and whether they agree.

Anthropic's cache diagnostics compare a request with the one named by
``diagnostics.previous_message_id`` and name the first place their structure diverged: the model,
the system prompt, the tools or the messages (``cache_miss_reason.type`` ``model_changed``,
``system_changed``, ``tools_changed``, ``messages_changed``); ``previous_message_not_found`` and
``unavailable`` are no comparison (the latter also when model, system and tools match and
``tool_choice``, ``thinking``, ``context_management``, ``output_config``, ``output_format`` or the
beta headers differ); a response whose ``diagnostics`` is null found no divergence
(https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics, checked 2026-12-01).
OpenAI's prompt-cache diagnostics (Responses API, GPT-5.6+) compare with
``prompt_cache_options.comparison_response_id``: ``cache_hit`` (no miss detected), ``cache_miss``
with a ``reason`` (``model_changed``, ``prompt_cache_key_changed``, ``tools_changed``,
``text_format_changed``, ``reasoning_effort_changed``, ``verbosity_changed``,
``context_compacted``, ``input_changed``, ``service_tier_changed``), or no comparison
(``comparison_response_not_found``, ``unavailable``)
(https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics, checked 2026-12-01).

Both are about the request's *structure*, not whether the cache hit. So a located content cause
agrees with a verdict that names the part of the request it sits in; a cause outside the text
(a TTL, a routing key, a per-request identifier the provider does not compare) agrees with a
verdict of no change, and disagrees with one that names a change; causes of the cache rules gap
(a minimum length, a breakpoint placement, eviction) claim the prefix shared *before* any
divergence, so the verdict is shown beside them but not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import CacheVerdict, Part

#: What each provider reason names: an area of the request (see :func:`area_of`).
REASON_AREA = {
    ("anthropic", "model_changed"): "model", ("anthropic", "system_changed"): "system",
    ("anthropic", "tools_changed"): "tools", ("anthropic", "messages_changed"): "messages",
    ("openai", "model_changed"): "model", ("openai", "prompt_cache_key_changed"): "cache key",
    ("openai", "tools_changed"): "tools", ("openai", "text_format_changed"): "param:text",
    ("openai", "reasoning_effort_changed"): "param:reasoning", ("openai", "verbosity_changed"): "param:verbosity",
    ("openai", "context_compacted"): "history", ("openai", "input_changed"): "input",
    ("openai", "service_tier_changed"): "param:service_tier",
}
#: Verdict kinds that say the two requests match (no divergence found).
SAME = ("cache_hit", "no_divergence")
#: Request parameters by the area OpenAI names them with.
_OPENAI_PARAMS = {"text": "param:text", "response_format": "param:text", "reasoning": "param:reasoning",
                  "reasoning_effort": "param:reasoning", "verbosity": "param:verbosity", "service_tier": "param:service_tier"}
#: Anthropic parameters whose change its diagnostics report as ``unavailable``.
_ANTHROPIC_UNAVAILABLE = ("tool_choice", "thinking", "context_management", "output_config", "output_format")
#: Area names in words.
WORDS = {"model": "the model", "system": "the system prompt", "tools": "the tools", "messages": "the messages",
         "input": "the input", "history": "the conversation history (compacted)", "cache key": "the prompt_cache_key",
         "same": "no change in the request", "param:text": "the text format", "param:reasoning": "the reasoning effort",
         "param:verbosity": "the verbosity", "param:service_tier": "the service tier"}
#: Check kinds whose causes claim the cache rules gap: shown beside the verdict, not compared.
_MECHANICS = ("length-threshold", "timing", "capacity", "breakpoint", "key-usage", "accounting")


@dataclass(slots=True)
class Reading:
    """One request's verdict as a finding shows it.

    Attributes:
        text: the verdict in one line (``anthropic: cache_miss (tools_changed), 1,490 tokens missed``).
        agrees: whether it names the place of the located cause (``None``: not compared, an
            inconclusive verdict or a cause it does not speak to).
        note: why they disagree, in words (``None`` unless ``agrees`` is ``False``).
        elsewhere: the request the provider compared with, where it is not the one the diagnosis
            compared with (``msg_0002``), else ``None``.
    """

    text: str
    agrees: bool | None
    note: str | None = None
    elsewhere: str | None = None


def describe(v: CacheVerdict) -> str:
    """The verdict in one line: who, what, why and how many tokens."""
    kind = "no divergence found" if v.kind == "no_divergence" else v.kind
    return f"{v.source}: {kind}" + (f" ({v.reason})" if v.reason else "") + \
        (f", {v.missed_tokens:,} tokens missed" if v.missed_tokens is not None else "") + \
        (f", {v.reusable_tokens:,} reusable" if v.reusable_tokens is not None else "")


def part_area(source: str, part: Part | None) -> str | None:
    """The area of the request a part belongs to, as ``source`` names areas."""
    if part is None:
        return None
    if part.kind == "tool":
        return "tools"
    if part.kind == "param":
        return None
    system = part.kind == "system" or part.role in ("system", "developer")
    if source == "openai":
        return "input"  # instructions and input items: OpenAI's input_changed
    return "system" if system else "messages"


def area_of(source: str, rule: Any, segment: str | None, values: dict[str, Any], parts: dict[str, Part]) -> str | None:
    """The area of the request a cause sits in, as ``source``'s verdict would name it: a part's
    area for a content cause, ``model``, a parameter, ``cache key``; ``same`` for a cause of the
    reported gap that leaves the request as it was (a TTL, routing, an identifier the provider
    does not compare); ``None`` where the verdict does not speak to the cause (the rules gap)."""
    kind = rule.kind
    if kind == "key-usage" and rule.options.get("check") in ("unique", "split"):
        return "cache key" if source == "openai" else None  # a key per request: another cache per request
    if kind in _MECHANICS:
        return None
    param = values.get("param")
    if kind == "parameter-diff" or (kind == "reported-usage" and param):
        if param == "model":
            return "model"
        if source == "openai":
            return _OPENAI_PARAMS.get(str(param), "param:other")
        return "param:unavailable" if param in _ANTHROPIC_UNAVAILABLE else "param:other"
    if kind == "reported-usage":
        check = rule.options.get("check")
        if check == "affinity" and values.get("identifier") == "cache_key":
            return "cache key" if source == "openai" else "same"
        if check in ("server-chain", "verdict"):
            return None
        return "same"
    if kind in ("value-pattern", "structural-diff"):
        if rule.options.get("compare", "").startswith("history") and source == "openai":
            return "history"
        return part_area(source, parts.get(segment or ""))
    return None


def compare(v: CacheVerdict, area: str | None) -> tuple[bool | None, str | None]:
    """``(agrees, note)`` of a verdict against the area of a located cause (:func:`area_of`)."""
    if area is None:
        return None, None
    if v.kind in SAME:
        if area == "same":
            return True, None
        return False, (f"the provider found no change against the request it compared with; the located cause is in "
                       f"{WORDS.get(area, 'a request parameter')}")
    if v.kind == "unavailable" and v.source == "anthropic" and area == "param:unavailable":
        return True, None  # Anthropic: a tool_choice / thinking ... change is reported as unavailable
    if v.kind != "cache_miss" or not v.reason:
        return None, None  # no comparison: previous message not found, unavailable
    named = REASON_AREA.get((v.source, v.reason))
    if named is None:
        return None, None  # a reason this version does not know
    if named == area or (named == "input" and area in ("history", "input")) or \
            (named == "history" and area == "input"):
        return True, None
    if area == "same":
        return False, (f"the provider names a change in {WORDS[named]} ({v.reason}); the log shows the request unchanged "
                       f"there: the cause named here is outside the request")
    return False, f"the provider names {WORDS[named]} ({v.reason}); the located cause is in {WORDS.get(area, 'a request parameter')}"


def read(v: CacheVerdict, rule: Any, segment: str | None, values: dict[str, Any], parts: dict[str, Part],
         predecessor: str | None = None, text: str | None = None) -> Reading:
    """The :class:`Reading` of one request's verdict beside one of its causes; ``predecessor`` is
    the response id of the request the diagnosis compared with, where the log has it; ``text``
    the verdict described (:func:`describe`), where the caller has it."""
    agrees, note = compare(v, area_of(v.source, rule, segment, values, parts))
    if agrees is False and segment and segment in parts:
        note = f"{note}, at {segment}"
    other = v.compared_to if v.compared_to and predecessor and v.compared_to != predecessor else None
    return Reading(text or describe(v), agrees, note, other)
