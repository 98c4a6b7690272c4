"""What every request-body reader shares: unwrapping gateway records, provider inference,
stable JSON text for tools and arguments."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import orjson

from ..errors import BadRecord
from .outcomes import Skipped  # noqa: F401 - re-exported for readers of earlier releases

#: For ``isinstance(x, MAPPING)``: JSON objects are dicts, and a dict matches the first type at
#: once, where ``isinstance(x, MAPPING)`` goes through the ABC's Python-level
#: ``__instancecheck__`` (25 such checks per request read).
MAPPING = (dict, Mapping)

_PROVIDER_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(^|[/:.])(anthropic\.)?claude"), "anthropic"),
    (re.compile(r"(^|[/:])(models/)?gemini"), "gemini"),
    (re.compile(r"(^|[/:])deepseek"), "deepseek"),
    (re.compile(r"(^|[/:])(ft:)?(gpt-|o1|o3|o4|chatgpt|codex|computer-use)"), "openai"),
)


#: Provider names used by gateways and telemetry (LiteLLM ``custom_llm_provider``, Helicone
#: ``provider``, OpenTelemetry ``gen_ai.provider.name``) → the model family they serve, for the
#: readers' own choices that follow the family (how a span's usage counts cached tokens). Which
#: cache rules a request gets is not decided here: ``Request.provider`` keeps the name as logged
#: (:func:`logged_provider`) and :mod:`promptcache.simulate.routing` decides (``azure`` is Azure
#: OpenAI's rules, ``vertex_ai`` Vertex AI's).
PROVIDER_ALIASES = {
    "openai": "openai", "azure": "openai", "azure_ai": "openai", "azure.ai.openai": "openai", "text-completion-openai": "openai",
    "anthropic": "anthropic", "claude": "anthropic",
    "gemini": "gemini", "google": "gemini", "vertex_ai": "gemini", "vertex_ai_beta": "gemini", "gcp.gemini": "gemini",
    "gcp.vertex_ai": "gemini", "gcp.gen_ai": "gemini", "google-ai-studio": "gemini",
    "deepseek": "deepseek",
}


def provider_alias(name: Any) -> str | None:
    """The model family a gateway's or telemetry's provider name serves (case-insensitive), else
    ``None``: for a reader's family-specific parsing, never for ``Request.provider``
    (:func:`logged_provider`).

    >>> provider_alias("ANTHROPIC"), provider_alias("gcp.vertex_ai"), provider_alias("bedrock")
    ('anthropic', 'gemini', None)
    """
    return PROVIDER_ALIASES.get(str(name).strip().lower()) if name else None


def logged_provider(name: Any, model: str | None = None) -> str | None:
    """``Request.provider`` of a record: the provider name the log gives (LiteLLM
    ``custom_llm_provider``, Helicone's, Portkey's and Cloudflare's ``provider``, OpenTelemetry
    ``gen_ai.provider.name``), trimmed and lower-cased but otherwise as logged, so that
    :mod:`promptcache.simulate.routing` decides which rules file it means (``azure``: Azure
    OpenAI's; ``vertex_ai``: Vertex AI's for the model's family; a name no file claims: the
    model name's provider); without one, the provider the model name implies.

    >>> logged_provider("Azure", "gpt-4o"), logged_provider(None, "gpt-4o"), logged_provider(" ", "claude-3-5-haiku")
    ('azure', 'openai', 'anthropic')
    """
    if isinstance(name, str) and name.strip():
        return name.strip().lower()
    return provider_for_model(model)


def loads_if_json(v: Any) -> Any:
    """``v`` parsed when it is a string holding a JSON object or array (logs often store bodies
    and message lists as JSON text), else ``v`` unchanged."""
    if isinstance(v, (str, bytes)):
        head = v.lstrip()[:1]
        if head in ("{", "[", b"{", b"["):
            try:
                return orjson.loads(v)
            except orjson.JSONDecodeError:
                return v
    return v


@functools.lru_cache(maxsize=4096)
def provider_for_model(model: str | None) -> str | None:
    """Infer the provider whose cache rules apply from a model name (memoized: a log names few
    models, and every request asks).

    >>> provider_for_model("claude-sonnet-4-5"), provider_for_model("openrouter/google/gemini-2.5-pro")
    ('anthropic', 'gemini')
    """
    if not model:
        return None
    m = model.lower()
    for pat, prov in _PROVIDER_PATTERNS:
        if pat.search(m):
            return prov
    return None


def as_mapping(v: Any, what: str) -> Mapping[str, Any]:
    """``v`` as a mapping; JSON text holding an object is parsed (gateways log bodies as strings).

    Raises:
        BadRecord: when it is neither.
    """
    if isinstance(v, MAPPING):
        return v
    if isinstance(v, (str, bytes)):
        try:
            got = orjson.loads(v)
        except orjson.JSONDecodeError:
            raise BadRecord(f"{what} is a string but not JSON") from None
        if isinstance(got, MAPPING):
            return got
    raise BadRecord(f"{what} is not an object")


def unwrap(rec: Any) -> tuple[Mapping[str, Any], Any, Mapping[str, Any]]:
    """Split a logged record into ``(request body, response, wrapper)``.

    Handles bare bodies, OpenAI Batch input lines (``custom_id``/``method``/``url``/``body``),
    gateway records (``request`` + ``response``/``usage``), and request/response body columns
    (``request_body``/``response_body``, ``request_json``/``response_json``).

    Raises:
        BadRecord: when the record is not an object or holds no request body.
    """
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    if "body" in rec and ("custom_id" in rec or "url" in rec or "method" in rec):
        return as_mapping(rec["body"], "body"), rec.get("response"), rec
    for req_key, resp_key in (("request", "response"), ("request_body", "response_body"),
                              ("request_json", "response_json")):
        if req_key in rec and rec[req_key] is not None:
            body = as_mapping(rec[req_key], req_key)
            if "body" in body and isinstance(body.get("body"), (Mapping, str)) and "messages" not in body:
                body = as_mapping(body["body"], f"{req_key}.body")
            resp = rec.get(resp_key)
            if isinstance(resp, (str, bytes)):
                try:
                    resp = orjson.loads(resp)
                except orjson.JSONDecodeError:
                    resp = None
            if isinstance(resp, MAPPING) and isinstance(resp.get("body"), MAPPING):
                resp = resp["body"]  # Batch output lines: response.body
            return body, resp if resp is not None else rec, rec
    return rec, rec.get("response"), rec


def stable_json(v: Any) -> str:
    """JSON text of ``v`` in its own key order, compact, non-ASCII kept.

    Key order is kept on purpose: providers serialize what they receive, so a re-ordered
    schema is a different prefix.
    """
    try:
        return orjson.dumps(v).decode()  # compact, key order kept, non-ASCII kept: json.dumps' output
    except TypeError:  # integers beyond 64 bits, NaN
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def blob_digest(v: Any) -> str:
    """Short content digest of a binary blob reference (image URL or base64 data)."""
    data = v if isinstance(v, str) else stable_json(v)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def require_list(v: Any, what: str) -> list[Any]:
    """``v`` as a list (``None`` → empty).

    Raises:
        BadRecord: when it is something else.
    """
    if v is None:
        return []
    if not isinstance(v, list):
        raise BadRecord(f"{what} is not a list")
    return v


class PartMemo:
    """Parts already built for a piece of a request body (a message, the tool list, the system
    blocks), keyed by its exact JSON and position.

    Agent logs re-send the whole history on every turn; building the same parts again for every
    request would cost more than everything else the audit does. The memo returns the very same
    :class:`~promptcache.model.Part` objects, which lets later stages memoize by identity.
    Memory is bounded (least recently built entries go first).

    Args:
        budget_bytes: memory for kept parts, in bytes (estimated as twice their JSON).
    """

    def __init__(self, budget_bytes: int = 64 * 2**20):
        from collections import OrderedDict

        self.budget = budget_bytes
        self.size = 0
        self._d: OrderedDict[tuple[str, int, int, int], tuple[tuple[Any, ...], int]] = OrderedDict()
        # large objects by identity (each entry keeps its object alive, so ids stay unique)
        self._ids: dict[tuple[str, int, int], tuple[Any, tuple[Any, ...]]] = {}

    #: Objects whose JSON has at least this many bytes are also found by identity (decoded once
    #: and shared by :class:`~.resent.ResentLines`, they need not be serialized again).
    SHARED = 2048
    #: Identity entries kept (all let go when full).
    IDS = 1024

    def get(self, kind: str, index: int, obj: Any, build: Any) -> tuple[Any, ...]:
        """The parts of ``obj`` at ``index``; ``build()`` makes them on a miss.

        Raises:
            BadRecord: whatever ``build`` raises (misses are not cached).
        """
        ident = self._ids.get((kind, index, id(obj)))
        if ident is not None and ident[0] is obj:
            return ident[1]
        try:
            raw = orjson.dumps(obj)
        except TypeError:
            return tuple(build())
        # the JSON's 64-bit hash, not the JSON (orjson's buffers carry kilobytes of slack each);
        # with the kind and position, a collision among the entries kept is vanishingly unlikely
        key = (kind, index, len(raw), hash(raw))
        got = self._d.get(key)
        if got is None:
            parts = tuple(build())
        else:
            parts = got[0]
        if len(raw) >= self.SHARED:  # a tool list or system prompt: records may share the object
            if len(self._ids) >= self.IDS:
                self._ids.clear()
            self._ids[(kind, index, id(obj))] = (obj, parts)
        if got is not None:
            return parts
        cost = 2 * len(raw)  # the parts' texts and the objects around them, about
        self._d[key] = (parts, cost)
        self.size += cost
        while self.size > self.budget and self._d:
            _, (_, n) = self._d.popitem(last=False)
            self.size -= n
        return parts


#: The memo the body readers share (a pure function's cache). 16 MB: re-sent messages come from
#: :data:`HISTORY`, so what this memo finds again is mostly the first messages of new sessions
#: (a larger one held tool results that never repeat, and cost the 100k audit its memory target).
PARTS = PartMemo(16 * 2**20)


class _HistoryTip:
    """A message list parsed before, with the parts of each message and all of them in order."""

    __slots__ = ("msgs", "per_msg", "flat", "cost", "key", "ident")

    def __init__(self, msgs: list[Any], per_msg: list[tuple[Any, ...]], flat: tuple[Any, ...], cost: int,
                 key: tuple[str, int, int]):
        self.msgs = msgs
        self.per_msg = per_msg
        self.flat = flat
        self.cost = cost
        self.key = key
        self.ident = (key[0], id(msgs[-1]), len(msgs))


def _cost(parts: Any, messages: int) -> int:
    """Bytes a tip's parts hold, about."""
    return sum(len(p.text) for p in parts) + 256 * messages


class HistoryMemo:
    """Parts of message lists that extend a list parsed before: each request of an agent
    session parses only the messages it adds to the history it re-sends.

    The lists parsed last ("tips") are remembered with the parts of each message. A new list
    looks for a tip among its own leading sublists that are at most :attr:`PROBES` messages
    shorter: first by the identity of the sublist's last message (records decoded by
    :class:`~.resent.ResentLines` share the message objects they repeat), then by length and
    the hash of that message's JSON. An exact list comparison (C speed; identical items compare
    at once) confirms the whole history; when it fails, each message the tip holds equal is
    still reused on its own (a session whose system prompt carries the time changes one message
    per turn), and only the others are parsed. The messages of a list that extends no tip (a new
    session) go through :data:`PARTS`, which finds those of its template; those a turn adds to a
    tip are parsed directly (they never repeat).

    Python equality decides the match, so JSON values Python counts equal (``1``, ``1.0`` and
    ``true``) would match; a log whose re-sent history differs only so gets the earlier parts.
    Memory is bounded (least recently extended tips go first).

    Args:
        budget_bytes: memory for kept tips, in bytes (estimated from their parts' text).
    """

    PROBES = 8

    def __init__(self, budget_bytes: int = 64 * 2**20):
        from collections import OrderedDict

        self.budget = budget_bytes
        self.size = 0
        self._tips: OrderedDict[tuple[str, int, int], _HistoryTip] = OrderedDict()
        self._ids: dict[tuple[str, int, int], _HistoryTip] = {}

    @staticmethod
    def _key(kind: str, msgs: list[Any], k: int) -> tuple[str, int, int] | None:
        try:
            raw = orjson.dumps(msgs[k - 1])
        except TypeError:
            return None
        return (kind, k, hash(raw))

    def _find(self, kind: str, msgs: list[Any], n: int) -> tuple[int, _HistoryTip | None, Any]:
        """``(k, tip, key of msgs)``: the tip found for ``msgs[:k]`` (``None`` if none)."""
        lo = max(0, n - self.PROBES)
        ids = self._ids
        for k in range(n, lo, -1):
            tip = ids.get((kind, id(msgs[k - 1]), k))
            if tip is not None and tip.msgs[k - 1] is msgs[k - 1]:
                return k, tip, None
        tips = self._tips
        top = None
        for k in range(n, lo, -1):
            key = self._key(kind, msgs, k)
            if key is None:
                break
            if k == n:
                top = key
            tip = tips.get(key)
            if tip is not None:
                return k, tip, top
        return 0, None, top

    def parts(self, kind: str, msgs: list[Any], one: Any) -> tuple[Any, ...]:
        """The parts of every message of ``msgs``, in order; ``one(i, message)`` builds the parts
        of message ``i`` (through :data:`PARTS` for a list that extends no tip).

        Raises:
            BadRecord: whatever ``one`` raises for a message not reused.
        """
        n = len(msgs)
        if not n:
            return ()
        k, tip, top = self._find(kind, msgs, n)
        new: list[tuple[Any, ...]]
        if tip is not None:  # the turn's new messages: they never repeat, no memo finds them
            new = [tuple(one(i, msgs[i])) for i in range(k, n)]
        else:  # a new session: its first messages are those of its template, found in PARTS
            new = [PARTS.get(kind, i, m, lambda i=i, m=m: one(i, m)) for i, m in enumerate(msgs)]
        added = tuple(p for ps in new for p in ps)
        extends = tip is not None and tip.msgs == msgs[:k]
        if extends and k == n:
            self._tips.move_to_end(tip.key)
            return tip.flat
        if top is None:
            top = self._key(kind, msgs, n)
        if extends:
            # the texts the parts hold, not this record's copies
            kept, per_msg, flat, cost = tip.msgs + msgs[k:], tip.per_msg + new, tip.flat + added, tip.cost + _cost(added, n - k)
        else:
            per_msg = []
            if tip is not None:  # some messages changed: reuse the parts of those that did not
                old, old_parts = tip.msgs, tip.per_msg
                per_msg = [old_parts[i] if old[i] == msgs[i] else tuple(one(i, msgs[i])) for i in range(k)]
            per_msg += new
            kept, flat = list(msgs), tuple(p for ps in per_msg for p in ps)
            cost = _cost(flat, n)
        if tip is not None and k < n:  # the session moved on: its tip is this list now
            self._drop(tip)
        if top is not None:
            self._keep(_HistoryTip(kept, per_msg, flat, cost, top))
        return flat

    def _keep(self, tip: _HistoryTip) -> None:
        old = self._tips.get(tip.key)
        if old is not None:
            self._drop(old)
        self._tips[tip.key] = tip
        self._ids[tip.ident] = tip
        self.size += tip.cost
        while self.size > self.budget and self._tips:
            self._drop(next(iter(self._tips.values())))

    def _drop(self, tip: _HistoryTip) -> None:
        if self._tips.get(tip.key) is tip:
            del self._tips[tip.key]
            self.size -= tip.cost
        if self._ids.get(tip.ident) is tip:
            del self._ids[tip.ident]


#: The history memo the body readers share.
HISTORY = HistoryMemo()


#: Where the Vercel AI SDK carries a cache breakpoint on a message or a content part, by
#: version: ``providerOptions`` (v5+), ``providerMetadata`` (v4's standardized prompt, as
#: telemetry logs it in ``ai.prompt.messages``), ``experimental_providerMetadata`` (v3/v4 input);
#: under ``anthropic.cacheControl`` (``cache_control`` accepted too), the OpenRouter provider's
#: ``openrouter.cacheControl``, and Bedrock's ``bedrock.cachePoint``. A message-level option marks
#: the message's last content part. https://ai-sdk.dev/providers/ai-sdk-providers/anthropic#cache-control,
#: https://ai-sdk.dev/cookbook/node/dynamic-prompt-caching, vercel/ai issue 5883 (checked 2026-12-02).
SDK_OPTION_KEYS = ("providerOptions", "providerMetadata", "experimental_providerMetadata")


def sdk_cache_control(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The AI SDK cache control of a message or content part (:data:`SDK_OPTION_KEYS`) as an
    Anthropic ``cache_control`` object (``{"type": "ephemeral", "ttl": ...}``; a Bedrock
    ``cachePoint`` as ``{"type": "ephemeral"}``), or ``None`` when it has none. (Asked of every
    message and part: a dict without any of the keys returns at once.)"""
    if type(obj) is dict and "providerOptions" not in obj and "providerMetadata" not in obj \
            and "experimental_providerMetadata" not in obj:  # SDK_OPTION_KEYS
        return None
    for key in SDK_OPTION_KEYS:
        po = obj.get(key)
        if not isinstance(po, MAPPING):
            continue
        for provider in ("anthropic", "openrouter"):
            o = po.get(provider)
            if isinstance(o, MAPPING):
                cc = o.get("cacheControl") or o.get("cache_control")
                if isinstance(cc, MAPPING):
                    return cc
        o = po.get("bedrock")
        if isinstance(o, MAPPING) and isinstance(o.get("cachePoint"), MAPPING):
            ttl = o["cachePoint"].get("ttl")
            return {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return None


def without_sdk_options(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` without the AI SDK's provider options (:data:`SDK_OPTION_KEYS`): they are not
    sent as prompt text, and a breakpoint moved to a newer message must not read as a change."""
    if not any(k in obj for k in SDK_OPTION_KEYS):
        return obj
    return {k: v for k, v in obj.items() if k not in SDK_OPTION_KEYS}
