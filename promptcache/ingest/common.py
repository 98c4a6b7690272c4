"""What every request-body reader shares: unwrapping gateway records, provider inference,
stable JSON text for tools and arguments."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

import orjson

from ..errors import BadRecord

_PROVIDER_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(^|[/:.])(anthropic\.)?claude"), "anthropic"),
    (re.compile(r"(^|[/:])(models/)?gemini"), "gemini"),
    (re.compile(r"(^|[/:])deepseek"), "deepseek"),
    (re.compile(r"(^|[/:])(ft:)?(gpt-|o1|o3|o4|chatgpt|codex|computer-use)"), "openai"),
)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record, or an item inside one, of a known format that holds no LLM request to audit
    (a Langfuse ``SPAN`` observation, an OpenTelemetry ``execute_tool`` span). Parsers return it
    in their result list; the reader counts it by ``reason`` and never reports it as an error.

    Attributes:
        reason: short, stable, human-readable reason (the count key).
    """

    reason: str


#: Provider names used by gateways and telemetry (LiteLLM ``custom_llm_provider``, Helicone
#: ``provider``, OpenTelemetry ``gen_ai.provider.name``) → the provider whose cache rules apply.
PROVIDER_ALIASES = {
    "openai": "openai", "azure": "openai", "azure_ai": "openai", "azure.ai.openai": "openai", "text-completion-openai": "openai",
    "anthropic": "anthropic", "claude": "anthropic",
    "gemini": "gemini", "google": "gemini", "vertex_ai": "gemini", "vertex_ai_beta": "gemini", "gcp.gemini": "gemini",
    "gcp.vertex_ai": "gemini", "gcp.gen_ai": "gemini", "google-ai-studio": "gemini",
    "deepseek": "deepseek",
}


def provider_alias(name: Any) -> str | None:
    """The provider for a gateway's or telemetry's provider name (case-insensitive), else ``None``.

    >>> provider_alias("ANTHROPIC"), provider_alias("gcp.vertex_ai"), provider_alias("bedrock")
    ('anthropic', 'gemini', None)
    """
    return PROVIDER_ALIASES.get(str(name).strip().lower()) if name else None


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


def provider_for_model(model: str | None) -> str | None:
    """Infer the provider whose cache rules apply from a model name.

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
    if isinstance(v, Mapping):
        return v
    if isinstance(v, (str, bytes)):
        try:
            got = orjson.loads(v)
        except orjson.JSONDecodeError:
            raise BadRecord(f"{what} is a string but not JSON") from None
        if isinstance(got, Mapping):
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
    if not isinstance(rec, Mapping):
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
            if isinstance(resp, Mapping) and isinstance(resp.get("body"), Mapping):
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

    def get(self, kind: str, index: int, obj: Any, build: Any) -> tuple[Any, ...]:
        """The parts of ``obj`` at ``index``; ``build()`` makes them on a miss.

        Raises:
            BadRecord: whatever ``build`` raises (misses are not cached).
        """
        try:
            raw = orjson.dumps(obj)
        except TypeError:
            return tuple(build())
        # the JSON's 64-bit hash, not the JSON (orjson's buffers carry kilobytes of slack each);
        # with the kind and position, a collision among the entries kept is vanishingly unlikely
        key = (kind, index, len(raw), hash(raw))
        got = self._d.get(key)
        if got is not None:
            return got[0]
        parts = tuple(build())
        cost = 2 * len(raw)  # the parts' texts and the objects around them, about
        self._d[key] = (parts, cost)
        self.size += cost
        while self.size > self.budget and self._d:
            _, (_, n) = self._d.popitem(last=False)
            self.size -= n
        return parts


#: The memo the body readers share (a pure function's cache).
PARTS = PartMemo()


class HistoryMemo:
    """Parts of message lists that extend a list parsed before: each request of an agent
    session parses only the messages it adds to the history it re-sends.

    The lists parsed last ("tips") are remembered with their parts. A new list looks for a tip
    among its own leading sublists that are at most :attr:`PROBES` messages shorter, by length
    and the hash of the sublist's last message (its JSON), and confirms it with an exact list
    comparison, which runs in C and stops at the first difference. Only then are the tip's parts
    reused; messages past the tip are parsed through :data:`PARTS`.

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
        self._tips: OrderedDict[tuple[str, int, int], tuple[list[Any], tuple[Any, ...], int]] = OrderedDict()

    @staticmethod
    def _key(kind: str, msgs: list[Any], k: int) -> tuple[str, int, int] | None:
        try:
            raw = orjson.dumps(msgs[k - 1])
        except TypeError:
            return None
        return (kind, k, hash(raw))

    def parts(self, kind: str, msgs: list[Any], one: Any) -> list[Any]:
        """The parts of every message of ``msgs``, in order; ``one(i, message)`` builds the parts
        of message ``i`` (through :data:`PARTS`).

        Raises:
            BadRecord: whatever ``one`` raises for a message past the reused tip.
        """
        n = len(msgs)
        parts: list[Any] = []
        start = 0
        base: tuple[Any, ...] = ()
        base_cost = 0
        tips = self._tips
        top = None
        for k in range(n, max(0, n - self.PROBES), -1):
            key = self._key(kind, msgs, k)
            if key is None:
                break
            if k == n:
                top = key
            tip = tips.get(key)
            if tip is not None and tip[0] == msgs[:k]:
                base, base_cost = tip[1], tip[2]
                tips_msgs = tip[0] + msgs[k:]  # the texts the parts hold, not this record's copies
                parts.extend(base)
                start = k
                if k < n:  # the session moved on: its tip is this list now
                    self.size -= tips.pop(key)[2]
                else:
                    tips.move_to_end(key)
                break
        for i in range(start, n):
            m = msgs[i]
            parts.extend(PARTS.get(kind, i, m, lambda: one(i, m)))
        if n and start < n:
            key = top
            if key is not None:
                cost = base_cost + sum(len(parts[j].text) for j in range(len(base), len(parts))) + 256 * (n - start)
                old = tips.pop(key, None)
                if old is not None:
                    self.size -= old[2]
                tips[key] = (tips_msgs if start else msgs, tuple(parts), cost)
                self.size += cost
                while self.size > self.budget and tips:
                    _, (_, _, c) = tips.popitem(last=False)
                    self.size -= c
        return parts


#: The history memo the body readers share.
HISTORY = HistoryMemo()
