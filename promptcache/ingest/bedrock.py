"""AWS Bedrock model invocation logs (delivered to S3 as gzipped JSON lines, or CloudWatch).

Shape (https://docs.aws.amazon.com/bedrock/latest/userguide/model-invocation-logging.html;
Panther's ``AWS.BedrockModelInvocation`` schema; checked 2026-12-01): ``{schemaType:
"ModelInvocationLog", schemaVersion, timestamp, accountId, identity, region, requestId,
operation, modelId, input: {inputContentType, inputBodyJson | inputBodyS3Path, inputTokenCount,
cacheReadInputTokenCount, cacheWriteInputTokenCount}, output: {outputBodyJson, outputTokenCount},
requestMetadata, inferenceRegion}``.

``inputBodyJson`` is the body the operation received: a Converse body (``system`` blocks,
``messages[].content`` blocks ``text``/``image``/``document``/``toolUse``/``toolResult``/
``reasoningContent``, ``toolConfig.tools[].toolSpec``, and ``cachePoint`` blocks that mark a
cache breakpoint after the block before them;
https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html), or an InvokeModel
body in the model's own API (Anthropic Messages with ``anthropic_version``; a ``prompt`` for
others). Bedrock bills like Anthropic: ``inputTokenCount`` is the uncached remainder, cache
reads and writes come on top. A body over the log's size limit is only in S3
(``inputBodyS3Path``): the record is then usage-only.
"""

from __future__ import annotations

from typing import Any

from ..errors import BadRecord
from ..model import Breakpoint, Part, Request, Response, Source
from . import anthropic as _anthropic
from .bodies import default_id
from .common import MAPPING, blob_digest, loads_if_json, require_list, stable_json
from .fields import parse_time
from .outcomes import Skipped
from .reader import BODY_KEYS, Reader
from .usage import find_usage, uncached_plus


def _with_breakpoint(parts: list[Part], block: Any, path: str) -> None:
    """A ``cachePoint`` block: a breakpoint on the part before it (``ttl`` ``5m``/``1h`` when given)."""
    if not parts:
        raise BadRecord(f"{path}: a cachePoint with nothing before it")
    cp = block.get("cachePoint")
    ttl = cp.get("ttl") if isinstance(cp, MAPPING) else None
    last = parts[-1]
    parts[-1] = Part(last.kind, last.path, last.text, last.role, last.message,
                     Breakpoint(_anthropic.TTL.get(ttl, 300) if isinstance(ttl, str) else 300))


def _block(b: Any, path: str, role: str, i: int | None) -> Part:
    kind = "assistant" if role == "assistant" else ("system" if role == "system" else "user")
    if not isinstance(b, MAPPING):
        raise BadRecord(f"{path} is not a content block")
    if isinstance(b.get("text"), str):
        return Part(kind, path, b["text"], role, i)
    if "image" in b or "document" in b or "video" in b:
        key = next(k for k in ("image", "document", "video") if k in b)
        return Part("image" if key == "image" else "document", path, f"<{key} {blob_digest(stable_json(b[key]))}>", role, i)
    if "toolUse" in b:
        return Part("tool_call", path, stable_json(b["toolUse"]), role, i)
    if "toolResult" in b:
        tr = b["toolResult"]
        c = tr.get("content") if isinstance(tr, MAPPING) else None
        texts = [x["text"] if isinstance(x, MAPPING) and isinstance(x.get("text"), str) else stable_json(x)
                 for x in (c if isinstance(c, list) else [])]
        head = f"[toolResult {tr.get('toolUseId', '') if isinstance(tr, MAPPING) else ''}]\n"
        return Part("tool_result", path, head + "\n".join(texts), role, i)
    return Part("assistant" if "reasoningContent" in b else kind, path, stable_json(b), role, i)


def converse_parts(body: Any) -> list[Part]:
    """Parts of a Converse body in Anthropic's prefix order: tools, system, messages, with
    ``cachePoint`` blocks as breakpoints.

    Raises:
        BadRecord: when the body is malformed.
    """
    if not isinstance(body, MAPPING):
        raise BadRecord("the Converse body is not an object")
    parts: list[Part] = []
    tc = body.get("toolConfig")
    tools = tc.get("tools") if isinstance(tc, MAPPING) else None
    for i, t in enumerate(require_list(tools, "toolConfig.tools")):
        if isinstance(t, MAPPING) and "cachePoint" in t:
            _with_breakpoint(parts, t, f"toolConfig.tools[{i}]")
        else:
            parts.append(Part("tool", f"toolConfig.tools[{i}]", stable_json(t.get("toolSpec", t) if isinstance(t, MAPPING) else t)))
    for i, b in enumerate(require_list(body.get("system"), "system")):
        if isinstance(b, MAPPING) and "cachePoint" in b:
            _with_breakpoint(parts, b, f"system[{i}]")
        else:
            parts.append(_block(b, f"system[{i}]", "system", None))
    for i, m in enumerate(require_list(body.get("messages"), "messages")):
        if not isinstance(m, MAPPING) or not isinstance(m.get("role"), str):
            raise BadRecord(f"messages[{i}] has no role")
        for j, b in enumerate(require_list(m.get("content"), f"messages[{i}].content")):
            path = f"messages[{i}].content[{j}]"
            if isinstance(b, MAPPING) and "cachePoint" in b:
                _with_breakpoint(parts, b, path)
            else:
                parts.append(_block(b, path, m["role"], i))
    return parts


def _converse_response(out: Any, n: int) -> tuple[Part, ...]:
    msg = out.get("output", {}).get("message") if isinstance(out, MAPPING) and isinstance(out.get("output"), MAPPING) else None
    if not isinstance(msg, MAPPING):
        return ()
    try:
        return tuple(_block(b, f"messages[{n}].content[{j}]", "assistant", n)
                     for j, b in enumerate(require_list(msg.get("content"), "content")))
    except BadRecord:
        return ()


class BedrockReader(Reader):
    """AWS Bedrock model invocation logs (see the module docstring). ``id``: ``requestId``;
    ``arrival``: ``timestamp``; ``model``: ``modelId``; ``session``: a session field of
    ``requestMetadata``; ``upstream``: ``bedrock:<inferenceRegion>``."""

    name = "bedrock"
    producer = "AWS Bedrock model invocation logging"
    shapes = "ModelInvocationLog records (Converse and InvokeModel bodies), JSON lines, usually .json.gz"
    looks_for = "schemaType ModelInvocationLog (or modelId with input.inputBodyJson)"
    owns = ("schemaType",)

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or not self.alone(rec):
            return None
        if rec.get("schemaType") == "ModelInvocationLog":
            return "schemaType ModelInvocationLog"
        inp = rec.get("input")
        if "modelId" in rec and isinstance(inp, MAPPING) and ("inputBodyJson" in inp or "inputTokenCount" in inp) \
                and not any(k in rec for k in BODY_KEYS if k != "input"):
            return "modelId with input.inputBodyJson"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        if rec.get("schemaType") not in (None, "ModelInvocationLog"):
            return Skipped(f"Bedrock {str(rec.get('schemaType'))[:30]} record (not a model invocation)")
        inp = rec.get("input") if isinstance(rec.get("input"), MAPPING) else {}
        out = rec.get("output") if isinstance(rec.get("output"), MAPPING) else {}
        body = loads_if_json(inp.get("inputBodyJson"))
        op = str(rec.get("operation") or "")
        parts: tuple[Part, ...] = ()
        params: dict[str, Any] = {}
        api = "anthropic"
        n = 0
        if isinstance(body, MAPPING):
            if "anthropic_version" in body or (op.startswith("InvokeModel") and "messages" in body and "system" in body
                                               and isinstance(body.get("system"), str)):
                parts = tuple(_anthropic.parse_anthropic(body))
                params = _anthropic.params_of(body)
            elif "messages" in body or "system" in body:
                parts = tuple(converse_parts(body))
                extra = body.get("additionalModelRequestFields")
                if isinstance(extra, MAPPING):
                    params = {k: extra[k] for k in ("thinking", "reasoning_config") if extra.get(k) is not None}
            elif isinstance(body.get("prompt") or body.get("inputText"), str):
                text = body.get("prompt") or body.get("inputText")
                parts = (Part("user", "prompt" if "prompt" in body else "inputText", text, "user", 0),)
                api = "chat"
            else:
                raise BadRecord("input.inputBodyJson is no Converse, Messages or prompt body")
            n = len(body.get("messages") or ()) if isinstance(body.get("messages"), list) else 0
        model = rec.get("modelId") if isinstance(rec.get("modelId"), str) else getattr(opts, "model", None)
        usage = uncached_plus(inp.get("inputTokenCount"), inp.get("cacheReadInputTokenCount"),
                              inp.get("cacheWriteInputTokenCount"), out.get("outputTokenCount"), "Bedrock")
        md = rec.get("requestMetadata") if isinstance(rec.get("requestMetadata"), MAPPING) else {}
        session = next((md[k] for k in ("session_id", "sessionId", "session", "conversation_id") if md.get(k)), None)
        region = rec.get("inferenceRegion") or rec.get("region")
        outb = loads_if_json(out.get("outputBodyJson"))
        if inp.get("cacheReadInputTokenCount") is None and inp.get("cacheWriteInputTokenCount") is None \
                and isinstance(outb, MAPPING):
            # records without the cache counts in ``input`` (older logs, and InvokeModel ones) still
            # hold the response's own usage: Converse ``cacheReadInputTokens`` /
            # ``cacheWriteInputTokens``, an Anthropic body's ``cache_read_input_tokens`` /
            # ``cache_creation_input_tokens``; ``inputTokenCount`` is then only the uncached part
            body_usage = find_usage(outb)
            if body_usage is not None and body_usage.cache_reported:
                usage = body_usage
        rparts = _converse_response(outb, n)
        response = Response(None, f"bedrock:{region}" if isinstance(region, str) else None, rparts) \
            if (rparts or region) else None
        t = rec.get("timestamp")
        rid = rec.get("requestId")
        return Request(id=str(rid) if isinstance(rid, str) and rid else default_id(src), source=src, format="bedrock",
                       api=api, provider="bedrock",
                       model=model, arrival=parse_time(t) if t not in (None, "") else None, parts=parts, params=params,
                       session=str(session) if session else None, usage=usage, response=response)
