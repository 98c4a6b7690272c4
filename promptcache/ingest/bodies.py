"""Provider request bodies, whatever log carries them: which API a body speaks and its parts.

Every reader that finds a request body (bare bodies, gateway records, LiteLLM
``proxy_server_request``, Langfuse ``input``, Helicone ``request_body``) comes here, so an
OpenAI, Anthropic or Gemini body becomes the same :class:`~promptcache.model.Part` s whichever
log it was found in.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import field, replace
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Response, Source, record
from . import anthropic as _anthropic
from . import gemini as _gemini
from . import openai as _openai
from . import reader as _reader
from .common import MAPPING, provider_for_model, unwrap
from .fields import ID_KEYS, find_arrival, find_session, first
from .outcomes import Keyed
from .reader import Reader
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
    (a ``system`` field, top-level ``cache_control``, ``tool_use``/``tool_result``/
    ``cache_control`` blocks, or a Claude model with ``max_tokens``).

    Asked of every record, so it stops at the first sign either way: a first message with role
    ``system`` or ``developer``, a ``tool`` message or ``tool_calls`` exist only in Chat
    Completions (Anthropic takes the system prompt as a field and tool calls as blocks), and
    outweigh a Claude model name: gateways (LiteLLM, OpenRouter) take Chat Completions bodies for
    Claude models.
    """
    if "messages" not in body:
        return False
    if "system" in body or isinstance(body.get("cache_control"), MAPPING):
        return True
    msgs = body.get("messages")
    if type(msgs) is not list:
        return False
    blocks = False
    for m in msgs:
        if type(m) is not dict:
            if not isinstance(m, MAPPING):
                continue
        role = m.get("role")
        if role in ("system", "developer", "tool", "function") or "tool_calls" in m:
            return False
        c = m.get("content")
        if type(c) is list:
            for b in c:
                if type(b) is dict:
                    t = b.get("type")
                    if t in ("tool_use", "tool_result"):
                        return True
                    if "cache_control" in b:
                        blocks = True
    if blocks:
        return True
    model = body.get("model")
    return isinstance(model, str) and "max_tokens" in body and provider_for_model(model) == "anthropic"


def body_format(body: Mapping[str, Any], url: str = "") -> str | None:
    """Name the API a request body speaks: ``openai-responses``, ``anthropic``, ``openai-chat``,
    ``gemini``, or ``None``.

    Args:
        body: the request body.
        url: the endpoint the log names, if any (``/v1/responses`` decides the Responses API).
    """
    if "messages" in body:
        if "responses" in url:
            return "openai-responses"
        return "anthropic" if looks_anthropic(body) else "openai-chat"
    inp = body.get("input")
    if "responses" in url or isinstance(inp, (str, list)) or ("instructions" in body and inp is None):
        return "openai-responses"
    if isinstance(body.get("contents"), (list, str)):
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
    (from the model), arrival, session, usage and affinity.

    Raises:
        BadRecord: for an unusable usage count.
    """
    r = resp if isinstance(resp, MAPPING) else None
    model = body.get("model") or (r.get("model") if r else None) or wrapper.get("model") or model_default
    rid = first((wrapper, r, body), ID_KEYS)
    if isinstance(rid, (dict, list)):
        rid = None
    return dict(
        id=str(rid) if rid is not None else default_id(src),
        source=src, model=str(model) if model else None,
        provider=provider_for_model(str(model) if model else None),
        arrival=find_arrival(wrapper, body, r),
        session=find_session(wrapper, body),
        usage=find_usage(resp, wrapper),
        affinity=affinity_of(body, wrapper),
    )


#: Request headers that route or partition a provider's or gateway's cache (OpenRouter and
#: Fireworks session affinity, xAI conversation ids), looked for case-insensitively in a
#: gateway record's ``headers`` / ``request_headers``.
AFFINITY_HEADERS = ("x-session-affinity", "x-session-id", "session_id", "session-id", "x-grok-conv-id",
                    "x-conversation-id", "openai-conversation-id")


def affinity_of(body: Mapping[str, Any], wrapper: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Routing identifiers of a request: OpenAI ``user`` / ``safety_identifier`` /
    ``session_id``, Anthropic ``metadata.user_id``, and the affinity headers a gateway logged.
    (Asked of every request: plain type checks, no ABC ``isinstance``.)"""
    out: dict[str, str] = {}
    g = body.get
    for k in _openai.AFFINITY_KEYS:
        v = g(k)
        if v is not None and v != "" and type(v) in (str, int):
            out[k] = str(v)
    md = g("metadata")
    if type(md) is dict:
        uid = md.get("user_id")
        if uid is not None and uid != "" and type(uid) in (str, int):
            out["metadata.user_id"] = str(uid)
    if wrapper is not None and wrapper is not body:
        for hk in ("headers", "request_headers", "requestHeaders"):
            h = wrapper.get(hk)
            if type(h) is dict:
                for k, v in h.items():
                    if type(k) is str and k.lower() in AFFINITY_HEADERS and type(v) in (str, int):
                        v = str(v).strip()  # HTTP: whitespace around a field value is not part of it (RFC 9110 5.5)
                        if v:
                            out[k.lower()] = v
    return out


def response_of(fmt: str, body: Mapping[str, Any], resp: Any) -> Response | None:
    """What a logged response says, read the way ``fmt`` reads a request: its id, who served it
    (OpenRouter's ``provider``), the returned assistant turn (paths as the next request's
    message), and the provider's own cache verdict. ``None`` when there is no response."""
    if not isinstance(resp, MAPPING):
        return None
    if isinstance(resp.get("message"), MAPPING) and "content" not in resp:
        resp = resp["message"]  # an Anthropic stream message_start or an agent transcript line
    if fmt == "openai-chat":
        n = len(body.get("messages") or ())
        parts = _openai.chat_response_parts(resp, n)
        verdict = None
    elif fmt == "openai-responses":
        inp = body.get("input")
        n = len(inp) if isinstance(inp, list) else 1
        parts = _openai.responses_output_parts(resp, n)
        verdict = _openai.verdict_of(resp, body)
    elif fmt == "anthropic":
        n = len(body.get("messages") or ())
        parts = _anthropic.response_parts(resp, n)
        verdict = _anthropic.verdict_of(resp, body)
    else:
        c = body.get("contents")
        n = len(c) if isinstance(c, list) else 1
        parts = _gemini.response_parts(resp, n)
        verdict = None
    rid = resp.get("id") or resp.get("responseId")
    up = resp.get("provider")
    if rid is None and not parts and verdict is None and not isinstance(up, str):
        return None
    return Response(str(rid) if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None,
                    up if isinstance(up, str) else None, parts, verdict)


def server_state(fmt: str, body: Mapping[str, Any]) -> bool:
    """Whether a body names prompt content that lives on the provider's servers and is not in
    the body: a Responses ``conversation``, a stored ``prompt`` template, ``item_reference``
    input items, or a Gemini ``cachedContent``."""
    if fmt == "openai-responses":
        if body.get("conversation") or isinstance(body.get("prompt"), MAPPING):
            return True
        inp = body.get("input")
        return isinstance(inp, list) and any(isinstance(i, MAPPING) and i.get("type") == "item_reference" for i in inp)
    if fmt == "gemini":
        return bool(body.get("cachedContent") or body.get("cached_content"))
    return False


def chain_fields(fmt: str | None, body: Any) -> dict[str, Any]:
    """``previous_response_id`` and ``prefix_on_server`` of a request body (the Responses
    API's server-side state), as :class:`~promptcache.model.Request` fields."""
    if fmt is None or not isinstance(body, MAPPING):
        return {}
    prev = body.get("previous_response_id") if fmt == "openai-responses" else None
    return {"previous_response_id": str(prev) if isinstance(prev, str) and prev else None,
            "prefix_on_server": server_state(fmt, body)}


def read_body(rec: Any, src: Source, opts: Any, fmt: str, unwrapped: Any = None) -> Request:
    """A bare or wrapped request body of format ``fmt`` → a Request, with its response,
    verdict, affinity and server-side state.

    Raises:
        BadRecord: when the record or its body is malformed.
    """
    body, resp, wrapper = unwrapped if unwrapped is not None else unwrap(rec)
    b = parse_body(body, fmt)
    base = base_fields(body, resp, wrapper, src, getattr(opts, "model", None))
    base["provider"] = base["provider"] or BODY_APIS[fmt][1]
    if fmt == "gemini" and wrapper.get("key") is not None and first((wrapper, body), ID_KEYS) is None:
        base["id"] = str(wrapper["key"])  # Gemini Batch API lines: {"key", "request"}
    return Request(format=fmt, api=b.api, parts=b.parts, params=b.params, cache_key=b.cache_key,
                   cache_retention=b.retention, response=response_of(fmt, body, resp if resp is not wrapper else None),
                   **chain_fields(fmt, body), **base)


_WRAPS = (("body", "an OpenAI Batch input line (custom_id, body)"), ("request", "a gateway record (request/response)"),
          ("request_body", "a gateway record (request_body/response_body)"),
          ("request_json", "a gateway record (request_json/response_json)"))
_SIGNS = {"openai-chat": "a Chat Completions body (messages)", "anthropic": "an Anthropic Messages body",
          "openai-responses": "a Responses API body (input or instructions)", "gemini": "a generateContent body (contents)"}


#: The record last unwrapped, its ``unwrap`` result and its body's format: the four body readers
#: ask the same record one after another (and read it right after), so it is done once.
_LAST: list[Any] = [None, None, None]


def _unwrapped(rec: Any) -> tuple[Any, str | None]:
    """``(unwrap(rec), body_format)`` of a record, computed once for the record last asked.

    Raises:
        BadRecord: what :func:`unwrap` raises.
    """
    last = _LAST
    if last[0] is rec:
        return last[1], last[2]
    got = unwrap(rec)
    body, _, wrapper = got
    url = wrapper.get("url", "")
    fmt = body_format(body, url if isinstance(url, str) else "")
    last[0], last[1], last[2] = rec, got, fmt
    return got, fmt


class BodyReader(Reader):
    """A provider's own request body, bare, in a gateway record (``request`` + ``response``,
    ``request_body`` + ``response_body``, ``request_json`` + ``response_json``), or as a Batch
    input line (OpenAI ``custom_id``/``method``/``url``/``body``, Gemini ``key``/``request``).

    Claims a record when its body speaks this API (:func:`body_format`) and the record holds
    none of the keys another producer owns (:data:`~.reader.FOREIGN`).
    """

    fmt: str = ""

    def _unwrap(self, rec: Any) -> Any:
        return _unwrapped(rec)[0]

    def claim(self, rec: Any) -> str | None:
        if type(rec) is not dict and not isinstance(rec, MAPPING):
            return None
        if not _reader.FOREIGN.isdisjoint(rec):
            return None
        try:
            got, fmt = _unwrapped(rec)
        except BadRecord:
            return None
        if fmt != self.fmt:
            return None
        if got[0] is rec:
            return f"{_SIGNS[self.fmt]}, bare"
        how = next((text for key, text in _WRAPS if key in rec), "a wrapper record")
        if "key" in rec and "request" in rec and "response" not in rec:
            how = "a Gemini Batch line (key, request)"
        return f"{_SIGNS[self.fmt]} in {how}"

    def why_not(self, rec: Any) -> str:
        if not mapping_like(rec):
            return "not a JSON object"
        hit = sorted(k for k in rec if k in _reader.FOREIGN)
        if hit:
            return f"holds {', '.join(repr(k) for k in hit[:3])}, which another producer writes"
        try:
            body, _, wrapper = unwrap(rec)
        except BadRecord as e:
            return str(e)
        got = body_format(body, str(wrapper.get("url", "")))
        return f"its body is {_SIGNS[got].split(' (')[0].lower()}" if got else "no messages, input or contents"

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        req = read_body(rec, src, opts, self.fmt, self._unwrap(rec))
        keys = batch_keys(rec)
        rid = req.response.id if req.response is not None else None
        if rid and rid.startswith("gen-"):  # an OpenRouter generation: its stats (another file) join it
            keys += (f"openrouter:{rid}",)
        return Keyed(req, keys=keys) if keys else req

    def merge(self, first: Request, later: Request) -> Request:
        """A request and its batch result: the result's usage and response (its turn numbered
        after the request's messages); or a request and the OpenRouter generation stats of its
        response: the upstream that served it, where its own response does not say."""
        if first.response is None and later.response is not None and later.response.parts:
            n = 1 + max((p.message for p in first.parts if p.message is not None), default=-1)
            later = replace(later, response=shifted(later.response, n))
        if first.response is not None and not first.response.upstream and later.response is not None \
                and later.response.upstream:
            first = replace(first, response=replace(first.response, upstream=later.response.upstream))
        return super().merge(first, later)


def mapping_like(v: Any) -> bool:
    """Whether ``v`` is a JSON object."""
    return type(v) is dict or isinstance(v, MAPPING)


def batch_keys(rec: Any) -> tuple[str, ...]:
    """The key by which an OpenAI Batch output line finds its input line: ``custom_id``."""
    if not mapping_like(rec) or "body" not in rec:
        return ()
    cid = rec.get("custom_id")
    return (f"openai-batch:{cid}",) if isinstance(cid, (str, int)) and not isinstance(cid, bool) else ()


def shifted(resp: Response, n: int) -> Response:
    """A response read on its own (its turn numbered as message 0: a batch output line) numbered
    as the next message of a request with ``n`` messages."""
    if not resp.parts or n == 0:
        return resp
    import re

    def move(path: str) -> str:
        return re.sub(r"^(messages|contents|input)\[(\d+)\]", lambda m: f"{m.group(1)}[{int(m.group(2)) + n}]", path, count=1)

    return replace(resp, parts=tuple(Part(p.kind, move(p.path), p.text, p.role, None if p.message is None else p.message + n,
                                          p.breakpoint) for p in resp.parts))


class OpenAIChatReader(BodyReader):
    name, fmt = "openai-chat", "openai-chat"
    producer = "OpenAI Chat Completions (and OpenAI-compatible servers, gateways)"
    shapes = "request bodies: bare, in gateway records, or OpenAI Batch input lines"
    looks_for = "a body with messages (not Anthropic's)"


class AnthropicReader(BodyReader):
    name, fmt = "anthropic", "anthropic"
    producer = "Anthropic Messages API"
    shapes = "request bodies: bare or in gateway records"
    looks_for = "messages with system, cache_control, tool_use/tool_result blocks, or a Claude model with max_tokens"


class GeminiReader(BodyReader):
    name, fmt = "gemini", "gemini"
    producer = "Gemini API / Vertex AI generateContent (and the google-genai SDK's arguments)"
    shapes = "request bodies: bare, in gateway records, or Gemini Batch lines (key, request)"
    looks_for = "a body with contents"


class Chains:
    """Responses API conversations by response id, to rebuild ``previous_response_id`` chains
    from a log's own records: a request whose ``previous_response_id`` names a response logged
    earlier is rebuilt as the provider sees it: that request's conversation (its input items and
    the ones its chain carried), then that response's output items, then its own input; its own
    ``instructions`` (they are not carried over:
    https://platform.openai.com/docs/api-reference/responses/create, ``instructions``, checked
    2026-12-01) and tools first. Carried parts are named ``previous[<response id>].input[i]...``
    and ``previous[<response id>].output[k]...``. A ``previous_response_id`` the log does not
    hold marks the request ``prefix_on_server``. One per file (the readers that hold Responses
    bodies are stateful).
    """

    #: Conversations kept (least recently used go first).
    LIMIT = 65536

    def __init__(self) -> None:
        self.by_id: OrderedDict[str, tuple[Part, ...]] = OrderedDict()

    def link(self, req: Request, output: Any) -> Request:
        """``req`` (a Responses request whose input parts are named ``input...``) with the chain
        its ``previous_response_id`` names put in front, or marked ``prefix_on_server``; its own
        conversation and its response's ``output`` items are kept for the requests after it."""
        head = tuple(p for p in req.parts if not p.path.startswith("input"))
        own = tuple(p for p in req.parts if p.path.startswith("input"))
        conv: tuple[Part, ...] = own
        prev = req.previous_response_id
        if prev:
            chain = self.by_id.get(prev)
            if chain is None:
                req = replace(req, prefix_on_server=True)
            else:
                self.by_id.move_to_end(prev)
                start = 1 + max((p.message for p in chain if p.message is not None), default=-1)
                conv = chain + _renumbered(own, start, None)
                req = replace(req, parts=head + conv)
        rid = req.response.id if req.response is not None else None
        if rid and not req.prefix_on_server:
            start = 1 + max((p.message for p in conv if p.message is not None), default=-1)
            carried = tuple(p if p.path.startswith("previous[") else _repath(p, f"previous[{rid}].") for p in conv)
            self.by_id[rid] = carried + _output_parts(output, rid, start)
            while len(self.by_id) > self.LIMIT:
                self.by_id.popitem(last=False)
        return req


class ResponsesReader(BodyReader):
    """OpenAI Responses API bodies; ``previous_response_id`` chains rebuilt from the file's own
    records (:class:`Chains`)."""

    name, fmt = "openai-responses", "openai-responses"
    producer = "OpenAI Responses API"
    shapes = "request bodies: bare, in gateway records (with their responses), or Batch input lines to /v1/responses"
    looks_for = "a body with input or instructions (or a /v1/responses url)"
    stateful = True

    def __init__(self) -> None:
        super().__init__()
        self.chains = Chains()

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        got = super().read(rec, src, opts)
        if not isinstance(got, Keyed):
            got = Keyed(got)
        body = self._unwrap(rec)[1]
        req = self.chains.link(got.request, body.get("output") if isinstance(body, MAPPING) else None)
        return Keyed(req, got.keys) if got.keys else req


def _repath(p: Part, prefix: str) -> Part:
    return Part(p.kind, prefix + p.path, p.text, p.role, p.message, p.breakpoint)


def _renumbered(parts: tuple[Part, ...], start: int, prefix: str | None) -> tuple[Part, ...]:
    """``parts`` with their message indexes shifted to begin at ``start`` (and paths prefixed)."""
    if not parts:
        return ()
    first = min((p.message for p in parts if p.message is not None), default=0)
    return tuple(Part(p.kind, (prefix or "") + p.path, p.text, p.role,
                      None if p.message is None else p.message - first + start, p.breakpoint) for p in parts)


def _output_parts(out: Any, rid: str, start: int) -> tuple[Part, ...]:
    if not isinstance(out, list):
        return ()
    parts: list[Part] = []
    try:
        for k, item in enumerate(out):
            for p in _openai.input_item_parts(item, k, "output"):
                parts.append(Part(p.kind, f"previous[{rid}].{p.path}", p.text, p.role, start + k, p.breakpoint))
    except BadRecord:
        return ()
    return tuple(parts)


def default_id(src: Source, suffix: str = "") -> str:
    """``<file name>:<line>[suffix]``: the id of a request whose log names none."""
    return f"{Path(src.path).name}:{src.line}{suffix}"

