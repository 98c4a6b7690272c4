#!/usr/bin/env python3
"""Write the corpus cases C24-C40: request logs reconstructed from public issue and pull-request
threads (each case names its thread), with invented content and the structure the thread
reports. Deterministic:

    python tests/data/make_cases.py            # (re)write tests/data/cases/C24-*.jsonl ... C40-*
    python tests/data/make_cases.py --check    # exit 1 if a written file differs

Each case also gets its ``expected.json`` in the corpus's schema (id, provider, root_cause,
breaking_location, expected_shared_prefix, expected_fix, source). The hand counts of the tokens
each loses are in ``tests/data/handcount.py`` and ``tests/data/corpus.yaml``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "cases"

TOPICS = ["parcel tracking", "billing corrections", "warehouse slot booking", "damaged goods claims", "address changes",
          "membership renewals", "refund timing", "courier handovers", "label reprints", "customs paperwork",
          "pickup windows", "loyalty points", "invoice copies", "contract renewals", "bulk discounts",
          "return labels", "service outages", "account merges"]


def handbook(org: str, clauses: int) -> str:
    """An invented handbook of ``clauses`` clauses (about 75 tokens each)."""
    lines = [f"{org} member-support handbook (internal, invented for testing)."]
    for k in range(clauses):
        t = TOPICS[k % len(TOPICS)]
        lines.append(f"Clause {k + 1}. Staff at {org} answer questions about {t} by first restating the request in plain "
                     f"words, then checking handbook section {k + 1}, and finally replying with short numbered steps. Staff "
                     "never promise dates that the scheduling board has not confirmed, never reveal one member's records to "
                     "another member, and always mention which handbook revision they relied on.")
    return "\n".join(lines)


def oa_tool(name: str, desc: str, props: dict[str, str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}}


def an_tool(name: str, desc: str, props: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "description": desc, "input_schema": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}


OA_TOOLS = [oa_tool("read_file", "Read a file of the invented workspace.", {"path": "string"}),
            oa_tool("search", "Search the invented workspace for a phrase.", {"query": "string"}),
            oa_tool("run_tests", "Run the invented test suite and return its summary.", {"target": "string"})]
AN_TOOLS = [an_tool("read_file", "Read a file of the invented workspace.", {"path": "string"}),
            an_tool("search", "Search the invented workspace for a phrase.", {"query": "string"}),
            an_tool("run_tests", "Run the invented test suite and return its summary.", {"target": "string"})]

QUESTIONS = ["Which clause covers refund timing for damaged parcels?", "Summarise the pickup window rules in three steps.",
             "Does the handbook allow merging two member accounts?", "What do we tell a member whose label did not print?",
             "How should staff answer a customs paperwork question?", "Which queue handles service outages?",
             "Can a member change the delivery address after dispatch?", "List the steps for a bulk discount request."]
ANSWERS = ["Clause 7 covers it: restate, check section 7, reply in steps.", "1. Restate. 2. Check section 11. 3. Reply briefly.",
           "Yes, under clause 18, after checking both records.", "Offer a reprint under clause 9 and name the revision.",
           "Use clause 10 and route anything outside it to the customs queue.", "The outage queue, per clause 17.",
           "Only before handover, per clause 5.", "1. Restate. 2. Check section 15. 3. Confirm the tier."]


def iso(base_min: int, sec: int = 0) -> str:
    h, m = divmod(base_min, 60)
    return f"2026-09-10T{9 + h:02d}:{m:02d}:{sec:02d}.000Z"


def convo(turns: int) -> list[dict[str, Any]]:
    """``turns`` question/answer pairs, then the next question (OpenAI-style messages)."""
    out: list[dict[str, Any]] = []
    for k in range(turns):
        out += [{"role": "user", "content": QUESTIONS[k % 8]}, {"role": "assistant", "content": ANSWERS[k % 8]}]
    out.append({"role": "user", "content": QUESTIONS[turns % 8]})
    return out


def oa_usage(prompt: int, cached: int) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": cached}}


# ---------------------------------------------------------------------------------------------- cases

def c24() -> tuple[list[dict], dict]:
    """bubbuild/bub #76: token usage injected into the system prompt while it is built."""
    recs = []
    used = [0, 2451, 4977, 7604, 10263]
    for k in range(5):
        sys_ = (f"You are Bub, an invented coding agent.\nBudget: {used[k]} tokens used so far in this session; keep replies short.\n"
                + handbook("Bubble Works", 22))
        recs.append({"timestamp": iso(k), "model": "gpt-4o", "tools": OA_TOOLS,
                     "messages": [{"role": "system", "content": sys_}] + convo(k)})
    return recs, dict(provider="openai", root_cause="counter",
                      breaking_location="messages[0].content: 'Budget: N tokens used so far' second line; N grows every request",
                      expected_shared_prefix="Each request should extend its predecessor (system + tools + history); as logged they share only the first system line.",
                      expected_fix="Give the model a token-counting tool, or report usage in the newest user turn, never in the system prompt.",
                      source="bubbuild/bub issue #76")


def c25() -> tuple[list[dict], dict]:
    """yc-software/qm PR #971: per-turn blocks (local time at minute resolution, memory recall)
    appended to the end of the system prompt: the whole history behind them is re-written."""
    recs = []
    times = ["2026-09-08 14:05", "2026-09-08 14:05", "2026-09-08 14:06", "2026-09-08 14:08", "2026-09-08 14:09"]
    for k in range(5):
        system = [{"type": "text", "text": "You are QM, an invented assistant.\n" + handbook("Quartermaster Guild", 20),
                   "cache_control": {"type": "ephemeral"}},
                  {"type": "text", "text": f"<environment>Local time: {times[k]}. Recalled memory: the member prefers short answers.</environment>"}]
        msgs = convo(2 + k)
        msgs[-1] = {"role": "user", "content": [{"type": "text", "text": msgs[-1]["content"], "cache_control": {"type": "ephemeral"}}]}
        recs.append({"timestamp": iso(k * 2), "model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": AN_TOOLS,
                     "system": system, "messages": msgs})
    return recs, dict(provider="anthropic", root_cause="timestamp",
                      breaking_location="system[1].text: 'Local time: YYYY-MM-DD HH:MM' at the end of the system prompt, before every message",
                      expected_shared_prefix="Each request should read its predecessor's whole prefix through the last message; when the minute changes only tools + system[0] are read and the whole history is written again.",
                      expected_fix="Move per-turn blocks (time, recalled memory) onto the newest user message; keep the system prompt stable.",
                      source="yc-software/qm PR #971")


def c26() -> tuple[list[dict], dict]:
    """ranxianglei/opencode-acp PR #26: completed tool outputs replaced in place by a placeholder,
    one more each request."""
    outputs = [f"Output of run {k}: " + " ".join(f"line {j} of the invented log for run {k} passed." for j in range(40))
               for k in range(6)]
    recs = []
    for k in range(1, 6):
        msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are an invented coding agent.\n" + handbook("Acorn Labs", 16)},
                                      {"role": "user", "content": "Run the checks one by one and report."}]
        for j in range(k):
            msgs.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": f"call_{j}", "type": "function",
                                         "function": {"name": "run_tests", "arguments": json.dumps({"target": f"suite{j}"})}}]})
            # outputs older than the last two are pruned in place
            msgs.append({"role": "tool", "tool_call_id": f"call_{j}", "content": "[pruned]" if j < k - 2 else outputs[j]})
        recs.append({"timestamp": iso(k), "model": "deepseek-chat", "tools": OA_TOOLS, "messages": msgs})
    return recs, dict(provider="deepseek", root_cause="history_rewrite",
                      breaking_location="messages[k].content of the oldest unpruned tool result: replaced by '[pruned]' in place, one more per request",
                      expected_shared_prefix="Append-only, each request would extend its predecessor; as logged the prefix ends at the tool result pruned this turn.",
                      expected_fix="Do not mutate historical tool outputs; prune in batches below a trigger, or compress into a suffix message.",
                      source="ranxianglei/opencode-acp PR #26; anomalyco/opencode issue #32515")


def c27() -> tuple[list[dict], dict]:
    """continuedev/continue PR #13077: compaction collapses the history into [system, summary],
    and the window after it moves every turn."""
    recs = []
    base = convo(6)[:-1]  # 6 pairs
    for k in range(4):
        kept = base[2 * (k + 1):] + [{"role": "user", "content": QUESTIONS[(6 + k) % 8]}]
        summary = {"role": "user", "content": f"Summary of the earlier conversation ({k + 1} exchanges folded): the member asked about handbook clauses."}
        msgs = [{"role": "system", "content": "You are an invented support agent.\n" + handbook("Continuum Desk", 18)}, summary] + kept
        recs.append({"timestamp": iso(k), "model": "deepseek-chat", "messages": msgs})
        base = base + [{"role": "user", "content": QUESTIONS[(6 + k) % 8]}, {"role": "assistant", "content": ANSWERS[(6 + k) % 8]}]
    return recs, dict(provider="deepseek", root_cause="history_rewrite",
                      breaking_location="messages[1]: a summary replaces the oldest exchanges and the retained window starts one exchange later every turn",
                      expected_shared_prefix="Tools + system are shared; the summary and the window after it differ on every request.",
                      expected_fix="Pin the stable prefix (system, first turn, earlier digests) and splice the new digest after it; keep the tail append-only between compactions.",
                      source="continuedev/continue PR #13077")


def c28() -> tuple[list[dict], dict]:
    """gptme/gptme #2724: lessons and workspace status injected early in the message list."""
    recs = []
    lessons = [None, "Lesson: prefer small diffs.", None, "Lesson: run the tests before committing.", None]
    for k in range(5):
        msgs = [{"role": "system", "content": "You are gptme, an invented assistant.\n" + handbook("Gimlet Tools", 20)}]
        if lessons[k]:
            msgs.append({"role": "system", "content": lessons[k]}) if False else msgs.append({"role": "user", "content": f"<lessons>{lessons[k]}</lessons>"})
        msgs += convo(k + 1)
        recs.append({"timestamp": iso(k), "model": "gpt-4o", "tools": OA_TOOLS, "messages": msgs})
    return recs, dict(provider="openai", root_cause="history_rewrite",
                      breaking_location="messages[1]: a <lessons> message inserted before the conversation on some turns, absent on others",
                      expected_shared_prefix="Each request would extend its predecessor; where a lesson is inserted or removed, only tools + system are shared.",
                      expected_fix="Put injected lessons and status after the stable history (in the newest user turn), or keep them byte-identical for the session.",
                      source="gptme/gptme issue #2724")


def c29() -> tuple[list[dict], dict]:
    """MiniMax-AI/Mini-Agent PR #22: tool calls re-serialized with json.dumps(sort_keys=True) on
    the next request, so the assistant turn differs from what the model emitted (LM Studio)."""
    raw = ['{"path": "src/app.py", "mode": "read"}', '{"scope": "src", "query": "TODO"}', '{"verbose": true, "target": "unit"}']
    names = ["read_file", "search", "run_tests"]
    resorted = [json.dumps(json.loads(a), sort_keys=True) for a in raw]
    recs = []
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are Mini, an invented local agent.\n" + handbook("Minim Works", 14)},
                                  {"role": "user", "content": "Find and fix the failing check."}]
    for k in range(3):
        call = {"id": f"call_{k}", "type": "function", "function": {"name": names[k], "arguments": raw[k]}}
        recs.append({"timestamp": iso(k), "session_id": "mini-1",
                     "request": {"model": "local-model", "tools": OA_TOOLS, "messages": json.loads(json.dumps(msgs))},
                     "response": {"id": f"chatcmpl-{k}", "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}})
        replay = {"id": f"call_{k}", "type": "function", "function": {"name": names[k], "arguments": resorted[k]}}
        msgs = msgs + [{"role": "assistant", "content": None, "tool_calls": [replay]},
                       {"role": "tool", "tool_call_id": f"call_{k}", "content": f"Result {k}: ok."}]
    recs.append({"timestamp": iso(3), "session_id": "mini-1", "request": {"model": "local-model", "tools": OA_TOOLS, "messages": msgs}})
    return recs, dict(provider="llama.cpp (LM Studio)", root_cause="replay_drift",
                      breaking_location="messages[k].tool_calls[0].function.arguments: the client re-serializes the model's arguments with sorted keys and json.dumps spacing",
                      expected_shared_prefix="The engine holds the prompt and the tokens it generated; replayed byte for byte, each request would reuse the generated tool call too; as logged it re-evaluates the call from its first re-ordered key.",
                      expected_fix="Keep the raw arguments string the model returned and send it back unchanged.",
                      source="MiniMax-AI/Mini-Agent PR #22")


def c30() -> tuple[list[dict], dict]:
    """MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks #111: changing reasoning_effort between turns
    invalidates the whole prefix cache (vLLM, chat_template_kwargs)."""
    effort = [None, None, "high", "high", None]
    sys_ = {"role": "system", "content": "You are an invented coding agent.\n" + handbook("Glimmer Forge", 22)}
    recs = []
    for k in range(5):
        body: dict[str, Any] = {"model": "glm-5.3-flash", "tools": OA_TOOLS, "messages": [sys_] + convo(k + 1)}
        body["chat_template_kwargs"] = {"thinking": True} if effort[k] is None else {"thinking": True, "reasoning_effort": effort[k]}
        cached = 0 if k == 0 or effort[k] != effort[k - 1] else None
        recs.append({"timestamp": iso(k), "request": body, "response": {"id": f"r{k}", "usage": {"_cached": cached}}})
    return recs, dict(provider="vllm", root_cause="param_switch",
                      breaking_location="top-level chat_template_kwargs.reasoning_effort: the template renders 'Reasoning Effort: ...' near token 8; switched on request 3 and off on request 5",
                      expected_shared_prefix="Request JSON is append-only; the rendered prompt changes at its head on every switch, so the reported cached tokens drop to 0 there.",
                      expected_fix="Render the effort line unconditionally after the stable prefix, or keep the effort constant within a conversation.",
                      source="MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks issue #111, PR #63")


def c31() -> tuple[list[dict], dict]:
    """jeffdafoe/llm-memory-api PR #269: OpenRouter load-balanced consecutive ticks across hosts
    of one model; the prefix cache is per host."""
    hosts = ["DeepInfra", "DeepInfra", "GMICloud", "GMICloud", "Baidu"]
    sys_ = {"role": "system", "content": "You are the invented vendor agent of Salem.\n" + handbook("Salem Vendors", 20)}
    recs = []
    for k in range(5):
        recs.append({"timestamp": iso(k), "request": {"model": "deepseek/deepseek-v4-flash", "messages": [sys_] + convo(k + 1)},
                     "response": {"id": f"gen-{k}", "provider": hosts[k], "usage": {"_cached": "sim" if k and hosts[k] == hosts[k - 1] else 0}}})
    return recs, dict(provider="deepseek via OpenRouter", root_cause="routing",
                      breaking_location="response.provider: consecutive requests served by different upstream hosts (DeepInfra, GMICloud, Baidu)",
                      expected_shared_prefix="The prompt is append-only; a request served by the same host as the one before reads the shared prefix, one served elsewhere reads nothing.",
                      expected_fix="Pin the upstream (OpenRouter provider.order with allow_fallbacks false).",
                      source="jeffdafoe/llm-memory-api PR #269; weave-os/router PR #102")


def c32() -> tuple[list[dict], dict]:
    """theopenco/llmgateway PR #3009: unkeyed requests load-balanced across cache shards, about 1
    hit in 25, until a session-derived prompt_cache_key was sent."""
    sys_ = {"role": "system", "content": "You are pi, an invented coding agent.\n" + handbook("Pinewood Studio", 22)}
    recs = []
    for k in range(6):
        recs.append({"timestamp": iso(k), "request": {"model": "gpt-4.1", "messages": [sys_] + convo(k + 1)},
                     "response": {"id": f"m{k}", "usage": {"_cached": "sim" if k == 3 else 0}}})
    return recs, dict(provider="openai-compatible (Meta Model API behind a gateway)", root_cause="routing_key_missing",
                      breaking_location="no prompt_cache_key, user or session header on any request: the backend spreads unkeyed requests over cache shards",
                      expected_shared_prefix="Every request extends the one before; with a stable key each would read the previous prefix; as logged only one of five does.",
                      expected_fix="Send a stable prompt_cache_key derived from the session (salted hash of the session id).",
                      source="theopenco/llmgateway PR #3009")


def c33() -> tuple[list[dict], dict]:
    """arc53/DocsGPT PR #2727: cross-turn Responses chaining with previous_response_id; the
    history lives on the server."""
    recs = []
    doc = "Reference notes: " + handbook("Docs Garden", 18)
    for k in range(4):
        body: dict[str, Any] = {"model": "gpt-4.1", "input": [{"role": "user", "content": doc if k == 0 else QUESTIONS[k]}]}
        if k:
            body["previous_response_id"] = f"resp_{k - 1}"
        recs.append({"timestamp": iso(k * 3), "request": body,
                     "response": {"id": f"resp_{k}", "usage": {"input_tokens": 1600 + 100 * k, "output_tokens": 40,
                                                                "input_tokens_details": {"cached_tokens": 0}}}})
    return recs, dict(provider="openai (Responses)", root_cause="server_chain",
                      breaking_location="previous_response_id on requests 2-4: the logged input is one question, the reported input the whole chain",
                      expected_shared_prefix="Nothing in the log repeats (each request sends only its new input); the reported usage shows the chain's whole context uncached.",
                      expected_fix="Send prompt_cache_key with chained requests and keep turns within the cache lifetime, or send the full input with store false.",
                      source="arc53/DocsGPT PR #2727")


def c34() -> tuple[list[dict], dict]:
    """ggml-org/llama.cpp discussion #13606: with N slots, N+1 cyclic prompts never reuse the
    cache; a single-slot server with two alternating conversations."""
    a_sys = {"role": "system", "content": "You are the invented coding agent.\n" + handbook("Llama Yard", 16)}
    b_sys = {"role": "system", "content": "You write titles for chats. Reply with five words."}
    recs = []
    for k in range(3):
        recs.append({"timestamp": iso(2 * k), "model": "qwen2.5-coder", "messages": [a_sys] + convo(k + 1)})
        recs.append({"timestamp": iso(2 * k + 1), "model": "qwen2.5-coder",
                     "messages": [b_sys, {"role": "user", "content": f"Title for: {QUESTIONS[k]}"}]})
    return recs, dict(provider="llama.cpp server (1 slot)", root_cause="slot_eviction",
                      breaking_location="no content change: the agent's turns and a title-generation call alternate on the server's only slot",
                      expected_shared_prefix="Each agent turn extends the previous one, but the title call in between has replaced the slot's prompt, so the agent re-evaluates its whole prompt.",
                      expected_fix="Run a slot per concurrent conversation (--parallel 2), or send side calls to another server.",
                      source="ggml-org/llama.cpp discussion #13606")


def c35() -> tuple[list[dict], dict]:
    """vercel/ai #5883: the cacheControl provider option was dropped, so requests carried no
    cache_control marker and cacheReadInputTokens stayed 0."""
    recs = []
    sys_ = "You are an invented research assistant.\n" + handbook("Vellum Reading Room", 20)
    for k in range(4):
        recs.append({"timestamp": iso(k), "model": "claude-sonnet-4-5", "max_tokens": 1024, "system": sys_,
                     "messages": convo(k + 1)})
    return recs, dict(provider="anthropic", root_cause="breakpoint_missing",
                      breaking_location="no cache_control anywhere: the SDK dropped the provider option",
                      expected_shared_prefix="Each request extends the one before (system + history), but with no breakpoint nothing is written or read.",
                      expected_fix="Pass cacheControl where the SDK reads it (or top-level automatic caching) and check cache_read_input_tokens.",
                      source="vercel/ai issue #5883 (and PR #12743)")


def c36() -> tuple[list[dict], dict]:
    """Aider-AI/aider #4372: with pauses over five minutes the 5-minute cache expired between
    turns (cache-keepalive-pings seemed to do nothing)."""
    recs = []
    system = [{"type": "text", "text": "You are an invented pair programmer.\n" + handbook("Aiding Hands", 22),
               "cache_control": {"type": "ephemeral"}}]
    minutes = [0, 2, 9, 11, 19]
    for k in range(5):
        msgs = convo(k + 1)
        msgs[-1] = {"role": "user", "content": [{"type": "text", "text": msgs[-1]["content"], "cache_control": {"type": "ephemeral"}}]}
        recs.append({"timestamp": iso(minutes[k]), "model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system,
                     "messages": msgs})
    return recs, dict(provider="anthropic", root_cause="ttl_expiry",
                      breaking_location="no content change: requests 3 and 5 come 7 and 8 minutes after the one before, past the 5-minute TTL",
                      expected_shared_prefix="Append-only; requests 2 and 4 read everything; requests 3 and 5 read nothing and write the whole prefix again.",
                      expected_fix="Use ttl '1h' on the breakpoints, or keep-alive pings that really reach the cache within 5 minutes.",
                      source="Aider-AI/aider issue #4372")


def c37() -> tuple[list[dict], dict]:
    """can1357/oh-my-pi #5992: entering or leaving plan mode mutates the active tool set, cache
    read 113K -> 0."""
    plan_tool = an_tool("exit_plan_mode", "Leave plan mode and start editing.", {"plan": "string"})
    edit_tool = an_tool("edit_file", "Edit a file of the invented workspace.", {"path": "string", "patch": "string"})
    modes = ["edit", "edit", "plan", "plan", "edit"]
    recs = []
    for k in range(5):
        tools = AN_TOOLS + ([plan_tool] if modes[k] == "plan" else [edit_tool])
        tools = [dict(t) for t in tools]
        tools[-1]["cache_control"] = {"type": "ephemeral"}
        system = [{"type": "text", "text": "You are an invented coding agent.\n" + handbook("Omp Workshop", 20),
                   "cache_control": {"type": "ephemeral"}}]
        msgs = convo(k + 1)
        msgs[-1] = {"role": "user", "content": [{"type": "text", "text": msgs[-1]["content"], "cache_control": {"type": "ephemeral"}}]}
        recs.append({"timestamp": iso(k), "model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": tools,
                     "system": system, "messages": msgs})
    return recs, dict(provider="anthropic", root_cause="tools_changed",
                      breaking_location="tools[3]: edit_file in edit mode, exit_plan_mode in plan mode; the tools come first in Anthropic's prefix",
                      expected_shared_prefix="Within a mode each request reads its predecessor's prefix; at each switch only the first three tools are shared.",
                      expected_fix="Keep one tool set for the session (describe mode restrictions in the newest message), or put mode tools last behind a stable breakpoint.",
                      source="can1357/oh-my-pi issue #5992")


def c38() -> tuple[list[dict], dict]:
    """Pasta-Devs/Marinara-Engine #3041: the cache breakpoint at the chosen depth is dropped when
    that message has no text (an image-only turn)."""
    img = lambda k: {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": f"aW52ZW50ZWQtaW1hZ2Ut{k:04d}"}}
    recs = []
    system = [{"type": "text", "text": "You are an invented roleplay narrator.\n" + handbook("Marinara Theatre", 20),
               "cache_control": {"type": "ephemeral"}}]
    msgs: list[dict[str, Any]] = []
    for k in range(4):
        msgs = msgs + [{"role": "user", "content": [img(k)]}]  # the newest turn: an image only; its marker is lost
        recs.append({"timestamp": iso(k), "model": "claude-sonnet-4-5", "max_tokens": 512, "system": system,
                     "messages": json.loads(json.dumps(msgs))})
        msgs = msgs + [{"role": "assistant", "content": "The scene continues: " + ANSWERS[k % 8] * 6}]
    return recs, dict(provider="anthropic", root_cause="breakpoint_tool_result",
                      breaking_location="messages[-1]: an image-only turn; the marker is attached only when a text block is created, so only system[0] is marked",
                      expected_shared_prefix="Append-only; cache reads stay at the system prompt while the history grows.",
                      expected_fix="Attach the breakpoint to the last block of the message whatever its type (image, document, tool result).",
                      source="Pasta-Devs/Marinara-Engine issue #3041")


def c39() -> tuple[list[dict], dict]:
    """BasedHardware/omi PR #7951 (review): one path trims non-empty system prompts before
    serialization, another does not, so the same prompt arrives with and without its trailing
    newlines."""
    base = "You are Omi, an invented desktop assistant. Reply in the member's language."
    trims = [False, True, False, True]
    recs = []
    for k in range(4):
        text = base if trims[k] else base + "\n\n"
        system = [{"type": "text", "text": text}, {"type": "text", "text": handbook("Omi Desk", 20),
                                                   "cache_control": {"type": "ephemeral"}}]
        recs.append({"timestamp": iso(k), "model": "claude-sonnet-4-5", "max_tokens": 512, "system": system,
                     "messages": [{"role": "user", "content": QUESTIONS[k]}]})
    return recs, dict(provider="anthropic", root_cause="whitespace",
                      breaking_location="system[0].text: trailing newlines kept on one path, trimmed on the other, before the long system[1]",
                      expected_shared_prefix="All four requests share the whole system prompt; as logged each shares only system[0] up to its last character, and the handbook after it is written again.",
                      expected_fix="Normalize the system prompt once (or never trim non-empty prompts) on every path.",
                      source="BasedHardware/omi PR #7951 (review thread on chat_completions.rs)")


def c40() -> tuple[list[dict], dict]:
    """goruck/home-generative-agent #617: 'Current time is HH:MM:SS' at the head of the system
    prompt; cache_creation on every turn, cache_read 0."""
    recs = []
    times = ["15:09:20", "15:09:34", "15:10:02", "15:10:41"]
    for k in range(4):
        system = [{"type": "text", "text": f"Current time is {times[k]}. Today's date is 2026-09-09.\nYou are a voice assistant for an invented home.\n"
                   + handbook("Hearth Home", 20), "cache_control": {"type": "ephemeral"}}]
        recs.append({"timestamp": f"2026-09-09T15:{9 + k:02d}:00.000Z", "model": "claude-sonnet-4-5", "max_tokens": 512,
                     "tools": AN_TOOLS, "system": system, "messages": convo(k + 1),
                     "usage": {"_anthropic": True}})
    return recs, dict(provider="anthropic", root_cause="timestamp",
                      breaking_location="system[0].text char 16: 'Current time is HH:MM:SS' at offset 0",
                      expected_shared_prefix="Every request should read tools + system + history; as logged only the tools and 'Current time is 15:' are shared, and the log reports cache_read 0 with a full write every turn.",
                      expected_fix="Move the clock to the newest user message (or a tool); keep the system prompt stable.",
                      source="goruck/home-generative-agent issue #617")


CASES = {
    "C24-bub-token-usage-in-system-prompt": c24,
    "C25-qm-minute-clock-end-of-system": c25,
    "C26-opencode-acp-inplace-tool-prune": c26,
    "C27-continue-compaction-summary-front": c27,
    "C28-gptme-lessons-inserted": c28,
    "C29-mini-agent-toolcall-reserialized": c29,
    "C30-glm-reasoning-effort-switch-vllm": c30,
    "C31-openrouter-upstream-hosts": c31,
    "C32-llmgateway-unkeyed-shards": c32,
    "C33-docsgpt-previous-response-chain": c33,
    "C34-llamacpp-single-slot-alternating": c34,
    "C35-vercel-ai-cachecontrol-dropped": c35,
    "C36-aider-ttl-5m-pauses": c36,
    "C37-oh-my-pi-plan-mode-tools": c37,
    "C38-marinara-image-only-turn-marker": c38,
    "C39-omi-trimmed-system-prompt": c39,
    "C40-home-agent-clock-reported-usage": c40,
}


def _counter(case: str):
    import handcount as H

    if case in ("C25", "C35", "C36", "C37", "C38", "C39", "C40"):
        return H.Counter("cl100k_base", "anthropic")
    if case in ("C24", "C28", "C32", "C33"):
        return H.Counter("o200k_base", "openai")
    return H.Counter("cl100k_base", "openai", frame="text")


def _body(r: dict) -> dict:
    return r.get("request") or r


def prompt_tokens(case: str, recs: list[dict], k: int) -> int:
    """The prompt size the invented provider reports (our own count of the request)."""
    return _counter(case).length(_body(recs[k])) + 8


def served(case: str, recs: list[dict], k: int) -> int:
    """What the invented provider reports as read from its cache on a hit: all the request
    shares with its predecessor (an upstream that holds it)."""
    return _counter(case).shared(_body(recs[k]), _body(recs[k - 1])) if k else 0


def _fill_usage(name: str, recs: list[dict]) -> list[dict]:
    """Reported usage where a case's thread reports it, counted the way the provider reports it
    (placeholders: ``_cached`` is the reported cache read, ``sim`` meaning "what the provider's
    rules serve", worked out in handcount.served; ``_anthropic`` the usage of a request that
    reads nothing and writes its prefix through the last breakpoint)."""
    out = []
    for k, r in enumerate(recs):
        u = (r.get("response") or {}).get("usage") or r.get("usage")
        if u and ("_cached" in u or "_anthropic" in u):
            n = prompt_tokens(name, recs, k)
            if "_anthropic" in u:
                r = dict(r, usage={"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 0,
                                   "cache_creation_input_tokens": n - 10})
            else:
                cached = u["_cached"]
                if cached in (None, "sim"):
                    cached = served(name, recs, k)
                r = json.loads(json.dumps(r))
                r["response"]["usage"] = oa_usage(n, cached)
        out.append(r)
    return out


def build() -> dict[str, str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    files = {}
    for name, fn in CASES.items():
        recs, exp = fn()
        recs = _fill_usage(name[:3], recs)
        files[f"{name}.jsonl"] = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
        files[f"{name}.expected.json"] = json.dumps({"id": name, **exp}, indent=2, ensure_ascii=False) + "\n"
    return files


if __name__ == "__main__":
    files = build()
    check = "--check" in sys.argv
    bad = []
    for fname, text in files.items():
        p = OUT / fname
        if check:
            if not p.exists() or p.read_text(encoding="utf-8") != text:
                bad.append(fname)
        else:
            p.write_text(text, encoding="utf-8")
    if bad:
        print("differ:", ", ".join(bad))
        sys.exit(1)
    print(f"{'checked' if check else 'wrote'} {len(files)} files")
