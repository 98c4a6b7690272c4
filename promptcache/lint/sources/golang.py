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
A ``strings.Builder`` / ``bytes.Buffer`` read with ``b.String()`` holds what was written into it
before (``b.WriteString(x)``, ``fmt.Fprintf(&b, ...)``): see :meth:`GoSource.builder_pieces`.
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


#: The types Go code builds text in: ``strings.Builder``, ``bytes.Buffer`` (or pointers to them).
_BUILDER_TYPE = re.compile(r"^\*?\s*(?:strings\.Builder|bytes\.Buffer)$")


def _as_items(pieces: list[Piece], loop_vars: set[str], iterable: tuple[str, ...]) -> list[Piece]:
    """A ``for _, t := range xs`` body's pieces with each value that reads nothing but the loop's
    variables (``t.Name``) made an item of ``xs`` (its names ``xs``', ``items`` set)."""
    out: list[Piece] = []
    for p in pieces:
        sl = p.slot
        if sl is not None and sl.names and all(n.split(".")[0] in loop_vars for n in sl.names):
            sl = Slot(sl.span, sl.source, sl.kind, sl.probes, iterable, iterable)
        out.append(Piece(p.kind, p.text, sl, p.span, tuple(tuple(_as_items(list(b), loop_vars, iterable))
                                                          for b in p.branches), p.loop))
    return out


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
        # strings.Builder / bytes.Buffer variables: name → (where declared, its initial content or None)
        self.builders: dict[str, list[tuple[int, Node | None]]] = {}
        for n in self.f.walk():
            t = n.type
            if t in ("const_spec", "var_spec"):
                names = [c for c in n.children_by_field_name("name")]
                if t == "var_spec" and self._embedded(n):
                    self.embedded.update(self.f.src(c) for c in names)
                values = n.child_by_field_name("value")
                vals = [c for c in values.named_children] if values is not None else []
                typ = n.child_by_field_name("type")
                if t == "var_spec" and not vals and typ is not None and _BUILDER_TYPE.match(self.f.src(typ)):
                    for nm in names:  # var b strings.Builder
                        self.builders.setdefault(self.f.src(nm), []).append((n.start_byte, None))
                for k, nm in enumerate(names):
                    if k < len(vals):
                        self.decls.setdefault(self.f.src(nm), []).append((n.start_byte, n, vals[k]))
                        self._builder_decl(nm, vals[k], n)
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
                            self._builder_decl(nm, rs[k], n)
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

    def _builder_decl(self, name: Node, value: Node, decl: Node) -> None:
        """Record ``b := strings.Builder{}`` / ``&strings.Builder{}`` / ``new(strings.Builder)`` /
        ``bytes.NewBufferString(s)`` (``s``: its initial content) as a builder."""
        v = self._unwrap(value)
        if v.type == "unary_expression" and v.child_by_field_name("operand") is not None:
            v = self._unwrap(v.child_by_field_name("operand"))
        init: Node | None = None
        if v.type == "composite_literal":
            typ = v.child_by_field_name("type")
            if typ is None or not _BUILDER_TYPE.match(self.f.src(typ)):
                return
        elif v.type == "call_expression":
            c, args = self.callee(v), self.args(v)
            if c == "new" and args and _BUILDER_TYPE.match(self.f.src(args[0])):
                pass
            elif c == "bytes.NewBufferString" and args:
                init = args[0]
            else:
                return
        else:
            return
        self.builders.setdefault(self.f.src(name), []).append((decl.start_byte, init))

    def _builder_of(self, call: Node) -> tuple[str, int, Node | None, Node] | None:
        """For ``b.String()`` of a builder declared in the same function before it: (name, where
        it is declared, its initial content, the function body); else ``None``."""
        fn = call.child_by_field_name("function")
        if fn is None or fn.type != "selector_expression" or self.args(call):
            return None
        field, operand = fn.child_by_field_name("field"), fn.child_by_field_name("operand")
        if field is None or operand is None or self.f.src(field) != "String" or operand.type != "identifier":
            return None
        name = self.f.src(operand)
        scope = self._enclosing_function(call)
        body = scope.child_by_field_name("body") if scope is not self.f.root else None
        if body is None:
            return None
        got = [d for d in self.builders.get(name, ()) if body.start_byte <= d[0] < call.start_byte]
        if not got:
            return None
        return name, got[-1][0], got[-1][1], body

    def _is_write(self, call: Node, name: str) -> list[Node] | None:
        """The arguments that put text in builder ``name``: ``b.WriteString(x)`` / ``WriteByte`` /
        ``WriteRune`` (``[x]``); ``fmt.Fprintf(&b, format, args...)`` (``[format, args...]``,
        ``Fprint``/``Fprintln`` likewise); else ``None``."""
        fn = call.child_by_field_name("function")
        if fn is None:
            return None
        args = self.args(call)
        if fn.type == "selector_expression":
            operand, field = fn.child_by_field_name("operand"), fn.child_by_field_name("field")
            if operand is not None and field is not None and operand.type == "identifier" and \
                    self.f.src(operand) == name and self.f.src(field) in ("WriteString", "WriteByte", "WriteRune"):
                return args[:1]
        c = self.callee(call)
        if c in ("fmt.Fprintf", "fmt.Fprint", "fmt.Fprintln") and len(args) >= 2 and \
                re.sub(r"\s+", "", self.f.src(args[0])).lstrip("&") == name:
            return args[1:]
        return None

    def builder_pieces(self, call: Node, depth: int = 0) -> list[Piece] | None:
        """What ``b.String()`` holds: the builder's writes from its declaration to the call, in
        order (``b.WriteString(x)``, ``fmt.Fprintf(&b, ...)``, each as its string expression's
        pieces); writes inside ``if`` / ``switch`` are alternatives, inside ``for ... range xs``
        a loop over ``xs`` (its variables' fields are of ``xs``' kind); a call that is given the
        builder (``writeTools(&b, tools)``) writes text of unknown kind, a slot named by it.
        ``None`` when ``call`` is not a builder's ``String()``."""
        got = self._builder_of(call)
        if got is None:
            return None
        name, start, init, body = got
        stop = call.start_byte
        me = self

        def text(args: list[Node], c: str, at: Node) -> list[Piece]:
            if c == "fmt.Fprintf":
                return me._sprintf(args, depth + 1)
            out: list[Piece] = []
            for k, a in enumerate(args):
                if k and c == "fmt.Fprintln":
                    out.append(Piece("static", " ", span=me.f.span(at)))
                if a.type == "rune_literal":
                    r = me.f.src(a)[1:-1]
                    out.append(Piece("static", _unescape(r) if r.startswith("\\") else r, span=me.f.span(a)))
                else:
                    out += me._text(a)
            if c == "fmt.Fprintln":
                out.append(Piece("static", "\n", span=me.f.span(at)))
            return out

        def writes(n: Node) -> list[Piece]:
            """The writes in a simple statement (an expression, an assignment), in order."""
            out: list[Piece] = []
            stack = [n]
            while stack:
                x = stack.pop()
                if x.type == "func_literal":
                    continue
                if x.type == "call_expression":
                    args = me._is_write(x, name)
                    if args is not None:
                        out += text(args, me.callee(x), x)
                        continue
                    if any(re.sub(r"\s+", "", me.f.src(a)).lstrip("&") == name for a in me.args(x)) and \
                            not me.callee(x).startswith(name + "."):
                        out.append(me.slot(x, "block"))  # a helper that writes into the builder
                        continue
                stack.extend(reversed(x.named_children))
            return out

        def stmts(n: Node | None) -> list[Piece]:
            if n is None or n.end_byte <= start or n.start_byte >= stop:
                return []
            t = n.type
            if t in ("block", "statement_list", "labeled_statement"):
                out: list[Piece] = []
                for c in n.named_children:
                    out += stmts(c)
                return out
            if t == "if_statement":
                cons = stmts(n.child_by_field_name("consequence"))
                alt = stmts(n.child_by_field_name("alternative"))
                if not cons and not alt:
                    return []
                # the condition renders nothing: what each alternative writes is checked
                return [Piece("branch", span=me.f.span(n), branches=(tuple(cons), tuple(alt)))]
            if t in ("expression_switch_statement", "type_switch_statement", "select_statement"):
                alts = []
                for case in n.named_children:
                    if case.type in ("expression_case", "default_case", "type_case", "communication_case"):
                        ps: list[Piece] = []
                        for c in case.named_children:
                            if c.type == "statement_list":
                                ps += stmts(c)
                        alts.append(tuple(ps))
                if not any(alts):
                    return []
                return [Piece("branch", span=me.f.span(n), branches=tuple(alts))]
            if t == "for_statement":
                inner = stmts(n.child_by_field_name("body"))
                if not inner:
                    return []
                rc = next((c for c in n.named_children if c.type == "range_clause"), None)
                right = rc.child_by_field_name("right") if rc is not None else None
                head = right if right is not None else next((c for c in n.named_children if c.type != "block"), n)
                loop = me.slot(head, "block").slot
                left = rc.child_by_field_name("left") if rc is not None else None
                vars_ = {me.f.src(c) for c in left.named_children} - {"_"} if left is not None else set()
                if vars_ and loop is not None:
                    inner = _as_items(inner, vars_, loop.names)
                return [Piece("branch", slot=loop, span=me.f.span(n), branches=(tuple(inner), ()), loop=True)]
            if t == "func_literal":
                return []
            return writes(n)

        first = self.pieces(init, depth + 1) if init is not None and self.is_stringish(init, depth + 1) else []
        return first + stmts(body)

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
        return self.f.plus_operands(node, self._unwrap)

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
            if c.endswith(".String") and self._builder_of(node) is not None:
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
            if c.endswith(".String"):
                built = self.builder_pieces(node, depth)
                if built is not None:
                    return built
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
