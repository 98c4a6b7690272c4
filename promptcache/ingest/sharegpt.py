"""ShareGPT conversations, expanded into one request per human turn.

Shape: ``{"id"?, "conversations": [{"from": "human" | "gpt" | "system", "value": str}, ...]}``
(the ShareGPT_Vicuna dataset vLLM and SGLang benchmark with,
https://docs.vllm.ai/en/latest/benchmarking/cli/; landscape.md §3.11), plus the speakers and
top-level fields of LLaMA-Factory's ShareGPT variant (``function_call``, ``observation``, a
``system`` string and a ``tools`` string; https://github.com/hiyouga/LLaMA-Factory
``data/README.md``), checked 2026-11-29.

Turn *k* (the *k*-th human message) is sent with everything before it, so each request holds
the growing history, exactly what a chat client resends and what a prefix cache can reuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Source
from .bodies import default_id
from .common import MAPPING, provider_for_model, stable_json
from .reader import Reader

#: ShareGPT speaker → (chat role, part kind).
SPEAKERS = {
    "human": ("user", "user"), "user": ("user", "user"),
    "gpt": ("assistant", "assistant"), "assistant": ("assistant", "assistant"), "chatgpt": ("assistant", "assistant"),
    "bard": ("assistant", "assistant"), "bing": ("assistant", "assistant"), "model": ("assistant", "assistant"),
    "system": ("system", "system"),
    "function_call": ("assistant", "tool_call"), "observation": ("tool", "tool_result"),
    "tool": ("tool", "tool_result"), "function": ("tool", "tool_result"),
}


def looks_sharegpt(rec: Mapping[str, Any]) -> bool:
    """A record with a ``conversations`` list."""
    return isinstance(rec.get("conversations"), list)


def parse_sharegpt(rec: Any, src: Source, opts: Any) -> list[Request]:
    """One conversation → one Request per human turn (``format="sharegpt"``, ``api="chat"``).

    ``id``: ``<id>#<turn>`` (turns count human messages from 1; ``<file>:<line>`` stands for a
    missing ``id``); ``session``: the conversation id; ``arrival``: none (file order);
    ``model``: the record's ``model``, else ``--model``. Parts: the ``system`` and ``tools``
    fields, then ``conversations[i].value`` for every message up to and including the turn.

    Raises:
        BadRecord: for an unknown speaker, a non-string value, or a conversation without a
            human turn.
    """
    if not isinstance(rec, MAPPING):
        raise BadRecord("record is not a JSON object")
    convs = rec.get("conversations")
    if not isinstance(convs, list):
        raise BadRecord("'conversations' is missing or not a list")
    head: list[Part] = []
    tools = rec.get("tools")
    if tools not in (None, "", []):
        head.append(Part("tool", "tools", tools if isinstance(tools, str) else stable_json(tools)))
    system = rec.get("system")
    if isinstance(system, str) and system:
        head.append(Part("system", "system", system, "system"))
    msgs: list[Part] = []
    turns: list[int] = []
    for i, m in enumerate(convs):
        if not isinstance(m, MAPPING):
            raise BadRecord(f"conversations[{i}] is not an object")
        who = m.get("from")
        if who not in SPEAKERS:
            raise BadRecord(f"conversations[{i}].from {who!r} is not a ShareGPT speaker (human, gpt, system, ...)")
        value = m.get("value")
        if not isinstance(value, str):
            raise BadRecord(f"conversations[{i}].value is not a string")
        role, kind = SPEAKERS[who]
        msgs.append(Part(kind, f"conversations[{i}].value", value, role, i))
        if role == "user":
            turns.append(i)
    if not turns:
        raise BadRecord("conversation has no human turn")
    conv_id = str(rec["id"]) if rec.get("id") not in (None, "") else default_id(src)
    model = rec.get("model") or getattr(opts, "model", None)
    model = str(model) if model else None
    return [Request(id=f"{conv_id}#{n}", source=src, format="sharegpt", api="chat", provider=provider_for_model(model),
                    model=model, arrival=None, parts=tuple(head + msgs[:i + 1]), session=conv_id)
            for n, i in enumerate(turns, 1)]


class ShareGPTReader(Reader):
    """ShareGPT conversations (see the module docstring)."""

    name = "sharegpt"
    producer = "ShareGPT datasets (vLLM/SGLang benchmarks, LLaMA-Factory)"
    shapes = "{id, conversations: [{from, value}]}, one request per human turn"
    looks_for = "a conversations list"
    owns = ("conversations",)

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and looks_sharegpt(rec):
            return "a conversations list"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> list[Request]:
        return parse_sharegpt(rec, src, opts)
