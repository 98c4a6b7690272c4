"""YAML and JSON files holding prompts: request bodies (OpenAI Chat Completions and Responses,
Anthropic Messages), bare message lists (promptfoo chat prompt files), and promptfoo configs
(``prompts:`` entries that are inline templates or message lists).

Strings are templates (Jinja/Nunjucks or Mustache ``{{ }}``). Positions come from the YAML
composer's node marks (JSON is parsed the same way; a placeholder is located by finding its raw
text inside the scalar's source). Files of any other shape hold no prompt and give nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..model import Doc, Issue, Parsed, Part, Piece, Span
from .base import LineIndex, Locator, Occurrences, line_removal, next_content_line, parse_directive
from .jsonnodes import JSONError, compose_json
from .scalars import source_offsets
from .templating import Scan, scan_jinja, scan_string
from .semantic_kernel import READERS as SEMANTIC_KERNEL
from .workflow import READERS as WORKFLOWS

_YAML_COMMENT = re.compile(r"(?:^|[ \t])#([^\n]*)", re.M)


def compose_yaml(text: str) -> Node | None:
    """A YAML text's node tree: with libyaml's parser where PyYAML has it (the same nodes and
    marks, many times faster), else, or for input nested past libyaml's 1,000 flow levels, with
    PyYAML's own (slow on deep flow nesting, but without a limit).

    Raises:
        yaml.YAMLError: where the text stops being YAML.
    """
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return yaml.compose(text, Loader=fast)
        except yaml.YAMLError as e:
            if "maximum nesting depth" not in str(e):
                raise
    return yaml.compose(text, Loader=yaml.SafeLoader)


class _Ctx:
    def __init__(self, path: str, text: str, parsed: Parsed):
        self.path = path
        self.text = text
        self.index = LineIndex(text)
        self.parsed = parsed

    def span(self, node: Node) -> Span:
        return self.index.span(self.path, node.start_mark.index, node.end_mark.index)

    def start(self, node: Node) -> Span:
        return self.index.span(self.path, node.start_mark.index, node.start_mark.index + 1)

    def string_pieces(self, node: ScalarNode, scanner: Callable[[str, Locator], Scan] | None = None,
                      value: str | None = None) -> list[Piece]:
        """Template pieces of a string scalar (``value`` in place of its text, for a prefix a
        dialect strips), located in the file; ``scanner`` picks the template syntax (default:
        Jinja when the text has statements, else Mustache)."""
        value = node.value if value is None else value
        src_a, src_b = node.start_mark.index, node.end_mark.index
        src = self.text[src_a:src_b]
        occurrences = Occurrences(src)
        offs = source_offsets(self.text, node) if node.value.endswith(value) else None
        shift = len(node.value) - len(value)

        def locate(s: int, e: int, raw: str) -> Span:
            if offs is not None and 0 <= s < e <= len(value):  # where the characters are in the file
                last = offs[shift + e - 1]
                end = last + 1 if self.text[last:last + 1] != "\\" else offs[shift + e]
                return self.index.span(self.path, offs[shift + s], end)
            if raw and "{" in raw:
                i = occurrences.find(raw)
                if i >= 0:
                    return self.index.span(self.path, src_a + i, src_a + i + len(raw))
                esc = json.dumps(raw, ensure_ascii=False)[1:-1]  # as a JSON string writes it
                i = occurrences.find(esc) if esc != raw else -1
                if i >= 0:
                    return self.index.span(self.path, src_a + i, src_a + i + len(esc))
            return self.index.span(self.path, src_a, src_a + 1)

        scan = (scanner or scan_string)(value, locate)
        if scan.error is not None:
            off, msg = scan.error
            self.parsed.issues.append(Issue("template-syntax", self.start(node), msg, {"reason": msg}))
        return scan.pieces


def _get(node: MappingNode, key: str) -> tuple[Node, Node] | None:
    """The last ``key: value`` pair of a mapping (a duplicated key: the last wins, as JSON
    parsers and PyYAML's loader take it)."""
    for k, v in reversed(node.value):
        if isinstance(k, ScalarNode) and k.value == key:
            return k, v
    return None


def _plain(node: Node) -> Any:
    """The Python value of a node (for tool definitions)."""
    if isinstance(node, ScalarNode):
        return yaml.safe_load(yaml.serialize(node)) if node.tag != "tag:yaml.org,2002:str" else node.value
    if isinstance(node, SequenceNode):
        return [_plain(x) for x in node.value]
    if isinstance(node, MappingNode):
        return {(_plain(k) if not isinstance(k, ScalarNode) else k.value): _plain(v) for k, v in node.value}
    return None


def _is_str(node: Node | None) -> bool:
    return isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:str"


def _content_parts(ctx: _Ctx, node: Node, role: str, name: str) -> list[Part]:
    """Parts of a message's ``content`` (a string or a list of blocks)."""
    if _is_str(node):
        return [Part(role, name, ctx.string_pieces(node), ctx.start(node))]  # type: ignore[arg-type]
    out = []
    if isinstance(node, SequenceNode):
        for k, blk in enumerate(node.value):
            bname = f"{name}[{k}]"
            if _is_str(blk):
                out.append(Part(role, bname, ctx.string_pieces(blk), ctx.start(blk)))  # type: ignore[arg-type]
            elif isinstance(blk, MappingNode):
                txt = _get(blk, "text")
                bp = _get(blk, "cache_control")
                if txt and _is_str(txt[1]):
                    pieces = ctx.string_pieces(txt[1])  # type: ignore[arg-type]
                else:
                    pieces = [Piece("opaque", span=ctx.start(blk))]
                out.append(Part(role, bname, pieces, ctx.start(blk), ctx.start(bp[0]) if bp else None))
    return out


def _tools(ctx: _Ctx, node: Node) -> list[Part]:
    out = []
    if isinstance(node, SequenceNode):
        for k, t in enumerate(node.value):
            bp = _get(t, "cache_control") if isinstance(t, MappingNode) else None
            val = _plain(t)
            if isinstance(val, dict):
                val.pop("cache_control", None)
            out.append(Part("tools", f"tools[{k}]", [Piece("static", json.dumps(val, ensure_ascii=False))],
                            ctx.start(t), ctx.start(bp[0]) if bp else None))
    return out


def _messages(ctx: _Ctx, node: SequenceNode, key: str = "messages") -> list[Part]:
    out: list[Part] = []
    for k, msg in enumerate(node.value):
        if not isinstance(msg, MappingNode):
            continue
        role = _get(msg, "role")
        content = _get(msg, "content")
        r = role[1].value if role and isinstance(role[1], ScalarNode) else "user"
        if content is None:
            continue
        parts = _content_parts(ctx, content[1], r, f"{key}[{k}].content")
        bp = _get(msg, "cache_control")
        if bp and parts:
            parts[-1].breakpoint = ctx.start(bp[0])
        out += parts
    return out


def _is_messages(node: Node) -> bool:
    return isinstance(node, SequenceNode) and bool(node.value) and all(
        isinstance(m, MappingNode) and _get(m, "role") is not None for m in node.value)


def _body(ctx: _Ctx, node: MappingNode, name: str) -> Doc | None:
    """A request body → one doc in the provider's prefix order."""
    model_n = _get(node, "model")
    model = model_n[1].value if model_n and isinstance(model_n[1], ScalarNode) else None
    system = _get(node, "system")
    instructions = _get(node, "instructions")
    tools = _get(node, "tools")
    messages = _get(node, "messages") or _get(node, "input")
    if not (system or instructions or (messages and (_is_messages(messages[1]) or _is_str(messages[1])))):
        return None
    parts: list[Part] = []
    provider = None
    if system is not None:  # Anthropic: tools → system → messages
        provider = "anthropic"
        parts += _tools(ctx, tools[1]) if tools else []
        parts += _content_parts(ctx, system[1], "system", "system")
        if messages and isinstance(messages[1], SequenceNode):
            parts += _messages(ctx, messages[1], messages[0].value)
    else:  # OpenAI: instructions / leading system messages → tools → the rest
        msgs: list[Part] = []
        if instructions is not None:
            msgs += _content_parts(ctx, instructions[1], "system", "instructions")
        if messages is not None:
            if _is_str(messages[1]):
                msgs += _content_parts(ctx, messages[1], "user", "input")
            elif isinstance(messages[1], SequenceNode):
                msgs += _messages(ctx, messages[1], messages[0].value)
        lead = 0
        while lead < len(msgs) and msgs[lead].role in ("system", "developer"):
            lead += 1
        parts = msgs[:lead] + (_tools(ctx, tools[1]) if tools else []) + msgs[lead:]
    auto = _get(node, "cache_control")
    return Doc(ctx.path, name, parts, ctx.start(node), model=model, provider=provider,
               automatic_breakpoint=ctx.start(auto[0]) if auto else None)


def _promptfoo(ctx: _Ctx, node: SequenceNode) -> list[Doc]:
    docs = []
    for k, item in enumerate(node.value):
        name = f"prompts[{k}]"
        if _is_str(item):
            if item.value.startswith("file://"):  # linted as its own file
                continue
            docs.append(Doc(ctx.path, name, [Part("template", name, ctx.string_pieces(item), ctx.start(item))],  # type: ignore[arg-type]
                            ctx.start(item)))
        elif isinstance(item, MappingNode):
            raw = _get(item, "raw") or _get(item, "content")
            label = _get(item, "label") or _get(item, "id")
            nm = label[1].value if label and isinstance(label[1], ScalarNode) else name
            if raw and _is_str(raw[1]) and not raw[1].value.startswith("file://"):
                docs.append(Doc(ctx.path, nm, [Part("template", nm, ctx.string_pieces(raw[1]), ctx.start(raw[1]))],  # type: ignore[arg-type]
                                ctx.start(item)))
            msgs = _get(item, "messages")
            if msgs and _is_messages(msgs[1]):
                docs.append(Doc(ctx.path, nm, _messages(ctx, msgs[1]), ctx.start(item)))  # type: ignore[arg-type]
    return docs


class _MappedIndex(LineIndex):
    """Offsets in a document held in a string value → the file's lines and columns, through
    the value's :func:`.scalars.source_offsets` (every character where it is written)."""

    def __init__(self, text: str, outer: LineIndex, offs: list[int]):
        super().__init__(text)
        self.outer = outer
        self.offs = offs

    def _at(self, offset: int) -> int:
        return self.offs[min(max(offset, 0), len(self.offs) - 1)]

    def pos(self, offset: int) -> tuple[int, int]:
        return self.outer.pos(self._at(offset))

    def span(self, path: str, start: int, end: int) -> Span:
        if end <= start:
            return self.outer.span(path, self._at(start), self._at(start))
        last = self._at(end - 1)
        tail = last + 1 if self.outer.text[last:last + 1] != "\\" else self._at(end)
        return self.outer.span(path, self._at(start), max(tail, self._at(start)))


#: Keys that wrap a workflow or app in what the tools' APIs return: n8n's template API
#: (``{"workflow": {"name": ..., "workflow": {"nodes", "connections"}}}``), Dify's export API
#: (``{"data": "<the app's DSL as a YAML string>"}``).
_WRAPPERS = ("workflow", "data", "template")


def _recognised(root: Node) -> bool:
    return any(recognise(root) for _, recognise, _ in (*WORKFLOWS, *SEMANTIC_KERNEL))


def unwrap(ctx: _Ctx, root: Node, depth: int = 0) -> tuple[_Ctx, Node]:
    """The workflow or app a wrapper holds (:data:`_WRAPPERS`), with the context that places
    its values in the file; ``(ctx, root)`` itself when it is no wrapper. A document held in a
    string (Dify's ``data``) is parsed as YAML, and its positions mapped through the string's
    escapes to where its characters are in the file."""
    if depth > 3 or not isinstance(root, MappingNode) or _recognised(root) or _body_like(root):
        return ctx, root
    for key in _WRAPPERS:
        got = _get(root, key)
        if got is None:
            continue
        inner = got[1]
        if isinstance(inner, MappingNode):
            c2, r2 = unwrap(ctx, inner, depth + 1)
            if _recognised(r2):
                return c2, r2
        elif _is_str(inner) and "\n" in inner.value and ":" in inner.value:  # type: ignore[attr-defined]
            offs = source_offsets(ctx.text, inner)  # type: ignore[arg-type]
            try:
                doc = compose_yaml(inner.value)  # type: ignore[attr-defined]
            except yaml.YAMLError:
                continue
            if doc is None or not _recognised(doc):
                continue
            sub = _Ctx(ctx.path, inner.value, ctx.parsed)  # type: ignore[attr-defined]
            if offs is not None:
                sub.index = _MappedIndex(inner.value, ctx.index, offs)  # type: ignore[attr-defined]
            else:
                start = inner.start_mark.index
                sub.index = _MappedIndex(inner.value, ctx.index, [start] * (len(inner.value) + 1))  # type: ignore[attr-defined]
                ctx.parsed.notes.append(f"the document in `{key}` is placed at the start of its string "
                                        "(its escapes could not be mapped to the file)")
            return sub, doc
    return ctx, root


def _body_like(root: MappingNode) -> bool:
    return any(_get(root, k) is not None for k in ("messages", "system", "instructions", "input", "prompts"))


def parse_data(path: str, text: str, language: str) -> Parsed:
    """A YAML or JSON file → the prompts it holds (none when it holds no prompt).

    Args:
        path: the file as reported.
        text: its content.
        language: ``yaml`` or ``json`` (JSON has no comments, so no inline directives).
    """
    parsed = Parsed(path, language, comments=language == "yaml")
    ctx = _Ctx(path, text, parsed)
    if language == "json":
        try:
            root = compose_json(text)
        except JSONError as e:
            _not_json(parsed, ctx, e)
            return parsed
    else:
        try:
            root = compose_yaml(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            parsed.issues.append(Issue("template-syntax", Span.point(path, (mark.line + 1) if mark else 1,
                                                                      (mark.column + 1) if mark else 1), "yaml",
                                       {"reason": f"not valid YAML: {getattr(e, 'problem', None) or e}"}))
            return parsed
    if root is None:
        return parsed
    outer = ctx
    ctx, root = unwrap(ctx, root)
    reader = next((read for _, recognise, read in (*WORKFLOWS, *SEMANTIC_KERNEL) if recognise(root)), None)
    if reader is not None:
        parsed.docs += reader(ctx, root)
    elif _is_messages(root):
        parsed.docs.append(Doc(path, "messages", _messages(ctx, root), ctx.start(root)))  # type: ignore[arg-type]
    elif isinstance(root, MappingNode):
        doc = _body(ctx, root, "body")
        if doc is not None:
            parsed.docs.append(doc)
        else:
            prompts = _get(root, "prompts")
            if prompts and isinstance(prompts[1], SequenceNode):
                parsed.docs += _promptfoo(ctx, prompts[1])
    if language == "yaml" and parsed.docs:
        _yaml_directives(outer)
    return parsed


#: Template tags in a file that is not JSON: promptfoo renders ``.json`` prompt files with
#: Nunjucks before parsing them.
_TEMPLATE_TAG = re.compile(r"\{\{|\{%")


def _not_json(parsed: Parsed, ctx: _Ctx, e: JSONError) -> None:
    """A ``.json`` file that is not JSON. Lint cannot tell a broken request body from a file
    that was never meant to be JSON, so neither is a finding (checking JSON syntax is not lint's
    job): a file with template tags is a template that renders JSON (promptfoo's Nunjucks chat
    prompts) and is linted as one, whole; any other, or one whose template does not parse
    either, is skipped with a note that names the place it stops being JSON."""
    where = f"line {e.lineno}, column {e.colno}"
    if _TEMPLATE_TAG.search(ctx.text):
        scan = scan_jinja(ctx.text, ctx.index.locator(ctx.path), keep_trailing_newline=True)
        if scan.error is None:
            start = ctx.index.span(ctx.path, 0, 0)
            parsed.docs.append(Doc(ctx.path, "template", [Part("template", "template", scan.pieces, start)], start))
            return
        off, msg = scan.error
        line, col = ctx.index.pos(off)
        parsed.notes.append(f"not JSON ({e.msg} at {where}), and not a Jinja/Nunjucks template lint can read "
                            f"({msg} at line {line}, column {col}); skipped")
        return
    parsed.notes.append(f"not JSON ({e.msg} at {where}); skipped")


def _yaml_directives(ctx: _Ctx) -> None:
    """Directives in YAML comments (``# promptcache: ignore[...]``), found with PyYAML's scanner
    so that ``#`` inside strings is not taken for a comment."""
    index, path = ctx.index, ctx.path
    for m in _YAML_COMMENT.finditer(ctx.text):
        if "promptcache" not in m.group(1):
            continue
        s = m.start(1) - 1
        # a '#' inside a quoted or block scalar is text, not a comment
        if _inside_scalar(ctx, s):
            continue
        e = m.end(1)
        span = index.span(path, s, e)
        alone = not index.line_text(span.line)[:span.col - 1].strip()
        got = parse_directive(m.group(1), span, alone=alone, next_line=next_content_line(index, span.line),
                              removal=line_removal(index, path, s, e))
        if got is not None:
            (ctx.parsed.issues if isinstance(got, Issue) else ctx.parsed.directives).append(got)  # type: ignore[arg-type]


def _inside_scalar(ctx: _Ctx, offset: int) -> bool:
    try:
        for tok in yaml.scan(ctx.text, Loader=yaml.SafeLoader):
            if isinstance(tok, yaml.ScalarToken) and tok.start_mark.index <= offset < tok.end_mark.index:
                return True
    except yaml.YAMLError:
        return False
    return False
