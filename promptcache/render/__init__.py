"""Render a :class:`~promptcache.model.Request` into :class:`~promptcache.model.Segment` s in
the provider's prefix order, with its chat framing.

Two kinds of chat format:

- :class:`FramedFormat`: one segment per content part, framing from a small spec
  (OpenAI harmony, approximations for Anthropic and Gemini, whose formats are not public).
- :class:`TemplateFormat`: a Hugging Face Jinja chat template rendered whole and split at
  special tokens, which is exactly how the tokenizer splits it, so each piece tokenizes alone
  to the same ids as the full prompt.

The section order (where tools, system and cache-relevant parameters go) comes from the
provider file (``rules/providers/*.yaml``, key ``render``).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..model import Part, Request, Segment
from ..tips import PATCHES, PrefixTips
from ..tokenize.base import Tokenizer

SECTIONS = ("params", "tools", "system", "messages")
#: Rendered segments kept per chat format (the oldest half is dropped when full).
SEGMENT_CACHE = 20_000
_SPECIAL = re.compile(r"<\|[^|<>\s]+\|>")


@dataclass(frozen=True)
class Layout:
    """Where each section goes in the rendered prompt (from the provider file).

    Attributes:
        order: permutation of ``params``, ``tools``, ``system``, ``messages``.
        params: request parameters rendered in the ``params`` section (the ones the provider
            says change the prefix); others are ignored by rendering.
        framing: name of a :data:`FRAMINGS` entry.
    """

    order: tuple[str, ...] = ("params", "system", "tools", "messages")
    params: tuple[str, ...] = ()
    framing: str = "harmony"


@dataclass(frozen=True)
class Framing:
    """Chat framing as text; ``<|name|>`` pieces become special ids where the tokenizer has them.

    Attributes:
        header: text before a message, with ``{role}``.
        footer: text after a message.
        generation: text that primes the reply at the end of the prompt.
        tools_role: role shown on the tools block's header (``None``: tools unframed).
        note: where the format comes from.
    """

    header: str
    footer: str
    generation: str
    tools_role: str | None = None
    roles: dict[str, str] = field(default_factory=dict)
    note: str = ""


#: Built-in framings. Only harmony is published; the others are documented approximations.
FRAMINGS: dict[str, Framing] = {
    # https://cookbook.openai.com/articles/openai-harmony (gpt-oss); hosted models add a hidden
    # system message that the API does not count, so this is what the count sees.
    "harmony": Framing("<|start|>{role}<|message|>", "<|end|>", "<|start|>assistant", tools_role="developer",
                       note="OpenAI harmony message framing"),
    # Claude's framing is not public; its legacy text format stands in (a few tokens per turn).
    "claude-approx": Framing("\n\n{role}: ", "", "\n\nAssistant:",
                             roles={"user": "Human", "assistant": "Assistant", "system": "System"},
                             note="approximation: Claude legacy turn markers"),
    # Gemini's framing is not public; the open Gemma turn markers stand in.
    "gemini-approx": Framing("<start_of_turn>{role}\n", "<end_of_turn>\n", "<start_of_turn>model\n",
                             roles={"assistant": "model"}, note="approximation: Gemma turn markers"),
}


def _params_text(req: Request, keys: Sequence[str]) -> str | None:
    got = {k: req.params[k] for k in keys if k in req.params}
    if not got:
        return None
    return json.dumps(got, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sections(req: Request, layout: Layout) -> list[tuple[str, list[Part]]]:
    """Split a request's parts into the layout's sections, in layout order.

    ``system`` holds the system field (Anthropic) or the leading system/developer messages
    (OpenAI); ``messages`` holds the rest; ``params`` holds one synthetic ``param`` part.
    """
    tools = [p for p in req.parts if p.kind == "tool"]
    rest = [p for p in req.parts if p.kind != "tool"]
    system: list[Part] = []
    i = 0
    while i < len(rest) and rest[i].kind == "system":
        system.append(rest[i])
        i += 1
    messages = rest[i:]
    ptext = _params_text(req, layout.params)
    params = [Part("param", "<params>", ptext, "system")] if ptext is not None else []
    by = {"params": params, "tools": tools, "system": system, "messages": messages}
    return [(s, by[s]) for s in layout.order if by[s]]


class FramedFormat:
    """One segment per part, framed by a :class:`Framing` spec."""

    #: How many parts shorter than a request a tip it extends may be.
    PROBES = 24
    #: Tips kept (the oldest half is dropped when full).
    TIPS = 1024  # as prepare.TIPS: the hit rate of the benchmark log stops rising at 1024

    def __init__(self, tokenizer: Tokenizer, framing: Framing, layout: Layout):
        self.tok = tokenizer
        self.framing = framing
        self.layout = layout
        self._cache: dict[str, tuple[int, ...]] = {}
        self._headers: dict[str, tuple[int, ...]] = {}
        # Segments already built, by part identity and framing (parts repeat as the same objects,
        # see ingest.common.PartMemo); the entry keeps its part alive so an id is never reused.
        self._segs: dict[tuple[int, tuple[int, ...], tuple[int, ...]], tuple[Part, Segment]] = {}
        # Requests rendered last ("tips"): a request whose parts extend a tip's (the next turn of
        # an agent session) renders only the parts it adds; one that differs from a tip in a few
        # parts rebuilds only theirs. Value: (rendered params, segments, parts).
        self._tips: PrefixTips[tuple[str | None, list[Segment], Sequence[Part]]] = PrefixTips(self.PROBES, self.TIPS)
        self._generation = Segment("<generation-prompt>", "frame", "", self.ids(framing.generation))
        self._appends = bool(layout.order) and layout.order[-1] == "messages"

    def _segment(self, p: Part, head: tuple[int, ...], tail: tuple[int, ...], framed: bool) -> Segment:
        key = (id(p), head, tail)
        got = self._segs.get(key)
        if got is not None and got[0] is p:
            return got[1]
        seg = Segment(p.path, p.kind, p.text, head, tail, p.breakpoint, p.role if framed else None,
                      p.message if framed else None)
        if len(self._segs) >= SEGMENT_CACHE:
            for k in list(itertools.islice(self._segs, SEGMENT_CACHE // 2)):
                del self._segs[k]
        self._segs[key] = (p, seg)
        return seg

    def ids(self, text: str) -> tuple[int, ...]:
        """Token ids of a framing text, special pieces as their ids (memoized)."""
        got = self._cache.get(text)
        if got is None:
            out: list[int] = []
            pos = 0
            for m in _SPECIAL.finditer(text):
                sid = self.tok.special_id(m.group())
                if sid is None:
                    continue
                if m.start() > pos:
                    out += self.tok.encode_batch([text[pos:m.start()]])[0]
                out.append(sid)
                pos = m.end()
            if pos < len(text):
                out += self.tok.encode_batch([text[pos:]])[0]
            got = self._cache[text] = tuple(out)
        return got

    def _header(self, role: str) -> tuple[int, ...]:
        got = self._headers.get(role)
        if got is None:
            got = self._headers[role] = self.ids(self.framing.header.format(role=self.framing.roles.get(role, role)))
        return got

    def render(self, req: Request) -> list[Segment]:
        """Segments of one request in prefix order, ending with the generation prompt.

        A request whose parts extend those of a request rendered before (same parts, same
        rendered parameters, and only messages added) reuses that request's segments and
        renders only what it adds; the result is the same as a whole render.
        """
        parts = req.parts
        if req.rendered:  # an engine's log: the prompt as the engine received it, framing included
            return [self._segment(p, (), (), True) for p in parts]
        n = len(parts)
        ptext = _params_text(req, self.layout.params) if self.layout.params else None
        tips = self._tips
        segs: list[Segment] | None = None
        found = tips.find(parts, accept=lambda t: t[0] == ptext) if self._appends and n else None
        tip_segs: list[Segment] | None = None
        if found is not None:
            j, (_, tip_segs, _) = found
            if j == n:
                return tip_segs + [self._generation]
        elif self._appends and n:
            tip_segs, j = self._patched(parts, ptext)
        if tip_segs is not None and j < n:
            added = parts[j:]
            first = added[0]
            # the added parts must all land at the end, each message under its own header
            if not (any(p.kind == "tool" for p in added) or (first.message is not None and first.message == parts[j - 1].message)
                    or (first.kind == "system" and all(p.kind in ("tool", "system") for p in parts[:j]))):
                segs = tip_segs + self._messages(added)
        elif tip_segs is not None:
            segs = tip_segs
        if segs is not None:
            tips.remove(parts[:j])  # the session moved on: this request is its tip now
        else:
            segs = self._whole(req)
        if n:
            tips.add(parts, (ptext, segs, parts))
        return segs + [self._generation]

    def _patched(self, parts: Sequence[Part], ptext: str | None) -> tuple[list[Segment] | None, int]:
        """``(segments, length)`` of the longest tip that ``parts`` lead but for a few parts
        (:data:`PATCHES`), with the segments of those parts rebuilt from the new ones; ``(None,
        0)`` when there is none, or when a changed part would be framed otherwise (another
        path, kind, role or message).

        A session whose system prompt starts with the current time changes that one part on
        every turn: its segments are the tip's with that one replaced, as a whole render gives.
        """
        got = self._tips.find_patched(parts, len(parts), PATCHES)
        if got is None:
            return None, 0
        j, (tip_ptext, tip_segs, tip_parts), diff = got
        if tip_ptext != ptext:
            return None, 0
        segs = list(tip_segs)
        for i in diff:
            old, new = tip_parts[i], parts[i]
            if (old.kind, old.path, old.role, old.message) != (new.kind, new.path, new.role, new.message):
                return None, 0
            k = next((k for k, sg in enumerate(tip_segs) if sg.text is old.text and sg.path == old.path), None)
            if k is None:
                return None, 0
            sg = tip_segs[k]
            segs[k] = self._segment(new, sg.head, sg.tail, sg.role is not None or sg.message is not None)
        return segs, j

    def _whole(self, req: Request) -> list[Segment]:
        """Segments of every section of a request, without the generation prompt."""
        f = self.framing
        footer = self.ids(f.footer) if f.footer else ()
        segs: list[Segment] = []
        for section, parts in sections(req, self.layout):
            if section == "tools":
                head = self._header(f.tools_role) if f.tools_role else ()
                last = len(parts) - 1
                for k, p in enumerate(parts):
                    segs.append(self._segment(p, head if k == 0 else (), footer if (k == last and f.tools_role) else (), False))
                continue
            segs += self._messages(parts)
        return segs

    def _messages(self, parts: Sequence[Part]) -> list[Segment]:
        """Segments of a run of system or message parts: consecutive parts of one message (or
        the system field) go under one header and one footer."""
        f = self.framing
        footer = self.ids(f.footer) if f.footer else ()
        groups: list[list[Part]] = []
        for p in parts:
            key = (p.message, p.role)
            if groups and (groups[-1][0].message, groups[-1][0].role) == key and p.message is not None:
                groups[-1].append(p)
            else:
                groups.append([p])
        segs: list[Segment] = []
        for g in groups:
            head = self._header(g[0].role or "system")
            last = len(g) - 1
            for k, p in enumerate(g):
                segs.append(self._segment(p, head if k == 0 else (), footer if k == last else (), True))
        return segs


class TemplateFormat:
    """A Hugging Face Jinja chat template, rendered whole and split at special tokens."""

    def __init__(self, tokenizer: Any, layout: Layout):
        from jinja2.sandbox import ImmutableSandboxedEnvironment
        from jinja2.exceptions import TemplateError

        self.tok = tokenizer
        self.layout = layout
        tmpl = getattr(tokenizer, "chat_template", None)
        if not tmpl:
            from ..errors import ConfigError

            raise ConfigError(f"tokenizer {tokenizer.name} has no chat template")

        def raise_exception(msg: str) -> None:
            raise TemplateError(msg)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = lambda x, indent=None, ensure_ascii=False, separators=None, sort_keys=False: json.dumps(
            x, indent=indent, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys)
        env.globals["raise_exception"] = raise_exception
        self.template = env.from_string(tmpl)
        specials = sorted(tokenizer.special_tokens, key=len, reverse=True)
        self._split = re.compile("(" + "|".join(re.escape(s) for s in specials) + ")") if specials else None

    def messages(self, req: Request) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None, list[Part]]:
        """(HF messages, tools, parts in rendered order) of a request."""
        msgs: list[dict[str, Any]] = []
        order: list[Part] = []
        tools: list[dict[str, Any]] = []
        last_key: tuple[Any, Any] | None = None
        for section, parts in sections(req, self.layout):
            if section == "tools":
                for p in parts:
                    try:
                        tools.append(json.loads(p.text))
                    except json.JSONDecodeError:
                        tools.append({"description": p.text})
                continue
            for p in parts:
                role = {"developer": "system", "function": "tool"}.get(p.role or "system", p.role or "system")
                key = (p.message, role, section)
                if p.kind == "tool_call":
                    try:
                        call = json.loads(p.text)
                    except json.JSONDecodeError:
                        call = {"name": "tool", "arguments": p.text}
                    if last_key != key:
                        msgs.append({"role": "assistant", "content": "", "tool_calls": []})
                    msgs[-1].setdefault("tool_calls", []).append({"type": "function", "function": call})
                elif last_key == key and p.message is not None and "tool_calls" not in msgs[-1]:
                    msgs[-1]["content"] += "\n" + p.text
                    order.append(p)
                else:
                    msgs.append({"role": role, "content": p.text})
                    order.append(p)
                last_key = key
        return msgs, (tools or None), order

    def render_text(self, req: Request) -> tuple[str, list[Part]]:
        """The full prompt text and the parts whose text it holds, in order."""
        msgs, tools, order = self.messages(req)
        text = self.template.render(messages=msgs, tools=tools, add_generation_prompt=True,
                                    bos_token=self.tok.bos_token or "", eos_token=self.tok.eos_token or "")
        return text, order

    def render(self, req: Request) -> list[Segment]:
        """Segments: the pieces between special tokens, special tokens as head ids (a prompt
        logged as the engine received it, ``req.rendered``, is split as logged, not templated)."""
        text, parts = ("".join(p.text for p in req.parts), list(req.parts)) if req.rendered else self.render_text(req)
        # locate each part's text, in order
        spans: list[tuple[str, str, int, int]] = []
        pos = 0
        for p in parts:
            if not p.text:
                continue
            at = text.find(p.text, pos)
            if at < 0:
                continue
            spans.append((p.path, p.kind, at, at + len(p.text)))
            pos = at + len(p.text)
        pieces = self._split.split(text) if self._split else [text]
        segs: list[Segment] = []
        head: list[int] = []
        offset = 0
        for k, piece in enumerate(pieces):
            if k % 2 == 1:  # a special token
                head.append(self.tok.special_id(piece))
                offset += len(piece)
                continue
            if not piece and k != len(pieces) - 1:
                offset += len(piece)
                continue
            start, end = offset, offset + len(piece)
            inside = [(path, kind, max(s, start) - start, min(e, end) - start) for path, kind, s, e in spans if s < end and e > start]
            path, kind = (inside[0][0], inside[0][1]) if inside else ("<template>", "frame")
            segs.append(Segment(path, kind, piece, tuple(head), (), None,
                                spans=tuple((p, s, e) for p, _, s, e in inside)))
            head = []
            offset = end
        if head:
            segs.append(Segment("<template>", "frame", "", tuple(head)))
        return segs


def make_format(tokenizer: Tokenizer, layout: Layout) -> FramedFormat | TemplateFormat:
    """The chat format for a tokenizer: its own chat template when it has one, else the
    layout's framing.

    Raises:
        ConfigError: for an unknown framing name.
    """
    if getattr(tokenizer, "chat_template", None):
        return TemplateFormat(tokenizer, layout)
    framing = FRAMINGS.get(layout.framing)
    if framing is None:
        from ..errors import ConfigError

        raise ConfigError(f"unknown framing {layout.framing!r}; available: {', '.join(FRAMINGS)}")
    return FramedFormat(tokenizer, framing, layout)
