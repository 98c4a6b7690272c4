"""Proposals change only the volatile span they name (issue 18, item 2).

A support agent's system prompt is a long numbered policy (``## 1.`` ... ``## 9.``). Half of the
sessions render a conditional ``Current date: <time>`` line at the end of section 6, the way a
Handlebars ``{{#if currentDate}}`` block does (the structure of public support-agent prompts:
numbered markdown sections, conditional lines; content invented). ``--write-proposed`` must move
that line, and only that line, out of the dated requests' system prompts, and leave every clean
request byte-identical.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from promptcache.pipeline import AuditOptions
from promptcache.propose.engine import propose

TOPICS = ["Greeting and identity", "Accounts and sign-in", "Orders and delivery", "Refunds and returns",
          "Billing questions", "Tone and wording", "Escalation", "Privacy", "Closing the conversation"]


def _policy(rng: random.Random) -> list[str]:
    words = ("customer agent order parcel refund invoice account address courier warehouse ticket escalate "
             "confirm apologise summarise policy verify identity record window carrier label").split()
    sections = []
    for i, topic in enumerate(TOPICS, 1):
        body = "\n".join(f"- {' '.join(rng.choice(words) for _ in range(18)).capitalize()}." for _ in range(8))
        sections.append(f"## {i}. {topic}\n{body}\n")
    return sections


def support_log(path, sessions: int = 8, turns: int = 4):
    """Sessions of a support agent; sessions with an even number carry the date line."""
    rng = random.Random(18)
    sections = _policy(rng)
    head = "You are Wren, the support assistant of Lindale Outfitters (an invented shop).\n\n"
    records = []
    t0 = 1_793_000_000
    for s in range(sessions):
        history: list[dict] = []
        for k in range(turns):
            t = t0 + s * 17 + k * 95
            date_line = f"Current date: 2026-11-0{1 + s % 5} 10:{(s * 7 + k * 3) % 60:02d} UTC\n" if s % 2 == 0 else ""
            system = head + "".join(sections[:6]) + date_line + "".join(sections[6:])
            history.append({"role": "user", "content": f"Session {s}, question {k}: where is parcel {1000 + 31 * s + k}?"})
            body = {"model": "gpt-4.1-mini", "messages": [{"role": "system", "content": system}, *json.loads(json.dumps(history))]}
            records.append({"timestamp": t, "request": body})
            history.append({"role": "assistant", "content": f"Parcel {1000 + 31 * s + k} left the warehouse on day {k}."})
    records.sort(key=lambda r: r["timestamp"])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


@pytest.fixture(scope="module")
def proposed(tmp_path_factory):
    d = tmp_path_factory.mktemp("support")
    log, dest = d / "support.jsonl", d / "proposed.jsonl"
    records = support_log(log)
    res = propose([log], AuditOptions(), write=dest)
    out = [json.loads(x) for x in dest.read_text().splitlines()]
    return records, out, res


def test_the_date_line_is_found_and_moved(proposed):
    _, _, res = proposed
    kinds = [c.kind for p in res.proposals for c in p.plan.changes if c.applied]
    assert "move-slots" in kinds


def test_clean_requests_are_left_byte_identical(proposed):
    records, out, _ = proposed
    assert len(out) == len(records)
    clean = [(a, b) for a, b in zip(records, out) if "Current date:" not in a["request"]["messages"][0]["content"]]
    assert len(clean) == len(records) // 2
    for a, b in clean:
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _date_line(system: str) -> tuple[str, int, int]:
    start = system.index("Current date:")
    end = system.index("\n", start) + 1
    return system[start:end - 1], start, end


def test_dated_requests_lose_exactly_the_date_line(proposed):
    """Diff every rewritten request against its original: the system prompt loses the one line
    ``Current date: ...`` (and its line break), the newest user message gains that line at its
    end, each earlier user message ends with the line its own request moved there (the history
    the next turn re-sends stays as it was sent), and nothing else changes."""
    records, out, _ = proposed
    dated = [(a, b) for a, b in zip(records, out) if "Current date:" in a["request"]["messages"][0]["content"]]
    assert dated
    line_of = {}  # (session, turn) -> the date line that request moved
    for a, _ in dated:
        ma = a["request"]["messages"]
        s, k = map(int, re.match(r"Session (\d+), question (\d+)", ma[-1]["content"]).groups())
        line_of[(s, k)] = _date_line(ma[0]["content"])[0]
    for a, b in dated:
        ma, mb = a["request"]["messages"], b["request"]["messages"]
        system = ma[0]["content"]
        line, start, end = _date_line(system)
        assert mb[0]["content"] == system[:start] + system[end:]
        assert "## 7. Escalation" in mb[0]["content"] and mb[0]["content"].count("## ") == 9
        assert mb[-1]["content"] == ma[-1]["content"] + "\n\n" + line
        assert len(mb) == len(ma)
        for x, y in zip(ma[1:-1], mb[1:-1]):
            if x["role"] == "assistant":
                assert y == x
            else:
                s, k = map(int, re.match(r"Session (\d+), question (\d+)", x["content"]).groups())
                assert y == {**x, "content": x["content"] + "\n\n" + line_of[(s, k)]}
        rest_a = {k: v for k, v in a.items() if k != "request"}
        rest_b = {k: v for k, v in b.items() if k != "request"}
        assert rest_a == rest_b
        assert {k: v for k, v in a["request"].items() if k != "messages"} == \
               {k: v for k, v in b["request"].items() if k != "messages"}


def test_every_system_prompt_keeps_every_heading(proposed):
    _, out, _ = proposed
    for rec in out:
        system = rec["request"]["messages"][0]["content"]
        for i, topic in enumerate(TOPICS, 1):
            assert f"## {i}. {topic}\n" in system
