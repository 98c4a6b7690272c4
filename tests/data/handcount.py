#!/usr/bin/env python3
"""Hand counts of the tokens each corpus case loses, worked out without promptcache's reader,
renderer, simulator or diagnoser (only its offline copy of tiktoken's vocabularies is used, to
get a ``tiktoken.Encoding``).

    PYTHONPATH=. python tests/data/handcount.py            # print every case's count
    PYTHONPATH=. python tests/data/handcount.py C12 C22     # some cases, with per-request detail

How a count is made:

- each request is serialized here in the provider's prefix order (Anthropic: tools, system,
  messages; OpenAI-style: system messages, tools, the other messages; Gemini: system, tools,
  messages) as a list of units: one per tool, system block, message content block and tool
  call (text and tool results as their text, anything else as the compact JSON the client
  sent, without ``cache_control``), plus a framing unit per message and per tool-use or
  tool-result block standing in for the chat markers (4 tokens; for OpenAI-style prompts under an
  approximate tokenizer, the harmony markers ``<|start|>role<|message|>`` and ``<|end|>``
  counted as plain text, which is what such a tokenizer makes of them). Each unit is tokenized alone with tiktoken (``encode_ordinary``): cl100k_base
  for Anthropic, Gemini, DeepSeek and self-hosted models, o200k_base for OpenAI's;
- the shared prefix of two requests is the count of their equal leading units' tokens plus the
  common leading tokens of the first unit that differs;
- a content cause's loss is, per request, what it would share with its predecessor (the previous
  request of its conversation) once the cause is undone by hand (the undo functions below: the
  value replaced, the items sorted, the window kept append-only ...) minus what it shares with
  the best earlier request as logged;
- a cache-mechanics cause's loss is, per request, what it shares with the best earlier request
  minus what the provider serves it, the served part worked out from the provider's documented
  rules for that case (the ``served`` functions below).

The counts are written into ``tests/data/corpus.yaml`` by hand; the corpus test compares the
audit's numbers with them (within 10%).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from promptcache.tokenize.tiktoken_backend import load_encoding

CASES = Path(__file__).resolve().parent / "cases"
_ENC: dict[str, object] = {}
FRAME = 4  # tokens of chat framing per message (an estimate; both sides get the same)


def enc(name: str):
    if name not in _ENC:
        _ENC[name] = load_encoding(name)
    return _ENC[name]


def _json(v) -> str:
    """Compact JSON in the value's own key order (what a client sends)."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _block(b: dict) -> str:
    return _json({k: v for k, v in b.items() if k != "cache_control"})


def _text(c) -> str:
    if c is None:
        return ""
    if isinstance(c, str):
        return c
    return _json(c)


def units(rec: dict, order: str) -> list[tuple[str, str]]:
    """(kind, text) units of one request in prefix order."""
    tools = [("tool", _block(t)) for t in rec.get("tools") or []]
    system: list[tuple[str, str]] = []
    msgs = list(rec.get("messages") or [])
    sysf = rec.get("system")
    if isinstance(sysf, str):
        system = [("frame", "system"), ("text", sysf)]
    elif isinstance(sysf, list):
        system = [("frame", "system")] + [("text", b.get("text", "")) for b in sysf]
    while msgs and msgs[0].get("role") in ("system", "developer"):
        m = msgs.pop(0)
        c = m.get("content")
        system += [("frame", m["role"])] + ([("text", b.get("text", "")) for b in c] if isinstance(c, list) else [("text", _text(c))])
    params = [("params", json.dumps({k: rec[k] for k in ("thinking",) if k in rec}, sort_keys=True))] \
        if order == "anthropic" and "thinking" in rec else []
    body: list[tuple[str, str]] = []
    for m in msgs:
        body.append(("frame", m.get("role", "")))
        c = m.get("content")
        if isinstance(c, list):
            for b in c:
                t = b.get("type")
                if t == "text":
                    body.append(("text", b["text"]))
                elif t == "tool_use":
                    body += [("frame", t), (t, _block(b))]
                elif t == "tool_result":
                    body += [("frame", t), (t, _text(b.get("content")))]
                elif t in ("image", "document"):  # an attachment: one opaque unit per distinct source
                    body.append((t, f"<{t} {_json(b.get('source'))[-12:]}>"))
                else:
                    body.append((t or "?", _block(b)))
        elif c:
            body.append(("text", c))
        for tc in m.get("tool_calls") or []:
            body.append(("tool_call", _json(tc.get("function"))))
    if order == "anthropic":
        return tools + system + params + body
    if order == "gemini":
        return system + tools + body
    return system + tools + body


class Counter:
    """Token counts of one provider's prompts.

    ``frame``: how a message's chat markers count: ``special`` (harmony's ``<|start|>``,
    ``<|message|>``, ``<|end|>`` as single tokens, o200k_base: 4 per message), ``text`` (the same
    markers as plain text, for an approximate tokenizer that has no such tokens) or a number.
    """

    def __init__(self, encoding: str, order: str, frame: str | int = FRAME):
        self.e = enc(encoding)
        self.order = order
        self.frame = frame
        self._memo: dict[str, list[int]] = {}

    def ids(self, u: tuple[str, str]) -> list[int]:
        if u[0] == "frame":
            if self.frame == "text" and u[1] not in ("tool_use", "tool_result"):
                marks = self.e.encode_ordinary(f"<|start|>{u[1]}<|message|>") + self.e.encode_ordinary("<|end|>")
                return [-1000 - i for i in range(len(marks))][:-1] + [hash(u[1]) % 1000 - 3000]
            n = FRAME if not isinstance(self.frame, int) else self.frame
            return [-1, -2, hash(u[1]) % 1000 - 2000, -3][:n]
        got = self._memo.get(u[1])
        if got is None:
            got = self._memo[u[1]] = self.e.encode_ordinary(u[1])
        return got

    def length(self, rec: dict) -> int:
        return sum(len(self.ids(u)) for u in units(rec, self.order))

    def shared(self, a: dict, b: dict) -> int:
        ua, ub = units(a, self.order), units(b, self.order)
        n = 0
        for x, y in zip(ua, ub):
            ix, iy = self.ids(x), self.ids(y)
            if x == y:
                n += len(ix)
                continue
            k = 0
            while k < min(len(ix), len(iy)) and ix[k] == iy[k]:
                k += 1
            return n + k
        return n

    def upto(self, rec: dict, stop) -> int:
        """Tokens of the units before the first one ``stop(index, unit)`` accepts, plus it."""
        n = 0
        for i, u in enumerate(units(rec, self.order)):
            n += len(self.ids(u))
            if stop(i, u):
                return n
        return n


def load(case: str) -> list[dict]:
    (path,) = CASES.glob(f"{case}*.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def content_loss(c: Counter, recs: list[dict], undo, pred=None, detail: bool = False) -> int:
    """Σ over requests of max(0, shared with the predecessor once undone − best shared as logged)."""
    total = 0
    for k in range(1, len(recs)):
        p = pred(recs, k) if pred else k - 1
        if p is None:
            continue
        best = max(c.shared(recs[k], recs[j]) for j in range(k))
        cf = c.shared(undo(recs[k], k), undo(recs[p], p))
        lost = max(0, cf - best)
        if detail:
            print(f"  request {k + 1}: predecessor {p + 1}, shared as logged {best}, once undone {cf}, lost {lost}")
        total += lost
    return total


def mech_loss(c: Counter, recs: list[dict], served, detail: bool = False, first: int = 1) -> int:
    """Σ over requests of (best shared as logged − served by the provider's rules)."""
    total = 0
    for k in range(first, len(recs)):
        best = max(c.shared(recs[k], recs[j]) for j in range(k))
        s = served(k, best)
        if detail:
            print(f"  request {k + 1}: shared {best}, served {s}, lost {best - s}")
        total += max(0, best - s)
    return total


def sub(pattern: str, repl: str, fields=("system", "messages", "tools")):
    """An undo that replaces ``pattern`` everywhere in the record's text."""
    rx = re.compile(pattern)

    def undo(rec: dict, k: int) -> dict:
        return json.loads(rx.sub(repl, json.dumps(rec)))
    return undo


def canon(rec: dict, k: int) -> dict:
    """Every JSON-in-a-string value with sorted keys, every tool's schema with sorted keys."""
    def fix(v):
        if isinstance(v, dict):
            return {key: fix(v[key]) for key in sorted(v)}
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, str) and v[:1] in "{[":
            try:
                return json.dumps(fix(json.loads(v)))
            except ValueError:
                return v
        return v
    out = dict(rec)
    out["tools"] = [fix(t) for t in rec.get("tools") or []]
    out["messages"] = fix(rec.get("messages") or [])
    return out


def sort_tools(rec: dict, k: int) -> dict:
    out = dict(rec)
    out["tools"] = sorted(rec.get("tools") or [], key=lambda t: (t.get("function") or t).get("name", ""))
    return out


def sort_lines_between(start: str, end: str | None):
    def undo(rec: dict, k: int) -> dict:
        out = json.loads(json.dumps(rec))
        for m in out.get("messages") or []:
            c = m.get("content")
            if isinstance(c, str) and start in c:
                i = c.index(start)
                j = c.index(end, i) if end and end in c[i:] else len(c)
                lines = c[i:j].split("\n")
                m["content"] = c[:i] + "\n".join(sorted(lines)) + c[j:]
        return out
    return undo


def template_loss(recs: list[dict], detail: bool = False) -> int:
    """Each request rendered with rules/lint/data/ollama-llama31 (jinja2 and tokenizers alone,
    as transformers renders chat templates): where a request's rendering does not extend its
    predecessor's, it loses what the predecessor's rendering holds past their common prefix
    (a template that kept the tools in place would have let it extend it)."""
    import jinja2
    from tokenizers import Tokenizer

    d = Path(__file__).resolve().parents[2] / "rules" / "lint" / "data" / "ollama-llama31"
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x: json.dumps(x, ensure_ascii=False)
    tmpl = env.from_string((d / "chat_template.jinja").read_text(encoding="utf-8"))
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    ids = [tok.encode(tmpl.render(messages=r["messages"], tools=r.get("tools"), add_generation_prompt=True),
                      add_special_tokens=False).ids for r in recs]

    def lcp(a: list[int], b: list[int]) -> int:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n
    total = 0
    for k in range(1, len(recs)):
        best = max(lcp(ids[k], ids[j]) for j in range(k))
        lost = 0 if lcp(ids[k], ids[k - 1]) == len(ids[k - 1]) else len(ids[k - 1]) - best
        if detail:
            print(f"  request {k + 1}: rendered {len(ids[k])}, shared {best}, lost {lost}")
        total += lost
    return total


def compute(case: str, detail: bool = False) -> int:
    recs = load(case)
    A = Counter("cl100k_base", "anthropic")
    O = Counter("o200k_base", "openai")
    C = Counter("cl100k_base", "openai", frame="text")
    G = Counter("cl100k_base", "gemini")
    if case == "C01":  # the time to the second
        return content_loss(A, recs, sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "T"), detail=detail)
    if case == "C02":  # the millisecond ISO time in the memory metadata
        return content_loss(C, recs, sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", "T"), detail=detail)
    if case == "C03":  # the date line: only 2->3 crosses midnight
        return content_loss(C, recs, sub(r"20\d\d-\d\d-\d\d", "D"), detail=detail)
    if case == "C04":  # Clock: HH:MM:SS and the date
        return content_loss(O, recs, sub(r"\d\d:\d\d:\d\d", "T"), detail=detail)
    if case == "C05":  # rendered by Ollama's llama3.1 template, tokenized byte by byte
        return template_loss(recs, detail)
    if case == "C06":  # MCP tools in hash-map order
        return content_loss(O, recs, sort_tools, detail=detail)
    if case in ("C07", "C08"):  # key order of tool schemas / tool-call arguments and results
        return content_loss(A if case == "C07" else C, recs, canon, detail=detail)
    if case == "C09":  # moving breakpoint: only tools + system (its marker) are read
        head = [A.upto(r, lambda i, u: u[0] == "text" and i == len(r["tools"]) + 1) for r in recs]
        return mech_loss(A, recs, lambda k, best: head[k], detail)
    if case == "C10":  # frozen at four: request 4 reads up to its 4th marker, messages[60]
        def through_msg(rec, m):
            idx = units(rec, "anthropic")
            n, seen = 0, -1
            for u in idx:
                if u[0] == "frame" and u[1] in ("user", "assistant"):
                    seen += 1
                    if seen > m:
                        return n
                n += len(A.ids(u))
            return n
        # requests 2 and 3 lose the tail after their predecessor's last marker (on a tool result,
        # the case's other cause); request 4's predecessor had all four: the frozen tail
        return mech_loss(A, recs, lambda k, best: through_msg(recs[k], 60) if k == 3 else best, detail)
    if case == "C11":  # only system is marked: the history is never read
        head = [A.upto(r, lambda i, u: u[0] == "text" and i == len(r["tools"]) + 1) for r in recs]
        return mech_loss(A, recs, lambda k, best: head[k], detail)
    if case == "C12":  # the attribution nonce
        return content_loss(C, recs, sub(r"nonce=[0-9a-f]{5}", "nonce=0"), detail=detail)
    if case == "C13":  # requests 3 and 5 come after the 5-minute TTL: nothing read
        return mech_loss(A, recs, lambda k, best: 0 if k in (2, 4) else best, detail)
    if case == "C14":  # the repository snapshot in system[1]
        def env(rec, k):  # the snapshot lines after the block's static header, made the same
            out = json.loads(json.dumps(rec))
            t = out["system"][1]["text"]
            out["system"][1]["text"] = t[:t.index("branch:")] + "SNAPSHOT"
            return out
        return content_loss(A, recs, env, detail=detail)
    if case == "C15":  # sliding window: undone, each request would extend its predecessor
        return content_loss(O, recs, lambda r, k: r, pred=None, detail=detail) if False else \
            sum(max(0, O.length(recs[k - 1]) - max(O.shared(recs[k], recs[j]) for j in range(k))) for k in range(1, len(recs)))
    if case == "C16":  # below the 4,096-token minimum of claude-haiku-4-5: nothing served
        return mech_loss(A, recs, lambda k, best: 0, detail)
    if case == "C17":  # the UUID in the Bash tool's description
        return content_loss(A, recs, sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "U"), detail=detail)
    if case == "C18":  # a new prompt_cache_key per request: a cache of its own each time
        return mech_loss(O, recs, lambda k, best: 0, detail)
    if case == "C20":  # thinking switched: the messages after it are not shared
        def same(rec, k):
            out = dict(rec)
            out["thinking"] = {"type": "adaptive"}
            return out
        return content_loss(A, recs, same, detail=detail)
    if case == "C21":  # thread, member and contact lines before the instructions
        undo = sub(r"thread: \w+\\norg: [^\\]+\\nmember: [^\\]+\\ncontact: [^\\]+\\n", "")
        return content_loss(A, recs, undo, detail=detail)
    if case == "C22":  # memories in similarity order: sorted, the system prompt is stable
        return content_loss(C, recs, sort_lines_between("[Saved Notes]", None), detail=detail)
    if case == "C23":  # under Gemini 3.1 Pro's 4,096-token minimum: nothing served implicitly
        return mech_loss(G, recs, lambda k, best: 0, detail)
    return compute_new(case, recs, detail)


def body(r: dict) -> dict:
    """The request body of a logged record (bare, or in a gateway record)."""
    return r.get("request") or r


def append_only_loss(c: Counter, recs: list[dict], detail: bool = False) -> int:
    """Where a request does not extend its predecessor, it loses what the predecessor holds
    past their common prefix: made append-only (the window kept, the result not pruned, the
    message not inserted or removed), it would have extended it."""
    total = 0
    for k in range(1, len(recs)):
        r, p = body(recs[k]), body(recs[k - 1])
        shared = c.shared(r, p)
        if shared >= c.length(p):
            continue
        best = max(c.shared(r, body(recs[j])) for j in range(k))
        lost = max(0, c.length(p) - best)
        if detail:
            print(f"  request {k + 1}: predecessor {c.length(p)} tokens, shared {best}, lost {lost}")
        total += lost
    return total


def compute_new(case: str, recs: list[dict], detail: bool = False) -> int:
    """C24-C40 (tests/data/make_cases.py)."""
    A = Counter("cl100k_base", "anthropic")
    O = Counter("o200k_base", "openai")
    C = Counter("cl100k_base", "openai", frame="text")
    recs = [body(r) for r in recs] if case not in ("C29",) else recs
    if case == "C24":  # the growing token count
        return content_loss(O, recs, sub(r"\d+ tokens used so far", "N tokens used so far"), detail=detail)
    if case == "C25":  # the minute clock at the end of the system prompt
        return content_loss(A, recs, sub(r"Local time: [0-9: -]+\.", "Local time: T."), detail=detail)
    if case in ("C26", "C27"):  # a result pruned in place / a summary and a window that moved
        return append_only_loss(C, recs, detail)
    if case == "C28":  # the lessons message inserted or removed before the conversation
        return append_only_loss(O, recs, detail)
    if case == "C29":  # the model's tool call, sent back re-serialized: the returned tokens from the change on
        e, total = enc("cl100k_base"), 0
        for k in range(len(recs) - 1):
            fn = recs[k]["response"]["choices"][0]["message"]["tool_calls"][0]["function"]
            returned = json.dumps({"name": fn["name"], "arguments": fn["arguments"]}, separators=(",", ":"), ensure_ascii=False)
            sent = recs[k + 1]["request"]["messages"][-2]["tool_calls"][0]["function"]
            replayed = json.dumps({"name": sent["name"], "arguments": sent["arguments"]}, separators=(",", ":"), ensure_ascii=False)
            f = next(i for i, (x, y) in enumerate(zip(returned, replayed)) if x != y)
            lost = len(e.encode_ordinary(returned[f:]))
            if detail:
                print(f"  request {k + 2}: returned {returned!r} replayed {replayed!r}: {lost} tokens from char {f}")
            total += lost
        return total
    if case == "C30":  # reasoning_effort switched on requests 3 and 5: vLLM would serve whole 16-token blocks
        total = 0
        for k in (2, 4):
            n, shared = C.length(recs[k]), C.shared(recs[k], recs[k - 1])
            total += (min(shared, n - 1) // 16) * 16
        return total
    if case == "C31":  # requests 3 and 5 served by another host (0 reported). DeepSeek V4 persists a unit at
        # "the end position of the user input": the predecessor's whole input, its generation prompt
        # (<|start|>assistant, which this request repeats as its assistant message's header) included;
        # each request extends its predecessor, so the simulation serves all of that unit
        gen = len(enc("cl100k_base").encode_ordinary("<|start|>assistant"))
        return sum(C.length(recs[k - 1]) + gen for k in (2, 4) if C.shared(recs[k], recs[k - 1]) == C.length(recs[k - 1]))
    if case == "C32":  # unkeyed: every request but the lucky fourth reads nothing; OpenAI 128-token steps
        return sum((O.shared(recs[k], recs[k - 1]) // 128) * 128 for k in range(1, len(recs)) if k != 3)
    if case == "C33":  # the chain rebuilt from the logged inputs (the responses hold no output): each
        # request's rebuilt prompt starts with its predecessor's, served in OpenAI's 128-token steps
        # by the simulation; the log reports none of it cached
        inputs = [r["request"]["input"] for r in load(case)]
        chain = [{"messages": sum(inputs[:k + 1], [])} for k in range(len(inputs))]
        return sum((O.shared(chain[k], chain[k - 1]) // 128) * 128 for k in range(1, len(chain)))
    if case == "C34":  # each agent turn after the first finds the title request in the slot
        total = 0
        for k in range(2, len(recs), 2):
            total += C.shared(recs[k], recs[k - 2]) - C.shared(recs[k], recs[k - 1])
        return total
    if case in ("C35",):  # no breakpoint: nothing served
        return mech_loss(A, recs, lambda k, best: 0, detail)
    if case == "C36":  # requests 3 and 5 after the 5-minute TTL: nothing served
        return mech_loss(A, recs, lambda k, best: 0 if k in (2, 4) else best, detail)
    if case == "C37":  # the mode's tool swapped: undone, the same tool set every turn
        edit = recs[0]["tools"][-1]

        def same_tools(rec, k):
            out = dict(rec)
            out["tools"] = rec["tools"][:-1] + [edit]
            return out
        return content_loss(A, recs, same_tools, detail=detail)
    if case == "C38":  # only system[0] marked: the history is never read
        head = [A.upto(r, lambda i, u: u[0] == "text" and i == 1) for r in recs]
        return mech_loss(A, recs, lambda k, best: head[k], detail)
    if case == "C39":  # trailing newlines kept or trimmed
        def strip(rec, k):
            out = json.loads(json.dumps(rec))
            out["system"][0]["text"] = out["system"][0]["text"].rstrip()
            return out
        return content_loss(A, recs, strip, detail=detail)
    if case == "C40":  # the clock at offset 0 of the system prompt
        return content_loss(A, recs, sub(r"\d\d:\d\d:\d\d", "T"), detail=detail)
    return 0


if __name__ == "__main__":
    names = sys.argv[1:] or sorted({p.name[:3] for p in CASES.glob("C*.jsonl")})
    for name in names:
        print(name, compute(name, detail=len(sys.argv) > 1))
