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
from .treesitter import FSTRING_FIELD, MUSTACHE_FIELD, Node, TSFile, dedent_pieces, split_fields

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
_WRAPPERS = ("parenthesized_expression", "as_expression", "satisfies_expression", "non_null_expression",
             "type_assertion")


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
        self.functions: dict[str, Node] = {}  # name → the returned expression (single return)
        self.consumed: set[int] = set()  # ids of declarators and functions a prompt used
        self.calls: list[Node] = []
        self.pairs: list[Node] = []
        for n in self.f.walk():
            t = n.type
            if t == "variable_declarator":
                name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
                if name is not None and value is not None and name.type == "identifier":
                    self.decls.setdefault(self.f.src(name), []).append((n.start_byte, n, value))
                    if value.type in ("arrow_function", "function_expression", "function"):
                        ret = self._single_return(value)
                        if ret is not None:
                            self.functions[self.f.src(name)] = ret
            elif t == "assignment_expression":
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                if left is not None and right is not None and left.type == "identifier":
                    self.decls.setdefault(self.f.src(left), []).append((n.start_byte, n, right))
            elif t == "function_declaration":
                name = n.child_by_field_name("name")
                ret = self._single_return(n)
                if name is not None and ret is not None:
                    self.functions[self.f.src(name)] = ret
            elif t == "method_definition":
                name = n.child_by_field_name("name")
                ret = self._single_return(n)
                if name is not None and ret is not None:
                    self.functions.setdefault(self.f.src(name), ret)
            elif t in ("call_expression", "new_expression"):
                self.calls.append(n)
            elif t == "pair":
                self.pairs.append(n)

    # ----------------------------------------------------------------- names and functions

    def _single_return(self, fn: Node) -> Node | None:
        body = fn.child_by_field_name("body")
        if body is None:
            return None
        if body.type != "statement_block":
            return body  # an arrow function's expression body
        rets = []
        stack = list(body.children)
        while stack:
            n = stack.pop()
            if n.type == "return_statement":
                rets.append(n)
            elif n.type not in ("function_declaration", "arrow_function", "function_expression", "method_definition",
                                "class_declaration"):
                stack.extend(n.children)
        if len(rets) != 1:
            return None
        vals = [c for c in rets[0].named_children if c.type != "comment"]
        return vals[0] if vals else None

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
            got = self.resolve(node)
            return got is not None and self.is_stringish(got[1], depth + 1)
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
                    return self.is_stringish(self.functions[name], depth + 1)
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
                    if inner and self.is_stringish(inner[0], depth + 1) and inner[0].type != "identifier":
                        out += self.pieces(inner[0], depth + 1)  # ${`nested ${x}`} or ${a + "b"}
                    else:
                        out.append(self.slot(inner[0] if inner else c))
            return [p for p in out if p.kind != "static" or p.text]
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
            if got is not None and self.is_stringish(got[1], depth + 1):
                self.consumed.add(got[0].id)
                return self.pieces(got[1], depth + 1)
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
                if name in self.functions and self.is_stringish(self.functions[name], depth + 1):
                    self.consumed.add(self.functions[name].id)
                    return self.pieces(self.functions[name], depth + 1)
        return [self.slot(node)]

    def slot(self, node: Node, kind: str = "variable") -> Piece:
        """A slot for an expression: its source, and what its names were declared as."""
        s = self.f.src(node)
        probes = [f"{{{{ {' '.join(s.split())} }}}}", s]
        names = list(names_in(s))
        for ident in self._identifiers(node):
            got = self.resolve(ident)
            if got is not None:
                v = self.f.src(got[1])
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
        for name, ret in self.functions.items():
            if PROMPT_NAME.search(name):
                cands.append((name, ret, ret, ret.id))
        built = []
        for name, value, at, key in cands:
            if key in used or key in self.consumed or not self.is_stringish(value):
                continue
            built.append((name, value, at, key, self.template_pieces(value)))
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
    docs = src.sdk_docs() + src.langchain_docs()
    used = set(src.consumed)
    docs += src.constant_docs(used)
    parsed.docs += docs
    src.f.directives(parsed)
    return parsed
