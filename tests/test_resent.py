"""Byte-level reuse of re-sent histories and tool lists (promptcache.ingest.resent): every line
decodes to exactly what orjson decodes, whatever the writer's spacing, and repeated content is
decoded once."""

from __future__ import annotations

import json
import random

import orjson
import pytest

from promptcache.ingest.resent import ResentLines

WORDS = ["cache", "prefix", "naïve", "日本語", "emoji 😀", 'quote "x"', "back\\slash", "tab\tline\nnext", "ünïcödé"]


def _session(rng: random.Random, sid: int, turns: int, volatile: bool = False) -> list[dict]:
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": " ".join(rng.choices(WORDS, k=40)),
                                               "parameters": {"type": "object", "properties": {"p": {"type": "string"}}}}}
             for i in range(6)]
    system = "You are an agent. " + " ".join(rng.choices(WORDS, k=200))
    history: list[dict] = []
    out = []
    for t in range(turns):
        sys_text = (f"Time: 12:{t:02d}. " if volatile else "") + system
        history.append({"role": "user", "content": " ".join(rng.choices(WORDS, k=rng.randint(5, 60)))})
        out.append({"id": f"s{sid}-{t}", "metadata": {"n": t, "score": 0.5 + t},
                    "request": {"model": "gpt-4.1", "messages": [{"role": "system", "content": sys_text}] + history,
                                "tools": tools, "temperature": 0}})
        history.append({"role": "assistant", "content": None,
                        "tool_calls": [{"id": f"c{t}", "type": "function", "function": {"name": "tool_1", "arguments": "{}"}}]})
        history.append({"role": "tool", "tool_call_id": f"c{t}", "content": " ".join(rng.choices(WORDS, k=80))})
    return out


def _interleaved(seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    sessions = [_session(rng, i, rng.randint(1, 7), volatile=i % 4 == 0) for i in range(12)]
    recs = []
    while any(sessions):
        s = rng.choice([s for s in sessions if s])
        recs.append(s.pop(0))
    return recs


WRITERS = {
    "orjson": orjson.dumps,
    "json-default": lambda r: json.dumps(r).encode(),  # ", " and ": ", \\u escapes (Python's default)
    "json-compact-utf8": lambda r: json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode(),
    "json-spaced": lambda r: json.dumps(r, indent=None, separators=(" , ", " : "), ensure_ascii=False).encode(),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_line_decodes_as_orjson_decodes_it(writer):
    dump = WRITERS[writer]
    dec = ResentLines()
    for rec in _interleaved():
        line = dump(rec) + b"\n"
        got = dec.loads(line)
        assert got == orjson.loads(line)
        assert orjson.dumps(got) == orjson.dumps(orjson.loads(line))  # key order too
    # most lines extend a tip: 12 sessions, so at most 12 starts plus the volatile sessions' turns
    assert dec.reused >= 20, (dec.reused, dec.whole)


def test_repeated_history_and_tools_are_the_same_objects():
    dec = ResentLines()
    s = _session(random.Random(1), 0, 3)
    a, b, c = (dec.loads(orjson.dumps(r)) for r in s)
    assert b["request"]["messages"][:2] == a["request"]["messages"]
    assert all(x is y for x, y in zip(a["request"]["messages"], b["request"]["messages"]))
    assert all(x is y for x, y in zip(b["request"]["messages"], c["request"]["messages"]))
    assert a["request"]["tools"] is b["request"]["tools"] is c["request"]["tools"]
    assert c == orjson.loads(orjson.dumps(s[2]))


@pytest.mark.parametrize("writer", ["orjson", "json-default"])
def test_a_first_message_that_changes_every_turn_keeps_the_rest_reused(writer):
    """A system prompt that starts with the time differs on every turn: the history after it is
    found by its bytes after the first message, and only the first message and the turn's new
    messages are decoded."""
    dump = WRITERS[writer]
    dec = ResentLines()
    s = _session(random.Random(5), 0, 5, volatile=True)
    prev = None
    for k, rec in enumerate(s):
        line = dump(rec)
        got = dec.loads(line)
        assert got == orjson.loads(line)
        msgs = got["request"]["messages"]
        assert msgs[0]["content"].startswith(f"Time: 12:{k:02d}. ")
        if k >= 2:  # the first turn's history after its system prompt is under SMALLEST bytes
            assert all(x is y for x, y in zip(msgs[1:len(prev)], prev[1:]))  # the very objects
            assert msgs[0] is not prev[0]
        prev = msgs
    assert dec.patched == 3 and dec.reused == 3


def test_a_changed_first_message_with_a_different_history_is_decoded_whole():
    """The tail must follow the first message exactly: a history that changed after it too is
    not taken from the tip."""
    dec = ResentLines()
    a, b = _session(random.Random(6), 0, 2, volatile=True)
    dec.loads(orjson.dumps(a))
    b["request"]["messages"][1]["content"] += " (edited)"
    line = orjson.dumps(b)
    assert dec.loads(line) == orjson.loads(line)
    assert dec.patched == 0


def test_a_retry_with_the_same_history_reuses_it():
    dec = ResentLines()
    s = _session(random.Random(2), 0, 2)
    first = dec.loads(orjson.dumps(s[1]))
    again = dec.loads(orjson.dumps(s[1]))
    assert again == first and again["request"]["messages"][0] is first["request"]["messages"][0]


def test_an_edited_history_is_decoded_again():
    dec = ResentLines()
    s = _session(random.Random(4), 0, 3)
    dec.loads(orjson.dumps(s[0]))
    edited = json.loads(json.dumps(s[1]))
    edited["request"]["messages"][1]["content"] = "changed"
    got = dec.loads(orjson.dumps(edited))
    assert got == edited and got["request"]["messages"][1]["content"] == "changed"


def test_other_keys_named_messages_and_duplicates():
    dec = ResentLines()
    s = _session(random.Random(5), 0, 3)
    for r in s:  # a "messages" key before the request's, in metadata
        r["metadata"]["messages"] = [{"k": 1}] * 40
        line = orjson.dumps(r)
        assert dec.loads(line) == orjson.loads(line)
    # a duplicate key: the decoder keeps the last value, and so does the reuse
    base = orjson.dumps(s[2])
    dup = base[:-1] + b',"request":' + orjson.dumps(s[1]["request"]) + b"}"
    assert dec.loads(dup) == orjson.loads(dup)


def test_invalid_lines_raise_as_orjson_does():
    dec = ResentLines()
    s = _session(random.Random(6), 0, 2)
    dec.loads(orjson.dumps(s[0]))
    line = orjson.dumps(s[1])
    for bad in (line[:-1], line[:-40], line.replace(b'"role"', b'"role', 1), line + b"}"):
        with pytest.raises(orjson.JSONDecodeError):
            dec.loads(bad)
    assert dec.loads(line) == orjson.loads(line)  # and the next good line is still right


def test_small_and_empty_arrays():
    dec = ResentLines()
    for rec in ({"messages": []}, {"messages": [{"role": "user", "content": "hi"}]}, {"messages": "text"},
                {"request": {"messages": [], "tools": [{"x": "y" * 2000}]}}, {"request": {"tools": [{"x": "y" * 2000}]}}):
        line = orjson.dumps(rec)
        assert dec.loads(line) == rec
        assert dec.loads(line) == rec


def test_reused_content_is_held_to_the_depth_limit():
    """A history or tool list decoded at one depth and re-sent deeper must fail as it does
    when the line is decoded whole (orjson allows 1,024 levels)."""
    text = "You are an agent. " + "policy text " * 300
    d = 1021
    first = '{"role":"system","content":"' + text + '","extra":' + "[" * d + "]" * d + "}"
    l1 = ('{"model":"gpt-4.1","messages":[' + first + "]}").encode()
    l2 = ('{"timestamp":1793000000,"request":{"model":"gpt-4.1","messages":[' + first + ',{"role":"user","content":"hi"}]}}').encode()
    dec = ResentLines()
    assert dec.loads(l1)["messages"][0]["content"] == text  # (== on 1,000 levels would recurse too deep)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(l2)
    with pytest.raises(orjson.JSONDecodeError):
        dec.loads(l2)
    tools = "[" + ",".join(['{"name":"t%d","schema":' % i + "[" * 1020 + "]" * 1020 + "}" for i in range(3)]) + "]"
    t1 = ('{"tools":' + tools + ',"model":"m","messages":[]}').encode()
    t2 = ('{"a":{"b":{"tools":' + tools + ',"model":"m","messages":[]}}}').encode()
    assert [t["name"] for t in dec.loads(t1)["tools"]] == ["t0", "t1", "t2"]
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(t2)
    with pytest.raises(orjson.JSONDecodeError):
        dec.loads(t2)


def test_a_log_that_spells_a_sentinel_is_decoded_whole():
    """The cuts are marked with strings that start with a NUL character; a line that holds one
    itself (JSON writes it as \\u0000) is decoded as orjson decodes it."""
    from promptcache.ingest.resent import HISTORY

    dec = ResentLines()
    msgs = [{"role": "system", "content": "x" * 2000}, {"role": "user", "content": "hi"}]
    for rec in ({"a": [HISTORY], "messages": msgs}, {"metadata": {"tags": [HISTORY]}, "request": {"messages": msgs}},
                {"messages": msgs + [{"role": "user", "content": HISTORY}]},
                {"tools": [[HISTORY, "y" * 1200]], "messages": msgs}, {"messages": msgs, "tools": [[HISTORY, "z" * 1200]]}):
        line = orjson.dumps(rec)
        assert b"\\u0000" in line
        assert dec.loads(line) == orjson.loads(line) == rec
