"""The proposal's pieces on their own: spans, template slots, breakpoint placement, history
batches, body edits, session identity and routing."""

from __future__ import annotations

import doctest
import json

import pytest

from promptcache.model import Part, Request, Response, Source
from promptcache.propose import breakpoints, edits, history, identity, lifetime, spans, templates
from promptcache.propose.breakpoints import Limits, place
from promptcache.propose.spans import span_of, take
from promptcache.propose.templates import TemplateIndex


@pytest.mark.parametrize("mod", [spans, templates, breakpoints, edits, identity, lifetime])
def test_doctests(mod):
    assert doctest.testmod(mod).failed == 0


# -- spans -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value, moved", [
    ("Be brief.\nCurrent date: 2026-11-02 10:15 UTC\n## 7. Escalation\n- x.", "2026-11-02 10:15 UTC",
     "Current date: 2026-11-02 10:15 UTC"),
    ("You are Aria. You are speaking with Ana (id 7). Be kind.", "Ana", "You are speaking with Ana (id 7)."),
    ("cch=84d3f; entry=cli", "84d3f", "cch=84d3f; entry=cli"),
    ("Intro.\n<notes_meta>\nupdated: 2026-11-02T10:00:00.123Z\n</notes_meta>\nRest.",
     "updated: 2026-11-02T10:00:00.123Z\n</notes_meta>", "updated: 2026-11-02T10:00:00.123Z\n</notes_meta>"),
])
def test_span_is_the_value_with_its_label_never_past_its_line(text, value, moved):
    a = text.index(value)
    s = span_of(text, a, a + len(value))
    assert text[s[0]:s[1]] == moved


def test_blank_value_moves_nothing():
    text = "A.\n## 7. Escalation\n"
    assert span_of(text, 3, 3) is None
    assert take(text, [(3, 3)]) == (text, [])


def test_take_removes_exactly_the_span_and_one_separator():
    text = "Policy.\n- keep calm.\nCurrent date: 2026-11-02\n## 7. Escalation\n- call us."
    rest, moved = take(text, [(text.index("2026"), text.index("2026") + 10)])
    assert moved == ["Current date: 2026-11-02"]
    assert rest == "Policy.\n- keep calm.\n## 7. Escalation\n- call us."


def test_a_heading_left_over_nothing_goes_with_its_items():
    text = "Rules.\n\n[Saved Notes]\nnote D: museums.\nnote A: trains.\n[Related Notes]\nnote E: lakes.\n\nRules end."
    vals = [(text.index(x), text.index(x) + 1) for x in ("D:", "A:", "E:")]
    rest, moved = take(text, vals)
    assert rest == "Rules.\n\n\nRules end."
    assert moved == ["[Saved Notes]\nnote D: museums.\nnote A: trains.", "[Related Notes]\nnote E: lakes."]


# -- templates -------------------------------------------------------------------------------

def _req(system: str, user: str = "hi", i: int = 0, model: str = "gpt-4.1-mini") -> Request:
    return Request(f"r{i}", Source("x", i + 1), "openai-chat", "chat", "openai", model, 1_790_000_000 + i,
                   (Part("system", "messages[0].content", system, "system", 0),
                    Part("user", "messages[1].content", user, "user", 1)))


def test_a_conditional_line_is_an_optional_slot():
    """Half the requests render ``Current date: ...`` where the others render nothing: one
    slot, empty in the clean requests, whose pattern matches both."""
    base = "You are Wren.\n## 6. Tone\n- be kind.\n{}## 7. Escalation\n- call a human.\n" + "Filler line.\n" * 30
    ix = TemplateIndex()
    texts = [base.format(f"Current date: 2026-11-0{i} 10:0{i} UTC\n" if i % 2 else "") for i in range(1, 7)]
    for i, t in enumerate(texts):
        ix.add(_req(t, i=i), "ns")
    (t,) = ix.templates().values()
    (part,) = [p for p in t.parts if p.path == "messages[0].content"]
    (slot,) = part.slots
    assert slot.name == "timestamp" and slot.optional and slot.volatile
    pat = part.pattern()
    for text in texts:
        m = pat.match(text)
        assert m is not None
        assert ("Current date" in m.group(1)) == ("Current date" in text)


def test_reordered_items_are_one_slot_run():
    notes = ["note A: trains.", "note B: cabins.", "note C: lakes."]
    ix = TemplateIndex()
    orders = [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0)]
    for i, o in enumerate(orders):
        ix.add(_req("Rules.\n[Notes]\n" + "\n".join(notes[k] for k in o) + "\nEnd of notes.\n" + "Filler.\n" * 30,
                    i=i), "ns")
    (t,) = ix.templates().values()
    part = next(p for p in t.parts if p.path == "messages[0].content")
    assert part.slots and all(s.reordered for s in part.slots)


# -- breakpoints -----------------------------------------------------------------------------

def test_placement_respects_the_limit_and_skips_unmarkable_blocks():
    assert place(8, 2, None, Limits(4, 20)) == [2]  # not conversational: the anchor only
    assert place(8, 2, 7, Limits(4, 20), markable=lambda i: i != 7) == [2, 6]  # a thinking block is passed over
    for n in (5, 30, 70, 200):
        marks = place(n, 3, n - 1, Limits(4, 20))
        assert len(marks) <= 4 and marks[0] == 3 and marks[-1] == n - 1
        assert all(b - a <= 20 for a, b in zip(marks[1:], marks[2:]))  # each within the next one's lookback
    assert place(100, 3, 99, Limits(2, 20)) == [3, 99]


# -- history ---------------------------------------------------------------------------------

def _remember(h: history.Histories, hashes: list[int]) -> history.Tip:
    tip = history.Tip(None, hashes)
    h.remember(hashes, "k", tip, h.find(hashes, "k"))
    return tip


def test_history_predecessors_of_each_rewrite():
    """Message hashes (ints stand for messages), worked out by hand: where each request's own
    new messages start after its predecessor, and whether its history extends it."""
    h = history.Histories()
    # append-only: the request re-sends the predecessor whole and adds two messages
    tip = _remember(h, [1, 2, 3])
    got = h.find([1, 2, 3, 4, 5], "k")
    assert (got.tip, got.new, got.extends, got.trim) == (tip, 3, True, 0)
    # old tool results cleared in place: [u, c0, t0, c1, t1] -> t0 replaced by P (0), two added
    h = history.Histories()
    tip = _remember(h, [10, 20, 21, 30, 31])
    got = h.find([10, 20, 0, 30, 31, 40, 41], "k")
    assert (got.tip, got.new, got.extends) == (tip, 5, False)
    # a summary replaces the oldest exchange: [S1, e1, e2, e3, u] -> [S2, e2, e3, u, a, u2]
    h = history.Histories()
    tip = _remember(h, [100, 1, 2, 3, 9])
    got = h.find([101, 2, 3, 9, 7, 8], "k")
    assert (got.tip, got.new, got.extends) == (tip, 4, False)
    # a sliding window whose newest question is not re-sent: [m0..m9, q0] -> [m2..m11, q1]; the
    # shared run m2..m9 ends before the predecessor's question, which the request drops (trim 1)
    h = history.Histories()
    tip = _remember(h, [*range(10), 1000])
    got = h.find([*range(2, 12), 1001], "k")
    assert (got.tip, got.new, got.extends, got.trim) == (tip, 8, False, 1)
    # another template's conversation is not a predecessor
    assert h.find([*range(2, 12), 1001], "other") is None


# -- edits -----------------------------------------------------------------------------------

def test_mark_and_strip_breakpoints_on_anthropic_shapes():
    body = {"system": "You are X.", "messages": [{"role": "user", "content": "hi"},
                                                  {"role": "user", "content": [{"type": "thinking", "thinking": "t"},
                                                                               {"type": "text", "text": "b",
                                                                                "cache_control": {"type": "ephemeral"}}]}],
            "cache_control": {"type": "ephemeral"}}
    assert edits.strip_breakpoints(body) == 2 and "cache_control" not in json.dumps(body)
    edits.mark(body, "system", "1h")
    edits.mark(body, "messages[0].content")
    assert body["system"] == [{"type": "text", "text": "You are X.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    assert body["messages"][0]["content"] == [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]
    assert not edits.markable(body, "messages[1].content[0]")
    with pytest.raises(Exception):
        edits.mark(body, "messages[1].content[0]")


@pytest.mark.parametrize("api, msg, after", [
    ("anthropic", {"role": "user", "content": "q"},
     {"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "text", "text": "T"}]}),
    ("anthropic", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"},
                                  {"type": "text", "text": "T"}]}),
    ("chat", {"role": "user", "content": "q"}, {"role": "user", "content": "q\n\nT"}),
    ("chat", {"role": "tool", "content": "r", "tool_call_id": "c"}, {"role": "tool", "content": "r\n\nT", "tool_call_id": "c"}),
    ("responses", {"role": "user", "content": [{"type": "input_text", "text": "q"}]},
     {"role": "user", "content": [{"type": "input_text", "text": "q"}, {"type": "input_text", "text": "T"}]}),
    ("responses", {"type": "function_call_output", "call_id": "c", "output": "r"},
     {"type": "function_call_output", "call_id": "c", "output": "r\n\nT"}),
])
def test_append_text_keeps_the_turn_a_prefix_of_itself(api, msg, after):
    key = "input" if api == "responses" else "messages"
    body = {key: [msg]}
    edits.append_text(body, api, (key, 0), "T")
    assert body[key][0] == after


def test_canonicalize_each_shape():
    chat = {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {
        "name": "f", "arguments": '{"b": 1, "a": 2}'}}]}, {"role": "tool", "tool_call_id": "c", "content": '{"z":1,"y":2}'}]}
    assert edits.canonicalize(chat, "messages[0].tool_calls[0]", "tool_call")
    assert edits.canonicalize(chat, "messages[1].content", "tool_result")
    assert chat["messages"][0]["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b": 1}'
    assert chat["messages"][1]["content"] == '{"y":2,"z":1}'
    anth = {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                                            "input": {"b": 1, "a": {"d": 1, "c": 2}}}]}]}
    assert edits.canonicalize(anth, "messages[0].content[0]", "tool_call")
    assert list(anth["messages"][0]["content"][0]["input"]) == ["a", "b"]
    assert not edits.canonicalize(anth, "messages[0].content[0]", "tool_call")  # already canonical


def test_set_arrival_keeps_the_field_form():
    from promptcache.ingest.fields import parse_time
    from promptcache.propose.logio import set_arrival

    for v in ("2026-11-02T10:00:00.000Z", "2026-11-02T10:00:00Z", 1_793_000_000, 1_793_000_000_000, 1_793_000_000.5):
        rec = {"timestamp": v, "request": {}}
        assert set_arrival(rec, rec["request"], 1_793_000_270.0)
        assert parse_time(rec["timestamp"]) == 1_793_000_270.0
        assert type(rec["timestamp"]) is type(v)
    assert not set_arrival({"request": {}}, {}, 1.0)


# -- identity and routing --------------------------------------------------------------------

def test_identity_prefers_what_the_log_names():
    base = _req("sys", "first question")
    assert identity.conversation_identity(base) == ("first message", "user\x1efirst question")
    from dataclasses import replace

    assert identity.conversation_identity(replace(base, affinity={"user": "u1", "x-session-affinity": "s9"})) == \
        ("session", "x-session-affinity:s9")
    # an affinity header names the conversation explicitly; Request.session may be a user field
    assert identity.conversation_identity(replace(base, session="abc", affinity={"x-session-affinity": "s9"})) == \
        ("session", "x-session-affinity:s9")
    assert identity.conversation_identity(replace(base, session="abc")) == ("session", "session:abc")
    assert identity.conversation_identity(replace(base, affinity={"user": "u1"})) == ("first message", "user\x1efirst question")
    assert identity.conversation_identity(replace(base, affinity={"safety_identifier": "h1", "portkey._user": "u"})) \
        == ("first message", "user\x1efirst question")
    # Claude Code's metadata.user_id: the session inside it, in either of its two forms
    cc = '{"device_id": "d0c9", "account_uuid": "a1", "session_id": "5e55-10n"}'
    assert identity.conversation_identity(replace(base, affinity={"metadata.user_id": cc})) == ("session", "session:5e55-10n")
    old = "user_abc123_account_0f9e8d7c-0000-0000-0000-000000000001_session_1b2c3d4e-0000-0000-0000-000000000002"
    assert identity.conversation_identity(replace(base, affinity={"metadata.user_id": old})) == \
        ("session", "session:1b2c3d4e-0000-0000-0000-000000000002")
    assert identity.conversation_identity(replace(base, affinity={"metadata.user_id": "device-7"})) == \
        ("first message", "user\x1efirst question")
    # a session that the log shows naming several conversations is a person's: with the first message
    assert identity.conversation_identity(replace(base, session="u-17"), frozenset({"session:u-17"})) == \
        ("session and first message", "session:u-17\x1duser\x1efirst question")
    k1 = identity.derived_key("T-1", "session:abc")
    assert k1 == identity.derived_key("T-1", "session:abc") != identity.derived_key("T-1", "session:abd")
    assert k1.startswith("pc-") and len(k1) == 19 and "abc" not in k1


def test_upstream_spread_from_the_responses():
    """Requests whose responses name who served them (Request.response.upstream, as the readers
    fill it): a conversation moved between upstreams twice in three turns."""
    from collections import Counter
    from dataclasses import replace

    turns = [replace(_req("sys", "q1", i), response=Response(upstream=up)) for i, up in enumerate(["A", "B", "A"])]
    other = [replace(_req("sys", "other", 5 + i), response=Response(upstream="A")) for i in range(2)]
    assert identity.spread_share(turns + other) == pytest.approx(2 / 3)
    assert identity.pinned_upstream(Counter(["A", "B", "A", "A", "A"])) == "A"
    assert identity.pinned_upstream(Counter(["A", "A"])) is None
