"""Causes only the reported usage (or the rendered prompt) shows, read from real producers' record
shapes with the cause planted (issue 17, class 4): routing to other upstreams (OpenRouter
generation stats joined to the gateway's records), a routing identifier new on every request
(``user`` in LiteLLM spend logs, ``safety_identifier`` in a Helicone export of Responses bodies),
a setting the chat template renders into the prompt (SGLang and vLLM request logs), thinking
switched mid-session (Anthropic bodies in LiteLLM, Langfuse and Helicone exports), and a
``previous_response_id`` chain whose start the log does not hold. Each names the cause, quotes
its evidence, and costs the tokens counted by hand (tests/data/handcount.py: tiktoken on an
independent serialization; within the corpus's 10% where chat framing is estimated, 1% where
the prompt is the logged text itself).

The record shapes are those of tests/data/formats (README.md there names each source).
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from promptcache.pipeline import AuditOptions, audit

import producer_shapes as shapes

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
import handcount  # noqa: E402

HANDBOOK = "\n".join(f"Clause {k}. Staff answer questions about refund timing by restating the request, checking "
                     f"handbook section {k}, and replying in short numbered steps." for k in range(1, 61))
O = handcount.Counter("o200k_base", "openai")
A = handcount.Counter("cl100k_base", "anthropic")


def chat_messages(k: int) -> list[dict]:
    msgs = [{"role": "system", "content": "You are the refunds desk.\n" + HANDBOOK}]
    for j in range(k):
        msgs += [{"role": "user", "content": f"Where is order {j}?"}, {"role": "assistant", "content": f"Order {j} shipped."}]
    return msgs + [{"role": "user", "content": f"Where is order {k}?"}]


def openai_steps(bodies: list[dict], ks) -> int:
    """Σ over requests ``ks`` of what OpenAI serves from the request before (128-token steps)."""
    return sum((O.shared(bodies[k], bodies[k - 1]) // 128) * 128 for k in ks)


def by_rule(res, rule: str):
    got = [f for f in res.findings if f.rule.id == rule]
    assert len(got) == 1, [f.rule.id for f in res.findings]
    return got[0]


# ------------------------------------------------------------------ routing: OpenRouter

def openrouter_logs(tmp_path: Path, upstreams: list[str]) -> tuple[Path, Path, list[dict]]:
    """Gateway records of OpenRouter chat completions (``gen-`` ids, no ``provider`` in the
    response, nothing cached) and the generations' stats (``GET /api/v1/generation``: the shape
    of tests/data/formats/openrouter_generation_stats.jsonl) naming who served each."""
    reqs, stats, bodies = [], [], []
    for k, up in enumerate(upstreams):
        body = {"model": "openai/gpt-4.1", "messages": chat_messages(k)}
        gid = f"gen-17776296{k:02d}-Xq2Lm{k}"
        bodies.append(body)
        reqs.append({"timestamp": f"2026-05-01T10:0{k}:00Z", "request": body,
                     "response": {"id": gid, "object": "chat.completion", "created": 1777629600 + 60 * k, "model": "openai/gpt-4.1",
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": f"Order {k} shipped."}}],
                                  "usage": {"prompt_tokens": 1750 + 20 * k, "completion_tokens": 5, "total_tokens": 1755 + 20 * k,
                                            "prompt_tokens_details": {"cached_tokens": 0}}}})
        stats.append({"data": {"id": gid, "upstream_id": f"chatcmpl-{k}", "total_cost": 0.0012, "cache_discount": None,
                               "upstream_inference_cost": None, "created_at": f"2026-05-01T10:0{k}:00.400000+00:00",
                               "model": "openai/gpt-4.1", "app_id": None, "streamed": False, "cancelled": False,
                               "provider_name": up, "latency": 910, "moderation_latency": None, "generation_time": 860,
                               "finish_reason": "stop", "native_finish_reason": "stop", "tokens_prompt": 1750 + 20 * k,
                               "tokens_completion": 5, "native_tokens_prompt": 1750 + 20 * k, "native_tokens_completion": 5,
                               "native_tokens_completion_images": None, "native_tokens_reasoning": 0, "native_tokens_cached": 0,
                               "num_media_prompt": None, "num_media_completion": None, "num_search_results": None,
                               "origin": "https://refunds.example", "usage": 0.0012, "is_byok": False, "api_type": "completions"}})
    return (shapes.write(tmp_path / "gateway.jsonl", reqs), shapes.write(tmp_path / "generations.jsonl", stats), bodies)


def test_openrouter_generation_stats_name_the_upstream_each_turn_went_to(tmp_path):
    """Turns served alternately by OpenAI and Azure, nothing read from the cache: the stats
    joined to the gateway's records name the switches, and routed-elsewhere claims what the
    simulation serves each turn from the one before: OpenAI's 128-token steps of the shared
    prefix, counted by hand."""
    gateway, generations, bodies = openrouter_logs(tmp_path, ["OpenAI", "Azure", "OpenAI", "Azure"])
    res = audit([gateway, generations], AuditOptions())
    assert len(res.outcomes) == 4 and sum(st.joined for st in res.inputs) == 4
    assert [o.provider for o in res.outcomes] == ["openai"] * 4
    f = by_rule(res, "routed-elsewhere")
    assert (f.evidence["before"], f.evidence["after"], f.requests) == ("OpenAI", "Azure", 3)
    assert "(OpenAI → Azure)" in f.message
    hand = openai_steps(bodies, range(1, 4))
    assert f.tokens_lost == res.accounting.gaps["reported"] == sum(o.cached_tokens for o in res.outcomes)
    assert abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)
    # without the stats the log cannot say who served what: no routing cause is made up
    alone = audit([gateway], AuditOptions())
    assert not [f for f in alone.findings if f.rule.id == "routed-elsewhere"]
    # the stats alone hold no prompt: usage-only records, nothing diagnosed
    stats_only = audit([generations], AuditOptions())
    assert stats_only.inputs[0].usage_only == 4 and not stats_only.findings


# ------------------------------------------------------------------ a partition field, not a cache key

def gateway_lines(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def test_a_service_tier_switched_between_turns_is_named_not_a_cache_key(tmp_path):
    """OpenAI keeps a cache per service tier: turns alternating flex / priority (no
    prompt_cache_key) each miss what the other tier wrote. The split is the tier's, quoted on
    both sides; it was reported as a cache-key split of "0 keys over 0 requests"."""
    bodies = [{"model": "gpt-4.1", "messages": chat_messages(k), "service_tier": ["flex", "priority"][k % 2]}
              for k in range(4)]
    path = gateway_lines(tmp_path / "tiers.jsonl", [{"timestamp": f"2026-05-01T10:0{k}:00Z", "request": b}
                                                    for k, b in enumerate(bodies)])
    res = audit([path], AuditOptions())
    assert not [f for f in res.findings if f.rule.kind == "key-usage"], [f.message for f in res.findings]
    f = by_rule(res, "partition-changed")
    assert f.requests == 3 and f.evidence["field"] == "service_tier"
    assert (f.evidence["before"], f.evidence["after"]) == ("flex", "priority") and "service_tier" in f.message
    # the ideal cache serves each turn what the turn before it shares; the simulation only what
    # the turn two back (same tier) wrote, in 128-token steps: turn 1 nothing, turns 2 and 3 one
    ideal = sum(O.shared(bodies[k], bodies[k - 1]) for k in range(1, 4))
    served = sum((O.shared(bodies[k], bodies[k - 2]) // 128) * 128 for k in (2, 3))
    hand = ideal - served  # (the hand count frames messages like the pipeline within a token or two)
    assert f.tokens_lost == res.accounting.gaps["rules"] and abs(f.tokens_lost - hand) <= 0.01 * hand, (f.tokens_lost, hand)


def test_a_conversation_id_new_on_every_xai_request_is_named(tmp_path):
    """xAI routes by ``x-grok-conv-id``: a gateway that sends a new one per request puts every
    turn in a cold cache. The header is named, its values as fingerprints."""
    bodies = [{"model": "grok-4", "messages": chat_messages(k)} for k in range(4)]
    conv = [f"conv-{uuid.UUID(int=500 + k).hex[-10:]}" for k in range(4)]
    path = gateway_lines(tmp_path / "xai.jsonl", [{"timestamp": f"2026-05-01T10:0{k}:00Z",
                                                   "headers": {"X-Grok-Conv-Id": conv[k]}, "request": b}
                                                  for k, b in enumerate(bodies)])
    res = audit([path], AuditOptions())
    assert not [f for f in res.findings if f.rule.kind == "key-usage"], [f.message for f in res.findings]
    f = by_rule(res, "partition-changed")
    from promptcache.diagnose.redact import fingerprint
    assert f.requests == 3 and f.evidence["field"] == "x-grok-conv-id"
    assert f.evidence["before"] == f"<session id #{fingerprint(conv[0])}>" and conv[0] not in f.message
    # approximate tokens (cl100k_base, xAI publishes no tokenizer); no minimum: every shared token
    X = handcount.Counter("cl100k_base", "openai")
    hand = sum(X.shared(bodies[k], bodies[k - 1]) for k in range(1, 4))
    assert f.tokens_lost == res.accounting.gaps["rules"] and abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)


def test_a_cache_key_new_on_every_request_is_named_before_a_tier_that_also_alternates(tmp_path):
    """Tiers alternating and a prompt_cache_key new on every request (a fresh helper's log): the
    keys are named, since with the tier held stable every request still misses."""
    bodies = [{"model": "gpt-4.1", "messages": chat_messages(k), "service_tier": ["flex", "priority"][k % 2],
               "prompt_cache_key": f"k{k % 2}-{k // 2}"} for k in range(4)]
    path = gateway_lines(tmp_path / "tiers_keys.jsonl", [{"timestamp": f"2026-05-01T10:0{k}:00Z", "request": b}
                                                         for k, b in enumerate(bodies)])
    res = audit([path], AuditOptions())
    assert not [f for f in res.findings if f.rule.id == "partition-changed"]
    f = by_rule(res, "cache-key-unique")
    assert f.requests == 3 and f.tokens_lost == res.accounting.gaps["rules"]


def test_whitespace_around_a_routing_header_value_is_not_part_of_it():
    """HTTP drops the whitespace around a field value (RFC 9110 5.5): `` conv-A`` and ``conv-A ``
    are one conversation id (a fresh helper's log was split in two caches); a blank one is none."""
    from promptcache.ingest.bodies import affinity_of

    assert affinity_of({}, {"headers": {"X-Grok-Conv-Id": " conv-A"}}) == {"x-grok-conv-id": "conv-A"}
    assert affinity_of({}, {"headers": {"x-grok-conv-id": "conv-A "}}) == {"x-grok-conv-id": "conv-A"}
    assert affinity_of({}, {"headers": {"x-grok-conv-id": "   "}}) == {}


def test_a_namespace_miss_nothing_in_the_log_explains_is_unexplained_not_a_cache_key():
    """Without a cache key, route or partition field that differs, a namespace miss is shown as
    unexplained (with the simulation's reason), never as a cache key the requests do not carry."""
    from promptcache.diagnose.engine import Diagnoser

    d = Diagnoser({}, None)
    assert d._first("key-usage", "check", "unique") is not None and d._first("routing", "check", "partition") is not None
    # the guard itself: no key on either side, no writer
    from types import SimpleNamespace as NS
    step = NS(outcome=NS(namespace="openai/gpt-4.1", provider="openai", model="gpt-4.1"), request=NS(cache_key=None),
              rules=NS(mode="prefix"), prompt=NS(segments=[]), context=None)
    assert d._mechanics(step, None, "namespace") is None


# ------------------------------------------------------------------ an identifier new on every request

def test_a_user_id_new_on_every_request_in_litellm_spend_logs(tmp_path):
    """LiteLLM spend logs whose stored body carries a ``user`` made per request (the fixture's
    ``"user": "user-17"``, now a fresh value each call): affinity-changed, the two values shown
    as kind and fingerprint (a user id is a per-user value), the tokens what OpenAI serves."""
    recs, bodies = [], []
    for k in range(4):
        body = {"model": "gpt-4.1", "messages": chat_messages(k), "max_tokens": 512, "user": f"u-{uuid.UUID(int=77 + k).hex[-8:]}"}
        bodies.append(body)
        recs.append({"timestamp": f"2026-05-01T10:0{k}:00Z", "request": body,
                     "response": {"id": f"chatcmpl-{k}", "object": "chat.completion", "model": "gpt-4.1-2025-04-14",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Order {k} shipped."}}],
                                  "usage": {"prompt_tokens": 1750 + 20 * k, "completion_tokens": 5,
                                            "prompt_tokens_details": {"cached_tokens": 0}}}})
    path = shapes.write(tmp_path / "spend_logs.jsonl", shapes.litellm(recs))
    res = audit([path], AuditOptions())
    f = by_rule(res, "affinity-changed")
    from promptcache.diagnose.redact import fingerprint
    assert f.evidence["identifier"] == "user" and f.requests == 3
    assert f.evidence["before"] == f"<user id #{fingerprint(bodies[0]['user'])}>"
    assert f.evidence["after"] == f"<user id #{fingerprint(bodies[1]['user'])}>"
    assert bodies[0]["user"] not in f.message and f"<user id #{fingerprint(bodies[0]['user'])}>" in f.message
    hand = openai_steps(bodies, range(1, 4))
    assert f.tokens_lost == res.accounting.gaps["reported"] and abs(f.tokens_lost - hand) <= 0.1 * hand
    shown = audit([path], AuditOptions(show_text=True))
    g = by_rule(shown, "affinity-changed")
    assert (g.evidence["before"], g.evidence["after"]) == (bodies[0]["user"], bodies[1]["user"])


def test_a_safety_identifier_new_on_every_request_in_a_helicone_export(tmp_path):
    """Responses API bodies in a Helicone export, ``safety_identifier`` a fresh hash per call."""
    recs, bodies = [], []
    for k in range(3):
        inp = [m for m in chat_messages(k) if m["role"] != "system"]
        body = {"model": "gpt-4.1", "instructions": "You are the refunds desk.\n" + HANDBOOK, "input": inp,
                "safety_identifier": f"sid-{uuid.UUID(int=900 + k).hex[-12:]}"}
        bodies.append({"messages": [{"role": "system", "content": body["instructions"]}] + inp})
        recs.append({"timestamp": f"2026-05-01T10:0{k}:00Z", "request": body,
                     "response": {"id": f"resp_{k:04d}", "object": "response", "status": "completed", "model": "gpt-4.1-2025-04-14",
                                  "output": [{"type": "message", "id": f"msg_{k}", "status": "completed", "role": "assistant",
                                              "content": [{"type": "output_text", "text": f"Order {k} shipped.", "annotations": []}]}],
                                  "usage": {"input_tokens": 1750 + 20 * k, "input_tokens_details": {"cached_tokens": 0},
                                            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                                            "total_tokens": 1755 + 20 * k}}})
    path = shapes.write(tmp_path / "helicone.jsonl", shapes.helicone(recs))
    res = audit([path], AuditOptions())
    f = by_rule(res, "affinity-changed")
    assert f.evidence["identifier"] == "safety_identifier" and f.requests == 2
    assert f.evidence["before"].startswith("<user id #") and "sid-" not in f.message
    hand = openai_steps(bodies, range(1, 3))
    assert abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)


# ------------------------------------------------------------------ rendered settings in engine logs

def harmony(k: int, effort: str) -> str:
    """gpt-oss's chat template rendered (harmony): the effort in the system message, the
    instructions in the developer message, then the conversation."""
    text = ("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n"
            f"Current date: 2026-05-01\n\nReasoning: {effort}\n\n# Valid channels: analysis, commentary, final. Channel must be "
            "included for every message.<|end|><|start|>developer<|message|># Instructions\n\nYou are the refunds desk.\n"
            + HANDBOOK + "<|end|>")
    for j in range(k):
        text += (f"<|start|>user<|message|>Where is order {j}?<|end|><|start|>assistant<|channel|>final<|message|>"
                 f"Order {j} shipped.<|end|>")
    return text + f"<|start|>user<|message|>Where is order {k}?<|end|><|start|>assistant"


EFFORTS = ["medium", "medium", "high", "high"]  # switched on the third turn


def content_lost(texts: list[str], changed: list[int], before: str, after: str) -> int:
    """By hand, on the logged text itself (tiktoken cl100k_base, the approximation the audit
    uses for an unnamed self-hosted model): what a request whose setting changed would share with
    its predecessor had the setting stayed, minus what it shares."""
    e = handcount.enc("cl100k_base")

    def lcp(a: list[int], b: list[int]) -> int:
        return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    total = 0
    for k in changed:
        r, p = e.encode_ordinary(texts[k]), e.encode_ordinary(texts[k - 1])
        undone = e.encode_ordinary(texts[k].replace(after, before))
        total += lcp(undone, p) - lcp(r, p)
    return total


def close(got: int, hand: int) -> bool:
    """Within 1%: the audit frames an engine's already templated prompt as one more user turn
    (a few framing tokens each side; reported to the render owner), the hand count does not."""
    return abs(got - hand) <= 0.01 * hand


def test_a_reasoning_effort_rendered_into_an_sglang_request_log(tmp_path):
    """SGLang's JSON request log (``request.received`` with the rendered ``obj.text``,
    ``request.finished`` with ``meta_info.cached_tokens``): the effort line changes on turn 3,
    which recomputes the whole conversation after it. Named, quoted, and costing what turn 2
    would otherwise have served, counted on the logged text."""
    texts = [harmony(k, e) for k, e in enumerate(EFFORTS)]
    enc = handcount.enc("cl100k_base")
    ids = [enc.encode_ordinary(t) for t in texts]
    served = [0] + [next((i for i, (x, y) in enumerate(zip(ids[k], ids[k - 1])) if x != y), len(ids[k - 1]))
                    for k in range(1, 4)]  # SGLang's own count: the radix cache serves the common prefix
    rows = []
    for k, text in enumerate(texts):
        rid = f"{k:032x}"
        obj = {"text": text, "input_ids": None, "sampling_params": {"temperature": 0.2, "max_new_tokens": 512}, "rid": rid,
               "return_logprob": False, "stream": False, "log_metrics": True, "lora_path": None}
        rows.append({"timestamp": f"2026-05-01T10:0{k}:00", "event": "request.received", "rid": rid, "obj": obj})
        rows.append({"timestamp": f"2026-05-01T10:0{k}:02", "event": "request.finished", "rid": rid, "obj": obj,
                     "out": {"text": f"Order {k} shipped.", "meta_info": {"id": rid, "finish_reason": {"type": "stop"},
                                                                          "prompt_tokens": len(ids[k]), "completion_tokens": 5,
                                                                          "cached_tokens": served[k], "e2e_latency": 1.2}}})
    path = shapes.write(tmp_path / "sglang.jsonl", rows)
    res = audit([path], AuditOptions(cache_model="sglang"))
    assert len(res.outcomes) == 4
    f = res.findings[0]
    assert f.rule.id == "rendered-setting-in-prefix" and f.segment == "obj.text" and f.requests == 1
    assert f.evidence["value"] == "high"
    assert "Reasoning: medium" in f.evidence["before"] and "Reasoning: high" in f.evidence["after"]
    assert f.char_offset == texts[2].index("Reasoning: ") + len("Reasoning: ")
    hand = content_lost(texts, [2], "Reasoning: medium", "Reasoning: high")
    assert close(f.tokens_lost, hand), (f.tokens_lost, hand)


def test_a_reasoning_effort_rendered_into_a_vllm_request_log(tmp_path):
    """vLLM's ``--enable-log-requests`` lines (the prompt as a Python repr): the same switch,
    the same cause and tokens."""
    texts = [harmony(k, e) for k, e in enumerate(EFFORTS)]
    lines = []
    for k, text in enumerate(texts):
        rid = f"chatcmpl-{k:032x}"
        lines.append(f"INFO 05-01 10:0{k}:00 [logger.py:43] Received request {rid}: prompt: {text!r}, params: "
                     "SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
                     "temperature=0.2, top_p=1.0, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], "
                     "max_tokens=512, min_tokens=0, logprobs=None), prompt_token_ids: None, prompt_embeds shape: None, "
                     "lora_request: None.")
        lines.append(f"INFO 05-01 10:0{k}:00 [async_llm.py:273] Added request {rid}.")
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = audit([path], AuditOptions(cache_model="vllm"))
    assert len(res.outcomes) == 4
    f = by_rule(res, "rendered-setting-in-prefix")
    assert f.evidence["value"] == "high" and f.requests == 1
    hand = content_lost(texts, [2], "Reasoning: medium", "Reasoning: high")
    assert close(f.tokens_lost, hand), (f.tokens_lost, hand)


# ------------------------------------------------------------------ thinking switched mid-session

THINK_ON = {"type": "enabled", "budget_tokens": 2048}
THINK_OFF = {"type": "disabled"}


def anthropic_turns() -> list[dict]:
    """A tool loop whose third request turns thinking off (the client drops it for a tool
    continuation) and whose fourth turns it back on; nothing read from the cache then."""
    recs = []
    for k, think in enumerate([THINK_ON, THINK_ON, THINK_OFF, THINK_ON]):
        msgs: list[dict] = []
        for j in range(k):
            msgs += [{"role": "user", "content": f"Where is order {j}?"}, {"role": "assistant", "content": f"Order {j} shipped."}]
        msgs.append({"role": "user", "content": f"Where is order {k}?"})
        body = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "thinking": think,
                "system": [{"type": "text", "text": "You are the refunds desk.\n" + HANDBOOK, "cache_control": {"type": "ephemeral"}}],
                "messages": msgs}
        recs.append({"timestamp": f"2026-05-01T10:0{k}:00Z", "request": body,
                     "response": {"id": f"msg_{k:04d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                                  "content": [{"type": "text", "text": f"Order {k} shipped."}], "stop_reason": "end_turn",
                                  "usage": {"input_tokens": 20, "cache_creation_input_tokens": 1500,
                                            "cache_read_input_tokens": 0, "output_tokens": 6}}})
    return recs


@pytest.mark.parametrize("producer", ["litellm", "langfuse", "helicone"])
def test_thinking_switched_mid_session_in_anthropic_bodies(tmp_path, producer):
    """The switch is a parameter of the prefix (Anthropic renders thinking after the system
    prompt): parameter-changed at ``<params>``, the settings quoted, costing what turns 3 and 4
    would have shared with their predecessors with the setting kept (the hand count undoes it)."""
    recs = anthropic_turns()
    path = shapes.write(tmp_path / f"{producer}.jsonl", shapes.WRAPPERS[producer](recs))
    res = audit([path], AuditOptions())
    f = by_rule(res, "parameter-changed")
    assert f.segment == "<params>" and f.requests == 2
    assert (json.loads(f.evidence["before"]), json.loads(f.evidence["after"])) == (THINK_ON, THINK_OFF)
    bodies = [r["request"] for r in recs]
    hand = handcount.content_loss(A, bodies, lambda rec, k: {**rec, "thinking": THINK_ON})
    assert abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)


# ------------------------------------------------------------------ a chain whose start is on the server

def test_a_previous_response_id_chain_whose_start_is_not_in_the_log(tmp_path):
    """The gateway shape of tests/data/formats/openai_responses_previous_response_id.jsonl, the
    chain's first response (``resp_0``) logged elsewhere: the requests are marked as holding a
    prefix on the server, and server-side-chain quotes the id and the tokens the log cannot
    show (reported input minus the logged prompt), nothing claimed as lost (the simulation of
    the short prompt serves nothing the provider did not)."""
    recs = []
    for k in (1, 2):
        inp = [{"role": "user", "content": f"Where is order {k}?"}]
        recs.append({"timestamp": f"2026-05-01T10:0{k}:00.000Z",
                     "request": {"model": "gpt-4.1-mini", "input": inp, "store": True, "previous_response_id": f"resp_{k - 1:04d}"},
                     "response": {"id": f"resp_{k:04d}", "object": "response", "status": "completed", "model": "gpt-4.1-mini",
                                  "previous_response_id": f"resp_{k - 1:04d}",
                                  "output": [{"type": "message", "id": f"msg_{k}", "status": "completed", "role": "assistant",
                                              "content": [{"type": "output_text", "text": f"Order {k} shipped.", "annotations": []}]}],
                                  "usage": {"input_tokens": 1700 + 30 * k, "input_tokens_details": {"cached_tokens": 1536},
                                            "output_tokens": 6, "output_tokens_details": {"reasoning_tokens": 0},
                                            "total_tokens": 1706 + 30 * k}}})
    path = shapes.write(tmp_path / "responses.jsonl", recs)
    res = audit([path], AuditOptions())
    f = by_rule(res, "server-side-chain")
    assert f.evidence["previous_response_id"] == "resp_0000" and f.requests == 2 and f.tokens_lost == 0
    logged = res.outcomes[0].prompt_tokens
    assert f.evidence["server_side_tokens"] == 1730 - logged
    # by hand: the logged prompt is one short user message and its chat framing
    hand = O.length({"messages": recs[0]["request"]["input"]})
    assert abs(logged - hand) <= 4, (logged, hand)
    assert res.accounting.gaps["reported"] == res.accounting.gaps["content"] == 0


def test_a_cache_key_new_on_every_request_in_litellm_logging_payloads(tmp_path):
    """LiteLLM ``StandardLoggingPayload`` records (the shape of
    tests/data/formats/litellm_standard_logging_payload.jsonl: the request's parameters under
    ``model_parameters``, the prompt in ``messages``), ``model_parameters.prompt_cache_key`` a
    fresh value per call (C18's mistake) and ``model_parameters.user`` the same on every call:
    the key and the user are read from there; cache-key-unique claims what one shared cache would
    serve each call from the one before (its whole shared prefix, counted by hand: chat framing
    estimated, so within 1%) and the constant user is no cause."""
    fixture = Path(__file__).resolve().parent / "data" / "formats" / "litellm_standard_logging_payload.jsonl"
    shape = json.loads(fixture.read_text(encoding="utf-8").splitlines()[0])
    recs, bodies, keys = [], [], []
    for k in range(4):
        msgs = chat_messages(k)
        key = f"pck-{uuid.UUID(int=500 + k).hex[-12:]}"
        bodies.append({"model": "gpt-4.1", "messages": msgs})
        keys.append(key)
        rec = json.loads(json.dumps(shape))
        rid = f"chatcmpl-{uuid.UUID(int=600 + k)}"
        rec.update(id=rid, trace_id=f"trace-{k}", startTime=1777629600.0 + 60 * k, endTime=1777629601.0 + 60 * k,
                   completionStartTime=1777629601.0 + 60 * k, model="gpt-4.1", messages=msgs,
                   prompt_tokens=1750 + 20 * k, completion_tokens=5, total_tokens=1755 + 20 * k,
                   model_parameters={"temperature": 0.2, "prompt_cache_key": key, "user": "user-17"})
        rec["hidden_params"]["litellm_model_name"] = "gpt-4.1"
        rec["model_map_information"] = {"model_map_key": "gpt-4.1"}
        rec["response"].update(id=rid, model="gpt-4.1-2025-04-14", created=1777629600 + 60 * k)
        rec["response"]["choices"][0]["message"]["content"] = f"Order {k} shipped."
        rec["response"]["usage"].update(prompt_tokens=1750 + 20 * k, completion_tokens=5, total_tokens=1755 + 20 * k)
        rec["response"]["usage"]["prompt_tokens_details"]["cached_tokens"] = 0
        recs.append(rec)
    path = shapes.write(tmp_path / "standard_logging.jsonl", recs)
    from promptcache.ingest import InputStats, ReadOptions, read_requests

    reqs = list(read_requests(path, InputStats(str(path)), ReadOptions()))
    assert [r.cache_key for r in reqs] == keys
    assert [r.affinity for r in reqs] == [{"user": "user-17"}] * 4
    res = audit([path], AuditOptions())
    assert [r.format for r in reqs] == ["litellm"] * 4 and len(res.outcomes) == 4
    f = by_rule(res, "cache-key-unique")
    assert not [g for g in res.findings if g.rule.id == "affinity-changed"]
    assert f.requests == 3 and "4 distinct cache keys over 4 requests" in f.message
    # a cache of its own per key: the simulation serves nothing, the ideal (one cache) serves each
    # call's whole shared prefix with the call before: 1,760 + 1,779 + 1,798 = 5,337 by hand
    hand = sum(O.shared(bodies[k], bodies[k - 1]) for k in range(1, 4))
    assert hand == 5337
    assert f.tokens_lost == res.accounting.gaps["rules"] and abs(f.tokens_lost - hand) <= 0.01 * hand, (f.tokens_lost, hand)


# ------------------------------------------------------------------ a best-effort implicit cache (class 1)

G = handcount.Counter("cl100k_base", "gemini")


def vertex_rows(system: str, reported: list[int | None]) -> tuple[list[dict], list[dict]]:
    """Vertex AI request-response logging rows (the BigQuery export's shape:
    tests/data/formats/vertex_ai_request_response_bq.jsonl) of one conversation that only
    appends, ``reported[k]`` the ``cachedContentTokenCount`` of request k; and each request as
    the hand counter's record (system, then the turns)."""
    rows, recs, contents = [], [], []
    for k, cached in enumerate(reported):
        contents.append({"role": "user", "parts": [{"text": f"Ticket {k}: the courier left parcel {k} at the wrong depot."}]})
        rec = {"system": system, "messages": [{"role": c["role"], "content": c["parts"][0]["text"]} for c in contents]}
        recs.append(rec)
        n = G.length(rec)
        rows.append({"endpoint": "projects/p-9/locations/global/publishers/google/models/gemini-3-flash-preview",
                     "deployed_model_id": "", "logging_time": f"2026-07-15 07:2{k}:00.000000 UTC",
                     "request_id": str(8100000000 + k), "request_payload": [], "response_payload": [],
                     "model": "gemini-3-flash-preview", "model_version": "", "api_method": "generateContent",
                     "full_request": {"contents": json.loads(json.dumps(contents)), "systemInstruction": {"parts": [{"text": system}]},
                                      "generationConfig": {"temperature": 0.2}},
                     "full_response": {"candidates": [{"content": {"role": "model", "parts": [{"text": f"Rerouted {k}."}]},
                                                       "finishReason": "STOP"}],
                                       "usageMetadata": {"promptTokenCount": n, "candidatesTokenCount": 4, "totalTokenCount": n + 4,
                                                         **({"cachedContentTokenCount": cached} if cached is not None else {})}},
                     "metadata": {"region": "global"}, "otel_log": None})
        contents.append({"role": "model", "parts": [{"text": f"Rerouted {k}."}]})
    return rows, recs


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_gemini_3_reporting_nothing_cached_on_an_unchanged_prefix_in_the_dead_zone_band(tmp_path):
    """googleapis/python-genai#2064: gemini-3-flash-preview reports cachedContentTokenCount 0 on
    prompts of ~9K-17K tokens whose prefix is unchanged. Five requests that only append, a ~10K
    system instruction; requests 2, 3 and 5 report 0 cached, request 4 half of what it shares.
    Hand count (cl100k on the units, 4 framing tokens a turn): the simulation serves request k
    what it shares with request k-1 (one prefix, min 4,096, token granularity), so
    implicit-cache-missed claims Σ shared(k, k-1) over k = 2, 3, 5, named with the size band and
    the public report as a guess; request 4's partial gap (shared(4, 3) − half of it) stays
    unexplained, shown with its model, size band and that its prefix is unchanged."""
    system = HANDBOOK + "\n" + "\n".join(f"Depot {k} handles parcels for postcode area {k} on weekdays." for k in range(1, 600))
    assert 9000 < G.length({"system": system, "messages": []}) < 16000
    rows, recs = vertex_rows(system, [0, 0, 0, None, 0])
    half = G.shared(recs[3], recs[2]) // 2
    rows[3]["full_response"]["usageMetadata"]["cachedContentTokenCount"] = half
    res = audit([write_rows(tmp_path / "vertex.jsonl", rows)], AuditOptions())
    f = by_rule(res, "implicit-cache-missed")
    hand = sum(G.shared(recs[k], recs[k - 1]) for k in (1, 2, 4))
    assert f.requests == 3 and abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)
    sizes = sorted(res.outcomes[k].prompt_tokens for k in (1, 2, 4))
    assert f"prompts of {sizes[0]:,}–{sizes[-1]:,} tokens" in f.message
    assert "a guess" in f.message and "python-genai/issues/2064" in f.message
    assert f.evidence["prefix_unchanged"] is True and f.evidence["model"] == "gemini-3-flash-preview"
    (row,) = [r for r in res.accounting.rows if r.gap == "reported" and r.rule == "unexplained"]
    hand_partial = G.shared(recs[3], recs[2]) - half
    assert row.requests == 1 and abs(row.tokens - hand_partial) <= 0.1 * hand_partial, (row.tokens, hand_partial)
    assert row.evidence["prefix_unchanged_requests"] == 1 and row.evidence["reported_zero_requests"] == 0
    assert row.evidence["models"] == ["gemini-3-flash-preview"]
    assert row.evidence["prompt_tokens_band"] == f"{res.outcomes[3].prompt_tokens:,}"
    assert res.accounting.gaps["reported"] == f.tokens_lost + row.tokens
    # the headline names the reported gap ("left on the table" counts the other two gaps)
    from rich.console import Console
    from promptcache.report.audit_text import render_audit
    con = Console(record=True, width=400)
    render_audit(res, con)
    assert f"reports {res.accounting.gaps['reported']:,} tokens uncached that the simulation serves" in con.export_text()


def test_a_best_effort_miss_outside_any_reported_band_is_named_without_a_guess(tmp_path):
    """The same log with a ~5K system instruction (above Gemini 3's 4,096 minimum, below the
    reported band): the documented mechanic (no hit guarantee) is named, no public report is
    guessed at; and a request whose prefix changed is not claimed by it."""
    system = "\n".join(f"Depot {k} handles parcels for postcode area {k} on weekdays." for k in range(1, 330))
    assert 4096 < G.length({"system": system, "messages": []}) < 9000
    rows, recs = vertex_rows(system, [0, 0, 0])
    res = audit([write_rows(tmp_path / "vertex.jsonl", rows)], AuditOptions())
    f = by_rule(res, "implicit-cache-missed")
    hand = G.shared(recs[1], recs[0]) + G.shared(recs[2], recs[1])
    assert f.requests == 2 and abs(f.tokens_lost - hand) <= 0.1 * hand and "guess" not in f.message
    # request 3's system instruction edited at its end: its prefix changed, the rule does not claim it
    rows[2]["full_request"]["systemInstruction"]["parts"][0]["text"] = system + "\nDepot 330 is closed."
    res = audit([write_rows(tmp_path / "vertex2.jsonl", rows)], AuditOptions())
    f = by_rule(res, "implicit-cache-missed")
    assert f.requests == 1 and abs(f.tokens_lost - G.shared(recs[1], recs[0])) <= 0.1 * G.shared(recs[1], recs[0])


# ------------------------------------------------------------------ a deployment switch (trial s11)

X = handcount.Counter("cl100k_base", "openai", frame="text")


def litellm_xai_rows(headers_in_request: bool) -> tuple[list[dict], list[dict], int]:
    """LiteLLM StandardLoggingPayload rows (tests/data/formats/litellm_standard_logging_payload.jsonl)
    for xAI behind one deployment per account (Wei-Shaw/sub2api#4966: an account pool). Two
    conversations, each sending ``x-grok-conv-id`` (``model_parameters.extra_headers``, or with
    ``headers_in_request`` the ``proxy_server_request`` headers, the body's ``user`` one per
    conversation); conversation conv-0 fails over from acct-a to acct-b at its 4th turn, which
    then reports 0 cached. Every other turn reports what the same account serves (128-token steps).
    Returns the rows, each request as the hand counter's record, and the switch's row index."""
    rows, recs, switch = [], [], -1
    for turn in range(5):
        for conv in range(2):
            acct = ("acct-b" if turn >= 3 else "acct-a") if conv == 0 else "acct-c"
            msgs = [{"role": "system", "content": "You are the refunds desk.\n" + HANDBOOK}]
            for j in range(turn + 1):
                msgs.append({"role": "user", "content": f"Conversation {conv}, question {j}: where is order {j}?"})
                if j < turn:
                    msgs.append({"role": "assistant", "content": f"Order {j} shipped on day {j}. " * 8})
            rec = {"messages": msgs}
            prev = recs[-2]["rec"] if turn else None
            served = (X.shared(rec, prev) // 128) * 128 if prev is not None else 0
            if conv == 0 and turn == 3:
                switch, served = len(rows), 0
            recs.append({"rec": rec})
            n = X.length(rec)
            t = 1783800000 + 30 * turn + 5 * conv
            row = {"id": f"chatcmpl-{conv}{turn}", "trace_id": f"conv-{conv}", "call_type": "acompletion", "stream": False,
                   "status": "success", "custom_llm_provider": "xai", "startTime": t, "endTime": t + 2, "model": "grok-4.7",
                   "metadata": {"user_api_key_alias": "pool", "spend_logs_metadata": {"session_id": f"conv-{conv}"}},
                   "prompt_tokens": n, "completion_tokens": 20, "total_tokens": n + 20,
                   "api_base": f"https://api.x.ai/v1#{acct}", "model_group": "grok-4.7", "model_id": acct,
                   "response": {"id": f"chatcmpl-{conv}{turn}", "object": "chat.completion", "model": "grok-4.7",
                                "choices": [{"index": 0, "message": {"role": "assistant", "content": "(reply)"}}],
                                "usage": {"prompt_tokens": n, "completion_tokens": 20, "total_tokens": n + 20,
                                          "prompt_tokens_details": {"cached_tokens": served}}},
                   "model_parameters": {"temperature": 0.7},
                   "hidden_params": {"model_id": acct, "api_base": f"https://api.x.ai/v1#{acct}"}}
            if headers_in_request:
                row["proxy_server_request"] = {"url": "http://litellm:4000/v1/chat/completions",
                                               "headers": {"content-type": "application/json", "x-grok-conv-id": f"conv-{conv}"},
                                               "body": {"model": "grok-4.7", "messages": msgs, "user": f"client-{conv}"}}
            else:
                row["messages"] = msgs
                row["model_parameters"]["extra_headers"] = {"x-grok-conv-id": f"conv-{conv}"}
            rows.append(row)
    return rows, [r["rec"] for r in recs], switch


@pytest.mark.parametrize("headers_in_request", [False, True], ids=["extra_headers", "proxy_server_request"])
def test_a_deployment_switch_inside_a_conversation_behind_litellm(tmp_path, headers_in_request):
    """The trial's s11/s11b: the switch was blamed on a missing routing key (every row sends
    x-grok-conv-id) or on ``user`` changing between two conversations. Now x-grok-conv-id is the
    routing key, the switch is deployment-changed with both deployments, and it costs what the
    same deployment would have served: hand count, 128-token steps of what turn 4 shares with
    turn 3 (harmony markers as text under the approximate tokenizer)."""
    rows, recs, k = litellm_xai_rows(headers_in_request)
    path = tmp_path / "litellm.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = audit([path], AuditOptions())
    f = by_rule(res, "deployment-changed")
    hand = (X.shared(recs[k], recs[k - 2]) // 128) * 128
    assert f.requests == 1 and f.line == k + 1 and abs(f.tokens_lost - hand) <= 0.1 * hand, (f.tokens_lost, hand)
    assert f.evidence["before"] == "acct-a (https://api.x.ai/v1#acct-a)"
    assert f.evidence["after"] == "acct-b (https://api.x.ai/v1#acct-b)" and f.evidence["conversation"] == "conv-0"
    got = {g.rule.id for g in res.findings}
    assert not got & {"routing-key-missing", "affinity-changed"}, got
