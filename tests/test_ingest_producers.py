"""Real example records that producers publish in their own repositories, rebuilt with invented
text and the structure kept (``tests/data/producers/build.py`` names each source), read with
values worked out by hand from the records."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptcache.ingest import InputStats, ReadOptions, read_inputs
from promptcache.model import CacheVerdict, Usage

PRODUCERS = Path(__file__).parent / "data" / "producers"


def read(name):
    p = PRODUCERS / name
    st = InputStats(str(p))
    reqs = list(read_inputs([p], [st], ReadOptions()))
    assert st.records == st.accounted
    return {r.id: r for r in reqs}, st


def shape(r):
    return [(p.kind, p.path) for p in r.parts]


def test_langfuse_vercel_ai_sdk_download_keeps_the_leaf_generation():
    by, st = read("langfuse_trace_vercel_aisdk.json")
    # ai.generateText (usage 14/43, input {"prompt"}) wraps ai.generateText.doGenerate (62/85): one call
    assert list(by) == ["a2"] and st.duplicates == 1 and st.skipped == {"Langfuse TOOL observation (not an LLM call)": 1}
    a2 = by["a2"]
    assert shape(a2) == [("tool", "metadata.tools[0]"), ("user", "input[0].content[0]")]  # tools from metadata.tools
    assert '"name":"getForecast"' in a2.parts[0].text and a2.usage == Usage(62, 85, 0, 0)
    assert (a2.model, a2.session, a2.arrival) == ("gpt-5", "t1", 1763391318.787)  # 2025-11-17T14:55:18.787Z


def test_langfuse_langgraph_download_reads_langchain_messages():
    by, st = read("langfuse_trace_langgraph.json")
    assert sorted(by) == ["g1", "g2"] and sum(st.skipped.values()) == 2
    g1, g2 = by["g1"], by["g2"]
    # the tool definition appended as a role "tool" message is a tool, not a tool result
    assert shape(g1) == [("tool", "input[2].content"), ("user", "input[0].content"), ("user", "input[1].content")]
    assert shape(g2) == [("tool", "input[4].content"), ("user", "input[0].content"), ("user", "input[1].content"),
                         ("assistant", "input[2].content"), ("tool_call", "input[2].tool_calls[0]"),
                         ("tool_result", "input[3].content")]
    assert g2.parts[4].text == '{"name":"Tide-Search","arguments":"{\\"query\\":\\"Skerry\\"}"}'  # additional_kwargs.tool_calls
    assert (g1.usage, g2.usage) == (Usage(60, 15, 0, 0), Usage(108, 51, 0, 0))
    # g1's output: the assistant turn with its tool call, numbered as the message after g1's two, where
    # g2 re-sends it (input[2])
    assert [(p.kind, p.path) for p in g1.response.parts] == [("assistant", "input[2].content"),
                                                           ("tool_call", "input[2].tool_calls[0]")]
    assert [p.text for p in g1.response.parts] == [p.text for p in g2.parts[3:5]]


def test_langfuse_openai_agents_download_reads_responses_items_and_instructions():
    by, st = read("langfuse_trace_openai_agents.json")
    o1 = by["o1"]
    assert shape(o1) == [("system", "modelParameters.instructions"), ("user", "input[0].content"),
                         ("tool_call", "input[1]"), ("tool_result", "input[2]")]
    assert (o1.api, o1.usage) == ("responses", Usage(85, 29, 0, 0))  # "prompt_details.cache_read": 0
    assert o1.params == {"tool_choice": "auto", "parallel_tool_calls": "true", "service_tier": "default"}
    assert st.skipped == {"Langfuse AGENT observation (not an LLM call)": 1}


def test_langfuse_pydantic_ai_event_messages_and_trace_session():
    by, _ = read("langfuse_trace_pydantic_ai.json")
    p1 = by["p1"]
    assert shape(p1) == [("system", "input[0].content"), ("user", "input[1].content")]
    assert (p1.session, p1.usage) == ("session_abc", Usage(31, 96, 0, 0))  # the download's trace.sessionId


def test_langfuse_google_genai_contents_string():
    by, _ = read("langfuse_trace_google_genai.json")
    q1 = by["q1"]
    assert shape(q1) == [("user", "input.contents[0]")] and q1.parts[0].text == "What is a harbour master?"
    assert (q1.api, q1.provider, q1.usage) == ("gemini", "gemini", Usage(6, 2055, 0, 0))


def test_langfuse_claude_agent_single_messages_and_a_broken_input():
    by, st = read("langfuse_trace_claude_agent.json")
    # c2's input {"content": "role"} holds no prompt (the exporter's bug): usage only, not a made-up message
    assert list(by) == ["c1"] and st.usage_only == 1 and st.usage_only_usage == Usage(5, 56, 0, 0)
    assert shape(by["c1"]) == [("user", "input[0].content")] and by["c1"].provider == "anthropic"


def test_langfuse_llamaindex_completion_arguments():
    by, st = read("langfuse_trace_llamaindex.json")
    l1 = by["l1"]
    assert shape(l1) == [("user", "input.args[0]")] and l1.parts[0].text == "What does a harbour pilot do?"
    assert l1.usage == Usage(13, 81, 0, 0)  # "prompt_details.cache_read": 0 is a read count, "input" the rest


def test_provider_cache_verdicts_and_affinity():
    by, _ = read("verdicts.jsonl")
    a = by["msg_02"]
    assert a.response.verdict == CacheVerdict("anthropic", "cache_miss", "messages_changed", 6455, None, "msg_01")
    assert a.usage == Usage(6817, 4, 0, 6807)  # 10 + 0 read + 6,807 written
    assert [(p.kind, p.path, p.text) for p in a.response.parts] == [("assistant", "messages[1].content[0]", "At six.")]
    o = by["resp_1"]
    assert o.response.verdict == CacheVerdict("openai", "cache_miss", "tools_changed", 5629, 5629, "resp_0")
    assert o.affinity == {"user": "u-17", "safety_identifier": "sid-9"} and o.params["service_tier"] == "priority"
    assert [(p.kind, p.path) for p in o.response.parts] == [("assistant", "input[1].content[0]")]


@pytest.mark.parametrize("reason,expected", [
    ({"type": "previous_message_not_found"}, CacheVerdict("anthropic", "previous_message_not_found")),
    ({"type": "unavailable"}, CacheVerdict("anthropic", "unavailable")),
    (None, None),  # no divergence found, or still pending: no verdict
])
def test_anthropic_verdict_kinds(reason, expected):
    from promptcache.ingest.anthropic import verdict_of

    assert verdict_of({"diagnostics": {"cache_miss_reason": reason}}, {}) == expected


@pytest.mark.parametrize("order", ["leaf first", "wrapper first"])
@pytest.mark.parametrize("leaf_has_input", [True, False])
def test_a_wrapper_generation_is_a_duplicate_in_either_order(tmp_path, order, leaf_has_input):
    import json

    d = json.loads((PRODUCERS / "langfuse_trace_vercel_aisdk.json").read_text())
    obs = d["observations"]
    if not leaf_has_input:  # the leaf logged no prompt: the wrapper's prompt stands in, the leaf's usage stays
        obs[1]["input"] = None
    if order == "leaf first":
        obs[0], obs[1] = obs[1], obs[0]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(o) for o in obs) + "\n")  # as an observations export, one per line
    st = InputStats(str(p))
    reqs = list(read_inputs([p], [st], ReadOptions()))
    assert [r.id for r in reqs] == ["a2"] and st.duplicates == 1 and st.records == st.accounted == 3
    assert reqs[0].usage == Usage(62, 85, 0, 0)
    want = [("tool", "metadata.tools[0]"), ("user", "input[0].content[0]")] if leaf_has_input else [("user", "input.prompt")]
    assert shape(reqs[0]) == want
