"""A content part removed from an earlier message (trial s01, s01b, s01c: Kilo Code, Cline and
Roo Code strip ``<environment_details>`` from the previous user turn when a new one starts) is
named as such, at the removed part, with its text, and not as a chat template re-render."""

from __future__ import annotations

from promptcache.pipeline import AuditOptions, audit
from promptcache.tokenize.tiktoken_backend import load_encoding

SYSTEM = "# Coding agent\n" + "Run the tests before you commit and keep each change small. " * 60


def _env(tabs: str) -> str:
    return f"<environment_details>\nCurrent time: 2026-11-02T09:00:00Z\nOpen tabs: {tabs}\n</environment_details>"


def _turns(n: int) -> list[dict]:
    """Request k holds k+1 user turns; only the newest carries the environment part (the
    OpenAI chat shape s01c logged)."""
    recs = []
    for k in range(n):
        msgs = [{"role": "system", "content": SYSTEM}]
        for i in range(k + 1):
            parts = [{"type": "text", "text": f"Step {i}: fix module {i} and say what changed."}]
            if i == k:
                parts.append({"type": "text", "text": _env(f"m{i}.py, test_m{i}.py")})
            msgs.append({"role": "user", "content": parts})
            if i < k:
                msgs.append({"role": "assistant", "content": f"Fixed module {i}; the tests pass."})
        recs.append({"timestamp": 30 * k, "session_id": "conv-1", "model": "gpt-4.1", "messages": msgs})
    return recs


def test_env_part_stripped_from_the_previous_turn(tmp_log):
    """4 requests; requests 2-4 each strip the environment part of the turn before. The removed
    part is the predecessor's last content, so what the predecessor would have served from
    there on is that part and what the harmony framing put after it: the part's o200k tokens
    (38 for each of these texts, counted with the tokenizer below), the message's ``<|end|>``
    (1) and the generation prompt ``<|start|>assistant`` (2): 41 per request, 123 in all
    (the trial's s01c: 7 × 41)."""
    res = audit([tmp_log(_turns(4))], AuditOptions())
    [f] = [f for f in res.findings if f.rule.id == "history-part-removed"]
    enc = load_encoding("o200k_base")
    want = sum(len(enc.encode(_env(f"m{i}.py, test_m{i}.py"))) for i in range(3))
    assert (f.line, f.requests, f.segment) == (2, 3, "messages[1].content[1]")
    assert want == 3 * 38
    assert f.tokens_lost == 3 * (38 + 1 + 2)
    assert f.evidence["before"] == "<environment_details>" and f.evidence["role"] == "user"
    assert "removed from message 1 (user)" in f.message
    ids = {x.rule.id for x in res.findings}
    assert "template-render-changed" not in ids and "prefix-changed" not in ids
    assert "chat template" not in f.message and "engine" not in f.message
