"""TypeScript and JavaScript sources (``.ts``, ``.tsx``, ``.mts``, ``.cts``, ``.js``, ``.jsx``,
``.mjs``, ``.cjs``): prompts built in code, parsed with tree-sitter's TypeScript/TSX grammars
(nothing is run).

What is read:

- calls that send a prompt: the Vercel AI SDK (``generateText``, ``streamText``,
  ``generateObject``, ``streamObject``, ``streamUI`` with ``system:``, ``messages:``,
  ``prompt:``, ``model: openai('gpt-4o')``), OpenAI's SDK (``*.chat.completions.create``,
  ``*.responses.create`` with ``instructions`` / ``input``) and Anthropic's
  (``*.messages.create`` / ``.stream`` with ``system`` and ``messages``), in the provider's
  prefix order;
- LangChain.js prompt templates: ``PromptTemplate.fromTemplate``, ``new PromptTemplate({template})``,
  ``ChatPromptTemplate.fromMessages([["system", ...], ["human", "{input}"], new MessagesPlaceholder(...)])``,
  ``SystemMessagePromptTemplate.fromTemplate``; their ``{field}`` placeholders (``{{field}}`` with
  ``templateFormat: "mustache"``);
- strings given to prompt-like names (``SYSTEM_PROMPT``, ``systemPrompt``, ``instructions:`` of
  an agent, ``buildSystemPrompt()``'s return) that no call above used.

Strings are template literals (``${expr}`` is a slot), string literals, ``+`` concatenation,
``[...].join(sep)``, ``.trim()``, ``dedent``/``stripIndent`` tags; names are followed to their
last declaration before use, and calls of local functions to their single ``return``.
"""

from __future__ import annotations

import re
from typing import Iterable

from ..classify import names_in
from ..model import Doc, Parsed, Part, Piece, Slot, Span
from .treesitter import FSTRING_FIELD, MUSTACHE_FIELD, N8N_FIELD, Node, TSFile, dedent_pieces, split_fields

PROMPT_NAME = re.compile(r"(?i)(prompt|system|instruction|template|persona|preamble)")
_SYSTEM_NAME = re.compile(r"(?i)system|instruction|persona|preamble")
_AI_SDK = {"generateText", "streamText", "generateObject", "streamObject", "streamUI"}
_ANTHROPIC = re.compile(r"(?:^|\.)messages\.(?:create|stream|countTokens)$")
_OPENAI_CHAT = re.compile(r"(?:^|\.)chat\.completions\.(?:create|parse|stream)$")
_OPENAI_RESP = re.compile(r"(?:^|\.)responses\.(?:create|parse|stream)$")
_LC_TEMPLATE = {"PromptTemplate", "ChatPromptTemplate", "SystemMessagePromptTemplate",
                "HumanMessagePromptTemplate", "AIMessagePromptTemplate"}
_LC_ROLES = {"system": "system", "human": "user", "user": "user", "ai": "assistant", "assistant": "assistant",
             "placeholder": "user"}
_DEDENT_TAGS = {"dedent", "stripIndent", "stripIndents", "outdent", "endent", "oneLine", "oneLineTrim"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_MAX_DEPTH = 12
_UNKNOWN = object()
_WRAPPERS = ("parenthesized_expression", "as_expression", "satisfies_expression", "non_null_expression",
             "type_assertion")


#: How a system prompt opens ("You are Cypher, ...", "Act as ...", "Your task is ...").
_PROMPT_OPENING = re.compile(r"\s*(?:#+[^\n]*\n\s*)?(?:you are|you're|act as|you will act|your (?:role|task|job|goal) is|"
                             r"as an? [\w -]{0,40}(?:assistant|agent|expert|bot))\b", re.I)


def _unescape(seq: str) -> str:
    """The text of a JavaScript escape sequence (``\\n``, ``\\u{1F600}``, ``\\x41``)."""
    body = seq[1:]
    if not body:
        return ""
    if body[0] in _ESCAPES:
        return _ESCAPES[body[0]]
    try:
        if body[0] == "u":
            return chr(int(body[2:-1] if body.startswith("u{") else body[1:5], 16))
        if body[0] == "x":
            return chr(int(body[1:3], 16))
    except ValueError:
        return seq
    if body[0] == "\n" or body.startswith("\r\n"):
        return ""  # a line continuation
    return body


class JsSource:
    """One TypeScript or JavaScript file and the prompts in it."""

    def __init__(self, path: str, text: str, grammar: str):
        self.f = TSFile(path, text, grammar)
        self.path = path
        self.decls: dict[str, list[tuple[int, Node, Node]]] = {}  # name → [(start byte, declarator, value)]
        self.functions: dict[str, list[Node]] = {}  # name → the expressions it returns, in order
        self.consumed: set[int] = set()  # ids of declarators and functions a prompt used
        self.calls: list[Node] = []
        self.pairs: list[Node] = []
        self.json_imports: set[str] = set()  # names bound to an imported JSON module: data fixed at build time
        self.exported: set[str] = set()  # names the module exports (ES `export`, CommonJS `module.exports`)
        for n in self.f.walk():
            t = n.type
            if t == "export_statement":
                self.exported.update(self._export_names(n))
            elif t == "assignment_expression" and n.child_by_field_name("left") is not None:
                left = re.sub(r"\s+", "", self.f.src(n.child_by_field_name("left")))
                if left == "module.exports" or left.startswith(("exports.", "module.exports.")):
                    self.exported.update(self._export_names(n))
            if t == "variable_declarator":
                name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
                if name is not None and value is not None and name.type == "identifier":
                    self.decls.setdefault(self.f.src(name), []).append((n.start_byte, n, value))
                    if value.type in ("arrow_function", "function_expression", "function"):
                        rets = self._returns(value)
                        if rets:
                            self.functions[self.f.src(name)] = rets
            elif t == "assignment_expression":
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                if left is not None and right is not None and left.type == "identifier":
                    self.decls.setdefault(self.f.src(left), []).append((n.start_byte, n, right))
            elif t == "function_declaration":
                name = n.child_by_field_name("name")
                rets = self._returns(n)
                if name is not None and rets:
                    self.functions[self.f.src(name)] = rets
            elif t == "method_definition":
                name = n.child_by_field_name("name")
                rets = self._returns(n)
                if name is not None and rets:
                    self.functions.setdefault(self.f.src(name), rets)
            elif t in ("call_expression", "new_expression"):
                self.calls.append(n)
            elif t == "pair":
                self.pairs.append(n)
            elif t == "import_statement":
                source = n.child_by_field_name("source")
                if source is not None and self.f.src(source).strip("'\"`").lower().endswith(".json"):
                    for c in self.f.walk(n):
                        if c.type == "identifier" and c.parent is not None and c.parent.type in (
                                "import_clause", "namespace_import", "import_specifier"):
                            self.json_imports.add(self.f.src(c))

    # ----------------------------------------------------------------- names and functions

    def _export_names(self, n: Node) -> set[str]:
        """The names an ``export`` statement (or a ``module.exports = ...`` /
        ``exports.x = ...`` assignment) exports."""
        out: set[str] = set()
        decl = n.child_by_field_name("declaration")
        if decl is not None:
            name = decl.child_by_field_name("name")
            if name is not None:
                out.add(self.f.src(name))
            for d in decl.named_children:
                if d.type == "variable_declarator" and d.child_by_field_name("name") is not None:
                    out.add(self.f.src(d.child_by_field_name("name")))
        value = n.child_by_field_name("value") if n.type == "export_statement" else n.child_by_field_name("right")
        if value is not None and value.type == "identifier":
            out.add(self.f.src(value))
        if n.type == "assignment_expression":
            left = re.sub(r"\s+", "", self.f.src(n.child_by_field_name("left") or n))
            last = left.rsplit(".", 1)[-1]
            if left != "module.exports" and last != "default":  # exports.base = ... / module.exports.base = ...
                out.add(last)
        for c in self.f.walk(n):
            if c.type == "export_specifier" and c.child_by_field_name("name") is not None:
                out.add(self.f.src(c.child_by_field_name("name")))
            elif c.type == "shorthand_property_identifier" and n.type == "assignment_expression":
                out.add(self.f.src(c))
            elif c.type == "pair" and n.type == "assignment_expression" and c.parent is not None \
                    and c.parent.parent is n and c.child_by_field_name("value") is not None \
                    and c.child_by_field_name("value").type == "identifier":
                out.add(self.f.src(c.child_by_field_name("value")))
        return out

    def _prose_prompt(self, node: Node) -> bool:
        """Whether a returned template literal reads as a prompt by itself: its text opens as a
        system prompt does ("You are ...", "Act as ...", "Your task is ..."), or it is long
        prose (at least 80 words in 3 sentences)."""
        node = self._unwrap(node)
        if node.type != "template_string":
            return False
        text = "".join(self.f.src(c) for c in node.named_children if c.type == "string_fragment")
        if _PROMPT_OPENING.match(text):
            return True
        return len(re.findall(r"[A-Za-z][A-Za-z'’-]*", text)) >= 80 and len(re.findall(r"[.!?](?:\s|$)", text)) >= 3

    def _returns(self, fn: Node) -> list[Node]:
        """The expressions a function returns, in source order (an arrow function's expression
        body is its one return; nested functions' returns are theirs)."""
        body = fn.child_by_field_name("body")
        if body is None:
            return []
        if body.type != "statement_block":
            return [body]  # an arrow function's expression body
        rets = []
        stack = list(reversed(body.children))
        while stack:
            n = stack.pop()
            if n.type == "return_statement":
                vals = [c for c in n.named_children if c.type != "comment"]
                if vals:
                    rets.append(vals[0])
            elif n.type not in ("function_declaration", "arrow_function", "function_expression", "method_definition",
                                "class_declaration"):
                stack.extend(reversed(n.children))
        return rets

    def _prompt_returns(self, name: str, depth: int = 0) -> list[Node] | None:
        """The returns of a local function when they are prompt text (each a string expression
        or ``""``, at least one not empty), else ``None``."""
        rets = self.functions.get(name)
        if not rets:
            return None
        ok = [self.is_stringish(r, depth + 1) for r in rets]
        if any(ok) and all(k or self._is_empty(r) for k, r in zip(ok, rets)):
            return rets
        return None

    def _is_empty(self, node: Node) -> bool:
        node = self._unwrap(node)
        return (node.type == "string" and not self._string(node)) or node.type in ("null", "undefined")

    def _returned_pieces(self, rets: list[Node], span_node: Node, depth: int) -> list[Piece]:
        if len(rets) == 1:
            return self.pieces(rets[0], depth + 1)
        # several returns: the prompt is one of them (each an alternative, checked on its own)
        return [Piece("branch", span=self.f.span(span_node),
                      branches=tuple(tuple(self.pieces(r, depth + 1)) if not self._is_empty(r) else () for r in rets))]

    # ----------------------------------------------------------------- constants of the file

    _GLOBALS = frozenset({"JSON", "Object", "Array", "String", "Number", "Boolean", "undefined", "Infinity", "NaN"})

    def const_value(self, node: Node, depth: int = 0) -> object:
        """``True`` / ``False`` for a condition that is a constant of the file (``true``,
        ``!x``, a ``const`` bound to one), else :data:`_UNKNOWN`."""
        node = self._unwrap(node)
        if depth > _MAX_DEPTH:
            return _UNKNOWN
        if node.type in ("true", "false"):
            return node.type == "true"
        if node.type == "unary_expression" and self.f.src(node).lstrip().startswith("!") and node.named_children:
            v = self.const_value(node.named_children[-1], depth + 1)
            return _UNKNOWN if v is _UNKNOWN else (not v)
        if node.type == "identifier":
            got = self.resolve(node)
            if got is not None and self._is_const_decl(got[0]):
                return self.const_value(got[1], depth + 1)
        return _UNKNOWN

    def _is_const_decl(self, decl: Node) -> bool:
        p = decl.parent
        return p is not None and p.type == "lexical_declaration" and self.f.src(p).lstrip().startswith("const")

    def is_constant(self, node: Node, depth: int = 0, params: frozenset[str] = frozenset()) -> bool:
        """Whether an expression is fixed when the code is built: literals, ``const``s bound to
        constants, imported JSON (``import cats from "./categories.json"``), and what is
        computed from those alone (``cats.items.map((c) => c.id).join(", ")``)."""
        if depth > _MAX_DEPTH:
            return False
        node = self._unwrap(node)
        t = node.type
        if t in ("string", "number", "true", "false", "null", "undefined", "regex", "property_identifier",
                 "shorthand_property_identifier", "comment"):
            return True
        if t == "identifier":
            name = self.f.src(node)
            if name in params or name in self.json_imports or name in self._GLOBALS:
                return True
            got = self.resolve(node)
            return got is not None and self._is_const_decl(got[0]) and self.is_constant(got[1], depth + 1, params)
        if t in ("arrow_function", "function_expression"):
            ps = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
            names = {self.f.src(c) for c in self.f.walk(ps) if c.type == "identifier"} if ps is not None else set()
            body = node.child_by_field_name("body")
            return body is not None and self.is_constant(body, depth + 1, params | frozenset(names))
        if t in ("template_string", "array", "object", "pair", "member_expression", "subscript_expression",
                 "call_expression", "binary_expression", "unary_expression", "ternary_expression",
                 "conditional_expression", "arguments", "template_substitution", "spread_element",
                 "string_fragment", "escape_sequence", "formal_parameters", "statement_block", "return_statement",
                 "expression_statement"):
            if t == "member_expression":
                obj = node.child_by_field_name("object")
                return obj is not None and self.is_constant(obj, depth + 1, params)
            return all(self.is_constant(c, depth + 1, params) for c in node.named_children)
        return False

    def resolve(self, ident: Node) -> tuple[Node, Node] | None:
        """The last declaration of an identifier before its use (else the first after it):
        ``(declarator, value)``."""
        got = self.decls.get(self.f.src(ident))
        if not got:
            return None
        before = [d for d in got if d[0] < ident.start_byte]
        pick = before[-1] if before else got[0]
        if pick[2].start_byte <= ident.start_byte < pick[2].end_byte:
            return None  # x = x + ...: the value refers to an earlier x
        return pick[1], pick[2]

    def values_of(self, ident: Node) -> list[Node]:
        """Every value the variable may hold where it is used: its declaration's and the
        reassignments (``x = ...``) before the use in the same function (``let context = "";
        try { context = await retrieve(q) } catch { context = "" }``); one value when it is
        assigned once."""
        got = self.decls.get(self.f.src(ident))
        picked = self.resolve(ident)
        if not got or picked is None:
            return []
        scope = self._scope(picked[0])
        vals = [v for start, d, v in got if start < ident.start_byte and self._scope(d) is not None
                and scope is not None and self._scope(d).id == scope.id and not (v.start_byte <= ident.start_byte < v.end_byte)]
        if picked[1] not in vals:
            vals.append(picked[1])
        return vals if len(vals) > 1 else [picked[1]]

    @staticmethod
    def _scope(node: Node) -> Node | None:
        p = node.parent
        while p is not None and p.type not in ("function_declaration", "arrow_function", "function_expression",
                                               "method_definition", "program"):
            p = p.parent
        return p

    @staticmethod
    def _callee_name(call: Node, src: str) -> str:
        return src.rsplit(".", 1)[-1].strip()

    def callee(self, call: Node) -> str:
        fn = call.child_by_field_name("function") or call.child_by_field_name("constructor")
        return re.sub(r"\s+", "", self.f.src(fn)) if fn is not None else ""

    def args(self, call: Node) -> list[Node]:
        a = call.child_by_field_name("arguments")
        if a is None:
            return []
        if a.type == "template_string":  # a tagged template: dedent`...`
            return [a]
        return [c for c in a.named_children if c.type != "comment"]

    # ----------------------------------------------------------------- string expressions

    def operands(self, node: Node) -> list[Node]:
        """The operands of a ``+`` chain, left to right, found without recursion (parentheses
        around a ``+`` are looked through)."""
        return self.f.plus_operands(node, self._unwrap)

    def _unwrap(self, node: Node) -> Node:
        for _ in range(_MAX_DEPTH):
            if node.type in _WRAPPERS and node.named_children:
                node = node.named_children[0]
            else:
                break
        return node

    def is_stringish(self, node: Node, depth: int = 0) -> bool:
        """Whether an expression evidently builds a string."""
        if depth > _MAX_DEPTH or node is None:
            return False
        node = self._unwrap(node)
        t = node.type
        if t in ("string", "template_string"):
            return True
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            if op is not None and self.f.src(op) == "+":
                return any(self.is_stringish(o, depth + 1) for o in self.operands(node))
            return False
        if t == "identifier":
            vals = self.values_of(node)
            return bool(vals) and all(self.is_stringish(v, depth + 1) for v in vals)
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            if fn is None:
                return False
            args = self.args(node)
            if fn.type == "member_expression":
                prop = self.f.src(fn.child_by_field_name("property") or fn)
                obj = fn.child_by_field_name("object")
                if prop == "join" and obj is not None and self._unwrap(obj).type == "array":
                    return True
                if prop in ("trim", "trimStart", "trimEnd", "concat") and obj is not None:
                    return self.is_stringish(obj, depth + 1)
            if fn.type == "identifier":
                name = self.f.src(fn)
                if name in _DEDENT_TAGS and args:
                    return self.is_stringish(args[0], depth + 1)
                if name in self.functions:
                    return self._prompt_returns(name, depth) is not None
        if t in ("ternary_expression", "conditional_expression"):
            return any(self.is_stringish(node.child_by_field_name(k), depth + 1) for k in ("consequence", "alternative"))
        return False

    def _string(self, node: Node) -> list[Piece]:
        """A string literal's text (escapes decoded)."""
        out = []
        for c in node.named_children:
            if c.type == "string_fragment":
                out.append(self.f.src(c))
            elif c.type == "escape_sequence":
                out.append(_unescape(self.f.src(c)))
        text = "".join(out)
        return [Piece("static", text, span=self.f.span(node))] if text else []

    def pieces(self, node: Node, depth: int = 0) -> list[Piece]:
        """Static text and slots of a string expression (anything else is one slot)."""
        if depth > _MAX_DEPTH:
            return [self.slot(node)]
        node = self._unwrap(node)
        t = node.type
        if t == "string":
            return self._string(node)
        if t == "template_string":
            out: list[Piece] = []
            for c in node.named_children:
                if c.type == "string_fragment":
                    out.append(Piece("static", self.f.src(c), span=self.f.span(c)))
                elif c.type == "escape_sequence":
                    out.append(Piece("static", _unescape(self.f.src(c)), span=self.f.span(c)))
                elif c.type == "template_substitution":
                    inner = [x for x in c.named_children if x.type != "comment"]
                    if inner:  # ${`nested ${x}`}, ${a + "b"}, ${regularPrompt}: followed to what they are
                        out += self.pieces(inner[0], depth + 1)
                    else:
                        out.append(self.slot(c))
            return [p for p in out if p.kind != "static" or p.text]
        if t in ("ternary_expression", "conditional_expression"):
            cond = node.child_by_field_name("condition")
            cons, alt = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
            if cond is not None and cons is not None and alt is not None and \
                    (self.is_stringish(cons, depth + 1) or self.is_stringish(alt, depth + 1)):
                v = self.const_value(cond)
                if v is not _UNKNOWN:  # `const USE_X = true; ... USE_X ? a : b` renders a
                    return self.pieces(cons if v else alt, depth + 1)
                return [Piece("branch", slot=self.slot(cond).slot, span=self.f.span(cond),
                              branches=(tuple(self.pieces(cons, depth + 1)), tuple(self.pieces(alt, depth + 1))))]
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            if op is not None and self.f.src(op) == "+":
                out = []
                for o in self.operands(node):  # a chain of any length is one level
                    out += self.pieces(o, depth + 1)
                return out
            return [self.slot(node)]
        if t == "identifier":
            got = self.resolve(node)
            vals = self.values_of(node)
            if got is not None and vals and all(self.is_stringish(v, depth + 1) for v in vals):
                self.consumed.add(got[0].id)
                if len(vals) == 1:
                    return self.pieces(got[1], depth + 1)
                # reassigned: the value is one of them
                return [Piece("branch", span=self.f.span(node), branches=tuple(tuple(self.pieces(v, depth + 1))
                                                                               for v in vals))]
            if self.is_constant(node):
                return [Piece("opaque", span=self.f.span(node))]
            return [self.slot(node)]
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            args = self.args(node)
            if fn is not None and fn.type == "member_expression":
                prop = self.f.src(fn.child_by_field_name("property") or fn)
                obj = fn.child_by_field_name("object")
                if prop == "join" and obj is not None and self._unwrap(obj).type == "array":
                    sep = "," if not args else None
                    if args and self._unwrap(args[0]).type == "string":
                        sep = "".join(p.text for p in self._string(self._unwrap(args[0])))
                    if sep is not None:
                        out = []
                        for k, el in enumerate(x for x in self._unwrap(obj).named_children if x.type != "comment"):
                            if k and sep:
                                out.append(Piece("static", sep, span=self.f.span(fn)))
                            out += self.pieces(el, depth + 1) if self.is_stringish(el, depth + 1) else [self.slot(el)]
                        return out
                if prop in ("trim", "trimStart", "trimEnd") and obj is not None and self.is_stringish(obj, depth + 1):
                    ps = self.pieces(obj, depth + 1)
                    if ps and ps[0].kind == "static" and prop in ("trim", "trimStart"):
                        ps[0] = Piece("static", ps[0].text.lstrip(), span=ps[0].span)
                    if ps and ps[-1].kind == "static" and prop in ("trim", "trimEnd"):
                        ps[-1] = Piece("static", ps[-1].text.rstrip(), span=ps[-1].span)
                    return [p for p in ps if p.kind != "static" or p.text]
                if prop == "concat" and obj is not None and self.is_stringish(obj, depth + 1):
                    out = self.pieces(obj, depth + 1)
                    for a in args:
                        out += self.pieces(a, depth + 1)
                    return out
            if fn is not None and fn.type == "identifier":
                name = self.f.src(fn)
                if name in _DEDENT_TAGS and args:
                    return dedent_pieces(self.pieces(args[0], depth + 1))
                rets = self._prompt_returns(name, depth) if name in self.functions else None
                if rets is not None:
                    for r in rets:
                        self.consumed.add(r.id)
                    return self._returned_pieces(rets, node, depth)
        if self.is_constant(node):
            return [Piece("opaque", span=self.f.span(node))]  # fixed when the code is built: stable
        return [self.slot(node)]

    def slot(self, node: Node, kind: str = "variable") -> Piece:
        """A slot for an expression: its source, and what its names were declared as."""
        s = self.f.src(node)
        probes = [f"{{{{ {' '.join(s.split())} }}}}", s]
        names = list(names_in(s))
        for ident in self._identifiers(node):
            for value in self.values_of(ident):
                v = self.f.src(value)
                probes += [f"{{{{ {' '.join(v.split())} }}}}", v]
                names += names_in(v)
        return Piece("slot", slot=Slot(self.f.span(node), s, kind, tuple(dict.fromkeys(probes)),
                                       tuple(dict.fromkeys(names))))

    def _identifiers(self, node: Node) -> Iterable[Node]:
        for n in self.f.walk(node):
            if n.type == "identifier":
                yield n

    # ----------------------------------------------------------------- templates held in strings

    def template_pieces(self, node: Node, fmt: str = "f-string") -> list[Piece]:
        """A LangChain (or other prompt-library) template held in a string expression: its
        ``{field}`` (or ``{{field}}``) placeholders are slots too."""
        ps = self.pieces(node)
        pattern = MUSTACHE_FIELD if fmt == "mustache" else FSTRING_FIELD
        out = split_fields(ps, self.f.index, self.path, pattern)
        if fmt != "mustache":  # f-string escapes: {{ and }} render as { and }
            out = [Piece("static", p.text.replace("{{", "{").replace("}}", "}"), span=p.span)
                   if p.kind == "static" else p for p in out]
        return out

    # ----------------------------------------------------------------- objects

    def props(self, obj: Node) -> dict[str, tuple[Node, Node]]:
        """An object literal's properties: key → (key node, value node); shorthand ``{system}``
        maps to its identifier."""
        out: dict[str, tuple[Node, Node]] = {}
        obj = self._unwrap(obj)
        if obj.type == "identifier":
            got = self.resolve(obj)
            if got is None:
                return out
            obj = self._unwrap(got[1])
        if obj.type != "object":
            return out
        for c in obj.named_children:
            if c.type == "pair":
                k, v = c.child_by_field_name("key"), c.child_by_field_name("value")
                if k is not None and v is not None:
                    key = self.f.src(k).strip("'\"`")
                    out[key] = (k, v)
            elif c.type == "shorthand_property_identifier":
                out[self.f.src(c)] = (c, c)
        return out

    def _value_of(self, node: Node) -> Node:
        """A shorthand property's identifier stands for its declaration."""
        if node.type == "shorthand_property_identifier":
            for start, decl, value in reversed(self.decls.get(self.f.src(node), [])):
                if start < node.start_byte:
                    return value
        return node

    def text_parts(self, node: Node, role: str, name: str) -> list[Part]:
        """Parts of a ``system`` / ``content`` value: a string, or an array of content parts."""
        node = self._unwrap(self._value_of(node))
        if node.type == "array":
            out = []
            for k, el in enumerate(x for x in node.named_children if x.type != "comment"):
                p = self.props(el)
                if "text" in p:
                    out.append(Part(role, f"{name}[{k}]", self._text(p["text"][1]), self.f.span(el),
                                    self.f.span(p["cache_control"][0]) if "cache_control" in p else None))
                else:
                    out.append(Part(role, f"{name}[{k}]", [self.slot(el, "block")], self.f.span(el)))
            return out
        return [Part(role, name, self._text(node), self.f.span(node))]

    def _text(self, node: Node) -> list[Piece]:
        node = self._value_of(node)
        return self.pieces(node) if self.is_stringish(node) else [self.slot(node)]

    def message_parts(self, node: Node, key: str) -> list[Part]:
        """Parts of a ``messages`` array (``{role, content}`` objects; anything else, such as
        ``...history``, is conversation that varies)."""
        node = self._unwrap(self._value_of(node))
        if node.type == "identifier":
            got = self.resolve(node)
            if got is not None and self._unwrap(got[1]).type == "array":
                node = self._unwrap(got[1])
        if node.type != "array":
            return [Part("user", key, [self.slot(node, "block")], self.f.span(node))]
        out: list[Part] = []
        for k, el in enumerate(x for x in node.named_children if x.type != "comment"):
            p = self.props(el)
            name = f"{key}[{k}]"
            if "content" in p:
                role_n = p.get("role")
                role = self.f.src(role_n[1]).strip("'\"`") if role_n else "user"
                out += self.text_parts(p["content"][1], role, f"{name}.content")
            else:
                out.append(Part("user", name, [self.slot(el, "block")], self.f.span(el)))
        return out

    # ----------------------------------------------------------------- prompts

    def _model(self, node: Node) -> str | None:
        node = self._unwrap(self._value_of(node))
        if node.type == "string":
            return "".join(p.text for p in self._string(node)) or None
        if node.type == "call_expression":
            args = self.args(node)
            if args and self._unwrap(args[0]).type == "string":
                return "".join(p.text for p in self._string(self._unwrap(args[0]))) or None
        return None

    def sdk_docs(self) -> list[Doc]:
        """One doc per call that sends a prompt."""
        from ...ingest.common import provider_for_model

        docs = []
        for call in self.calls:
            if call.type != "call_expression":
                continue
            callee = self.callee(call)
            short = callee.rsplit(".", 1)[-1]
            kind = "ai-sdk" if short in _AI_SDK else "anthropic" if _ANTHROPIC.search(callee) and ".chat." not in callee \
                else "chat" if _OPENAI_CHAT.search(callee) else "responses" if _OPENAI_RESP.search(callee) else None
            if kind is None:
                continue
            args = self.args(call)
            if not args:
                continue
            p = self.props(args[0])
            if not p:
                continue
            model = self._model(p["model"][1]) if "model" in p else None
            provider = "anthropic" if kind == "anthropic" else provider_for_model(model) if kind == "ai-sdk" else "openai"
            tools = [Part("tools", "tools", [Piece("opaque", span=self.f.span(p["tools"][1]))],
                          self.f.span(p["tools"][1]))] if "tools" in p else []
            msgs: list[Part] = []
            for key in ("system", "instructions"):
                if key in p:
                    msgs += self.text_parts(p[key][1], "system", key)
            if "messages" in p:
                msgs += self.message_parts(p["messages"][1], "messages")
            if "input" in p:
                v = p["input"][1]
                msgs += self.text_parts(v, "user", "input") if self.is_stringish(self._value_of(v)) \
                    else self.message_parts(v, "input")
            if "prompt" in p:
                msgs += self.text_parts(p["prompt"][1], "user", "prompt")
            if not msgs:
                continue
            lead = 0
            while lead < len(msgs) and msgs[lead].role in ("system", "developer"):
                lead += 1
            parts = tools + msgs if provider == "anthropic" else msgs[:lead] + tools + msgs[lead:]
            sp = self.f.span(call)
            docs.append(Doc(self.path, f"{short}@{sp.line}", parts, sp, model=model, provider=provider))
        return docs

    def langchain_docs(self) -> list[Doc]:
        """LangChain.js prompt templates."""
        docs = []
        for call in self.calls:
            callee = self.callee(call)
            head, _, method = callee.rpartition(".")
            args = self.args(call)
            sp = self.f.span(call)
            if call.type == "new_expression" and callee == "PromptTemplate" and args:
                p = self.props(args[0])
                if "template" in p:
                    fmt = self._fmt(p)
                    docs.append(Doc(self.path, f"PromptTemplate@{sp.line}",
                                    [Part("template", "template", self.template_pieces(self._value_of(p["template"][1]), fmt),
                                          sp)], sp))
                continue
            if head not in _LC_TEMPLATE or not args:
                continue
            if method == "fromTemplate" and head != "ChatPromptTemplate" and self.parent_is_messages(call):
                continue  # an element of fromMessages([...]): read there
            if method == "fromTemplate":
                role = "system" if head.startswith("System") else "user" if head.startswith("Human") else "template"
                docs.append(Doc(self.path, f"{head}@{sp.line}",
                                [Part(role, "template", self.template_pieces(args[0], self._fmt_arg(args)), sp)], sp))
            elif method == "fromMessages":
                arr = self._unwrap(self._value_of(args[0]))
                if arr.type == "identifier":
                    got = self.resolve(arr)
                    arr = self._unwrap(got[1]) if got else arr
                if arr.type != "array":
                    continue
                fmt = self._fmt_arg(args)
                parts = []
                for k, el in enumerate(x for x in arr.named_children if x.type != "comment"):
                    parts.append(self._lc_message(el, k, fmt))
                docs.append(Doc(self.path, f"ChatPromptTemplate@{sp.line}", parts, sp))
        return docs

    def n8n_docs(self) -> list[Doc]:
        """n8n workflows written with n8n's workflow SDK (``@n8n/workflow-sdk``):
        ``node({type: '@n8n/n8n-nodes-langchain.agent', config: {parameters: {options:
        {systemMessage: '=...'}}}})``, read as :func:`.workflow.n8n_docs` reads an export: per AI
        node, its system message, message values and text; a value starting with ``=`` is an
        expression whose ``{{ ... }}`` are values (``{{ $now }}``)."""
        from .workflow import _N8N_ROLE, _N8N_SYSTEM_KEYS, _N8N_TYPE, _N8N_USER_KEYS, N8N_AI

        docs = []
        for call in self.calls:
            args = self.args(call)
            if call.type != "call_expression" or not args:
                continue
            p = self.props(args[0])
            typ = self._literal_text(p["type"][1]) if "type" in p else None
            if not typ or not _N8N_TYPE.match(typ) or not N8N_AI.search(typ):
                continue
            config = self.props(p["config"][1]) if "config" in p else p
            params = self.props(config["parameters"][1]) if "parameters" in config else {}
            name = self._literal_text(config["name"][1]) if "name" in config else None
            parts: list[Part] = []
            opts = self.props(params["options"][1]) if "options" in params else {}
            for key in _N8N_SYSTEM_KEYS:
                for holder in (opts, params):
                    if key in holder and self.is_stringish(holder[key][1]):
                        parts.append(Part("system", key, self._n8n_text(holder[key][1]), self.f.span(holder[key][1])))
            msgs = self.props(params["messages"][1]) if "messages" in params else {}
            for key in ("messageValues", "values"):
                arr = self._unwrap(msgs[key][1]) if key in msgs else None
                if arr is None or arr.type != "array":
                    continue
                for k, el in enumerate(x for x in arr.named_children if x.type != "comment"):
                    m = self.props(el)
                    text = m.get("message") or m.get("content")
                    if text is None or not self.is_stringish(text[1]):
                        continue
                    kind = self._literal_text(m["type"][1]) if "type" in m else \
                        self._literal_text(m["role"][1]) if "role" in m else ""
                    parts.append(Part(_N8N_ROLE.get(kind or "", "user"), f"messages.{key}[{k}]",
                                      self._n8n_text(text[1]), self.f.span(text[1])))
            for key in _N8N_USER_KEYS:
                if key in params and self.is_stringish(params[key][1]):
                    parts.append(Part("user", key, self._n8n_text(params[key][1]), self.f.span(params[key][1])))
            if parts:
                parts.sort(key=lambda q: 0 if q.role == "system" else 1)
                sp = self.f.span(call)
                docs.append(Doc(self.path, name or f"{typ.rsplit('.', 1)[-1]}@{sp.line}", parts, sp))
        return docs

    def _literal_text(self, node: Node) -> str | None:
        node = self._unwrap(node)
        if node.type == "string":
            return "".join(p.text for p in self._string(node))
        if node.type == "template_string" and not any(c.type == "template_substitution" for c in node.named_children):
            return "".join(p.text for p in self.pieces(node))
        return None

    def _n8n_text(self, node: Node) -> list[Piece]:
        """An n8n parameter given as a string: static text, unless it starts with ``=`` (an
        expression, whose ``{{ ... }}`` are values, each located in the literal)."""
        self.consumed.add(node.id)  # read here, not again as a prompt-like property
        ps = self.pieces(node)
        if not ps or ps[0].kind != "static" or not ps[0].text.startswith("="):
            return ps
        ps[0] = Piece("static", ps[0].text[1:], span=ps[0].span)
        return split_fields([q for q in ps if q.kind != "static" or q.text], self.f.index, self.path, N8N_FIELD)

    def parent_is_messages(self, call: Node) -> bool:
        p = call.parent
        return p is not None and p.type == "array"

    def _fmt(self, props: dict[str, tuple[Node, Node]]) -> str:
        if "templateFormat" in props:
            return self.f.src(props["templateFormat"][1]).strip("'\"`")
        return "f-string"

    def _fmt_arg(self, args: list[Node]) -> str:
        return self._fmt(self.props(args[1])) if len(args) > 1 else "f-string"

    def _lc_message(self, el: Node, k: int, fmt: str) -> Part:
        name = f"messages[{k}]"
        el = self._unwrap(el)
        if el.type == "array":
            items = [x for x in el.named_children if x.type != "comment"]
            if len(items) == 2 and self._unwrap(items[0]).type == "string":
                role = "".join(p.text for p in self._string(self._unwrap(items[0])))
                r = _LC_ROLES.get(role, "user")
                if role == "placeholder":
                    return Part("user", name, [self.slot(items[1], "block")], self.f.span(el))
                return Part(r, name, self.template_pieces(self._value_of(items[1]), fmt), self.f.span(el))
        if el.type in ("call_expression", "new_expression"):
            callee = self.callee(el)
            args = self.args(el)
            head = callee.rpartition(".")[0] or callee
            if callee.endswith("MessagesPlaceholder"):
                return Part("user", name, [self.slot(el, "block")], self.f.span(el))
            if head in _LC_TEMPLATE and args:
                role = "system" if head.startswith("System") else "assistant" if head.startswith("AI") else "user"
                return Part(role, name, self.template_pieces(args[0], fmt), self.f.span(el))
            if callee in ("SystemMessage", "HumanMessage", "AIMessage") and args:
                role = {"SystemMessage": "system", "HumanMessage": "user", "AIMessage": "assistant"}[callee]
                a = self._unwrap(args[0])
                if a.type == "object":
                    p = self.props(a)
                    return Part(role, name, self._text(p["content"][1]) if "content" in p else [self.slot(a)],
                                self.f.span(el))
                return Part(role, name, self._text(a), self.f.span(el))
        return Part("user", name, [self.slot(el, "block")], self.f.span(el))

    def constant_docs(self, used: set[int]) -> list[Doc]:
        """Strings given to prompt-like names (declarations, object properties, functions) that
        no prompt above used. Each is built first (building marks what it uses as consumed),
        then kept if nothing used it."""
        cands: list[tuple[str, Node, Node, int]] = []
        for name, entries in self.decls.items():
            if PROMPT_NAME.search(name):
                cands += [(name, value, decl, decl.id) for _, decl, value in entries]
        for pair in self.pairs:
            k, v = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if k is None or v is None:
                continue
            key = self.f.src(k).strip("'\"`")
            if PROMPT_NAME.search(key) and not self._in_sdk_call(pair) and self._unwrap(v).type != "identifier":
                cands.append((key, v, pair, v.id))  # `instructions: SYSTEM_PROMPT`: the constant is the prompt
        fn_cands = []
        for name, rets in self.functions.items():
            if PROMPT_NAME.search(name):
                if len(rets) == 1:
                    cands.append((name, rets[0], rets[0], rets[0].id))
                else:
                    fn_cands.append((name, rets))
            elif len(rets) == 1 and name in self.exported and self._prose_prompt(rets[0]):
                # `export function base(models, tools) { return `You are ...` }`: the literal says it is a prompt
                cands.append((name, rets[0], rets[0], rets[0].id))
        built = []
        for name, value, at, key in cands:
            if key in used or key in self.consumed or not self.is_stringish(value):
                continue
            built.append((name, value, at, key, self.template_pieces(value)))
        for name, rets in fn_cands:  # several returns: the alternatives of one prompt
            if any(r.id in used or r.id in self.consumed for r in rets) or self._prompt_returns(name) is None:
                continue
            built.append((name, rets[0], rets[0], rets[0].id, self._returned_pieces(rets, rets[0], 0)))
        docs = []
        counts: dict[str, int] = {}
        for name, value, at, key, pieces in built:
            if key in self.consumed:
                continue
            counts[name] = counts.get(name, 0) + 1
            sp = self.f.span(at)
            nm = name if counts[name] == 1 else f"{name}@{sp.line}"
            role = "system" if _SYSTEM_NAME.search(name) else "template"
            docs.append(Doc(self.path, nm, [Part(role, name, pieces, self.f.span(value))], sp))
        return docs

    def _in_sdk_call(self, node: Node) -> bool:
        p = node.parent
        for _ in range(4):
            if p is None:
                return False
            if p.type == "call_expression":
                callee = self.callee(p)
                short = callee.rsplit(".", 1)[-1]
                return short in _AI_SDK or bool(_ANTHROPIC.search(callee) or _OPENAI_CHAT.search(callee)
                                                or _OPENAI_RESP.search(callee))
            p = p.parent
        return False


def parse_javascript(path: str, text: str) -> Parsed:
    """A TypeScript or JavaScript source → its prompts and directives (``template-syntax`` at
    the first place tree-sitter cannot parse)."""
    low = path.lower()
    grammar = "typescript" if low.endswith((".ts", ".mts", ".cts")) else "tsx"
    parsed = Parsed(path, "typescript" if grammar == "typescript" or low.endswith(".tsx") else "javascript")
    src = JsSource(path, text, grammar)
    issue = src.f.syntax_issue("TypeScript" if parsed.language == "typescript" else "JavaScript")
    if issue is not None:
        parsed.issues.append(issue)
    docs = src.sdk_docs() + src.langchain_docs() + src.n8n_docs()
    used = set(src.consumed)
    docs += src.constant_docs(used)
    parsed.docs += docs
    src.f.directives(parsed)
    return parsed
