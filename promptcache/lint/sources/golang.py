"""Go sources (``.go``), parsed with tree-sitter's Go grammar (nothing is built or run), and Go
``text/template`` files (``.tmpl``, ``.gotmpl``).

What is read in a ``.go`` file:

- strings given to prompt-like names (``const systemPrompt = ...``, ``var PromptTemplate = ...``,
  ``prompt := ...``, ``func buildSystemPrompt() string { return ... }``);
- the messages of the common SDKs: ``openai.SystemMessage(x)`` / ``openai.UserMessage(x)``
  (openai-go), ``openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: x}``
  (go-openai), ``llms.TextParts(llms.ChatMessageTypeSystem, x)`` (langchaingo);
- templates: the string given to ``template.New(...).Parse(s)`` and to langchaingo's
  ``prompts.NewPromptTemplate(s, ...)`` / ``prompts.New*MessagePromptTemplate(s, ...)`` is a Go
  template (``{{.Name}}``, ``{{if}}``): its actions are slots and its conditionals branches.

Strings are interpreted (``"..."``, escapes decoded) and raw (`` `...` ``) literals, ``+``
concatenation, ``fmt.Sprintf`` (each verb is a slot for its argument, located at the
argument), ``strings.Join([]string{...}, sep)`` and ``strings.TrimSpace``; names are followed to
their last declaration before use, and calls of package functions to their single ``return``.
"""

from __future__ import annotations

import re

from ..classify import names_in
from ..model import Doc, Parsed, Part, Piece, Slot
from .base import LineIndex, Occurrences
from .templating import scan_tags
from .treesitter import Node, TSFile

PROMPT_NAME = re.compile(r"(?i)(prompt|system|instruction|template|persona|preamble)")
_SYSTEM_NAME = re.compile(r"(?i)system|instruction|persona|preamble")
_VERB = re.compile(r"%(?:\[(\d+)\])?[-+# 0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?([a-zA-Z%])")
_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f",
        "v": "\v"}
_MAX_DEPTH = 12
_ROLE_CALLS = {"SystemMessage": "system", "DeveloperMessage": "system", "UserMessage": "user",
               "AssistantMessage": "assistant"}
_TEMPLATE_CALLS = re.compile(r"(?:^|\.)(?:NewPromptTemplate|New(System|Human|AI|Generic)MessagePromptTemplate)$")


def _unescape(seq: str) -> str:
    body = seq[1:]
    if body[:1] in _ESC:
        return _ESC[body[0]]
    try:
        if body[:1] in ("u", "U", "x"):
            return chr(int(body[1:], 16))
        if body[:1].isdigit():
            return chr(int(body, 8))
    except ValueError:
        pass
    return seq


class GoSource:
    """One Go file and the prompts in it."""

    def __init__(self, path: str, text: str):
        self.f = TSFile(path, text, "go")
        self.path = path
        self.decls: dict[str, list[tuple[int, Node, Node]]] = {}
        self.functions: dict[str, list[Node]] = {}  # name → the expressions it returns, in order
        self.embedded: set[str] = set()  # variables //go:embed fills: file content fixed at build time
        self.consumed: set[int] = set()
        self.calls: list[Node] = []
        self.composites: list[Node] = []
        for n in self.f.walk():
            t = n.type
            if t in ("const_spec", "var_spec"):
                names = [c for c in n.children_by_field_name("name")]
                if t == "var_spec" and self._embedded(n):
                    self.embedded.update(self.f.src(c) for c in names)
                values = n.child_by_field_name("value")
                vals = [c for c in values.named_children] if values is not None else []
                for k, nm in enumerate(names):
                    if k < len(vals):
                        self.decls.setdefault(self.f.src(nm), []).append((n.start_byte, n, vals[k]))
            elif t in ("short_var_declaration", "assignment_statement"):
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                if left is not None and right is not None:
                    ls = [c for c in left.named_children]
                    rs = [c for c in right.named_children]
                    for k, nm in enumerate(ls):
                        if nm.type == "identifier" and k < len(rs):
                            op = n.child_by_field_name("operator")
                            if op is not None and self.f.src(op) == "+=":
                                continue
                            self.decls.setdefault(self.f.src(nm), []).append((n.start_byte, n, rs[k]))
            elif t in ("function_declaration", "method_declaration"):
                name = n.child_by_field_name("name")
                rets = self._returns(n)
                if name is not None and rets:
                    self.functions.setdefault(self.f.src(name), rets)
            elif t == "call_expression":
                self.calls.append(n)
            elif t == "composite_literal":
                self.composites.append(n)

    def _returns(self, fn: Node) -> list[Node]:
        """The first value of each of a function's ``return`` statements, in source order
        (function literals inside it return for themselves)."""
        body = fn.child_by_field_name("body")
        if body is None:
            return []
        rets = []
        stack = list(reversed(body.children))
        while stack:
            n = stack.pop()
            if n.type == "return_statement":
                lst = [c for c in n.named_children]
                if lst:
                    vals = [c for c in lst[0].named_children] if lst[0].type == "expression_list" else lst
                    if vals:
                        rets.append(vals[0])
            elif n.type != "func_literal":
                stack.extend(reversed(n.children))
        return rets

    def _embedded(self, spec: Node) -> bool:
        """Whether a ``var`` has a ``//go:embed`` directive on the line above it."""
        decl = spec.parent
        while decl is not None and decl.type != "var_declaration":
            decl = decl.parent
        prev = decl.prev_sibling if decl is not None else None
        if decl is not None and decl.type == "var_declaration" and prev is not None and prev.type == "comment":
            return self.f.src(prev).startswith("//go:embed")
        prev = spec.prev_sibling
        return prev is not None and prev.type == "comment" and self.f.src(prev).startswith("//go:embed")

    def _prompt_returns(self, name: str, depth: int = 0) -> list[Node] | None:
        """A local function's returns when they are prompt text (each a string expression or
        ``""``, at least one not empty), else ``None``."""
        rets = self.functions.get(name)
        if not rets:
            return None
        ok = [self.is_stringish(r, depth + 1) for r in rets]
        if any(ok) and all(k or self.literal(r) == "" for k, r in zip(ok, rets)):
            return rets
        return None

    def _returned_pieces(self, rets: list[Node], at: Node, depth: int) -> list[Piece]:
        if len(rets) == 1:
            return self.pieces(rets[0], depth + 1)
        # several returns: the value is one of them (each an alternative, checked on its own)
        return [Piece("branch", span=self.f.span(at), branches=tuple(
            tuple(self.pieces(r, depth + 1)) if self.literal(r) != "" else () for r in rets))]

    def is_constant(self, node: Node) -> bool:
        """Whether a value is fixed when the program is built: a ``//go:embed`` file
        (``string(promptFile)``), or a constant."""
        node = self._unwrap(node)
        if node.type == "call_expression" and self.callee(node) in ("string", "[]byte") and len(self.args(node)) == 1:
            return self.is_constant(self.args(node)[0])
        if node.type == "identifier":
            if self.f.src(node) in self.embedded:
                return True
            got = self.resolve(node)
            return got is not None and got[0].type == "const_spec"
        return node.type in ("int_literal", "float_literal", "true", "false", "raw_string_literal",
                             "interpreted_string_literal", "rune_literal")

    def resolve(self, ident: Node) -> tuple[Node, Node] | None:
        got = self.decls.get(self.f.src(ident))
        if not got:
            return None
        before = [d for d in got if d[0] < ident.start_byte]
        pick = before[-1] if before else got[0]
        if pick[2].start_byte <= ident.start_byte < pick[2].end_byte:
            return None
        return pick[1], pick[2]

    def callee(self, call: Node) -> str:
        fn = call.child_by_field_name("function")
        return re.sub(r"\s+", "", self.f.src(fn)) if fn is not None else ""

    def args(self, call: Node) -> list[Node]:
        a = call.child_by_field_name("arguments")
        return [c for c in a.named_children if c.type != "comment"] if a is not None else []

    def operands(self, node: Node) -> list[Node]:
        """The operands of a ``+`` chain, left to right, found without recursion."""
        out: list[Node] = []
        stack = [node]
        while stack:
            n = self._unwrap(stack.pop())
            op = n.child_by_field_name("operator") if n.type == "binary_expression" else None
            left, right = (n.child_by_field_name("left"), n.child_by_field_name("right")) if op is not None else (None, None)
            if op is not None and self.f.src(op) == "+" and left is not None and right is not None:
                stack.append(right)
                stack.append(left)
            else:
                out.append(n)
        return out

    def _unwrap(self, node: Node) -> Node:
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        return node

    # ----------------------------------------------------------------- strings

    def literal(self, node: Node) -> str | None:
        """The value of a string literal, else ``None``."""
        node = self._unwrap(node)
        if node.type == "raw_string_literal":
            return self.f.src(node)[1:-1].replace("\r", "")
        if node.type == "interpreted_string_literal":
            out = []
            for c in node.named_children:
                s = self.f.src(c)
                out.append(_unescape(s) if c.type == "escape_sequence" else s)
            return "".join(out)
        return None

    def is_stringish(self, node: Node | None, depth: int = 0) -> bool:
        if node is None or depth > _MAX_DEPTH:
            return False
        node = self._unwrap(node)
        t = node.type
        if t in ("raw_string_literal", "interpreted_string_literal"):
            return True
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            return op is not None and self.f.src(op) == "+" and any(
                self.is_stringish(o, depth + 1) for o in self.operands(node))
        if t == "identifier":
            got = self.resolve(node)
            return got is not None and self.is_stringish(got[1], depth + 1)
        if t == "call_expression":
            c = self.callee(node)
            if c in ("fmt.Sprintf", "strings.Join", "strings.TrimSpace"):
                return True
            if c in self.functions:
                return self._prompt_returns(c, depth) is not None
        return False

    def pieces(self, node: Node, depth: int = 0) -> list[Piece]:
        """Static text and slots of a string expression."""
        if depth > _MAX_DEPTH:
            return [self.slot(node)]
        node = self._unwrap(node)
        t = node.type
        lit = self.literal(node)
        if lit is not None:
            return [Piece("static", lit, span=self.f.span(node))] if lit else []
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            if op is not None and self.f.src(op) == "+":
                out: list[Piece] = []
                for o in self.operands(node):  # a chain of any length is one level
                    out += self.pieces(o, depth + 1)
                return out
        if t == "identifier":
            got = self.resolve(node)
            if got is not None and self.is_stringish(got[1], depth + 1):
                self.consumed.add(got[0].id)
                return self.pieces(got[1], depth + 1)
        if t == "call_expression":
            c = self.callee(node)
            args = self.args(node)
            if c == "fmt.Sprintf" and args:
                return self._sprintf(args, depth)
            if c == "strings.Join" and len(args) == 2 and self._unwrap(args[0]).type == "composite_literal":
                sep = self.literal(args[1])
                body = self._unwrap(args[0]).child_by_field_name("body")
                if sep is not None and body is not None:
                    out: list[Piece] = []
                    els = [e for e in body.named_children if e.type != "comment"]
                    for k, el in enumerate(els):
                        el = el.named_children[0] if el.type == "literal_element" and el.named_children else el
                        if k and sep:
                            out.append(Piece("static", sep, span=self.f.span(args[1])))
                        out += self.pieces(el, depth + 1) if self.is_stringish(el, depth + 1) else [self.slot(el)]
                    return out
            if c == "strings.TrimSpace" and args and self.is_stringish(args[0], depth + 1):
                ps = self.pieces(args[0], depth + 1)
                if ps and ps[0].kind == "static":
                    ps[0] = Piece("static", ps[0].text.lstrip(), span=ps[0].span)
                if ps and ps[-1].kind == "static":
                    ps[-1] = Piece("static", ps[-1].text.rstrip(), span=ps[-1].span)
                return [p for p in ps if p.kind != "static" or p.text]
            rets = self._prompt_returns(c, depth) if c in self.functions else None
            if rets is not None:
                for r in rets:
                    self.consumed.add(r.id)
                return self._returned_pieces(rets, node, depth)
        if self.is_constant(node):
            return [Piece("opaque", span=self.f.span(node))]  # fixed when the program is built
        return [self.slot(node)]

    def _sprintf(self, args: list[Node], depth: int) -> list[Piece]:
        """``fmt.Sprintf(format, args...)``: each verb is a slot for its argument, located at the
        verb in the format literal (where the value lands in the prompt) and named by the
        argument (``%s (now)``); a ``%s`` / ``%v`` of a string expression is inlined."""
        fmt = args[0]
        fmt_pieces = self.pieces(fmt, depth + 1)
        values = args[1:]
        lit = self._unwrap(fmt)
        if lit.type == "identifier":
            got = self.resolve(lit)
            lit = self._unwrap(got[1]) if got is not None else lit
        occ = Occurrences(self.f.src(lit)) if self.literal(lit) is not None else None
        base = self.f.offset(lit)
        out: list[Piece] = []
        k = 0
        for p in fmt_pieces:
            if p.kind != "static":
                out.append(p)
                continue
            pos = 0
            for m in _VERB.finditer(p.text):
                if m.group(2) == "%":
                    if occ is not None:
                        occ.find(m.group(0))
                    continue
                if m.start() > pos:
                    out.append(Piece("static", p.text[pos:m.start()], span=p.span))
                idx = int(m.group(1)) - 1 if m.group(1) else k
                k = idx + 1
                at = occ.find(m.group(0)) if occ is not None else -1
                verb_span = self.f.index.span(self.path, base + at, base + at + len(m.group(0))) if at >= 0 else None
                if idx < len(values) and m.group(2) in ("s", "v") and self.is_stringish(values[idx], depth + 1):
                    out += self.pieces(values[idx], depth + 1)
                elif idx < len(values):
                    sl = self.slot(values[idx]).slot
                    assert sl is not None
                    out.append(Piece("slot", slot=Slot(verb_span or sl.span, f"{m.group(0)} ({sl.source})", sl.kind,
                                                       sl.probes, sl.names)))
                else:
                    out.append(Piece("slot", slot=Slot(verb_span or p.span or self.f.span(fmt), m.group(0), "variable",
                                                       (m.group(0),), ())))
                pos = m.end()
            if pos < len(p.text):
                out.append(Piece("static", p.text[pos:], span=p.span))
        return [Piece("static", q.text.replace("%%", "%"), span=q.span) if q.kind == "static" else q for q in out]

    def slot(self, node: Node, kind: str = "variable") -> Piece:
        s = self.f.src(node)
        probes = [f"{{{{ {' '.join(s.split())} }}}}", s]
        names = list(names_in(s))
        for n in self.f.walk(node):
            if n.type == "identifier":
                got = self.resolve(n)
                if got is not None:
                    v = self.f.src(got[1])
                    probes += [f"{{{{ {' '.join(v.split())} }}}}", v]
                    names += names_in(v)
        return Piece("slot", slot=Slot(self.f.span(node), s, kind, tuple(dict.fromkeys(probes)),
                                       tuple(dict.fromkeys(names))))

    def template(self, node: Node) -> list[Piece]:
        """A Go template held in a string expression: its actions are slots, its conditionals
        branches (located in the literal when the template is one literal)."""
        node = self._unwrap(node)
        if node.type == "identifier":
            got = self.resolve(node)
            if got is not None and self.literal(got[1]) is not None:
                self.consumed.add(got[0].id)
                node = self._unwrap(got[1])
        lit = self.literal(node)
        if lit is None or node.type != "raw_string_literal":
            ps = self.pieces(node)
            if lit is None:
                return ps
        base = self.f.offset(node) + 1
        index: LineIndex = self.f.index
        return scan_tags(lit, index.locator(self.path, base), "go").pieces

    # ----------------------------------------------------------------- prompts

    def docs(self) -> list[Doc]:
        docs: list[Doc] = []
        # templates
        for call in self.calls:
            c = self.callee(call)
            args = self.args(call)
            sp = self.f.span(call)
            if not args:
                continue
            if c.endswith(".Parse") and ("template." in c or "New(" in c):
                docs.append(Doc(self.path, f"template@{sp.line}", [Part("template", "template",
                                                                        self.template(args[0]), sp)], sp))
            elif _TEMPLATE_CALLS.search(c):
                m = _TEMPLATE_CALLS.search(c)
                role = {"System": "system", "Human": "user", "AI": "assistant"}.get(m.group(1) or "", "template")
                docs.append(Doc(self.path, f"{c.rsplit('.', 1)[-1]}@{sp.line}",
                                [Part(role, "template", self.template(args[0]), sp)], sp))
        # messages built for an SDK: one doc per function holding them, in order
        by_fn: dict[int, tuple[Node, list[Part]]] = {}
        for call in self.calls:
            c = self.callee(call)
            args = self.args(call)
            short = c.rsplit(".", 1)[-1]
            role = _ROLE_CALLS.get(short) if c.startswith("openai.") or "." not in c else None
            if role is None and short == "TextParts" and len(args) >= 2:
                kind = self.f.src(args[0])
                role = "system" if "System" in kind else "assistant" if "AI" in kind else "user"
                args = args[1:]
            if role is None or not args:
                continue
            fn = self._enclosing_function(call)
            part = Part(role, f"{short}@{self.f.span(call).line}", self._text(args[0]), self.f.span(call))
            by_fn.setdefault(fn.id, (fn, []))[1].append(part)
        for lit in self.composites:
            t = lit.child_by_field_name("type")
            body = lit.child_by_field_name("body")
            tname = self.f.src(t) if t is not None else ""
            if body is None or not tname.endswith("ChatCompletionMessage"):
                continue
            values = [body]
            if tname.startswith("[]"):  # []openai.ChatCompletionMessage{{Role: ..., Content: ...}, ...}
                values = [c.named_children[0] if c.type == "literal_element" and c.named_children else c
                          for c in body.named_children]
                values = [v for v in values if v.type == "literal_value"]
            for value in values:
                part = self._message(value, lit)
                if part is not None:
                    fn = self._enclosing_function(lit)
                    by_fn.setdefault(fn.id, (fn, []))[1].append(part)
        for fn, parts in by_fn.values():
            docs.append(Doc(self.path, f"messages@{parts[0].span.line}", parts, parts[0].span, provider="openai"))
        # prompt-like names: built first (what one uses is consumed), then kept if unused
        cands: list[tuple[str, Node, Node, int, list[Piece]]] = []
        for name, entries in self.decls.items():
            if not PROMPT_NAME.search(name):
                continue
            for _, decl, value in entries:
                if decl.id not in self.consumed and self.is_stringish(value):
                    cands.append((name, value, decl, decl.id, self._named(value)))
        for name, rets in self.functions.items():
            if not PROMPT_NAME.search(name) or any(r.id in self.consumed for r in rets):
                continue
            if len(rets) == 1 and self.is_stringish(rets[0]):
                cands.append((name, rets[0], rets[0], rets[0].id, self._named(rets[0])))
            elif len(rets) > 1 and self._prompt_returns(name) is not None:
                cands.append((name, rets[0], rets[0], rets[0].id, self._returned_pieces(rets, rets[0], 0)))
        counts: dict[str, int] = {}
        for name, value, at, key, pieces in cands:
            if key in self.consumed:
                continue
            counts[name] = counts.get(name, 0) + 1
            sp = self.f.span(at)
            nm = name if counts[name] == 1 else f"{name}@{sp.line}"
            role = "system" if _SYSTEM_NAME.search(name) else "template"
            docs.append(Doc(self.path, nm, [Part(role, name, pieces, self.f.span(value))], sp))
        return docs

    def _named(self, value: Node) -> list[Piece]:
        """A prompt-like name's value: a Go template when it holds ``{{``; a string literal
        whose printf verbs no ``fmt.Sprintf`` in this file fills is a format string filled
        elsewhere (``const DefaultSystemPrompt = "The current date: %s ..."``): its verbs are
        values, each at its place (what it is, the label before it says)."""
        if "{{" in self.f.src(value):
            return self.template(value)
        ps = self.pieces(value)
        lit = self._unwrap(value)
        if self.literal(lit) is None or not any(p.kind == "static" and _VERB.search(p.text) for p in ps):
            return ps
        occ = Occurrences(self.f.src(lit))
        base = self.f.offset(lit)
        out: list[Piece] = []
        for p in ps:
            if p.kind != "static":
                out.append(p)
                continue
            pos = 0
            for m in _VERB.finditer(p.text):
                at = occ.find(m.group(0))
                if m.group(2) == "%":
                    continue
                if m.start() > pos:
                    out.append(Piece("static", p.text[pos:m.start()].replace("%%", "%"), span=p.span))
                span = self.f.index.span(self.path, base + at, base + at + len(m.group(0))) if at >= 0 else p.span
                out.append(Piece("slot", slot=Slot(span or self.f.span(lit), m.group(0), "variable", (m.group(0),), ())))
                pos = m.end()
            if pos < len(p.text):
                out.append(Piece("static", p.text[pos:].replace("%%", "%"), span=p.span))
        return out

    def _message(self, value: Node, lit: Node) -> Part | None:
        """A ``ChatCompletionMessage`` literal's ``{Role: ..., Content: ...}`` as a part."""
        fields = {}
        for el in value.named_children:
            if el.type == "keyed_element" and len(el.named_children) == 2:
                k, v = el.named_children
                v = v.named_children[0] if v.type == "literal_element" and v.named_children else v
                k = k.named_children[0] if k.type == "literal_element" and k.named_children else k
                fields[self.f.src(k)] = v
        if "Content" not in fields:
            return None
        r = self.f.src(fields["Role"]) if "Role" in fields else "user"
        role = "system" if "System" in r or "system" in r else "assistant" if "ssistant" in r else "user"
        return Part(role, f"message@{self.f.span(value).line}", self._text(fields["Content"]), self.f.span(value))

    def _text(self, node: Node) -> list[Piece]:
        return self.pieces(node) if self.is_stringish(node) else [self.slot(node)]

    def _enclosing_function(self, node: Node) -> Node:
        p = node.parent
        while p is not None and p.type not in ("function_declaration", "method_declaration", "func_literal"):
            p = p.parent
        return p if p is not None else self.f.root


def parse_go(path: str, text: str) -> Parsed:
    """A Go source → its prompts and directives (``template-syntax`` where tree-sitter cannot
    parse it)."""
    parsed = Parsed(path, "go")
    src = GoSource(path, text)
    issue = src.f.syntax_issue("Go")
    if issue is not None:
        parsed.issues.append(issue)
    parsed.docs += src.docs()
    src.f.directives(parsed)
    return parsed
