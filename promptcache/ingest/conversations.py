"""Chat-log datasets with a ``conversation`` list: LMSYS-Chat-1M and WildChat-1M, expanded into
one request per user turn (the turn with everything before it, as a chat client re-sends it).

Shapes (dataset cards, checked 2026-12-01): LMSYS-Chat-1M ``{conversation_id, model,
conversation: [{content, role}], turn, language, openai_moderation, redacted}``
(https://huggingface.co/datasets/lmsys/lmsys-chat-1m); WildChat-1M ``{conversation_hash,
model, timestamp, conversation: [{content, role, timestamp, turn_identifier, ...}], turn,
...}``, each user message with its own time (https://huggingface.co/datasets/allenai/WildChat-1M).
"""

from __future__ import annotations

from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Source
from . import openai as _openai
from .bodies import default_id
from .common import MAPPING, provider_for_model
from .fields import parse_time
from .reader import Reader

ID_KEYS = ("conversation_id", "conversation_hash", "id")


class ConversationReader(Reader):
    """``conversation`` records (LMSYS-Chat-1M, WildChat-1M): turn *k* is the *k*-th user
    message with everything before it. ``id``: ``<conversation id>#<turn>``; ``session``: the
    conversation id; ``arrival``: the user message's ``timestamp`` (WildChat), else the
    record's for the first turn, else none; ``model``: ``model``."""

    name = "conversation"
    producer = "LMSYS-Chat-1M, WildChat-1M"
    shapes = "{conversation_id | conversation_hash, model, conversation: [{role, content}]}, one request per user turn"
    looks_for = "a conversation list of {role, content}"
    owns = ("conversation",)

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or not self.alone(rec):
            return None
        c = rec.get("conversation")
        if isinstance(c, list) and c and isinstance(c[0], MAPPING) and "role" in c[0] and "content" in c[0]:
            return "a conversation list of role/content messages"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> list[Request]:
        conv = rec.get("conversation")
        if not isinstance(conv, list):
            raise BadRecord("'conversation' is not a list")
        cid = next((rec[k] for k in ID_KEYS if isinstance(rec.get(k), (str, int)) and rec.get(k) != ""), None)
        cid = str(cid) if cid is not None else default_id(src)
        model = rec.get("model") or getattr(opts, "model", None)
        model = str(model) if model else None
        parts: list[Part] = []
        out: list[Request] = []
        first_time = rec.get("timestamp")
        for i, m in enumerate(conv):
            if not isinstance(m, MAPPING) or not isinstance(m.get("role"), str):
                raise BadRecord(f"conversation[{i}] has no role")
            content = m.get("content")
            if not isinstance(content, str):
                raise BadRecord(f"conversation[{i}].content is not a string")
            role = m["role"]
            parts.append(Part(_openai.ROLE_KIND.get(role, "user"), f"conversation[{i}].content", content, role, i))
            if role == "user":
                t = m.get("timestamp")
                if t in (None, "") and not out:
                    t = first_time
                out.append(Request(id=f"{cid}#{len(out) + 1}", source=src, format="conversation", api="chat",
                                   provider=provider_for_model(model), model=model,
                                   arrival=parse_time(t) if t not in (None, "") else None, parts=tuple(parts),
                                   session=cid))
        if not out:
            raise BadRecord("conversation has no user turn")
        return out
