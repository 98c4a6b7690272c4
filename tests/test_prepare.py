"""The front half works on what each request adds (history memo, incremental render, tips) and
may run in a forked second process; every path gives the same audit as doing it all whole."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest

import promptcache.pipeline as pipeline_mod
import promptcache.prepare as prepare_mod
from promptcache.errors import InputError
from promptcache.ingest import InputStats, ReadOptions, read_requests
from promptcache.ingest.common import HistoryMemo
from promptcache.ingest.resent import ResentLines
from promptcache.ingest.openai import _chat_message
from promptcache.model import Part, Request, Source
from promptcache.pipeline import AuditOptions, audit
from promptcache.render import FramedFormat, FRAMINGS, Layout
from promptcache.report.audit_records import audit_record
from promptcache.tokenize import TokenMemo, resolve_tokenizer

from conftest import SAMPLES

LOGS = [SAMPLES / f"{n}.jsonl" for n in ("support_bot", "agent_timestamp", "anthropic_app", "rag_app", "well_structured")]


def _record(opts: AuditOptions) -> dict:
    return json.loads(json.dumps(audit_record(audit(LOGS, opts))))


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 7 requests and at most 4 tips per context: many chunks cross the process
    boundary, and tips are evicted (and dropped on the back half) all the time."""
    monkeypatch.setattr(pipeline_mod, "CHUNK", 7)
    monkeypatch.setattr(prepare_mod, "TIPS", 4)


def test_two_processes_equal_one(small_chunks):
    one = _record(AuditOptions(workers=1))
    two = _record(AuditOptions(workers=2))
    assert one["summary"]["requests"] > 200
    assert two == one


@pytest.mark.parametrize("share", [1.0, 0.5])
def test_tokenizing_left_to_the_back_half_changes_nothing(small_chunks, monkeypatch, share):
    """The front half leaves a share of the new segments for the back half to tokenize (here a
    fixed share, from the first chunk): the audit is the same."""
    monkeypatch.setattr(prepare_mod, "DEFER", share)
    monkeypatch.setattr(prepare_mod, "DEFER_STEP", 0.0)
    filled = []
    fill = prepare_mod.Back.fill
    monkeypatch.setattr(prepare_mod.Back, "fill", lambda self, ds: (filled.extend(len(d.untokenized) for d in ds),
                                                                    fill(self, ds)))
    one = _record(AuditOptions(workers=1))
    assert sum(filled) == 0  # one process: the front half tokenizes everything
    two = _record(AuditOptions(workers=2))
    assert two == one
    assert sum(filled) > 500


def test_front_defers_only_short_new_texts():
    """With a share of 1, every new segment is left to the back half but the long texts that are
    tokenized in chunks (their chunks are memoized in the front half)."""
    pipe = pipeline_mod.Pipeline(LOGS, AuditOptions(workers=1))
    front = prepare_mod.Front(pipe.state)
    front.defer = 1.0
    deltas = [d for chunk in pipe.chunks() for d in front.prepare(chunk)]
    short = long_ = 0
    for d in deltas:
        for s, b in zip(d.segments or [], d.pieces or []):
            if len(s.text) >= TokenMemo.CHUNKED:
                assert b is not None
                long_ += 1
            else:
                assert b is None
                short += 1
        assert d.untokenized == tuple(i for i, b in enumerate(d.pieces or []) if b is None)
    assert short > 1000 and long_ > 10


def test_tips_change_nothing(monkeypatch):
    """The audit with every memo and tip equals the audit of each request rendered whole."""
    fast = _record(AuditOptions(workers=1))
    monkeypatch.setattr(prepare_mod, "TIP_PROBES", 0)  # no tip is ever found
    monkeypatch.setattr(FramedFormat, "PROBES", 0)
    monkeypatch.setattr(HistoryMemo, "PROBES", 0)
    monkeypatch.setattr(ResentLines, "SMALLEST", 1 << 40)  # every line decoded whole
    assert _record(AuditOptions(workers=1)) == fast


def test_front_process_errors_reach_the_caller(tmp_path, small_chunks):
    src = (SAMPLES / "agent_timestamp.jsonl").read_text().splitlines()
    bad = tmp_path / "late_bad.jsonl"
    bad.write_text("\n".join(src[:40] + ["{not json"] + src[40:]) + "\n")
    with pytest.raises(InputError, match=r"late_bad.jsonl:41"):
        audit([bad], AuditOptions(workers=2, read=ReadOptions(strict=True)))
    # without --strict the bad line is counted, and the rest audited, in the second process too
    res = audit([bad], AuditOptions(workers=2))
    assert res.inputs[0].errors and res.inputs[0].requests == 81
    assert len(res.outcomes) == 81


def test_channel_carries_messages_larger_than_the_pipe_between_processes():
    import hashlib
    import multiprocessing as mp
    import random

    rng = random.Random(7)
    sizes = [0, 1, 8, 65_535, 65_536, 1 << 20, (1 << 20) + 3, 5_000_000]
    msgs = [rng.randbytes(n) for n in sizes]

    def child(w, r):
        r.close()
        for m in msgs:
            w.send(m)
        w.close()

    r, w = prepare_mod._Channel.pipe()
    proc = mp.get_context("fork").Process(target=child, args=(w, r))
    proc.start()
    w.close()
    got = [r.recv() for _ in msgs]
    with pytest.raises(EOFError):  # the writer closed its end
        r.recv()
    proc.join()
    r.close()
    assert [len(g) for g in got] == sizes
    assert [hashlib.sha256(g).digest() for g in got] == [hashlib.sha256(m).digest() for m in msgs]


def test_workers_option_is_checked():
    from promptcache.errors import ConfigError

    with pytest.raises(ConfigError, match="--workers"):
        AuditOptions(workers=0)


# ---------------------------------------------------------------- history memo


def _fresh(msgs: list) -> list[Part]:
    return [p for i, m in enumerate(msgs) for p in _chat_message(i, m)]


def test_history_memo_reuses_only_an_identical_history():
    memo = HistoryMemo()
    sys_msg = {"role": "system", "content": "You are terse."}
    turn1 = [sys_msg, {"role": "user", "content": "hi"}]
    a = memo.parts("chat", turn1, _chat_message)
    turn2 = turn1 + [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "bye"}]
    b = memo.parts("chat", json.loads(json.dumps(turn2)), _chat_message)  # a fresh copy, as a log gives
    assert list(b) == _fresh(turn2)
    assert all(x is y for x, y in zip(a, b))  # the first turn's parts, reused
    edited = json.loads(json.dumps(turn2))
    edited[1]["content"] = "hi!"  # history edited: nothing after it may be reused
    c = memo.parts("chat", edited, _chat_message)
    assert list(c) == _fresh(edited)
    assert c[1].text == "hi!"


def test_history_memo_reuses_the_messages_that_did_not_change():
    """A session whose system prompt carries the time: each turn changes message 0 only; the
    parts of every other message are the earlier ones, and message 0's are new and right."""
    memo = HistoryMemo()
    turn1 = [{"role": "system", "content": "Time: 09:00. Be brief."}, {"role": "user", "content": "hi"}]
    a = memo.parts("chat", turn1, _chat_message)
    turn2 = json.loads(json.dumps(turn1)) + [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "more"}]
    turn2[0]["content"] = "Time: 09:01. Be brief."
    b = memo.parts("chat", turn2, _chat_message)
    assert list(b) == _fresh(turn2)
    assert b[0].text == "Time: 09:01. Be brief." and b[0] is not a[0]
    assert b[1] is a[1]  # the user's message: reused


def test_history_memo_finds_shared_messages_by_identity(monkeypatch):
    """Records decoded by ResentLines share the messages they repeat: the memo finds the tip
    without serializing any message."""
    memo = HistoryMemo()
    turn1 = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    a = memo.parts("chat", turn1, _chat_message)
    turn2 = turn1 + [{"role": "assistant", "content": "hello"}]
    calls = []
    monkeypatch.setattr(HistoryMemo, "_key", staticmethod(lambda *a: calls.append(a) or None))
    b = memo.parts("chat", turn2, _chat_message)
    assert list(b) == _fresh(turn2) and b[:2] == a
    assert len(calls) == 1  # only the new list's own key, to keep it as a tip


# ---------------------------------------------------------------- incremental render


def _req(parts: list[Part], params: dict | None = None) -> Request:
    return Request(id="r", source=Source("x", 1), format="openai-chat", api="chat", provider="openai",
                   model="gpt-4.1", arrival=None, parts=parts, params=params or {})


def _whole(layout: Layout, req: Request) -> list:
    fmt = FramedFormat(resolve_tokenizer(None, default="o200k_base", model="gpt-4.1"), FRAMINGS["harmony"], layout)
    return fmt.render(req)


@pytest.mark.parametrize("layout", [Layout(), Layout(order=("params", "tools", "system", "messages"),
                                                     params=("response_format",))])
def test_render_extends_only_when_the_result_is_the_same(layout):
    fmt = FramedFormat(resolve_tokenizer(None, default="o200k_base", model="gpt-4.1"), FRAMINGS["harmony"], layout)
    tool = Part("tool", "tools[0]", '{"name":"a"}')
    system = Part("system", "messages[0].content", "Be brief.", "system", 0)
    user = Part("user", "messages[1].content", "hi", "user", 1)
    reply = Part("assistant", "messages[2].content", "hello", "assistant", 2)
    call = Part("tool_call", "messages[2].tool_calls[0]", '{"name":"a"}', "assistant", 2)
    turns = [
        [system, user],
        [system, user, reply, call],  # a message of two parts
        [tool, system, user, reply, call],  # a tool added in front: no tip applies
        [tool, system, user, reply, call, Part("user", "messages[3].content", "more", "user", 3)],
        [system, Part("system", "messages[1].content", "Also this.", "system", 1)],  # extends the system run
    ]
    for parts in turns:
        for params in ({}, {"response_format": {"type": "json_object"}}):
            req = _req(list(parts), params)
            assert fmt.render(req) == _whole(layout, req)
    # the same parts with the rendered parameter changed re-render the params section
    req = _req(list(turns[1]), {"response_format": {"type": "text"}})
    assert fmt.render(req) == _whole(layout, req)


def _rebuilds(paths: list, defer: float = 0.0) -> dict[str, int]:
    """Assemble every request of ``paths`` through the front and back halves (packed, as
    between processes; ``defer``: the share of new segments the back half tokenizes) and check
    each prompt against its request rendered and tokenized whole; returns counts of what was
    checked."""
    opts = AuditOptions(workers=1)
    pipe = pipeline_mod.Pipeline(paths, opts)
    front, back = prepare_mod.Front(pipe.state), prepare_mod.Back(pipe.state)
    front.defer = defer
    fresh = pipeline_mod.Pipeline(paths, opts)
    n = {"checked": 0, "patched": 0, "patched_later": 0, "keyed": 0, "deferred": 0}
    for chunk in pipe.chunks():
        deltas = front.prepare(chunk)
        packs = [d.pack() for d in deltas]
        n["deferred"] += sum(len(p.untokenized) for p in packs)
        back.fill(packs)
        for d, packed in zip(deltas, packs):
            req, _, ctx, prompt = back.assemble(packed)
            assert req == d.request
            if ctx is None:
                continue
            # whole: a new context, no tips
            if not isinstance(ctx.format, FramedFormat):
                continue
            pf = fresh.state.provider_for(req)
            whole_ctx = prepare_mod.Context(pf, ctx.tokenizer)
            segs = whole_ctx.format._whole(req) + [whole_ctx.format._generation]
            assert list(prompt.segments) == segs
            ids = [ctx.tokenizer.encode_batch([s.text])[0] for s in segs]
            pieces = [whole_ctx.frame(s.head) + b"".join(int(t).to_bytes(4, "little") for t in x) + whole_ctx.frame(s.tail)
                      for s, x in zip(segs, ids)]
            units = b"".join(pieces)
            assert prompt.units == units
            assert prompt.n_tokens == len(units) // 4
            assert list(prompt.seg_ends) == list(itertools.accumulate(len(s.head) + len(x) + len(s.tail)
                                                                      for s, x in zip(segs, ids)))
            assert prompt.seg_paths == tuple(s.path for s in segs)
            if ctx.needs_keys:  # keys continue the base tip's (up to its first replaced segment)
                assert list(prompt.keys()) == prepare_mod.chained_keys(pieces)
                n["keyed"] += 1
            n["patched"] += bool(d.seg_patches)
            n["patched_later"] += bool(d.seg_patches) and d.seg_patches[0] > 0
            n["checked"] += 1
        back.drop(front.take_dropped())
    return n


@pytest.mark.parametrize("defer", [0.0, 0.7])
def test_front_and_back_rebuild_each_prompt(small_chunks, defer):
    """Every assembled prompt equals the prompt of its request rendered and tokenized whole,
    whichever half tokenized its segments."""
    n = _rebuilds(LOGS, defer)
    assert n["checked"] > 500 and n["keyed"] > 500
    assert (n["deferred"] > 500) == bool(defer)
    # sessions whose system prompt changes every turn (the support bot greets each user by name,
    # the agent's prompt starts with the time) are sent as their tip with that segment replaced
    assert n["patched"] > 50


def test_a_request_sent_as_its_tip_with_a_later_segment_replaced(tmp_path, small_chunks):
    """A session whose second message changes every turn: its prompts are sent as the tip with
    that segment replaced, and the chained keys continue the tip's up to it."""
    system = "You are a careful assistant. " + "Follow the handbook. " * 120
    lines = []
    for sid in range(3):
        history = []
        for t in range(6):
            history.append({"role": "user", "content": f"Question {t} of session {sid}: " + "details " * 30})
            msgs = [{"role": "system", "content": system},
                    {"role": "user", "content": f"Profile: plan=pro, turn={t}, session={sid}"}] + history
            lines.append(json.dumps({"timestamp": f"2026-11-01T10:{sid:02d}:{t:02d}Z",
                                     "request": {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": msgs}}))
            history.append({"role": "assistant", "content": f"Answer {t}. " + "words " * 40})
    log = tmp_path / "profile_turns.jsonl"
    log.write_text("\n".join(lines) + "\n")
    n = _rebuilds([log])
    assert n["checked"] == 18 and n["keyed"] == 18
    assert n["patched_later"] >= 12  # turns 1 to 5 of each session


def test_pack_sends_only_the_added_parts():
    req = _req([Part("user", f"messages[{i}].content", str(i), "user", i) for i in range(5)])
    d = prepare_mod.Delta(req, base=3, keep_parts=4)
    p = d.pack()
    assert p.packed and list(p.request.parts) == list(req.parts[4:])
    assert replace(p.request, parts=req.parts) == req
