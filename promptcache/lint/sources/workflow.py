"""Prompts inside workflow exports held in JSON or YAML: n8n workflows, Dify apps (DSL), Flowise
chatflows and agentflows. (Semantic Kernel prompt files are :mod:`.semantic_kernel`.)

| tool | recognised by | prompts | placeholders |
|---|---|---|---|
| n8n | ``nodes`` with ``type`` ``n8n-nodes-*`` / ``@n8n/*`` and ``connections`` | per AI node: ``options.systemMessage``, ``messages.messageValues[]``, ``messages.values[]``, ``text`` / ``prompt`` | a parameter starting with ``=`` is an expression: ``{{ $now }}``, ``{{ $json.x }}``, ``{{ $('Node').item.json.x }}`` |
| Dify | ``app.mode`` with ``workflow.graph.nodes`` or ``model_config`` | ``llm`` nodes' ``prompt_template`` (chat: a list of ``{role, text}``; completion: ``{text}``), ``instruction`` of classifier, extractor and agent nodes; ``model_config.pre_prompt`` and ``chat_prompt_config`` | ``{{#node.var#}}``, ``{{#sys.query#}}``, ``{{#context#}}``, ``{{var}}``; Jinja for ``edition_type: jinja2`` |
| Flowise | ``nodes`` whose ``data`` has ``inputs``, and ``edges`` | per node: ``systemMessagePrompt``, ``humanMessagePrompt``, ``template``, ``systemMessage``, ``prefix``, ``instructions``, agentflow ``agentMessages`` / ``llmMessages`` | ``{var}``, ``{{question}}``, ``{{$flow.sessionId}}``, ``{{$vars.x}}`` |

Nothing is run: expressions are read as text, and their names and calls classified.
"""

from __future__ import annotations

import re
from typing import Callable

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..model import Doc, Part, Piece
from .base import Locator
from .templating import Scan, scan_jinja, scan_placeholders

_N8N_TYPE = re.compile(r"^(?:n8n-nodes-|@n8n/)")
#: n8n node types that send a prompt to a model.
N8N_AI = re.compile(r"(?i)langchain|openai|anthropic|gemini|mistral|ollama|groq|perplexity")
_N8N_SYSTEM_KEYS = ("systemMessage", "system", "systemPrompt", "instructions")
_N8N_USER_KEYS = ("text", "prompt", "message", "userMessage", "chatInput")
_N8N_ROLE = {"SystemMessagePromptTemplate": "system", "AIMessagePromptTemplate": "assistant",
             "HumanMessagePromptTemplate": "user", "system": "system", "assistant": "assistant", "user": "user"}
_FLOWISE_KEYS = (("systemMessagePrompt", "system"), ("systemMessage", "system"), ("instructions", "system"),
                 ("prefix", "system"), ("template", "template"), ("humanMessagePrompt", "user"))


def _get(node: Node | None, key: str) -> Node | None:
    """The value of ``key`` in a mapping node (the last, when the key is duplicated, as JSON
    parsers take it), else ``None``."""
    if not isinstance(node, MappingNode):
        return None
    for k, v in reversed(node.value):
        if isinstance(k, ScalarNode) and k.value == key:
            return v
    return None


def _str(node: Node | None) -> str | None:
    if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:str":
        return node.value
    return None


def _path(node: Node | None, *keys: str) -> Node | None:
    for k in keys:
        node = _get(node, k)
    return node


def _seq(node: Node | None) -> list[Node]:
    return list(node.value) if isinstance(node, SequenceNode) else []


# ------------------------------------------------------------------------------------ n8n

def _n8n_expression(text: str, locate: Locator) -> Scan:
    """An n8n parameter: static unless it starts with ``=``; then ``{{ js }}`` are slots."""
    return scan_placeholders_only_braces(text, locate)


_BRACES = re.compile(r"\{\{(.*?)\}\}", re.S)


def scan_placeholders_only_braces(text: str, locate: Locator) -> Scan:
    """``{{ expression }}`` placeholders only (n8n, Flowise agentflows): single braces and
    ``${}`` are text there."""
    from ..classify import names_in
    from ..model import Slot

    out = Scan()
    pos = 0
    for m in _BRACES.finditer(text):
        if m.start() > pos:
            out.pieces.append(Piece("static", text[pos:m.start()], span=locate(pos, m.start(), text[pos:m.start()])))
        expr = m.group(1).strip()
        raw = m.group(0)
        out.pieces.append(Piece("slot", slot=Slot(locate(m.start(), m.end(), raw), raw, "variable",
                                                   (raw, f"{{{{ {expr} }}}}", expr), names_in(expr))))
        pos = m.end()
    if pos < len(text):
        out.pieces.append(Piece("static", text[pos:], span=locate(pos, len(text), text[pos:])))
    return out


def is_n8n(root: Node) -> bool:
    nodes = _get(root, "nodes")
    return isinstance(nodes, SequenceNode) and _get(root, "connections") is not None and any(
        _N8N_TYPE.match(_str(_get(n, "type")) or "") for n in nodes.value)


def n8n_docs(ctx, root: Node) -> list[Doc]:
    """One doc per n8n node that holds prompt text."""
    docs = []

    def pieces(node: Node) -> list[Piece]:
        v = _str(node)
        if v is None:
            return []
        if v.startswith("="):
            return ctx.string_pieces(node, _n8n_expression, v[1:])
        return [Piece("static", v, span=ctx.start(node))] if v else []

    for n in _seq(_get(root, "nodes")):
        typ = _str(_get(n, "type")) or ""
        params = _get(n, "parameters")
        if not isinstance(params, MappingNode) or not _N8N_TYPE.match(typ):
            continue
        if not N8N_AI.search(typ):
            continue
        name = _str(_get(n, "name")) or typ
        parts: list[Part] = []
        opts = _get(params, "options")
        for key in _N8N_SYSTEM_KEYS:
            for holder in (opts, params):
                v = _get(holder, key)
                if _str(v) is not None:
                    parts.append(Part("system", key, pieces(v), ctx.start(v)))
        for key in ("messageValues", "values"):
            for k, m in enumerate(_seq(_get(_get(params, "messages"), key)) or _seq(_get(_get(params, "prompt"), key))):
                text = _get(m, "message") or _get(m, "content")
                if _str(text) is None:
                    continue
                role = _N8N_ROLE.get(_str(_get(m, "type")) or _str(_get(m, "role")) or "", "user")
                parts.append(Part(role, f"messages.{key}[{k}]", pieces(text), ctx.start(text)))
        for key in _N8N_USER_KEYS:
            v = _get(params, key)
            if _str(v) is not None:
                parts.append(Part("user", key, pieces(v), ctx.start(v)))
        if parts:
            parts.sort(key=lambda p: 0 if p.role == "system" else 1)
            docs.append(Doc(ctx.path, name, parts, ctx.start(n)))
    return docs


# ------------------------------------------------------------------------------------ Dify

def is_dify(root: Node) -> bool:
    app = _get(root, "app")
    return isinstance(app, MappingNode) and _get(app, "mode") is not None and (
        _get(root, "workflow") is not None or _get(root, "model_config") is not None)


def _dify_scan(jinja: bool) -> Callable[[str, Locator], Scan]:
    """Dify's prompt syntax: ``{{#node.var#}}`` and ``{{var}}`` (single braces are text), or
    Jinja for ``edition_type: jinja2``."""
    return (lambda t, loc: scan_jinja(t, loc, keep_trailing_newline=True)) if jinja else scan_placeholders_only_braces


def _dify_model(data: Node | None) -> str | None:
    return _str(_path(data, "model", "name"))


def dify_docs(ctx, root: Node) -> list[Doc]:
    """One doc per Dify LLM-like node (workflow and chatflow apps) or the app's prompt (chat,
    agent and completion apps)."""
    docs = []
    for n in _seq(_path(root, "workflow", "graph", "nodes")):
        data = _get(n, "data")
        typ = _str(_get(data, "type")) or ""
        title = _str(_get(data, "title")) or _str(_get(n, "id")) or typ
        parts: list[Part] = []
        tmpl = _get(data, "prompt_template")
        if isinstance(tmpl, SequenceNode):
            for k, m in enumerate(tmpl.value):
                jinja = _str(_get(m, "edition_type")) == "jinja2"
                text = _get(m, "jinja2_text") if jinja else _get(m, "text")
                if _str(text) is None:
                    continue
                role = _str(_get(m, "role")) or "user"
                parts.append(Part(role, f"prompt_template[{k}]", ctx.string_pieces(text, _dify_scan(jinja)),
                                  ctx.start(text)))
        elif isinstance(tmpl, MappingNode):
            text = _get(tmpl, "text")
            if _str(text) is not None:
                parts.append(Part("user", "prompt_template", ctx.string_pieces(text, _dify_scan(False)),
                                  ctx.start(text)))
        for key in ("instruction", "instructions"):
            v = _get(data, key)
            if isinstance(v, MappingNode):
                v = _get(v, "value")
            if _str(v) is not None:
                parts.append(Part("system", key, ctx.string_pieces(v, _dify_scan(False)), ctx.start(v)))
        inst = _path(data, "agent_parameters", "instruction", "value")
        if _str(inst) is not None:
            parts.append(Part("system", "agent_parameters.instruction", ctx.string_pieces(inst, _dify_scan(False)),
                              ctx.start(inst)))
        if parts:
            docs.append(Doc(ctx.path, title, parts, ctx.start(n), model=_dify_model(data)))
    mc = _get(root, "model_config")
    if isinstance(mc, MappingNode):
        parts = []
        pre = _get(mc, "pre_prompt")
        if _str(pre):
            parts.append(Part("system", "pre_prompt", ctx.string_pieces(pre, _dify_scan(False)), ctx.start(pre)))
        for k, m in enumerate(_seq(_path(mc, "chat_prompt_config", "prompt"))):
            text = _get(m, "text")
            if _str(text):
                parts.append(Part(_str(_get(m, "role")) or "user", f"chat_prompt_config.prompt[{k}]",
                                  ctx.string_pieces(text, _dify_scan(False)), ctx.start(text)))
        if parts:
            docs.append(Doc(ctx.path, _str(_path(root, "app", "name")) or "app", parts, ctx.start(mc),
                            model=_str(_path(mc, "model", "name"))))
    return docs


# ------------------------------------------------------------------------------------ Flowise

def is_flowise(root: Node) -> bool:
    nodes = _get(root, "nodes")
    return isinstance(nodes, SequenceNode) and _get(root, "edges") is not None and any(
        isinstance(_get(_get(n, "data"), "inputs"), MappingNode) for n in nodes.value)


def flowise_docs(ctx, root: Node) -> list[Doc]:
    """One doc per Flowise node whose inputs hold prompt text."""
    docs = []
    for n in _seq(_get(root, "nodes")):
        data = _get(n, "data")
        inputs = _get(data, "inputs")
        if not isinstance(inputs, MappingNode):
            continue
        name = _str(_get(data, "label")) or _str(_get(data, "id")) or _str(_get(n, "id")) or "node"
        parts: list[Part] = []
        for key, role in _FLOWISE_KEYS:
            v = _get(inputs, key)
            if _str(v):
                parts.append(Part(role, key, ctx.string_pieces(v, scan_placeholders), ctx.start(v)))
        for key in ("agentMessages", "llmMessages"):
            for k, m in enumerate(_seq(_get(inputs, key))):
                text = _get(m, "content")
                if _str(text):
                    parts.append(Part(_str(_get(m, "role")) or "user", f"{key}[{k}]",
                                      ctx.string_pieces(text, scan_placeholders_only_braces), ctx.start(text)))
        if parts:
            parts.sort(key=lambda p: 0 if p.role == "system" else 1 if p.role != "user" else 2)
            model = _str(_get(inputs, "modelName"))
            docs.append(Doc(ctx.path, name, parts, ctx.start(n), model=model))
    return docs


#: (recognise, read) per workflow kind, tried in order.
READERS = (("n8n", is_n8n, n8n_docs), ("dify", is_dify, dify_docs), ("flowise", is_flowise, flowise_docs))
