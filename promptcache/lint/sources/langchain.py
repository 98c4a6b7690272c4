"""LangChain prompt templates in Python sources (read with :mod:`ast` by
:class:`.python.PythonSource`; nothing is imported or run).

| call | prompt |
|---|---|
| ``PromptTemplate.from_template(s)``, ``PromptTemplate(template=s)`` | one template part |
| ``ChatPromptTemplate.from_messages([("system", s), ("human", "{input}"), MessagesPlaceholder("history")])`` | one part per message, in order; placeholders are conversation (a block value) |
| ``SystemMessagePromptTemplate.from_template(s[, "jinja2"])``, ``HumanMessagePromptTemplate``, ``AIMessagePromptTemplate`` | a message part |
| ``SystemMessage(content=s)`` in a message list | literal text (not a template) |

``{field}`` placeholders (f-string, the default; ``{{`` and ``}}`` are braces) or ``{{ field }}``
(``template_format`` ``mustache`` / ``jinja2``, keyword or second positional argument) are
values; ``partial_variables={...}`` and ``.partial(field=...)`` add what a field is bound to
(``.partial(today=datetime.now().strftime("%Y-%m-%d"))`` makes ``{today}`` a date).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..classify import names_in
from ..model import Doc, Part, Piece, Slot

if TYPE_CHECKING:  # the reader is handed in; this module never imports it at run time
    from .python import PythonSource, Scope


def _template(src: PythonSource, node: ast.AST, scope: Scope, fmt: str, partials: dict[str, ast.AST]) -> list[Piece]:
    """A LangChain template string: its pieces, with ``{field}`` (f-string) or ``{{field}}``
    (mustache, jinja2) placeholders as slots; partial variables add what they are bound to."""
    target = node
    if isinstance(node, ast.Name):
        got = src.assignment(node.id, scope, node.lineno)
        if got is not None and src.is_stringish(got[1], src.scope_of(got[0])):
            src.consumed.add(got[0])
            target, scope = got[1], src.scope_of(got[0])
    if fmt in ("mustache", "jinja2"):
        got = src.template_constant(target, fmt)
        return got if got is not None else src.pieces(target, scope)
    pieces = src.fields(src.pieces(target, scope), target)
    out = []
    for p in pieces:
        if p.kind == "static":
            out.append(Piece("static", p.text.replace("{{", "{").replace("}}", "}"), span=p.span))
            continue
        name = p.slot.source.strip("{}") if p.slot is not None else ""
        bound = partials.get(name.split(".")[0])
        if bound is not None and p.slot is not None:
            src = src.src(bound)
            sl = p.slot
            p = Piece("slot", slot=Slot(sl.span, sl.source, sl.kind, (*sl.probes, f"{{{{ {src} }}}}", src),
                                        (*sl.names, *names_in(src))))
        out.append(p)
    return out

def _kw(call: ast.Call, key: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == key), None)

def _partials(src: PythonSource, call: ast.Call) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    pv = _kw(call, "partial_variables")
    if isinstance(pv, ast.Dict):
        for k, v in zip(pv.keys, pv.values):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                out[k.value] = v
    parent = src.parent.get(call)
    if isinstance(parent, ast.Attribute) and parent.attr == "partial":
        outer = src.parent.get(parent)
        if isinstance(outer, ast.Call):
            out.update({k.arg: k.value for k in outer.keywords if k.arg})
    return out

def langchain_docs(src: PythonSource) -> list[Doc]:
    """LangChain prompt templates: ``PromptTemplate.from_template(s)`` / ``PromptTemplate(template=s)``,
    ``ChatPromptTemplate.from_messages([("system", s), ("human", "{input}"), MessagesPlaceholder(...)])``,
    ``*MessagePromptTemplate.from_template(s)``; ``{field}`` placeholders (``template_format``
    ``mustache`` / ``jinja2``: ``{{ field }}``) are slots, ``partial_variables`` and
    ``.partial(...)`` add what a field is bound to."""
    docs = []
    inside: set[ast.AST] = set()
    for call in ast.walk(src.tree):
        if not isinstance(call, ast.Call):
            continue
        f = call.func
        last = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if last not in ("from_template", "from_messages", "PromptTemplate", "ChatPromptTemplate"):
            continue
        dotted = src.src(f).replace(" ", "")
        head, _, method = dotted.rpartition(".")
        head = head.rsplit(".", 1)[-1]
        scope = src.scope_of(call)
        fmt_n = _kw(call, "template_format")
        if fmt_n is None and method == "from_template" and len(call.args) > 1:
            fmt_n = call.args[1]  # from_template(template, template_format)
        fmt = fmt_n.value if isinstance(fmt_n, ast.Constant) and isinstance(fmt_n.value, str) else "f-string"
        partials = _partials(src, call)
        name = f"{(head or dotted)}@{call.lineno}"
        if call in inside:
            continue
        if (method == "from_template" and head.endswith("PromptTemplate")) or \
                (isinstance(f, ast.Name) and f.id == "PromptTemplate"):
            tmpl = call.args[0] if call.args else _kw(call, "template")
            if tmpl is None:
                continue
            role = "system" if head.startswith("System") else "user" if head.startswith("Human") else "template"
            docs.append(Doc(src.path, name, [Part(role, "template", _template(src, tmpl, scope, fmt, partials),
                                                  src.span(tmpl))], src.span(call)))
        elif (method == "from_messages" and head == "ChatPromptTemplate") or \
                (isinstance(f, ast.Name) and f.id == "ChatPromptTemplate" and call.args):
            msgs = call.args[0] if call.args else _kw(call, "messages")
            if isinstance(msgs, ast.Name):
                got = src.assignment(msgs.id, scope, msgs.lineno)
                msgs = got[1] if got is not None else msgs
            if not isinstance(msgs, (ast.List, ast.Tuple)):
                continue
            parts = []
            for k, el in enumerate(msgs.elts):
                pname = f"messages[{k}]"
                if isinstance(el, ast.Tuple) and len(el.elts) == 2 and isinstance(el.elts[0], ast.Constant):
                    r = str(el.elts[0].value)
                    if r == "placeholder":
                        parts.append(Part("user", pname, [src.slot(el.elts[1], scope, 0, kind="block")],
                                          src.span(el)))
                        continue
                    role = {"human": "user", "ai": "assistant"}.get(r, r)
                    parts.append(Part(role, pname, _template(src, el.elts[1], scope, fmt, partials), src.span(el)))
                elif isinstance(el, ast.Call):
                    inside.add(el)
                    en = src.src(el.func).replace(" ", "").rsplit(".", 1)
                    cls = en[0] if len(en) == 1 else en[0].rsplit(".", 1)[-1]
                    role = "system" if cls.startswith("System") else "assistant" if cls.startswith("AI") else "user"
                    arg = el.args[0] if el.args else _kw(el, "content") or _kw(el, "template")
                    if cls == "MessagesPlaceholder" or arg is None:
                        parts.append(Part("user", pname, [src.slot(el, scope, 0, kind="block")], src.span(el)))
                    elif cls.endswith("PromptTemplate"):
                        parts.append(Part(role, pname, _template(src, arg, scope, fmt, partials), src.span(el)))
                    else:  # SystemMessage(content=...): literal text, not a template
                        parts.append(Part(role, pname, src.pieces(arg, scope) if src.is_stringish(arg, scope)
                                          else [src.slot(arg, scope, 0)], src.span(el)))
                else:
                    parts.append(Part("user", pname, [src.slot(el, scope, 0, kind="block")], src.span(el)))
            docs.append(Doc(src.path, name, parts, src.span(call)))
    return sorted(docs, key=lambda d: (d.span.line, d.span.col))

