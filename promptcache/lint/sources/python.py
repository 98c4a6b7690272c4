"""Python sources: prompts built in code, and code that makes them unstable.

What is read (with :mod:`ast`; nothing is imported or run):

- request bodies passed to the SDKs: Anthropic ``*.messages.create|stream|count_tokens``,
  OpenAI ``*.chat.completions.create|parse|stream`` and ``*.responses.create|parse|stream``
  (keyword arguments, ``**kwargs`` from a dict literal), in the provider's prefix order;
- prompt strings: constants, f-strings, ``+`` concatenations, ``str.format`` calls,
  ``"sep".join([...])``, ``textwrap.dedent`` / ``inspect.cleandoc``; names are followed to
  their last assignment in the function, then in the module, and calls of module functions to
  their ``return`` expression;
- assignments to prompt-like names (``SYSTEM_PROMPT``, ``instructions``, ``user_template``)
  not already used by an SDK call (a constant holding ``{{ }}`` or ``{% %}`` is a Jinja
  template; a message dict ``{"role": "system", "content": f"..."}`` or a list of them is read
  as those messages), and Jinja templates built with ``Template(...)`` / ``env.from_string(...)``;
- LangChain prompt templates (:mod:`.langchain`).

Code checks run on the expressions that flow into a prompt or a tool list (the SDK call's
arguments and whatever their names were built from, loops that append to them included):
``json.dumps`` without ``sort_keys=True``; iteration over a set, or over a dict's ``keys()``,
``values()`` or ``items()``, in what becomes the tools; ordering by a relevance score in what
becomes the prompt. Nothing else in the file is judged.
"""

from __future__ import annotations

import ast
import io
import re
import string
import textwrap
import tokenize
from typing import Iterator

from ..classify import names_in
from ..model import Doc, Edit, Issue, Parsed, Part, Piece, Slot, Span
from .base import ByteColumns, LineIndex, Occurrences, line_removal, next_content_line, parse_directive, split_lines
from .langchain import langchain_docs

PROMPT_NAME = re.compile(r"(?i)(prompt|system|instruction|template|persona|preamble)")
_ANTHROPIC = re.compile(r"(?:^|\.)messages\.(?:create|stream|count_tokens)$")
_OPENAI_CHAT = re.compile(r"(?:^|\.)chat\.completions\.(?:create|parse|stream)$")
_OPENAI_RESP = re.compile(r"(?:^|\.)responses\.(?:create|parse|stream)$")
_SCORE = re.compile(r"(?i)score|relevance|similarity|distance|rank")
_MAX_DEPTH = 8
_FIELD = re.compile(r"(?<!\{)\{([A-Za-z_]\w*(?:\.\w+|\[[^\]{}]*\])*)(?:![rsa])?(?::[^{}\n]*)?\}(?!\})")

Scope = ast.AST  # a Module, FunctionDef or AsyncFunctionDef


class PythonSource:
    """One parsed Python file and the prompts in it."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.index = LineIndex(text)
        self.lines = split_lines(text)  # as Python's tokenizer numbers them
        self.columns = ByteColumns(self.lines)
        self.tree = ast.parse(text)
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for ch in ast.iter_child_nodes(node):
                self.parent[ch] = node
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {
            n.name: n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        # methods of the classes in the file, by name (``self.get_prompt()`` is followed to them)
        self.methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for c in self.tree.body:
            if isinstance(c, ast.ClassDef):
                for n in c.body:
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.methods.setdefault(n.name, n)
        # `from string import Template` / `import string`: Template("...$name...") is string.Template
        self.string_template = any(
            (isinstance(n, ast.ImportFrom) and n.module == "string" and any(a.name == "Template" for a in n.names))
            for n in self.tree.body)
        self.consumed: set[ast.AST] = set()  # assignments an SDK call used
        self.consumed_functions: set[ast.AST] = set()  # functions whose returns another prompt used
        self.flows: list[tuple[str, ast.AST, Scope]] = []  # ("tools" | "prompt", node, scope)
        self.issues: list[Issue] = []

    # ----------------------------------------------------------------- positions

    def _col(self, lineno: int, col_offset: int) -> int:
        return self.columns.col(lineno - 1, col_offset) + 1

    def offset(self, lineno: int, col_offset: int) -> int:
        """Character offset of an AST (line, byte column)."""
        return self.index.offset(lineno, self._col(lineno, col_offset))

    def span(self, node: ast.AST) -> Span:
        """The span of a node."""
        a = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        b = self.offset(node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)  # type: ignore[attr-defined]
        return self.index.span(self.path, a, b)

    def src(self, node: ast.AST) -> str:
        """The source text of a node (sliced through the line index: ``ast.get_source_segment``
        splits the whole file on every call)."""
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None or not hasattr(node, "lineno"):
            return ""
        return self.text[self.offset(node.lineno, node.col_offset):self.offset(end_line, end_col)]  # type: ignore[attr-defined]

    # ----------------------------------------------------------------- scopes and names

    def scope_of(self, node: ast.AST) -> Scope:
        """The function (or module) a node sits in."""
        p = self.parent.get(node)
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            p = self.parent.get(p)
        return p or self.tree

    def _own_nodes(self, scope: Scope) -> Iterator[ast.AST]:
        """Nodes of a scope, not descending into nested functions or classes."""
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            n = stack.pop()
            yield n
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.extend(ast.iter_child_nodes(n))

    def assignment(self, name: str, scope: Scope, before: int | None) -> tuple[ast.AST, ast.expr] | None:
        """The last ``name = value`` in ``scope`` before line ``before`` (then in the module)."""
        best: tuple[ast.AST, ast.expr] | None = None
        for n in self._own_nodes(scope):
            if isinstance(n, ast.Assign) and n.value is not None:
                targets = n.targets
            elif isinstance(n, ast.AnnAssign) and n.value is not None:
                targets = [n.target]
            else:
                continue
            if before is not None and scope is not self.tree and n.lineno >= before:
                continue
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                if best is None or n.lineno >= best[0].lineno:  # type: ignore[attr-defined]
                    best = (n, n.value)
        if best is None and scope is not self.tree:
            return self.assignment(name, self.tree, None)
        return best

    def mutations(self, name: str, scope: Scope) -> list[ast.AST]:
        """``name.append/extend/insert/update(...)`` calls and ``name += ...`` in ``scope``."""
        out: list[ast.AST] = []
        for n in self._own_nodes(scope):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                    isinstance(n.func.value, ast.Name) and n.func.value.id == name and \
                    n.func.attr in ("append", "extend", "insert", "update", "add"):
                out.append(n)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name:
                out.append(n)
        return out

    def enclosing_loops(self, node: ast.AST, scope: Scope) -> list[ast.AST]:
        """``for`` statements around ``node`` inside ``scope``."""
        out = []
        p = self.parent.get(node)
        while p is not None and p is not scope:
            if isinstance(p, (ast.For, ast.AsyncFor)):
                out.append(p)
            p = self.parent.get(p)
        return out

    def _flow(self, kind: str, node: ast.AST, scope: Scope) -> None:
        self.flows.append((kind, node, scope))

    def _name_sources(self, expr: ast.AST, scope: Scope, depth: int) -> list[str]:
        """Source texts the names in ``expr`` were assigned from (for probes)."""
        out = []
        for n in ast.walk(expr):
            if isinstance(n, ast.Name) and depth < _MAX_DEPTH:
                got = self.assignment(n.id, scope, getattr(expr, "lineno", None))
                if got is not None:
                    self._flow("prompt", got[1], self.scope_of(got[0]))
                    s = self.src(got[1])
                    out += [f"{{{{ {s} }}}}", s]
                    out += self._name_sources(got[1], self.scope_of(got[0]), depth + 1)
        return out

    def slot(self, node: ast.AST, scope: Scope, depth: int, *, kind: str = "variable",
              extra: tuple[str, ...] = ()) -> Piece:
        s = self.src(node)
        sources = self._name_sources(node, scope, depth)
        probes = (f"{{{{ {' '.join(s.split())} }}}}", s, *extra, *sources)
        names = [*names_in(s), *(n for src in sources for n in names_in(src))]
        return Piece("slot", slot=Slot(self.span(node), s, kind, tuple(dict.fromkeys(probes)),
                                       tuple(dict.fromkeys(names))))

    # ----------------------------------------------------------------- string expressions

    def is_stringish(self, node: ast.AST, scope: Scope, depth: int = 0) -> bool:
        """Whether an expression evidently builds a string."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str)
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return any(self.is_stringish(o, scope, depth + 1) for o in _operands(node))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("format", "strip", "lstrip", "rstrip") and \
                    self.is_stringish(node.func.value, scope, depth + 1):
                return True
            if node.func.attr == "join" and isinstance(node.func.value, ast.Constant):
                return True
            if node.func.attr in ("dedent", "cleandoc") and node.args:
                return self.is_stringish(node.args[0], scope, depth + 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("dedent", "cleandoc") \
                and node.args:
            return self.is_stringish(node.args[0], scope, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self.is_stringish(node.left, scope, depth + 1)
        if isinstance(node, ast.IfExp):
            return self.is_stringish(node.body, scope, depth + 1) or self.is_stringish(node.orelse, scope, depth + 1)
        if isinstance(node, ast.Call):
            content = _message_content(node)
            if content is not None:
                return self.is_stringish(content, scope, depth + 1)
            fn = self.callee(node)
            if fn is not None:
                rets = self.returns(fn)
                return bool(rets) and all(self.is_stringish(r, fn, depth + 1) or _is_empty(r) for r in rets) \
                    and any(self.is_stringish(r, fn, depth + 1) for r in rets)
        if isinstance(node, ast.Name):
            got = self.assignment(node.id, scope, node.lineno)
            return got is not None and self.is_stringish(got[1], self.scope_of(got[0]), depth + 1)
        return False

    def callee(self, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function of this file a call runs: ``f(...)`` a module function, ``self.f(...)``
        or ``cls.f(...)`` a method of a class in the file; else ``None``."""
        f = call.func
        if isinstance(f, ast.Name):
            return self.functions.get(f.id)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"):
            return self.methods.get(f.attr)
        return None

    def returns(self, fn: ast.AST) -> list[ast.expr]:
        """The values a function returns, in order (its own ``return`` statements; a bare
        ``return`` or ``return None`` is left out)."""
        return [n.value for n in self._own_nodes(fn) if isinstance(n, ast.Return) and n.value is not None
                and not (isinstance(n.value, ast.Constant) and n.value.value is None)]

    def constant_value(self, node: ast.AST, scope: Scope, depth: int = 0) -> object:
        """The value of an expression that is a constant of this file (``True``, a number, a
        string, or a name assigned only once, at module level, to one), else :data:`_UNKNOWN`."""
        if depth > _MAX_DEPTH:
            return _UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.constant_value(node.operand, scope, depth + 1)
            return _UNKNOWN if v is _UNKNOWN else (not v)
        if isinstance(node, ast.Name):
            assigned = [n for n in ast.walk(self.tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                        and any(isinstance(t, ast.Name) and t.id == node.id
                                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
            if len(assigned) == 1 and self.scope_of(assigned[0]) is self.tree and \
                    isinstance(assigned[0], (ast.Assign, ast.AnnAssign)) and assigned[0].value is not None:
                return self.constant_value(assigned[0].value, self.tree, depth + 1)
        return _UNKNOWN

    def pieces(self, node: ast.AST, scope: Scope, depth: int = 0) -> list[Piece]:
        """Static text and slots of a string expression (anything else is one slot)."""
        self._flow("prompt", node, scope)
        if depth > _MAX_DEPTH:
            return [self.slot(node, scope, depth)]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [Piece("static", node.value, span=self.span(node))] if node.value else []
        if isinstance(node, ast.JoinedStr):
            out: list[Piece] = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    if v.value:
                        out.append(Piece("static", v.value, span=self.span(node)))
                elif isinstance(v, ast.FormattedValue):
                    spec = _spec_text(v.format_spec)
                    # f"{now:%Y-%m-%d}" formats as now.strftime("%Y-%m-%d") does: what it renders is the spec's
                    extra = (f"{self.src(v.value)}.strftime({spec!r})",) if spec and "%" in spec else ()
                    out.append(self.slot(v.value, scope, depth, extra=extra))
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and self.is_stringish(node.left, scope):
            return self._percent(node, scope, depth)
        if isinstance(node, ast.IfExp) and (self.is_stringish(node.body, scope) or self.is_stringish(node.orelse, scope)):
            return self._choice(node.test, node.body, node.orelse, scope, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            out = []
            for o in _operands(node):  # a chain of any length is one level: each operand keeps its place
                out += self.pieces(o, scope, depth + 1)
            return out
        if isinstance(node, ast.Name):
            got = self.assignment(node.id, scope, node.lineno)
            if got is not None and self.is_stringish(got[1], self.scope_of(got[0])):
                self.consumed.add(got[0])
                return self.pieces(got[1], self.scope_of(got[0]), depth + 1)
            return [self.slot(node, scope, depth)]
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "format" and self.is_stringish(f.value, scope):
                return self._format(node, scope, depth)
            if isinstance(f, ast.Attribute) and f.attr in ("strip", "lstrip", "rstrip") and not node.args \
                    and self.is_stringish(f.value, scope):
                ps = self.pieces(f.value, scope, depth + 1)
                if ps and ps[0].kind == "static" and f.attr in ("strip", "lstrip"):
                    ps[0] = Piece("static", ps[0].text.lstrip(), span=ps[0].span)
                if ps and ps[-1].kind == "static" and f.attr in ("strip", "rstrip"):
                    ps[-1] = Piece("static", ps[-1].text.rstrip(), span=ps[-1].span)
                return [p for p in ps if p.kind != "static" or p.text]
            if isinstance(f, ast.Attribute) and f.attr == "join" and isinstance(f.value, ast.Constant) \
                    and isinstance(f.value.value, str) and len(node.args) == 1 \
                    and isinstance(node.args[0], (ast.List, ast.Tuple)):
                out = []
                for k, el in enumerate(node.args[0].elts):
                    if k and f.value.value:
                        out.append(Piece("static", f.value.value, span=self.span(f.value)))
                    out += self.pieces(el, scope, depth + 1)
                return out
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname in ("dedent", "cleandoc") and node.args:
                return _dedent(self.pieces(node.args[0], scope, depth + 1), fname == "cleandoc")
            content = _message_content(node)
            if content is not None and self.is_stringish(content, scope):
                return self.pieces(content, scope, depth + 1)  # SystemMessage(content=...): its text
            if fname == "Template" and self.string_template and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                return self._string_template(node.args[0])
            fn = self.callee(node)
            if fn is not None and self.is_stringish(node, scope, depth):
                rets = self.returns(fn)
                self.consumed_functions.add(fn)
                if len(rets) == 1:
                    return self.pieces(rets[0], fn, depth + 1)
                # several returns: one alternative each (the prompt is one of them)
                return [Piece("branch", span=self.span(node),
                              branches=tuple(tuple(self.pieces(r, fn, depth + 1)) for r in rets))]
        return [self.slot(node, scope, depth)]

    def _choice(self, test: ast.AST, body: ast.AST, orelse: ast.AST, scope: Scope, depth: int) -> list[Piece]:
        """``a if test else b``: one alternative each; a test that is a constant of the file
        (``USE_X = True``) renders only its side."""
        v = self.constant_value(test, scope)
        if v is not _UNKNOWN:
            return self.pieces(body if v else orelse, scope, depth + 1)
        cond = self.slot(test, scope, depth).slot
        return [Piece("branch", slot=cond, span=self.span(test),
                      branches=(tuple(self.pieces(body, scope, depth + 1)), tuple(self.pieces(orelse, scope, depth + 1))))]

    def _percent(self, node: ast.BinOp, scope: Scope, depth: int) -> list[Piece]:
        """``"... %s ..." % value`` / ``% (a, b)`` / ``% {"k": v}``: each conversion is a slot for
        its value, located at the conversion in the literal and named by the value
        (``%s (datetime.now())``)."""
        left = node.left
        base = left
        if isinstance(base, ast.Name):
            got = self.assignment(base.id, scope, base.lineno)
            if got is not None and isinstance(got[1], ast.Constant) and isinstance(got[1].value, str):
                self.consumed.add(got[0])
                base = got[1]
        if not (isinstance(base, ast.Constant) and isinstance(base.value, str)):
            return [*self.pieces(left, scope, depth + 1), self.slot(node.right, scope, depth)]
        right = node.right
        values = list(right.elts) if isinstance(right, ast.Tuple) else [right]
        mapping = {k.value: v for k, v in zip(right.keys, right.values)
                   if isinstance(k, ast.Constant) and isinstance(k.value, str)} if isinstance(right, ast.Dict) else {}
        a = self.offset(base.lineno, base.col_offset)
        src = self.text[a:self.offset(base.end_lineno or base.lineno, base.end_col_offset or 0)]
        occ = Occurrences(src)
        out: list[Piece] = []
        pos = 0
        k = 0
        text = base.value
        for m in _PERCENT.finditer(text):
            if m.group(0) == "%%":
                occ.find("%%")
                continue
            if m.start() > pos:
                out.append(Piece("static", text[pos:m.start()].replace("%%", "%"), span=self.span(base)))
            key = m.group("key")
            arg = mapping.get(key) if key is not None else (values[k] if k < len(values) and not mapping else None)
            if key is None:
                k += 1
            i = occ.find(m.group(0))
            span = self.index.span(self.path, a + max(i, 0), a + max(i, 0) + len(m.group(0)))
            if arg is not None:
                sl = self.slot(arg, scope, depth).slot
                assert sl is not None
                out.append(Piece("slot", slot=Slot(span, f"{m.group(0)} ({sl.source})", "variable", sl.probes, sl.names)))
            else:
                out.append(Piece("slot", slot=Slot(span, m.group(0), "variable", (m.group(0),), ())))
            pos = m.end()
        if pos < len(text):
            out.append(Piece("static", text[pos:].replace("%%", "%"), span=self.span(base)))
        return out

    def _string_template(self, lit: ast.Constant) -> list[Piece]:
        """``string.Template("... $name ... ${name} ...")``: ``$name`` are the values (``$$`` is a
        dollar sign)."""
        text = str(lit.value)
        a = self.offset(lit.lineno, lit.col_offset)
        src = self.text[a:self.offset(lit.end_lineno or lit.lineno, lit.end_col_offset or 0)]
        occ = Occurrences(src)
        out: list[Piece] = []
        pos = 0
        for m in _DOLLAR.finditer(text):
            if m.group(0) == "$$":
                continue
            if m.start() > pos:
                out.append(Piece("static", text[pos:m.start()].replace("$$", "$"), span=self.span(lit)))
            name = m.group(1) or m.group(2)
            i = occ.find(m.group(0))
            span = self.index.span(self.path, a + max(i, 0), a + max(i, 0) + len(m.group(0)))
            out.append(Piece("slot", slot=Slot(span, m.group(0), "variable", (f"{{{{ {name} }}}}", name), (name,))))
            pos = m.end()
        if pos < len(text):
            out.append(Piece("static", text[pos:].replace("$$", "$"), span=self.span(lit)))
        return out

    def _single_return(self, fn: ast.AST) -> ast.expr | None:
        """The value of a function's only ``return``, or ``None``."""
        rets = [n for n in self._own_nodes(fn) if isinstance(n, ast.Return) and n.value is not None]
        return rets[0].value if len(rets) == 1 else None  # type: ignore[union-attr]

    def _format(self, call: ast.Call, scope: Scope, depth: int) -> list[Piece]:
        recv = call.func.value  # type: ignore[attr-defined]
        base = recv
        dedent = None
        for _ in range(_MAX_DEPTH):
            if isinstance(base, ast.Name):
                got = self.assignment(base.id, scope, base.lineno)
                if got is None:
                    break
                self.consumed.add(got[0])
                base = got[1]
            elif isinstance(base, ast.Call) and len(base.args) == 1 and \
                    ((isinstance(base.func, ast.Attribute) and base.func.attr in ("dedent", "cleandoc")) or
                     (isinstance(base.func, ast.Name) and base.func.id in ("dedent", "cleandoc"))):
                dedent = "cleandoc" if (getattr(base.func, "attr", None) or getattr(base.func, "id", "")) == "cleandoc" \
                    else "dedent"
                base = base.args[0]
            else:
                break
        if not (isinstance(base, ast.Constant) and isinstance(base.value, str)):
            return self.pieces(recv, scope, depth + 1)  # an f-string template: already located
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        src_a = self.offset(base.lineno, base.col_offset)
        src_b = self.offset(base.end_lineno or base.lineno, base.end_col_offset or base.col_offset)
        src = self.text[src_a:src_b]
        out: list[Piece] = []
        auto = 0
        occurrences = Occurrences(src)
        try:
            fields = list(string.Formatter().parse(base.value))
        except ValueError:
            return [Piece("static", base.value, span=self.span(base))]
        for literal, field, spec, conv in fields:
            if literal:
                out.append(Piece("static", literal, span=self.span(base)))
            if field is None:
                continue
            root = re.split(r"[.\[]", field, maxsplit=1)[0]
            arg: ast.AST | None
            if root == "":
                arg = call.args[auto] if auto < len(call.args) else None
                auto += 1
            elif root.isdigit():
                arg = call.args[int(root)] if int(root) < len(call.args) else None
            else:
                arg = kw.get(root)
            raw = "{" + field
            i = occurrences.find(raw)
            span = self.index.span(self.path, src_a + max(i, 0), src_a + max(i, 0) + len(raw) + 1)
            probes = [f"{{{{ {field} }}}}", field]
            names = list(names_in(field))
            shown = "{" + field + "}"
            if arg is not None:
                self._flow("prompt", arg, scope)
                a = self.src(arg)
                sources = self._name_sources(arg, scope, depth)
                probes += [f"{{{{ {a} }}}}", a, *sources]
                names += [*names_in(a), *(n for src in sources for n in names_in(src))]
                if not field or field.isdigit():  # `{}` / `{0}`: the message names the argument that fills it
                    shown = f"{shown} ({' '.join(a.split())})"
            out.append(Piece("slot", slot=Slot(span, shown, "variable", tuple(dict.fromkeys(probes)),
                                               tuple(dict.fromkeys(names)))))
        return _dedent(out, dedent == "cleandoc") if dedent else out

    # ----------------------------------------------------------------- request bodies

    def _resolve_value(self, node: ast.AST, scope: Scope, kind: str) -> tuple[ast.AST, Scope]:
        """Follow a name to the literal it was assigned (recording the flow)."""
        self._flow(kind, node, scope)
        depth = 0
        while isinstance(node, ast.Name) and depth < _MAX_DEPTH:
            for m in self.mutations(node.id, scope):
                self._flow(kind, m, scope)
                for loop in self.enclosing_loops(m, scope):
                    self._flow(kind, loop.iter, scope)  # type: ignore[attr-defined]
            got = self.assignment(node.id, scope, node.lineno)
            if got is None:
                break
            if self.mutations(node.id, scope):
                self._flow(kind, got[1], scope)
                return node, scope  # built step by step: opaque
            self.consumed.add(got[0])
            scope = self.scope_of(got[0])
            node = got[1]
            self._flow(kind, node, scope)
            depth += 1
        return node, scope

    def _kwargs(self, call: ast.Call, scope: Scope) -> dict[str, tuple[ast.AST, ast.AST, Scope]]:
        """keyword → (key node for positions, value, scope); ``**d`` merged from a dict literal."""
        out: dict[str, tuple[ast.AST, ast.AST, Scope]] = {}
        for k in call.keywords:
            if k.arg is not None:
                out[k.arg] = (k, k.value, scope)
            else:
                d, dscope = self._resolve_value(k.value, scope, "prompt")
                if isinstance(d, ast.Dict):
                    for key, val in zip(d.keys, d.values):
                        if isinstance(key, ast.Constant) and isinstance(key.value, str):
                            out.setdefault(key.value, (key, val, dscope))
        return out

    @staticmethod
    def _dict_get(d: ast.Dict, key: str) -> tuple[ast.AST, ast.AST] | None:
        for k, v in zip(d.keys, d.values):
            if isinstance(k, ast.Constant) and k.value == key:
                return k, v
        return None

    def _text_parts(self, node: ast.AST, scope: Scope, role: str, name: str) -> list[Part]:
        """Parts of a system prompt or message content: a string, or a list of blocks."""
        if self.is_stringish(node, scope):
            return [Part(role, name, self.pieces(node, scope), self.span(node))]
        val, vscope = self._resolve_value(node, scope, "prompt")
        if isinstance(val, (ast.List, ast.Tuple)):
            out = []
            for k, blk in enumerate(val.elts):
                bname = f"{name}[{k}]"
                if isinstance(blk, ast.Dict):
                    txt = self._dict_get(blk, "text")
                    bp = self._dict_get(blk, "cache_control")
                    pieces = self.pieces(txt[1], vscope) if txt else [Piece("opaque", span=self.span(blk))]
                    out.append(Part(role, bname, pieces, self.span(blk), self.span(bp[0]) if bp else None))
                elif self.is_stringish(blk, vscope):
                    out.append(Part(role, bname, self.pieces(blk, vscope), self.span(blk)))
                else:
                    out.append(Part(role, bname, [self.slot(blk, vscope, 0, kind="block")], self.span(blk)))
            return out
        return [Part(role, name, [self.slot(node, scope, 0)], self.span(node))]

    def _tool_parts(self, node: ast.AST, scope: Scope) -> list[Part]:
        val, vscope = self._resolve_value(node, scope, "tools")
        if isinstance(val, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in val.elts):
            out = []
            for k, el in enumerate(val.elts):
                el_val, _ = self._resolve_value(el, vscope, "tools") if isinstance(el, ast.Name) else (el, vscope)
                bp = self._dict_get(el_val, "cache_control") if isinstance(el_val, ast.Dict) else None
                try:
                    lit = ast.literal_eval(el_val)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    lit = None
                if isinstance(lit, dict):
                    import json

                    lit.pop("cache_control", None)
                    piece = Piece("static", json.dumps(lit, ensure_ascii=False), span=self.span(el))
                else:
                    piece = Piece("opaque", span=self.span(el))
                out.append(Part("tools", f"tools[{k}]", [piece], self.span(el), self.span(bp[0]) if bp else None))
            return out
        return [Part("tools", "tools", [Piece("opaque", span=self.span(node))], self.span(node))]

    def _message_parts(self, node: ast.AST, scope: Scope, key: str) -> list[Part]:
        val, vscope = self._resolve_value(node, scope, "prompt")
        elts: list[tuple[ast.AST, Scope]] = []

        def collect(v: ast.AST, s: Scope, depth: int = 0) -> None:
            if isinstance(v, (ast.List, ast.Tuple)):
                elts.extend((e, s) for e in v.elts)
            elif isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add) and depth < _MAX_DEPTH:
                for side in (v.left, v.right):
                    sv, ss = self._resolve_value(side, s, "prompt")
                    collect(sv, ss, depth + 1)
            else:
                elts.append((v, s))

        collect(val, vscope)
        out: list[Part] = []
        for k, (m, ms) in enumerate(elts):
            name = f"{key}[{k}]"
            if isinstance(m, ast.Dict):
                role = self._dict_get(m, "role")
                content = self._dict_get(m, "content")
                r = role[1].value if role and isinstance(role[1], ast.Constant) else "user"
                if content is None:
                    continue
                parts = self._text_parts(content[1], ms, str(r), f"{name}.content")
                bp = self._dict_get(m, "cache_control")
                if bp and parts:
                    parts[-1].breakpoint = self.span(bp[0])
                out += parts
            else:  # history, a starred list, a helper's result: varies per conversation
                out.append(Part("user", name, [self.slot(m, ms, 0, kind="block")], self.span(m)))
        return out

    def sdk_docs(self) -> list[Doc]:
        """One doc per SDK call."""
        docs = []
        for call in ast.walk(self.tree):
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                continue
            dotted = self.src(call.func).replace(" ", "").replace("\n", "")
            if "threads." in dotted:
                continue
            kind = "anthropic" if _ANTHROPIC.search(dotted) and ".chat." not in dotted else \
                "chat" if _OPENAI_CHAT.search(dotted) else "responses" if _OPENAI_RESP.search(dotted) else None
            if kind is None:
                continue
            scope = self.scope_of(call)
            kw = self._kwargs(call, scope)
            model = None
            if "model" in kw:
                mv, _ = self._resolve_value(kw["model"][1], kw["model"][2], "prompt")
                model = mv.value if isinstance(mv, ast.Constant) and isinstance(mv.value, str) else None
            tools = self._tool_parts(kw["tools"][1], kw["tools"][2]) if "tools" in kw else []
            parts: list[Part] = []
            if kind == "anthropic":
                parts += tools
                if "system" in kw:
                    parts += self._text_parts(kw["system"][1], kw["system"][2], "system", "system")
                if "messages" in kw:
                    parts += self._message_parts(kw["messages"][1], kw["messages"][2], "messages")
            else:
                msgs: list[Part] = []
                if "instructions" in kw:
                    msgs += self._text_parts(kw["instructions"][1], kw["instructions"][2], "system", "instructions")
                key = "messages" if kind == "chat" else "input"
                if key in kw:
                    v, s = kw[key][1], kw[key][2]
                    msgs += self._text_parts(v, s, "user", key) if self.is_stringish(v, s) else \
                        self._message_parts(v, s, key)
                lead = 0
                while lead < len(msgs) and msgs[lead].role in ("system", "developer"):
                    lead += 1
                parts = msgs[:lead] + tools + msgs[lead:]
            auto = self.span(kw["cache_control"][0]) if kind == "anthropic" and "cache_control" in kw else None
            fn = dotted.rsplit(".", 2)
            name = f"{'.'.join(fn[-2:])}@{call.lineno}"
            docs.append(Doc(self.path, name, parts, self.span(call), model=model,
                            provider="anthropic" if kind == "anthropic" else "openai", automatic_breakpoint=auto))
        return docs

    def template_constant(self, target: ast.AST, fmt: str) -> list[Piece] | None:
        """A string constant that is a Jinja2 or Mustache template: its pieces, located in the
        literal; ``None`` for anything but a plain string constant."""
        from .templating import scan_jinja, scan_mustache

        if not (isinstance(target, ast.Constant) and isinstance(target.value, str)):
            return None
        a = self.offset(target.lineno, target.col_offset)  # type: ignore[attr-defined]
        raw_src = self.text[a:self.offset(target.end_lineno or target.lineno, target.end_col_offset or 0)]  # type: ignore[attr-defined]
        q = len(raw_src) - len(raw_src.lstrip("rRbBuUfF"))
        q += 3 if raw_src[q:q + 3] in ('"""', "'''") else 1
        locate = self.index.locator(self.path, a + q)
        scan = scan_mustache(target.value, locate) if fmt == "mustache" else \
            scan_jinja(target.value, locate, keep_trailing_newline=True)
        return scan.pieces

    def template_docs(self) -> list[Doc]:
        """Jinja2 templates built in code: ``Template("...")``, ``jinja2.Template("...")``,
        ``env.from_string("...")`` with a string constant (or a name bound to one)."""
        docs = []
        for call in ast.walk(self.tree):
            if not isinstance(call, ast.Call) or not call.args:
                continue
            f = call.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name not in ("Template", "from_string"):
                continue
            arg = call.args[0]
            if isinstance(arg, ast.Name):
                got = self.assignment(arg.id, self.scope_of(call), arg.lineno)
                if got is not None:
                    self.consumed.add(got[0])
                    arg = got[1]
            pieces = self.template_constant(arg, "jinja2")
            if pieces is None:
                continue
            owner = self.parent.get(call)
            label = owner.targets[0].id if isinstance(owner, ast.Assign) and isinstance(owner.targets[0], ast.Name) \
                else f"Template@{call.lineno}"
            role = "system" if re.search(r"(?i)system|instruction|persona|preamble", label) else "template"
            docs.append(Doc(self.path, label, [Part(role, label, pieces, self.span(arg))], self.span(call)))
        return sorted(docs, key=lambda d: (d.span.line, d.span.col))

    def function_docs(self) -> list[tuple[ast.AST, Doc]]:
        """One doc per function or method with a prompt-like name (``build_system_prompt``,
        ``get_system_message``) whose returns are prompt text (strings, f-strings,
        ``SystemMessage(content=...)``): several returns are alternatives of one prompt. Each
        with its function, so one another prompt used can be dropped (:func:`parse_python`)."""
        out = []
        fns = [*self.functions.values(), *(m for m in self.methods.values() if m not in self.functions.values())]
        for fn in fns:
            if not PROMPT_NAME.search(fn.name) and not re.search(r"(?i)system_?message", fn.name):
                continue
            rets = self.returns(fn)
            texts = [_message_content(r) or r for r in rets]  # type: ignore[arg-type]
            if not rets or not all(self.is_stringish(t, fn) or _is_empty(t) for t in texts) or \
                    not any(self.is_stringish(t, fn) for t in texts):
                continue
            roles = {_message_role(r) for r in rets} - {None}
            role = next(iter(roles)) if len(roles) == 1 else \
                "system" if re.search(r"(?i)system|instruction|persona|preamble", fn.name) else "template"
            alts = [self.fields(self.pieces(t, fn), t) if isinstance(t, ast.Constant) else self.pieces(t, fn)
                    for t in texts if not _is_empty(t)]
            if len(texts) > len(alts):  # a return of "": an alternative that renders nothing
                alts.append([])
            pieces = alts[0] if len(alts) == 1 else [Piece("branch", span=self.span(fn), branches=tuple(map(tuple, alts)))]
            out.append((fn, Doc(self.path, fn.name, [Part(role, fn.name, pieces, self.span(rets[0]))], self.span(fn))))
        return out

    def constant_docs(self) -> list[Doc]:
        """One doc per assignment of a prompt string to a prompt-like name that no SDK call used."""
        docs = []
        counts: dict[str, int] = {}
        for n in ast.walk(self.tree):
            if not isinstance(n, (ast.Assign, ast.AnnAssign)) or n in self.consumed or n.value is None:
                continue
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = [t.id for t in targets if isinstance(t, ast.Name) and PROMPT_NAME.search(t.id)]
            if not names:
                continue
            scope = self.scope_of(n)
            v = n.value
            message = _is_message(v) or (isinstance(v, (ast.List, ast.Tuple)) and bool(v.elts)
                                         and all(_is_message(e) for e in v.elts))
            if not message and not self.is_stringish(v, scope):
                continue
            nm = names[0]
            counts[nm] = counts.get(nm, 0) + 1
            name = nm if counts[nm] == 1 else f"{nm}@{n.lineno}"
            if message:  # {"role": "system", "content": f"..."} (or a list of them): the messages' content
                parts = self._message_parts(v, scope, nm)
                if parts:
                    docs.append(Doc(self.path, name, parts, self.span(n)))
                continue
            role = "system" if re.search(r"(?i)system|instruction|persona|preamble", nm) else "template"
            jinja = isinstance(n.value, ast.Constant) and isinstance(n.value.value, str) and \
                is_jinja_text(n.value.value)  # a Jinja template kept in a constant
            pieces = self.template_constant(n.value, "jinja2") if jinja else None
            docs.append(Doc(self.path, name, [Part(role, nm, pieces if pieces is not None else
                                                   self.fields(self.pieces(n.value, scope), n.value),
                                                   self.span(n.value))], self.span(n)))
        return docs

    def fields(self, pieces: list[Piece], node: ast.AST) -> list[Piece]:
        """``str.format`` fields (``{name}``) in a prompt constant's static text, as slots: the
        constant is a template that is formatted elsewhere."""
        a = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        b = self.offset(node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)  # type: ignore[attr-defined]
        src = self.text[a:b]
        occurrences = Occurrences(src)
        out: list[Piece] = []
        for p in pieces:
            if p.kind != "static":
                out.append(p)
                continue
            pos = 0
            for m in _FIELD.finditer(p.text):
                if m.start() > pos:
                    out.append(Piece("static", p.text[pos:m.start()], span=p.span))
                raw = m.group(0)
                i = occurrences.find(raw)
                span = self.index.span(self.path, a + max(i, 0), a + max(i, 0) + len(raw))
                name = m.group(1)
                out.append(Piece("slot", slot=Slot(span, raw, "variable", (f"{{{{ {name} }}}}", name),
                                                   names_in(name))))
                pos = m.end()
            if pos < len(p.text):
                out.append(Piece("static", p.text[pos:], span=p.span))
        return out

    # ----------------------------------------------------------------- code checks

    def code_checks(self) -> list[Issue]:
        """json.dumps without sort_keys, unordered iteration into tools, score ordering into
        prompts, over every expression that flows into a prompt or tool list."""
        seen: set[tuple[str, int, int]] = set()
        out: list[Issue] = []

        def add(issue: Issue) -> None:
            key = (issue.rule, issue.span.line, issue.span.col)
            if key not in seen:
                seen.add(key)
                out.append(issue)

        for kind, root, scope in self.flows:
            for n in ast.walk(root):
                if isinstance(n, ast.Call) and self._is_json_dumps(n) and not self._holds_no_mapping(n, scope):
                    fix = self._sort_keys_fix(n)
                    if fix is not None:
                        add(Issue("json-key-order", self.span(n.func), self.src(n), {"call": self.src(n.func)}, fix))
                if kind == "tools":
                    for it in self._iterables(n):
                        why = self._unordered(it, scope)
                        if why:
                            edits = (Edit(self.span(it), f"sorted({self.src(it)})"),) if why != "dict values" else ()
                            add(Issue("tools-reordered", self.span(it), self.src(it), {"iterable": self.src(it),
                                                                                       "why": why}, edits))
                if kind == "prompt" and isinstance(n, ast.Call):
                    key = next((k.value for k in n.keywords if k.arg == "key"), None)
                    is_sort = (isinstance(n.func, ast.Name) and n.func.id == "sorted") or \
                        (isinstance(n.func, ast.Attribute) and n.func.attr == "sort")
                    if is_sort and key is not None and _SCORE.search(self.src(key)):
                        add(Issue("documents-reordered", self.span(n), self.src(n), {"call": self.src(n)}))
        return out

    def _holds_no_mapping(self, call: ast.Call, scope: Scope) -> bool:
        """Whether ``json.dumps(x)`` dumps a value whose type annotation says it holds no mapping
        (``steps: list[str]``): it has no keys to order."""
        if not call.args or not isinstance(call.args[0], ast.Name):
            return False
        name = call.args[0].id
        fn = self.scope_of(call)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        params = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        ann = next((a.annotation for a in params if a.arg == name), None)
        if ann is None:
            return False
        for n in ast.walk(ann):
            if isinstance(n, ast.Name) and n.id not in _NO_MAPPING:
                return False
            if isinstance(n, ast.Attribute) and n.attr not in _NO_MAPPING:
                return False
            if isinstance(n, ast.Constant) and not (n.value is None or isinstance(n.value, str)):
                return False
        return True

    @staticmethod
    def _is_json_dumps(n: ast.Call) -> bool:
        f = n.func
        return (isinstance(f, ast.Attribute) and f.attr == "dumps" and isinstance(f.value, ast.Name)
                and f.value.id in ("json", "orjson", "simplejson")) or (isinstance(f, ast.Name) and f.id == "dumps")

    def _sort_keys_fix(self, n: ast.Call) -> tuple[Edit, ...] | None:
        """The edit that makes the call sort keys; ``None`` when it already does."""
        for k in n.keywords:
            if k.arg == "sort_keys":
                if isinstance(k.value, ast.Constant) and k.value.value is True:
                    return None
                return (Edit(self.span(k.value), "True"),)
            if k.arg is None:  # **kwargs may already carry it
                return ()
        if isinstance(n.func, ast.Attribute) and n.func.value.id == "orjson":  # type: ignore[attr-defined]
            return None if any(k.arg == "option" for k in n.keywords) else ()
        args = [*n.args, *n.keywords]
        if not args:
            return ()
        last = max(args, key=lambda a: (a.end_lineno, a.end_col_offset))  # type: ignore[attr-defined]
        end = self.span(last)
        return (Edit(Span(self.path, end.end_line, end.end_col, end.end_line, end.end_col), ", sort_keys=True"),)

    @staticmethod
    def _iterables(n: ast.AST) -> list[ast.AST]:
        if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            return [n.iter]
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("list", "tuple") and n.args:
            return [n.args[0]]
        if isinstance(n, (ast.List, ast.Tuple)):
            return [e.value for e in n.elts if isinstance(e, ast.Starred)]
        return []

    def _unordered(self, it: ast.AST, scope: Scope, depth: int = 0) -> str | None:
        """Why iterating ``it`` has no stable order (``None`` when it does)."""
        if isinstance(it, (ast.Set, ast.SetComp)):
            return "a set"
        if isinstance(it, ast.Call):
            f = it.func
            if isinstance(f, ast.Name) and f.id in ("set", "frozenset"):
                return "a set"
            if isinstance(f, ast.Attribute) and f.attr in ("keys", "items"):
                return "dict order"
            if isinstance(f, ast.Attribute) and f.attr == "values":
                return "dict values"
            if isinstance(f, ast.Attribute) and f.attr in ("union", "intersection", "difference"):
                return "a set"
        if isinstance(it, ast.BinOp) and isinstance(it.op, (ast.BitOr, ast.BitAnd, ast.Sub)):
            if self._unordered(it.left, scope, depth + 1) == "a set":
                return "a set"
        if isinstance(it, ast.Name) and depth < _MAX_DEPTH:
            got = self.assignment(it.id, scope, getattr(it, "lineno", None))
            if got is not None:
                return self._unordered(got[1], self.scope_of(got[0]), depth + 1)
        return None

    # ----------------------------------------------------------------- directives

    def directives(self, parsed: Parsed) -> None:
        """``# promptcache: ...`` comments."""
        try:
            toks = list(tokenize.generate_tokens(io.StringIO(self.text).readline))
        except (tokenize.TokenError, SyntaxError):
            return
        for t in toks:
            if t.type != tokenize.COMMENT or "promptcache" not in t.string:
                continue
            (line, c0), (_, c1) = t.start, t.end
            span = Span(self.path, line, c0 + 1, line, c1 + 1)
            alone = not t.line[:c0].strip()
            s = self.index.offset(line, c0 + 1)
            got = parse_directive(t.string[1:], span, alone=alone, next_line=next_content_line(self.index, line),
                                  removal=line_removal(self.index, self.path, s, s + (c1 - c0)))
            if got is not None:
                (parsed.issues if isinstance(got, Issue) else parsed.directives).append(got)  # type: ignore[arg-type]


_UNKNOWN = object()
#: Type names that hold no mapping (their JSON has no keys to order).
_NO_MAPPING = frozenset({"str", "int", "float", "bool", "bytes", "list", "List", "tuple", "Tuple", "set", "Set",
                         "frozenset", "FrozenSet", "Sequence", "Iterable", "Optional", "Union", "Literal", "None",
                         "typing"})
#: printf-style conversions of ``%`` formatting: ``%s``, ``%(name)s``, ``%-10.3f``, ``%%``.
_PERCENT = re.compile(r"%%|%(?:\((?P<key>[^)]*)\))?[#0 +-]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?[diouxXeEfFgGcrsa]")
_DOLLAR = re.compile(r"\$\$|\$([A-Za-z_]\w*)|\$\{([A-Za-z_]\w*)\}")
#: LangChain's message classes: their ``content`` is literal text.
_MESSAGE_CLASSES = {"SystemMessage": "system", "HumanMessage": "user", "AIMessage": "assistant",
                    "ChatMessage": "user", "ToolMessage": "tool", "FunctionMessage": "tool"}


def _message_content(call: ast.Call) -> ast.AST | None:
    """The ``content`` of ``SystemMessage(content=...)`` / ``HumanMessage("...")``, else ``None``."""
    if not isinstance(call, ast.Call):
        return None
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if name not in _MESSAGE_CLASSES:
        return None
    kw = next((k.value for k in call.keywords if k.arg == "content"), None)
    return kw if kw is not None else (call.args[0] if call.args else None)


def _message_role(call: ast.AST) -> str | None:
    if isinstance(call, ast.Call) and _message_content(call) is not None:
        f = call.func
        return _MESSAGE_CLASSES[f.attr if isinstance(f, ast.Attribute) else f.id]  # type: ignore[union-attr]
    return None


def _is_message(node: ast.AST) -> bool:
    """Whether a node is a chat message literal: a dict with a constant ``"role"`` and a
    ``"content"`` (``{"role": "system", "content": f"..."}``)."""
    if not isinstance(node, ast.Dict):
        return False
    keys = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
    return "content" in keys and isinstance(keys.get("role"), ast.Constant) and isinstance(keys["role"].value, str)


def _is_empty(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in ("", None)


def _spec_text(spec: ast.AST | None) -> str:
    """The text of an f-string format spec when it is literal (``%Y-%m-%d``), else ``""``."""
    if isinstance(spec, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in spec.values):
        return "".join(str(v.value) for v in spec.values)  # type: ignore[union-attr]
    return ""


#: A ``str.format`` field (``{history}``): one brace, an identifier, one brace.
_FORMAT_FIELD = re.compile(r"(?<!\{)\{[A-Za-z_]\w*(?:\.\w+)*\}(?!\})")


def is_jinja_text(text: str) -> bool:
    """Whether a prompt constant is a Jinja template: it has ``{%`` statements, or ``{{ }}``
    and no ``str.format`` fields. A text with ``{field}`` fields is a format string (LangChain's
    f-string templates), whose ``{{`` and ``}}`` are escaped braces (``TOOL CALL: {{"tool":
    ...}}``)."""
    if "{%" in text:
        return True
    return "{{" in text and not _FORMAT_FIELD.search(text)


def _operands(node: ast.BinOp) -> list[ast.AST]:
    """The operands of a ``+`` chain (``a + b + c`` parses as ``(a + b) + c``), left to right,
    found without recursion."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            stack.append(n.right)
            stack.append(n.left)
        else:
            out.append(n)
    return out


def _dedent(pieces: list[Piece], clean: bool) -> list[Piece]:
    """``textwrap.dedent`` (or ``inspect.cleandoc``) applied to the static text around slots."""
    marks = []
    buf = []
    for k, p in enumerate(pieces):
        if p.kind == "static":
            buf.append(p.text)
        else:
            buf.append(f"\x00{k}\x00")
            marks.append(k)
    joined = "".join(buf)
    if clean:
        import inspect

        text = inspect.cleandoc(joined)
    else:
        text = textwrap.dedent(joined)
    out: list[Piece] = []
    first_span = next((p.span for p in pieces if p.kind == "static"), None)
    for chunk in re.split(r"(\x00\d+\x00)", text):
        m = re.fullmatch(r"\x00(\d+)\x00", chunk)
        if m:
            out.append(pieces[int(m.group(1))])
        elif chunk:
            out.append(Piece("static", chunk, span=first_span))
    return out


def parse_python(path: str, text: str) -> Parsed:
    """A Python source → its prompts, code issues and directives (``template-syntax`` when it
    does not parse)."""
    parsed = Parsed(path, "python")
    try:
        src = PythonSource(path, text)
    except (SyntaxError, ValueError) as e:  # ValueError: a NUL byte in the source
        e_line = getattr(e, "lineno", None) or 1
        e_col = getattr(e, "offset", None) or 1
        parsed.issues.append(Issue("template-syntax", Span.point(path, e_line, e_col), "python",
                                   {"reason": f"Python syntax error: {getattr(e, 'msg', None) or e}"}))
        return parsed
    except MemoryError:
        # CPython's parser raises MemoryError (not SyntaxError) when brackets nest just below its
        # 200-level tokenizer limit inside some expressions (`f"` + 192 `[`): its own stack is full
        parsed.issues.append(Issue("template-syntax", Span.point(path, 1, 1), "python",
                                   {"reason": "Python's parser ran out of stack: brackets nested too deep to parse"}))
        return parsed
    parsed.docs += src.sdk_docs()
    parsed.docs += langchain_docs(src)
    parsed.docs += src.template_docs()
    functions = src.function_docs()
    parsed.docs += src.constant_docs()
    parsed.docs += [d for fn, d in functions if fn not in src.consumed_functions]
    parsed.issues += src.code_checks()
    src.directives(parsed)
    return parsed

