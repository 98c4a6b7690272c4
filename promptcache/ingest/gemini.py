"""Gemini ``generateContent`` request bodies (Gemini API and Vertex AI), alone, in gateway
records, or as Batch API lines (``{"key", "request": {...}}``).

Field names from https://ai.google.dev/api/generate-content (request body: ``contents``,
``systemInstruction``, ``tools``, ``toolConfig``, ``cachedContent``, ``generationConfig``) and
https://ai.google.dev/api/caching#Content (``Content``: ``role`` ``user`` | ``model``, ``parts``;
``Part``: ``text``, ``inlineData``, ``fileData``, ``functionCall``, ``functionResponse``,
``executableCode``, ``codeExecutionResult``, ``thought``), checked 2026-11-29. The REST API and
the SDKs also accept snake_case names (``system_instruction``, ``inline_data`` ...); both are read.

Usage (``usageMetadata``) is normalised by :mod:`promptcache.ingest.usage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Part
from .common import MAPPING, blob_digest, require_list, stable_json

#: Gemini roles → chat roles used for framing (``model`` is the assistant).
ROLE = {"user": "user", "model": "assistant", "function": "tool", "tool": "tool", "system": "system"}
#: Kind of a text part by chat role.
ROLE_KIND = {"user": "user", "assistant": "assistant", "tool": "tool_result", "system": "system"}
#: ``generationConfig`` fields that change the request beyond sampling (kept as parameters).
GENERATION_PARAMS = ("responseMimeType", "responseSchema", "responseJsonSchema", "thinkingConfig",
                     "response_mime_type", "response_schema", "response_json_schema", "thinking_config")


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """``obj[camel]``, or its snake_case spelling."""
    if camel in obj:
        return obj[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(snake)


def _part(p: Any, path: str, role: str, msg: int | None) -> Part:
    """One ``Part`` of a ``Content`` as a :class:`Part`."""
    kind = ROLE_KIND.get(role, "user")
    if isinstance(p, str):
        return Part(kind, path, p, role, msg)
    if not isinstance(p, MAPPING):
        raise BadRecord(f"{path} is not a part object")
    if "text" in p:
        text = p["text"]
        if not isinstance(text, str):
            raise BadRecord(f"{path}.text is not a string")
        return Part("assistant" if p.get("thought") else kind, path, text, role, msg)
    for key in ("inlineData", "fileData"):
        blob = _get(p, key)
        if blob is not None:
            if not isinstance(blob, MAPPING):
                raise BadRecord(f"{path}.{key} is not an object")
            mime = str(_get(blob, "mimeType") or "")
            ref = _get(blob, "data") if key == "inlineData" else _get(blob, "fileUri")
            media = "image" if mime.startswith("image/") else "document"
            return Part(media, path, f"<{key} {mime or 'unknown'} {blob_digest(ref if ref is not None else stable_json(blob))}>", role, msg)
    call = _get(p, "functionCall")
    if call is not None:
        return Part("tool_call", path, stable_json(call), role, msg)
    resp = _get(p, "functionResponse")
    if resp is not None:
        return Part("tool_result", path, stable_json(resp), role, msg)
    return Part(kind, path, stable_json(p), role, msg)  # executableCode, codeExecutionResult, ...


def parse_gemini(body: Mapping[str, Any]) -> list[Part]:
    """Parts of a ``generateContent`` body: tools (one per function declaration), system
    instruction, then ``contents``.

    Paths: ``tools[0].functionDeclarations[2]``, ``systemInstruction.parts[0]``,
    ``contents[3].parts[0]``. Roles: ``model`` → ``assistant``; a content without a role is the
    user's (single-turn requests may omit it).

    Raises:
        BadRecord: when ``contents`` is missing or a content or part is malformed.
    """
    contents = body.get("contents")
    if isinstance(contents, (str, MAPPING)):  # the google-genai SDK takes one text or one Content
        contents = [contents]
    if not isinstance(contents, list):
        raise BadRecord("'contents' is missing or not a list")
    config = body.get("config")
    config = config if isinstance(config, MAPPING) else {}  # google-genai: GenerateContentConfig
    tools_key = "tools" if body.get("tools") is not None or not config.get("tools") else "config.tools"
    tools = body.get("tools") if tools_key == "tools" else config.get("tools")
    parts: list[Part] = []
    for i, tool in enumerate(require_list(tools, tools_key)):
        if not isinstance(tool, MAPPING):
            raise BadRecord(f"tools[{i}] is not an object")
        decls = _get(tool, "functionDeclarations")
        if isinstance(decls, list) and decls:
            name = "functionDeclarations" if "functionDeclarations" in tool else "function_declarations"
            for k, d in enumerate(decls):
                parts.append(Part("tool", f"{tools_key}[{i}].{name}[{k}]", stable_json(d)))
        else:  # googleSearch, codeExecution, retrieval ...: one opaque tool
            parts.append(Part("tool", f"{tools_key}[{i}]", stable_json(tool)))
    sys_key = "systemInstruction" if "systemInstruction" in body else "system_instruction"
    system = body.get(sys_key)
    if system is None:
        for k in ("system_instruction", "systemInstruction"):
            if config.get(k) is not None:
                sys_key, system = f"config.{k}", config[k]
                break
    if isinstance(system, list) and all(isinstance(x, str) for x in system):  # SDK: a list of texts
        system = {"parts": system}
    if isinstance(system, str):
        parts.append(Part("system", sys_key, system, "system"))
    elif isinstance(system, MAPPING):
        for j, p in enumerate(require_list(system.get("parts"), f"{sys_key}.parts")):
            got = _part(p, f"{sys_key}.parts[{j}]", "system", None)
            parts.append(Part("system", got.path, got.text, "system"))
    elif system is not None:
        raise BadRecord(f"'{sys_key}' is neither a string nor a content object")
    for i, c in enumerate(contents):
        if isinstance(c, str):  # google-genai: a text is a user turn
            parts.append(Part("user", f"contents[{i}]", c, "user", i))
            continue
        if not isinstance(c, MAPPING):
            raise BadRecord(f"contents[{i}] is not a content object")
        if "parts" not in c and ("text" in c or "inlineData" in c or "functionCall" in c):
            c = {"role": "user", "parts": [c]}  # a bare Part stands for a user content
        raw_role = c.get("role") or "user"
        role = ROLE.get(raw_role)
        if role is None:
            raise BadRecord(f"contents[{i}].role {raw_role!r} is not 'user' or 'model'")
        cparts = require_list(c.get("parts"), f"contents[{i}].parts")
        for j, p in enumerate(cparts):
            parts.append(_part(p, f"contents[{i}].parts[{j}]", role, i))
        if not cparts:
            parts.append(Part(ROLE_KIND[role], f"contents[{i}].parts", "", role, i))
    return parts


def response_parts(resp: Mapping[str, Any], n: int) -> tuple[Part, ...]:
    """The model turn of a ``generateContent`` response (``candidates[0].content``) read as the
    next request's ``contents[n]``; empty when the response holds none."""
    cands = resp.get("candidates")
    if not isinstance(cands, list) or not cands or not isinstance(cands[0], MAPPING):
        return ()
    c = cands[0].get("content")
    if not isinstance(c, MAPPING) or not isinstance(c.get("parts"), list):
        return ()
    try:
        return tuple(_part(p, f"contents[{n}].parts[{j}]", "assistant", n) for j, p in enumerate(c["parts"]))
    except BadRecord:
        return ()


def params_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """Cache-relevant parameters of a ``generateContent`` body: ``toolConfig``, ``cachedContent``
    (an explicit cache whose contents the body does not hold) and the output-shaping fields of
    ``generationConfig``, under their camelCase names."""
    out: dict[str, Any] = {}
    for k in ("toolConfig", "cachedContent"):
        v = _get(body, k)
        if v is not None:
            out[k] = v
    gc = _get(body, "generationConfig")
    if gc is None and isinstance(body.get("config"), MAPPING):
        gc = body["config"]  # google-genai: the generation settings sit in config
        for k in ("tool_config", "cached_content"):
            if gc.get(k) is not None:
                out["toolConfig" if k == "tool_config" else "cachedContent"] = gc[k]
    if isinstance(gc, MAPPING):
        for k in GENERATION_PARAMS:
            if gc.get(k) is not None:
                camel = "".join(w.capitalize() if n else w for n, w in enumerate(k.split("_")))
                out[camel] = gc[k]
    return out
