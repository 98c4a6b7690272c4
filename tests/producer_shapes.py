"""Re-wrap request records (bare bodies or gateway ``{request, response}`` records, as the corpus
cases hold them) in the record shapes real producers write, keeping each request identical.

The shapes are those of ``tests/data/formats/gen.py`` (where each producer's source is named,
``tests/data/formats/README.md``), with the producers' own habits that change what a reader sees:

- Langfuse's OpenAI integration logs ``input`` as the message list, or ``{tools, messages}`` when
  tools are given, and ``modelParameters`` as temperature, max_tokens, top_p, penalties,
  ``seed``, ``service_tier`` only (langfuse-python ``langfuse/openai.py``
  ``_extract_chat_prompt`` and ``_get_langfuse_data_from_kwargs``); a manual
  ``start_generation(input=...)`` logs whatever body the caller passes (Anthropic bodies here,
  with non-scalar parameters as JSON strings, as ``modelParameters`` holds scalars);
- Braintrust's ``wrap_anthropic`` logs ``input`` as the messages with the system prompt appended
  *last* as ``{"role": "system", "content": system}``, and ``model``, ``max_tokens``, ``tools``,
  ``thinking``, ``tool_choice`` ... in ``metadata`` (braintrust-sdk
  ``integrations/anthropic``: ``_get_input_from_kwargs``, ``METADATA_PARAMS``);
- Helicone stores the request and response bodies as sent and received;
- LiteLLM spend logs keep the body the proxy received in ``proxy_server_request`` and usage in
  ``metadata.usage_object`` (JSON strings);
- the OpenTelemetry GenAI conventions carry the system prompt in ``gen_ai.system_instructions``
  and messages as ``parts`` in ``gen_ai.input.messages`` (text messages only here);
- Portkey's export has ``request.body`` / ``response.body`` as flat dotted columns;
- Bedrock's invocation log holds an InvokeModel body in the model's own API under
  ``input.inputBodyJson``.
"""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

_OUT = ("timestamp", "session_id", "usage", "response")


def calls(records: list[dict]) -> list[dict]:
    """Each record as ``{body, response, time (datetime), session}``."""
    out = []
    for k, rec in enumerate(records):
        if isinstance(rec.get("request"), dict):
            body, resp = rec["request"], rec.get("response")
        else:
            body = {key: v for key, v in rec.items() if key not in _OUT}
            resp = rec.get("response") or ({"usage": rec["usage"]} if rec.get("usage") else None)
        t = rec.get("timestamp")
        when = datetime.fromisoformat(t.replace("Z", "+00:00")) if isinstance(t, str) else \
            datetime.fromtimestamp(float(t or 0) + 1_700_000_000 + k, tz=timezone.utc)
        out.append({"body": body, "response": resp, "time": when, "session": rec.get("session_id")})
    return out


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ns(t: datetime) -> str:
    return str(int(round(t.timestamp() * 1e9)))


def anthropic_body(body: dict) -> bool:
    return "max_tokens" in body and ("system" in body or any(isinstance(m.get("content"), list) and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in m["content"])
        for m in body.get("messages") or []) or "messages" in body and "tools" in body and
        all("input_schema" in t for t in body.get("tools") or []))


def usage_numbers(resp: dict | None) -> tuple[int, int, int, int] | None:
    """(prompt tokens in all, cache reads, cache writes, output) of a response's usage."""
    u = (resp or {}).get("usage")
    if not isinstance(u, dict):
        return None
    if "cache_read_input_tokens" in u or "cache_creation_input_tokens" in u:  # Anthropic: input excludes both
        read, write = u.get("cache_read_input_tokens") or 0, u.get("cache_creation_input_tokens") or 0
        return u.get("input_tokens", 0) + read + write, read, write, u.get("output_tokens", 0)
    d = u.get("prompt_tokens_details") or u.get("input_tokens_details") or {}
    prompt = u.get("prompt_tokens", u.get("input_tokens", 0))
    return prompt, d.get("cached_tokens") or 0, 0, u.get("completion_tokens", u.get("output_tokens", 0))


def chat_output(resp: dict | None) -> dict | None:
    """The assistant message of a Chat Completions response."""
    ch = (resp or {}).get("choices")
    return ch[0].get("message") if isinstance(ch, list) and ch and isinstance(ch[0], dict) else None


# ---------------------------------------------------------------------------------------------

def langfuse(records: list[dict]) -> list[dict]:
    """Langfuse observations export rows (one GENERATION per call, one trace per session)."""
    rows = []
    for k, c in enumerate(calls(records)):
        body, t = c["body"], c["time"]
        u = usage_numbers(c["response"])
        usage = {} if u is None else {"input": u[0] - u[1] - u[2], "input_cached_tokens": u[1],
                                      **({"input_cache_creation": u[2]} if u[2] else {}), "output": u[3],
                                      "total": u[0] + u[3]}
        if anthropic_body(body):  # a manual generation: the caller logs the body it sends
            inp = {key: v for key, v in body.items() if key in ("system", "messages", "tools")}
            mp = {key: (json.dumps(v) if isinstance(v, (dict, list)) else v) for key, v in body.items()
                  if key not in ("system", "messages", "tools", "model")}
            out = None
        else:  # the OpenAI integration
            inp = ({"tools": body["tools"], "messages": body["messages"]} if body.get("tools") is not None
                   else body["messages"])
            mp = {"temperature": body.get("temperature", 1), "max_tokens": body.get("max_tokens", "Infinity"),
                  "top_p": body.get("top_p", 1), "frequency_penalty": 0, "presence_penalty": 0,
                  **({"service_tier": body["service_tier"]} if body.get("service_tier") else {})}
            out = chat_output(c["response"])
        trace = f"{(c['session'] or 'trace'):0>8}"[:32]
        rows.append({"id": f"{k:016x}", "traceId": trace, "startTime": iso(t), "endTime": iso(t), "projectId": "cm-proj-1",
                     "parentObservationId": None, "type": "GENERATION", "environment": "default",
                     "name": "OpenAI-generation", "level": "DEFAULT", "statusMessage": None, "version": None,
                     "input": inp, "output": out, "model": body.get("model"), "modelParameters": mp,
                     "completionStartTime": None, "promptId": None, "usageDetails": usage, "costDetails": {},
                     "metadata": {}, "traceName": "agent", "traceTags": [], "traceTimestamp": iso(t), "userId": "user-17",
                     "scores": {}, "comments": []})
    return rows


def helicone(records: list[dict], provider: str = "OPENAI") -> list[dict]:
    """Helicone export rows (``npx @helicone/export --include-body``)."""
    rows = []
    for k, c in enumerate(calls(records)):
        body, t, resp = c["body"], c["time"], c["response"]
        u = usage_numbers(resp) or (None,) * 4  # no usage logged: none exported
        path = "https://api.anthropic.com/v1/messages" if anthropic_body(body) else \
            "https://api.openai.com/v1/responses" if "input" in body else "https://api.openai.com/v1/chat/completions"
        rows.append({"response_id": str(uuid.UUID(int=500 + k)), "response_created_at": t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
                     "response_status": 200, "request_id": str(uuid.UUID(int=700 + k)),
                     "request_created_at": t.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
                     "request_body": body, "request_path": path, "request_user_id": "user-17",
                     "request_properties": {"Helicone-Session-Id": c["session"] or "sess-1"},
                     "request_model": body.get("model"), "provider": provider, "delay_ms": 1800,
                     "total_tokens": u[0] and u[0] + u[3], "prompt_tokens": u[0] and u[0] - u[1] - u[2],
                     "prompt_cache_write_tokens": u[2],
                     "prompt_cache_read_tokens": u[1], "completion_tokens": u[3], "model": body.get("model"),
                     "properties": {"Helicone-Session-Id": c["session"] or "sess-1"}, "target_url": path.rsplit("/v1", 1)[0],
                     "response_body": resp or {}})
    return rows


def litellm(records: list[dict]) -> list[dict]:
    """LiteLLM ``LiteLLM_SpendLogs`` rows with the proxy's request body stored."""
    rows = []
    for k, c in enumerate(calls(records)):
        body, t, resp = c["body"], c["time"], c["response"]
        u = usage_numbers(resp) or (None,) * 4  # no usage logged: none exported
        anth = anthropic_body(body)
        uo = {} if u[0] is None else {"completion_tokens": u[3], "prompt_tokens": u[0], "total_tokens": u[0] + u[3],
              "prompt_tokens_details": {"cached_tokens": u[1], "cache_creation_tokens": u[2]},
              "cache_creation_input_tokens": u[2], "cache_read_input_tokens": u[1]}
        md = {"usage_object": uo, "user_api_key_team_id": "team-ops", "status": "success"}
        rows.append({"request_id": f"chatcmpl-{uuid.UUID(int=k + 1)}", "session_id": c["session"] or "sess-1",
                     "call_type": "anthropic_messages" if anth else "acompletion", "api_key": "88dc28d0f0", "cache_hit": "None",
                     "startTime": t.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f"),
                     "endTime": t.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f"),
                     "model": body.get("model"), "metadata": json.dumps(md), "cache_key": "Cache OFF", "spend": 0.0042,
                     "total_tokens": u[0] and u[0] + u[3], "prompt_tokens": u[0], "completion_tokens": u[3],
                     "request_tags": "[]",
                     "api_base": "https://api.anthropic.com/v1/messages" if anth else "https://api.openai.com",
                     "custom_llm_provider": "anthropic" if anth else "openai", "messages": "{}",
                     "response": json.dumps(resp) if resp else "{}", "proxy_server_request": json.dumps(body),
                     "status": "success"})
    return rows


def _kv(key: str, v: Any) -> dict:
    if isinstance(v, bool):
        return {"key": key, "value": {"boolValue": v}}
    if isinstance(v, int):
        return {"key": key, "value": {"intValue": str(v)}}
    return {"key": key, "value": {"stringValue": v}}


def otel(records: list[dict]) -> list[dict]:
    """OTLP/JSON lines (Collector file exporter), one ``chat`` span per call, GenAI semconv:
    system messages to ``gen_ai.system_instructions``, the rest as ``parts``."""
    lines = []
    for k, c in enumerate(calls(records)):
        body, t = c["body"], c["time"]
        u = usage_numbers(c["response"])
        system = [{"type": "text", "content": m["content"]} for m in body["messages"] if m["role"] == "system"]
        inp = [{"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
               for m in body["messages"] if m["role"] != "system"]
        tools = [{"type": "function", **t_["function"]} for t_ in body.get("tools") or []]
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": body["model"],
                 **({} if u is None else {"gen_ai.usage.input_tokens": u[0], "gen_ai.usage.output_tokens": u[3],
                                          "gen_ai.usage.cache_read.input_tokens": u[1]}),
                 **({"gen_ai.conversation.id": c["session"]} if c["session"] else {}),
                 "gen_ai.system_instructions": json.dumps(system), "gen_ai.input.messages": json.dumps(inp),
                 **({"gen_ai.tool.definitions": json.dumps(tools)} if tools else {})}
        span = {"traceId": f"{k + 1:032x}", "spanId": f"{k + 1:016x}", "parentSpanId": "", "flags": 257,
                "name": f"chat {body['model']}", "kind": 3, "startTimeUnixNano": _ns(t), "endTimeUnixNano": _ns(t),
                "attributes": [_kv(a, b) for a, b in attrs.items()], "events": [], "status": {}}
        lines.append({"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "agent")]},
                                         "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                                                         "spans": [span]}]}]})
    return lines


_BT_METADATA = ("model", "max_tokens", "temperature", "top_k", "top_p", "stop_sequences", "tool_choice", "tools",
                "stream", "thinking")


def braintrust(records: list[dict]) -> list[dict]:
    """Braintrust span rows as ``wrap_anthropic`` logs them."""
    rows = []
    for k, c in enumerate(calls(records)):
        body, t = c["body"], c["time"]
        u = usage_numbers(c["response"])
        msgs = list(body["messages"]) + ([{"role": "system", "content": body["system"]}] if body.get("system") else [])
        md = {"provider": "anthropic", **{key: body[key] for key in _BT_METADATA if body.get(key) is not None}}
        if c["session"]:
            md["session_id"] = c["session"]
        root = str(uuid.UUID(int=1200))
        rows.append({"id": str(uuid.UUID(int=1300 + k)), "_xact_id": f"10003{k:08d}", "created": iso(t),
                     "project_id": "p-123", "log_id": "g", "org_id": "o-1", "span_id": str(uuid.UUID(int=1400 + k)),
                     "root_span_id": root, "span_parents": [root], "is_root": False,
                     "span_attributes": {"name": "anthropic.messages.create", "type": "llm"}, "input": msgs,
                     "output": None, "metadata": md,
                     "metrics": {"start": t.timestamp(), "end": t.timestamp() + 2.1,
                                 **({} if u is None else {"prompt_tokens": u[0] - u[1] - u[2], "completion_tokens": u[3],
                                                          "tokens": u[0] - u[1] - u[2] + u[3], "prompt_cached_tokens": u[1],
                                                          "prompt_cache_creation_tokens": u[2]})}})
    return rows


def portkey(records: list[dict]) -> list[dict]:
    """Portkey logs export rows (flat dotted columns)."""
    rows = []
    for k, c in enumerate(calls(records)):
        body, t, resp = c["body"], c["time"], c["response"]
        u = usage_numbers(resp) or (None,) * 4
        rows.append({"created_at": t.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"), "request.body": body,
                     "response.body": resp or {}, "is_success": 1, "ai_org": "openai", "ai_model": body.get("model"),
                     "req_units": u[0], "res_units": u[3], "total_units": u[0] and u[0] + u[3], "cost": 0.11, "cost_currency": "USD",
                     "request_url": "https://api.openai.com/v1/" + ("responses" if "input" in body else "chat/completions"),
                     "response_status_code": 200,
                     "cache_status": "DISABLED", "trace_id": c["session"] or "trace-1", "mode": "SINGLE",
                     "virtual_key": "openai-prod-7f"})
    return rows


def bedrock(records: list[dict]) -> list[dict]:
    """Bedrock model invocation log records of InvokeModel calls with Anthropic Messages bodies
    (``anthropic_version`` in, ``model`` out: the model is the URL's, a Bedrock model id)."""
    rows = []
    for k, c in enumerate(calls(records)):
        model_id = f"anthropic.{c['body'].get('model')}-v1:0"
        body = {"anthropic_version": "bedrock-2023-05-31", **{key: v for key, v in c["body"].items() if key != "model"}}
        u = usage_numbers(c["response"])
        counts = {} if u is None else {"inputTokenCount": u[0] - u[1] - u[2], "cacheReadInputTokenCount": u[1],
                                       "cacheWriteInputTokenCount": u[2]}
        rows.append({"schemaType": "ModelInvocationLog", "schemaVersion": "1.0",
                     "timestamp": c["time"].astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "accountId": "123456789012",
                     "identity": {"arn": "arn:aws:sts::123456789012:assumed-role/agent/i-0abc"}, "region": "us-east-1",
                     "requestId": str(uuid.UUID(int=1500 + k)), "operation": "InvokeModel", "modelId": model_id,
                     "input": {"inputContentType": "application/json", "inputBodyJson": body, **counts},
                     "output": {"outputContentType": "application/json", **({"outputTokenCount": u[3]} if u else {})},
                     "requestMetadata": {"session": c["session"]} if c["session"] else {}})
    return rows


WRAPPERS: dict[str, Callable[[list[dict]], list[dict]]] = {
    "langfuse": langfuse, "helicone": helicone, "litellm": litellm, "otel": otel, "braintrust": braintrust,
    "portkey": portkey, "bedrock": bedrock}


def write(path: Path, rows: list[dict], gz: bool = False) -> Path:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path
