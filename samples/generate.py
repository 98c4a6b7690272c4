#!/usr/bin/env python3
"""Write the sample request logs in this folder (deterministic: same output every run).

    python samples/generate.py            # rewrite every sample
    python samples/generate.py --check    # exit 1 if a committed sample differs from a fresh one

Each sample is a small, realistic log with one planted cache problem (or none):

- ``agent_timestamp.jsonl``: an OpenAI coding agent (gateway records with usage) whose system
  prompt starts with the current time to the second.
- ``support_bot.jsonl``: OpenAI Chat Completions; the customer's name, id and e-mail come before
  a long shared policy.
- ``rag_app.jsonl``: OpenAI Responses API; retrieved documents arrive in score order, which
  jitters from query to query.
- ``well_structured.jsonl``: OpenAI Chat Completions done right: stable system prompt and tools
  first, the question last, a ``prompt_cache_key``.
- ``anthropic_app.jsonl``: Anthropic Messages with ``cache_control`` breakpoints (1 h on the tools,
  5 min on the system prompt, a moving breakpoint on the conversation); some users pause for
  longer than the 5-minute TTL between turns.
- ``malformed.jsonl``: a few good requests and a few broken lines.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = datetime(2026, 11, 2, 9, 0, 0, tzinfo=timezone.utc)

WORDS = {
    "subject": ["The assistant", "Every reply", "Each answer", "The agent", "A response", "Any tool call", "The final message"],
    "verb": ["must", "should", "is expected to", "needs to", "has to"],
    "action": [
        "cite the section of the policy it relies on", "stay within the customer's stated question",
        "explain fees before confirming any transfer", "confirm the account holder's identity first",
        "avoid speculation about interest rate changes", "summarise the steps already taken",
        "escalate disputes above the stated threshold", "prefer the customer's preferred language",
        "log every irreversible action before taking it", "read the file before editing it",
        "run the tests after changing code", "keep diffs small and focused", "never commit secrets",
        "ask before deleting anything", "prefer existing helpers over new ones",
        "quote error messages exactly", "explain why a change is safe",
    ],
    "tail": [
        "unless the customer explicitly asks otherwise", "in every case", "when the request is ambiguous",
        "before any external call", "for all regulated products", "even under time pressure",
        "when working in an unfamiliar repository", "as described in the handbook", "without exception",
    ],
}


def sentences(rng: random.Random, n: int) -> str:
    """``n`` plausible policy sentences."""
    out = []
    for _ in range(n):
        out.append(f"{rng.choice(WORDS['subject'])} {rng.choice(WORDS['verb'])} {rng.choice(WORDS['action'])} "
                   f"{rng.choice(WORDS['tail'])}.")
    return " ".join(out)


def policy(seed: int, sections: int, per: int, title: str) -> str:
    rng = random.Random(seed)
    parts = [f"# {title}"]
    for i in range(1, sections + 1):
        parts.append(f"\n## {i}. {rng.choice(['Scope', 'Identity checks', 'Fees', 'Disputes', 'Escalation', 'Privacy', 'Tone', 'Tools', 'Safety', 'Records'])} ({i})")
        parts.append(sentences(rng, per))
    return "\n".join(parts)


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def agent_tools() -> list[dict]:
    def fn(name: str, desc: str, props: dict, required: list[str]) -> dict:
        return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
            "type": "object", "properties": props, "required": required, "additionalProperties": False}}}

    s = {"type": "string"}
    return [
        fn("read_file", "Read a UTF-8 text file from the workspace. Returns the content with line numbers. Use it before editing any file so edits apply to the current content.",
           {"path": {**s, "description": "Path relative to the repository root."}, "start_line": {"type": "integer", "description": "First line to return (1-based)."}, "end_line": {"type": "integer", "description": "Last line to return (inclusive)."}}, ["path"]),
        fn("write_file", "Create or overwrite a file with the given content. Prefer edit_file for small changes; this replaces the whole file.",
           {"path": {**s, "description": "Path relative to the repository root."}, "content": {**s, "description": "The complete new content."}}, ["path", "content"]),
        fn("edit_file", "Replace one exact occurrence of old_text with new_text in a file. Fails when old_text is missing or occurs more than once.",
           {"path": s, "old_text": {**s, "description": "Exact text to replace, including whitespace."}, "new_text": {**s, "description": "Replacement text."}}, ["path", "old_text", "new_text"]),
        fn("run_shell", "Run a shell command in the repository root with a timeout. Output over 20,000 characters is truncated in the middle. Never run commands that need a network connection.",
           {"command": {**s, "description": "The command line to run with bash -lc."}, "timeout_s": {"type": "integer", "description": "Seconds before the command is killed (default 120)."}}, ["command"]),
        fn("search_code", "Search the repository with a regular expression (ripgrep syntax). Returns file:line:text matches, at most 200.",
           {"pattern": {**s, "description": "Regular expression."}, "glob": {**s, "description": "Optional file glob, e.g. '*.py'."}}, ["pattern"]),
        fn("list_dir", "List a directory's entries with sizes, directories first.", {"path": s}, ["path"]),
        fn("git_diff", "Show the working tree's diff against HEAD, optionally for one path.", {"path": s}, []),
        fn("run_tests", "Run the project's test suite or a subset and return a summary with failures.",
           {"selector": {**s, "description": "Test file, directory or -k expression."}}, []),
    ]


def agent_timestamp(rng: random.Random) -> list[dict]:
    instructions = policy(11, 14, 7, "CodePilot operating instructions")
    tools = agent_tools()
    tasks = ["fix the failing test in tests/test_parser.py", "add a --verbose flag to the CLI",
             "rename the Config class to Settings everywhere", "speed up the CSV loader",
             "document the public API in the README", "upgrade the logging setup to structured logs",
             "remove the deprecated retry helper", "add type hints to utils/strings.py"]
    files = ["src/parser.py", "src/cli.py", "src/config.py", "src/loader.py", "README.md", "src/log.py", "src/retry.py", "src/utils/strings.py"]
    records = []
    for sid in range(10):
        t = T0 + timedelta(seconds=rng.randint(0, 3000))
        task = tasks[sid % len(tasks)]
        msgs: list[dict] = [{"role": "user", "content": f"Please {task}. The repository is a small Python project."}]
        for turn in range(rng.randint(6, 10)):
            system = (f"You are CodePilot, an autonomous coding agent. Current time: {iso(t)[:19]}Z.\n"
                      f"Session {sid:04d}. Follow the instructions below.\n\n{instructions}")
            body = {"model": "gpt-4.1", "messages": [{"role": "system", "content": system}] + msgs,
                    "tools": tools, "tool_choice": "auto", "temperature": 0}
            records.append({"timestamp": iso(t), "request_id": f"req_agent_{sid:02d}_{turn:02d}", "request": body,
                            "response": {"usage": {"prompt_tokens": None, "completion_tokens": 60 + rng.randint(0, 200),
                                                   "prompt_tokens_details": {"cached_tokens": 0}}}})
            path = files[(sid + turn) % len(files)]
            call_id = f"call_{sid:02d}{turn:02d}"
            msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}]})
            code = "\n".join(f"{i + 1:4d}  " + rng.choice(["def load(path):", "    return parse(path)", "import os", "class Settings:", "    retries = 3", "# TODO: tidy", "    if not path:", "        raise ValueError('empty path')"]) for i in range(rng.randint(30, 70)))
            msgs.append({"role": "tool", "tool_call_id": call_id, "content": code})
            msgs.append({"role": "assistant", "content": f"I read {path}. Next I will make the change and run the tests."})
            msgs.append({"role": "user", "content": rng.choice(["Go ahead.", "Looks right, continue.", "Also keep the old name as an alias.", "Run the tests afterwards."])})
            t += timedelta(seconds=rng.randint(4, 40))
    records.sort(key=lambda r: r["timestamp"])
    return records


FIRST = ["Ana", "Ben", "Chen", "Divya", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jia", "Kofi", "Lena", "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq"]
LAST = ["Silva", "Okafor", "Nguyen", "Müller", "Haddad", "Kowalski", "Tanaka", "Fischer", "Rossi", "Patel"]
QUESTIONS = ["Why was I charged a fee for my last transfer?", "How do I raise my daily card limit?",
             "Can I dispute a payment from last week?", "My card was declined abroad, what happened?",
             "How long does an international transfer take?", "Can you close my savings account?",
             "I forgot my online banking password.", "What documents do I need for a mortgage?"]


def support_bot(rng: random.Random) -> list[dict]:
    handbook = policy(22, 22, 8, "Northwind Bank customer support handbook")
    customers = [(f"{rng.choice(FIRST)} {rng.choice(LAST)}", f"C-{rng.randint(100000, 999999)}") for _ in range(40)]
    records = []
    t = T0
    for k in range(160):
        name, cid = rng.choice(customers)
        email = name.lower().replace(" ", ".").replace("ü", "ue") + "@example.com"
        system = (f"You are Aria, the support assistant of Northwind Bank. You are speaking with {name} "
                  f"(customer id {cid}, e-mail {email}). Address them by first name.\n\n{handbook}")
        body = {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": system},
                                                      {"role": "user", "content": rng.choice(QUESTIONS)}],
                "temperature": 0.2, "user": cid}
        records.append({"created_at": iso(t), "id": f"chatreq-{k:04d}", **body})
        t += timedelta(seconds=rng.randint(5, 60))
    return records


DOCS = {
    "refunds": ["Refunds are issued to the original payment method within 5 business days.",
                "Partial refunds apply when only some items are returned.",
                "Digital goods can be refunded within 14 days if not downloaded.",
                "Refund requests need the order number and the e-mail used at checkout.",
                "Shipping costs are refunded only when the item arrived damaged."],
    "shipping": ["Standard shipping takes 3 to 5 business days within the EU.",
                 "Express shipping is dispatched the same day for orders before 14:00 CET.",
                 "Tracking numbers are e-mailed when the parcel leaves the warehouse.",
                 "Remote islands may add 2 business days to any delivery estimate.",
                 "Parcels over 30 kg ship by freight and need a delivery appointment."],
    "accounts": ["Accounts can be deleted from the privacy page; deletion is final after 30 days.",
                 "Two-factor authentication can use an authenticator app or SMS.",
                 "Business accounts may add up to 25 team members.",
                 "Password resets expire after 60 minutes.",
                 "Account e-mail changes need confirmation from both addresses."],
}


def rag_app(rng: random.Random) -> list[dict]:
    instructions = ("You answer questions for the Helpdesk of Lumen Outdoor Gear using only the context documents "
                    "provided in the input. If the answer is not in the documents, say so and suggest contacting "
                    "support. Quote the document id you rely on in square brackets.\n\n" + policy(33, 6, 6, "Answering rules"))
    docs = {}
    for topic, facts in DOCS.items():
        for i, f in enumerate(facts):
            body = f + " " + sentences(random.Random(zlib.crc32(f'{topic}-{i}'.encode())), 14)
            docs[f"{topic}-{i + 1}"] = body
    questions = {"refunds": ["How long does a refund take?", "Can I get my shipping cost back?", "Do you refund e-books?"],
                 "shipping": ["When will my parcel arrive?", "Do you ship to Madeira?", "How heavy can a parcel be?"],
                 "accounts": ["How do I delete my account?", "Can I add my colleagues?", "My reset link expired."]}
    records = []
    t = T0
    for k in range(150):
        topic = rng.choice(list(DOCS))
        ids = [f"{topic}-{i + 1}" for i in range(5)]
        scored = sorted(ids, key=lambda d: -(zlib.crc32(d.encode()) % 100 + rng.random() * 40))  # score order jitters
        context = "\n\n".join(f"<doc id=\"{d}\">\n{docs[d]}\n</doc>" for d in scored)
        body = {"model": "gpt-4.1", "instructions": instructions,
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "Context documents:\n\n" + context},
                                                        {"type": "input_text", "text": "Question: " + rng.choice(questions[topic])}]}],
                "temperature": 0}
        records.append({"timestamp": int(t.timestamp()), "request_id": f"resp-{k:04d}", "request": body})
        t += timedelta(seconds=rng.randint(3, 30))
    return records


def well_structured(rng: random.Random) -> list[dict]:
    system = "You are the FAQ assistant of Lumen Outdoor Gear.\n\n" + policy(44, 16, 8, "Lumen FAQ assistant guide")
    tools = agent_tools()[:3]
    records = []
    t = T0
    for k in range(120):
        body = {"model": "gpt-4.1", "messages": [{"role": "system", "content": system},
                                                  {"role": "user", "content": rng.choice(QUESTIONS) + f" (ticket {rng.randint(1000, 9999)})"}],
                "tools": tools, "prompt_cache_key": "faq-assistant"}
        records.append({"timestamp": iso(t), "id": f"faq-{k:04d}", **body})
        t += timedelta(seconds=rng.randint(5, 45))
    return records


def anthropic_app(rng: random.Random) -> list[dict]:
    tools = [
        {"name": "lookup_order", "description": "Look up an order by its number and return status, items and shipping details.",
         "input_schema": {"type": "object", "properties": {"order_number": {"type": "string", "description": "Order number like LUM-123456."}}, "required": ["order_number"]}},
        {"name": "issue_refund", "description": "Refund an order or some of its items to the original payment method.",
         "input_schema": {"type": "object", "properties": {"order_number": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}, "reason": {"type": "string"}}, "required": ["order_number", "reason"]}},
        {"name": "create_ticket", "description": "Open a support ticket for a human agent with a summary of the conversation.",
         "input_schema": {"type": "object", "properties": {"summary": {"type": "string"}, "priority": {"type": "string", "enum": ["low", "normal", "high"]}}, "required": ["summary"]},
         "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]
    system = [{"type": "text", "text": "You are Juniper, the order assistant of Lumen Outdoor Gear.\n\n" + policy(55, 18, 8, "Order assistant handbook"),
               "cache_control": {"type": "ephemeral"}}]
    records = []
    for c in range(12):
        t = T0 + timedelta(seconds=rng.randint(0, 2400))
        msgs: list[dict] = []
        slow = c % 3 == 0  # a third of the users pause longer than the 5-minute TTL between turns
        for turn in range(6):
            msgs.append({"role": "user", "content": [{"type": "text", "text": rng.choice(QUESTIONS) + f" My order is LUM-{rng.randint(100000, 999999)}."}]})
            # moving breakpoint on the newest user turn: earlier turns stay cached
            sent = json.loads(json.dumps(msgs))
            sent[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
            body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": tools, "system": system, "messages": sent}
            records.append({"timestamp": iso(t), "id": f"msg_{c:02d}_{turn}", "request": body})
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": "Let me check that for you. " + sentences(rng, 3)}]})
            t += timedelta(seconds=rng.randint(360, 900) if slow else rng.randint(20, 120))
    records.sort(key=lambda r: r["timestamp"])
    return records


def malformed(rng: random.Random) -> list[str]:
    good = well_structured(random.Random(7))[:4]
    lines = [json.dumps(r) for r in good]
    lines.insert(1, '{"model": "gpt-4.1", "messages": [{"role": "user", "content": "unterminated')
    lines.insert(3, '{"model": "gpt-4.1", "messages": "not a list"}')
    lines.append('["a JSON array where an object was expected"]')
    return lines


def fill_usage(records: list[dict]) -> None:
    """Put realistic prompt_tokens into the agent sample's usage (tiktoken, offline)."""
    sys.path.insert(0, str(HERE.parent))
    from promptcache.pipeline import AuditOptions, audit  # noqa: E402

    tmp = HERE / ".agent_tmp.jsonl"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    try:
        res = audit([tmp], AuditOptions())
    finally:
        tmp.unlink()
    for r, o in zip(records, res.outcomes):
        r["response"]["usage"]["prompt_tokens"] = o.prompt_tokens
        r["response"]["usage"]["total_tokens"] = o.prompt_tokens + r["response"]["usage"]["completion_tokens"]


def build() -> dict[str, str]:
    """File name → content of every sample."""
    out: dict[str, str] = {}
    agent = agent_timestamp(random.Random(1))
    fill_usage(agent)
    for name, recs in (("agent_timestamp", agent), ("support_bot", support_bot(random.Random(2))),
                       ("rag_app", rag_app(random.Random(3))), ("well_structured", well_structured(random.Random(4))),
                       ("anthropic_app", anthropic_app(random.Random(5)))):
        out[f"{name}.jsonl"] = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    out["malformed.jsonl"] = "\n".join(malformed(random.Random(6))) + "\n"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    files = build()
    stale = [n for n, c in files.items() if not (HERE / n).exists() or (HERE / n).read_text(encoding="utf-8") != c]
    if args.check:
        for n in stale:
            print(f"samples/{n} is stale: run python samples/generate.py", file=sys.stderr)
        return 1 if stale else 0
    for n, c in files.items():
        (HERE / n).write_text(c, encoding="utf-8")
    print(f"wrote {len(files)} samples to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
