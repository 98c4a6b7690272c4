"""Rebuild, with invented content, real example records that producers publish in their own
repositories (the structure, field names, nesting, quirks and numbers kept; the text invented).
Writes the files next to this script. Sources (read 2026-12-01):

- langfuse/langfuse ``worker/src/__tests__/chatml/framework-traces/``: UI trace downloads
  (``{trace, observations}``) of the Vercel AI SDK (``vercel-aisdk-2025-11-17.trace.json``),
  LangGraph (``langgraph-python-2025-08-22.trace.json``), the OpenAI Agents SDK
  (``openai-agents-2025-09-30.trace.json``), Pydantic AI (``pydantic-ai-tools-2025-06-06.trace.json``),
  google-genai through OpenInference (``google-gemini-2025-08-01.trace.json``) and the Claude Agent
  SDK through LangSmith's OTel exporter (``claude-agent-2025-12-22.json``), LlamaIndex through
  OpenInference (``llamaindex-2025-06-05.trace.json``).
- Anthropic cache diagnostics on a response (``diagnostics.cache_miss_reason`` with
  ``cache_missed_input_tokens``, as in the message_start fixtures of public clients) and OpenAI
  ``prompt_cache_diagnostics`` on a Responses ``response.completed`` (public proxy tests).

Run: python3 build.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).parent


def obs(oid, typ, name, start, *, parent=None, inp=None, out=None, model=None, usage=None, mp=None, md="{}", trace="t1"):
    return {"id": oid, "traceId": trace, "startTime": start, "endTime": start, "projectId": "proj-1",
            "parentObservationId": parent, "type": typ, "environment": "default", "name": name, "level": "DEFAULT",
            "statusMessage": None, "version": None, "createdAt": start, "updatedAt": start,
            "input": inp, "output": out, "model": model, "internalModelId": "m-1" if model else None,
            "modelParameters": mp, "completionStartTime": None, "promptId": None, "promptName": None,
            "promptVersion": None, "latency": 1.0, "timeToFirstToken": None, "usageDetails": usage or {},
            "costDetails": {}, "providedCostDetails": {}, "inputCost": None, "outputCost": None, "totalCost": 0,
            "inputUsage": 0, "outputUsage": 0, "totalUsage": 0, "usagePricingTierId": None,
            "usagePricingTierName": None, "toolDefinitions": {}, "toolCalls": [], "toolCallNames": [], "metadata": md}


def download(trace_id, name, session, observations):
    """The UI's trace download: the trace (its observations without input/output) and the
    observations with them."""
    bare = [{**o, "input": None, "output": None, "metadata": "{}"} for o in observations]
    return {"trace": {"id": trace_id, "projectId": "proj-1", "name": name, "timestamp": observations[0]["startTime"],
                      "environment": "default", "tags": [], "bookmarked": False, "release": None, "version": None,
                      "userId": None, "sessionId": session, "public": True, "input": None, "output": None,
                      "metadata": "{}", "scores": [], "corrections": [], "latency": 1.0, "observations": bare},
            "observations": observations}


WEATHER_TOOL = json.dumps({"type": "function", "name": "getForecast", "description": "Forecast for a harbour town",
                           "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                                           "properties": {"town": {"type": "string"}}, "required": ["town"],
                                           "additionalProperties": False}})
files = {
    # Vercel AI SDK: ai.generateText (input {"prompt"}, its own smaller usage) wraps ai.generateText.doGenerate
    # (content parts, tools in metadata.tools as JSON strings), plus a TOOL observation.
    "langfuse_trace_vercel_aisdk.json": download("t1", "ai.generateText", None, [
        obs("a1", "GENERATION", "ai.generateText", "2025-11-17T14:55:18.786Z", model="gpt-5",
            inp=json.dumps({"prompt": "Will the ferry to Skerry run tomorrow morning?"}),
            usage={"input": 14, "output": 43, "total": 57},
            mp={"maxSteps": None, "toolChoice": None, "system": "openai.responses", "maxRetries": "2"}),
        obs("a2", "GENERATION", "ai.generateText.doGenerate", "2025-11-17T14:55:18.787Z", parent="a1", model="gpt-5",
            inp=json.dumps([{"role": "user", "content": [{"type": "text", "text": "Will the ferry to Skerry run tomorrow morning?"}]}]),
            usage={"input": 62, "output": 85, "total": 147},
            mp={"toolChoice": "{\"type\":\"auto\"}", "finishReason": "tool-calls", "system": "openai.responses"},
            md=json.dumps({"tools": [WEATHER_TOOL], "attributes": {"operation.name": "ai.generateText.doGenerate"}})),
        obs("a3", "TOOL", "getForecast", "2025-11-17T14:55:21.831Z", parent="a1"),
    ]),
    # LangGraph through Langfuse's LangChain handler: role/content messages, tool definitions appended as
    # role "tool" messages with an object content, tool calls in additional_kwargs.
    "langfuse_trace_langgraph.json": download("t2", "LangGraph", None, [
        obs("g0", "SPAN", "LangGraph", "2025-08-22T09:38:56.228Z", trace="t2",
            inp=json.dumps({"messages": [{"content": "Find the tide table for Skerry.", "type": "human", "id": None}]})),
        obs("g1", "GENERATION", "ChatOpenAI", "2025-08-22T09:38:56.232Z", parent="g0", trace="t2", model="gpt-4o-2024-08-06",
            inp=json.dumps([{"role": "user", "content": "Be brief!"},
                            {"role": "user", "content": "Find the tide table for Skerry."},
                            {"role": "tool", "content": {"type": "function", "function": {
                                "name": "Tide-Search", "description": "Dummy tide search.",
                                "parameters": {"properties": {"query": {"type": "string"}}, "required": ["query"], "type": "object"}}}}]),
            out=json.dumps({"role": "assistant", "content": "", "additional_kwargs": {"tool_calls": [
                {"id": "call_1", "function": {"arguments": "{\"query\":\"Skerry\"}", "name": "Tide-Search"}, "type": "function"}]}}),
            usage={"input": 60, "output": 15, "total": 75, "input_audio": 0, "input_cache_read": 0, "output_audio": 0,
                   "output_reasoning": 0}, mp={"temperature": 0}),
        obs("g2", "GENERATION", "ChatOpenAI", "2025-08-22T09:38:57.089Z", parent="g0", trace="t2", model="gpt-4o-2024-08-06",
            inp=json.dumps([{"role": "user", "content": "Be brief!"},
                            {"role": "user", "content": "Find the tide table for Skerry."},
                            {"role": "assistant", "content": "", "additional_kwargs": {"tool_calls": [
                                {"id": "call_1", "function": {"arguments": "{\"query\":\"Skerry\"}", "name": "Tide-Search"},
                                 "type": "function"}], "refusal": None}},
                            {"role": "tool", "content": "[{\"town\": \"Skerry\", \"high\": \"06:12\"}]", "tool_call_id": "call_1"},
                            {"role": "tool", "content": {"type": "function", "function": {
                                "name": "Tide-Search", "description": "Dummy tide search.",
                                "parameters": {"properties": {"query": {"type": "string"}}, "required": ["query"], "type": "object"}}}}]),
            usage={"input": 108, "output": 51, "total": 159, "input_audio": 0, "input_cache_read": 0, "output_audio": 0,
                   "output_reasoning": 0}, mp={"temperature": 0}),
        obs("g3", "SPAN", "Tide-Search", "2025-08-22T09:38:57.085Z", parent="g0", trace="t2", inp="{'query': 'Skerry'}"),
    ]),
    # OpenAI Agents SDK through OpenInference: AGENT observations, a GENERATION "response" whose input is
    # Responses API items and whose instructions are in modelParameters.
    "langfuse_trace_openai_agents.json": download("t3", "Agent workflow", None, [
        obs("o0", "AGENT", "Agent workflow", "2025-09-30T09:03:59.962Z", trace="t3"),
        obs("o1", "GENERATION", "response", "2025-09-30T09:04:01.001Z", parent="o0", trace="t3", model="gpt-4.1-2025-04-14",
            inp=json.dumps([{"content": "What's the swell at Skerry?", "role": "user"},
                            {"arguments": "{\"town\":\"Skerry\"}", "call_id": "call_K", "name": "get_swell",
                             "type": "function_call", "id": "fc_1", "status": "completed"},
                            {"call_id": "call_K", "output": "The swell at Skerry is low.", "type": "function_call_output"}]),
            mp={"id": "resp_2", "instructions": "You are a helpful harbour agent.", "parallel_tool_calls": "true",
                "tool_choice": "auto", "service_tier": "default", "store": "true"},
            usage={"output": 29, "input": 85, "total": 114, "prompt_details.cache_read": 0, "completion_details.reasoning": 0}),
    ]),
    # Pydantic AI (0.2, OTel events format): event-style messages with gen_ai.* keys.
    "langfuse_trace_pydantic_ai.json": download("t4", "pydantic-ai-qa-trace", "session_abc", [
        obs("p0", "SPAN", "qa_agent run", "2025-06-06T14:40:28.562Z", trace="t4"),
        obs("p1", "GENERATION", "chat gpt-4o", "2025-06-06T14:40:28.562Z", parent="p0", trace="t4", model="gpt-4o",
            inp=json.dumps([{"content": "You answer harbour questions briefly.", "role": "system", "gen_ai.system": "openai",
                             "gen_ai.message.index": 0, "event.name": "gen_ai.system.message"},
                            {"content": "What is a spring tide?", "role": "user", "gen_ai.system": "openai",
                             "gen_ai.message.index": 0, "event.name": "gen_ai.user.message"}]),
            usage={"input": 31, "output": 96, "total": 127}, mp={}),
    ]),
    # google-genai through OpenInference: input is the SDK call's arguments, contents a plain string.
    "langfuse_trace_google_genai.json": download("t5", "generate_content", None, [
        obs("q1", "GENERATION", "GenerateContent", "2025-08-01T13:22:00.511Z", trace="t5", model="gemini-2.5-flash",
            inp=json.dumps({"model": "gemini-2.5-flash", "contents": "What is a harbour master?"}),
            usage={"total": 2061, "input": 6, "completion_details.reasoning": 1104, "output": 2055}, mp={}),
    ]),
    # Claude Agent SDK through LangSmith's OTel exporter: one message per GENERATION input, and the
    # exporter's own broken input {"content": "role"} on later turns.
    "langfuse_trace_claude_agent.json": download("t6", "claude.conversation", None, [
        obs("c0", "SPAN", "claude.conversation", "2025-12-22T10:46:15.529Z", trace="t6",
            inp=json.dumps({"prompt": "Tides at Skerry and Holm?", "system": "You are a friendly harbour assistant."})),
        obs("c1", "GENERATION", "claude.assistant.turn", "2025-12-22T10:46:15.528Z", parent="c0", trace="t6",
            model="claude-sonnet-4-5-20250929", inp=json.dumps({"content": "Tides at Skerry and Holm?", "role": "user"}),
            usage={"input": 19, "output": 29, "total": 48}, mp={}),
        obs("c2", "GENERATION", "claude.assistant.turn", "2025-12-22T10:46:18.977Z", parent="c0", trace="t6",
            model="claude-sonnet-4-5-20250929", inp=json.dumps({"content": "role"}),
            usage={"input": 5, "output": 56, "total": 61}, mp={}),
        obs("c3", "TOOL", "mcp__tides__get_tide", "2025-12-22T10:46:19.027Z", parent="c0", trace="t6"),
    ]),
    # LlamaIndex through OpenInference: a completion call's arguments as input.
    "langfuse_trace_llamaindex.json": download("t7", "query", None, [
        obs("l0", "SPAN", "RetrieverQueryEngine.query", "2025-06-05T15:45:52.900Z", trace="t7"),
        obs("l1", "GENERATION", "OpenAI.complete", "2025-06-05T15:45:52.971Z", parent="l0", trace="t7", model="gpt-4o",
            inp=json.dumps({"args": ["What does a harbour pilot do?"]}),
            mp={"context_window": 128000, "num_output": -1, "is_chat_model": True, "model_name": "gpt-4o",
                "system_role": "system"},
            usage={"input": 13, "prompt_details.cache_read": 0, "prompt_details.audio": 0, "output": 81,
                   "completion_details.reasoning": 0, "completion_details.audio": 0, "total": 94}),
    ]),
}

# Anthropic: a gateway record whose response carries the cache diagnostics (and the request the
# diagnostics.previous_message_id it compares with); OpenAI: a Responses record with prompt_cache_diagnostics.
SYS = "You are the Skerry harbour office assistant. " * 60
files["verdicts.jsonl"] = "\n".join(json.dumps(r) for r in [
    {"timestamp": "2026-10-01T15:38:40Z", "request": {
        "model": "claude-sonnet-4-5", "max_tokens": 256, "diagnostics": {"previous_message_id": "msg_01"},
        "system": [{"type": "text", "text": SYS, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "When does the pilot boat leave?"}]},
     "response": {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                  "content": [{"type": "text", "text": "At six."}],
                  "usage": {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 0,
                            "cache_creation_input_tokens": 6807},
                  "diagnostics": {"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 6455}}}},
    {"timestamp": "2026-10-01T15:38:45Z", "request": {
        "model": "gpt-5.6-sol", "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
        "prompt_cache_options": {"comparison_response_id": "resp_0"}, "user": "u-17", "safety_identifier": "sid-9",
        "service_tier": "priority"},
     "response": {"id": "resp_1", "status": "completed", "model": "gpt-5.6-sol",
                  "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello."}]}],
                  "prompt_cache_diagnostics": {"type": "cache_miss", "reason": "tools_changed", "cache_missed_tokens": 5629,
                                               "comparison_reusable_tokens": 5629},
                  "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 8}}},
]) + "\n"

for name, data in files.items():
    (OUT / name).write_text(data if isinstance(data, str) else json.dumps(data, indent=2) + "\n")
print(f"wrote {len(files)} files to {OUT}")
