"""Provider request bodies, whatever log carries them: which API a body speaks and its parts.

Every reader that finds a request body (bare bodies, gateway records, LiteLLM
``proxy_server_request``, Langfuse ``input``, Helicone ``request_body``) comes here, so an
OpenAI, Anthropic or Gemini body becomes the same :class:`~promptcache.model.Part` s whichever
log it was found in.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from ..model import Part, Source, record
from . import anthropic as _anthropic
from . import gemini as _gemini
from . import openai as _openai
from .common import MAPPING, provider_for_model
from .fields import ID_KEYS, find_arrival, find_session, first
from .usage import find_usage

#: Body format → (``Request.api``, provider assumed when the model names none).
BODY_APIS = {
    "openai-chat": ("chat", "openai"),
    "openai-responses": ("responses", "openai"),
    "anthropic": ("anthropic", "anthropic"),
    "gemini": ("gemini", "gemini"),
}


def looks_anthropic(body: Mapping[str, Any]) -> bool:
    """True when a body with ``messages`` is an Anthropic Messages body rather than OpenAI Chat
    (a ``system`` field, top-level ``cache_control``, a Claude model with ``max_tokens``, or
    ``tool_use``/``tool_result``/``cache_control`` blocks)."""
    if "messages" not in body:
        return False
    if "system" in body or isinstance(body.get("cache_control"), MAPPING):
        return True
    model = str(body.get("model", ""))
    if provider_for_model(model) == "anthropic" and "max_tokens" in body:
        return True
    for m in body.get("messages") or []:
        if isinstance(m, MAPPING) and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, MAPPING) and (b.get("type") in ("tool_use", "tool_result") or "cache_control" in b):
                    return True
    return False


def body_format(body: Mapping[str, Any], url: str = "") -> str | None:
    """Name the API a request body speaks: ``openai-responses``, ``anthropic``, ``openai-chat``,
    ``gemini``, or ``None``.

    Args:
        body: the request body.
        url: the endpoint the log names, if any (``/v1/responses`` decides the Responses API).
    """
    if "responses" in url or ("input" in body and "messages" not in body) or "instructions" in body:
        return "openai-responses"
    if looks_anthropic(body):
        return "anthropic"
    if "messages" in body:
        return "openai-chat"
    if isinstance(body.get("contents"), list):
        return "gemini"
    return None


@record
class Body:
    """A parsed request body.

    Attributes:
        format: body format (:data:`BODY_APIS` key).
        api: ``Request.api`` for it.
        provider: provider assumed when the model names none.
        parts: content parts, paths relative to the body.
        params: cache-relevant request parameters.
        cache_key: ``prompt_cache_key`` / ``cache_salt`` (OpenAI bodies), else ``None``.
        retention: ``prompt_cache_retention`` (OpenAI bodies), else ``None``.
    """

    format: str
    api: str
    provider: str
    parts: tuple[Part, ...]
    params: dict[str, Any] = field(default_factory=dict)
    cache_key: str | None = None
    retention: str | None = None


def cache_key_of(body: Mapping[str, Any]) -> str | None:
    """``prompt_cache_key`` (or vLLM's ``cache_salt``) of a body, as text."""
    v = body.get("prompt_cache_key") or body.get("cache_salt")
    return None if v is None else str(v)


def parse_body(body: Mapping[str, Any], fmt: str) -> Body:
    """Parse a request body of a known format.

    Raises:
        BadRecord: when the body is malformed for its format.
        KeyError: for a format not in :data:`BODY_APIS`.
    """
    api, provider = BODY_APIS[fmt]
    if fmt == "openai-chat":
        return Body(fmt, api, provider, tuple(_openai.parse_chat(body)), _openai.params_of(body),
                    cache_key_of(body), body.get("prompt_cache_retention"))
    if fmt == "openai-responses":
        return Body(fmt, api, provider, tuple(_openai.parse_responses(body)), _openai.params_of(body),
                    cache_key_of(body), body.get("prompt_cache_retention"))
    if fmt == "anthropic":
        return Body(fmt, api, provider, tuple(_anthropic.parse_anthropic(body)), _anthropic.params_of(body))
    return Body(fmt, api, provider, tuple(_gemini.parse_gemini(body)), _gemini.params_of(body))


def reprefix(parts: tuple[Part, ...] | list[Part], old: str, new: str) -> tuple[Part, ...]:
    """Rename the leading ``old`` of every part path to ``new`` (a message list found under
    another field: Langfuse ``input``, OpenTelemetry ``gen_ai.prompt``)."""
    out = []
    for p in parts:
        path = new + p.path[len(old):] if p.path.startswith(old) else p.path
        out.append(Part(p.kind, path, p.text, p.role, p.message, p.breakpoint))
    return tuple(out)


def base_fields(body: Mapping[str, Any], resp: Any, wrapper: Mapping[str, Any], src: Source,
                model_default: str | None) -> dict[str, Any]:
    """The fields every body-carrying record shares, found the usual way: id, model, provider
    (from the model), arrival, session and usage.

    Raises:
        BadRecord: for an unparseable time or usage count.
    """
    r = resp if isinstance(resp, MAPPING) else None
    model = body.get("model") or (r.get("model") if r else None) or wrapper.get("model") or model_default
    rid = first((wrapper, r, body), ID_KEYS)
    return dict(
        id=str(rid) if rid is not None else default_id(src),
        source=src, model=str(model) if model else None,
        provider=provider_for_model(str(model) if model else None),
        arrival=find_arrival(wrapper, body, r),
        session=find_session(wrapper, body),
        usage=find_usage(resp, wrapper),
    )


def default_id(src: Source, suffix: str = "") -> str:
    """``<file name>:<line>[suffix]``: the id of a request whose log names none."""
    return f"{Path(src.path).name}:{src.line}{suffix}"

