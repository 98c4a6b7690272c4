"""Template text → pieces: Jinja2 (also Prompty bodies and Nunjucks-style strings), Mustache /
Handlebars, and plain-text placeholders (``{name}``, ``${name}``).

Each scanner walks the template once and returns static text (as the engine renders it: Jinja
comments and whitespace control applied, macro bodies left out) and slots (variables, calls,
control blocks) with their source spans, plus the comments (for inline directives). Jinja's own
parser checks the syntax and reads each expression's names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import jinja2
from jinja2 import nodes

from ..classify import names_in
from ..model import Piece, Slot, Span
from .base import LINE_BREAK, Locator

_ENV = jinja2.Environment()


@dataclass
class Comment:
    """A template comment: its text, and its offsets in the template."""

    text: str
    start: int
    end: int


@dataclass
class Scan:
    """The pieces of one template text.

    Attributes:
        pieces: static text, slots and nothing else, in order.
        comments: comments (stripped from the output).
        error: ``(offset, message)`` of a syntax error, else ``None``.
        role_marks: offsets of static text where Prompty role lines may be split later.
    """

    pieces: list[Piece] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    error: tuple[int, str] | None = None


def _names(expr: str, bindings: dict[str, str], loops: dict[str, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """Names an expression reads, and the names its bound variables were assigned from; a loop
    variable (``loops``: each open loop's variables, with the names of its iterable) or its field
    stands for the iterable's names (``item.title`` in ``{% for item in faq %}`` reads ``faq``)."""
    out: list[str] = []
    for n in names_in(expr):
        root = n.split(".")[0]
        if loops and root in loops:
            out += loops[root]
            continue
        out.append(n)
        b = bindings.get(root)
        if b is not None:
            out += names_in(b)
    return tuple(dict.fromkeys(out))


def _dotless(names: tuple[str, ...]) -> tuple[str, ...]:
    """Names with the Go dot placeholder (``__dot__.Name``, outside a loop) read as written
    (``Name``)."""
    return tuple(dict.fromkeys(n[8:] if n.startswith("__dot__.") else n for n in names if n != "__dot__"))


def _items(expr: str, loops: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The iterable names an expression stands for when it reads nothing but loop variables and
    their fields (``name`` or ``description.signature`` in ``{% for name, description in
    capabilities.items() %}``: ``("capabilities",)``); ``()`` when it reads anything else."""
    ns = names_in(expr)
    if not loops or not ns or any(n.split(".")[0] not in loops for n in ns):
        return ()
    return tuple(dict.fromkeys(x for n in ns for x in loops[n.split(".")[0]]))


class _Branches:
    """Where scanned pieces go while conditionals are open: the top level, or the current
    alternative of the innermost open conditional."""

    def __init__(self) -> None:
        self.top: list[Piece] = []
        self.stack: list[tuple[str, Slot, Span, list[list[Piece]], bool]] = []

    @property
    def cur(self) -> list[Piece]:
        return self.stack[-1][3][-1] if self.stack else self.top

    def open(self, word: str, cond: Slot, loop: bool = False) -> None:
        """A conditional (or a loop) opens: its first alternative starts."""
        self.stack.append((word, cond, cond.span, [[]], loop))

    def alternative(self, cond: Slot | None = None) -> bool:
        """``else`` / ``elif``: the next alternative starts (with its condition as a slot)."""
        if not self.stack:
            return False
        self.stack[-1][3].append([])
        if cond is not None:
            self.cur.append(Piece("slot", slot=cond))
        return True

    def close(self) -> bool:
        """The innermost conditional closes (an ``if`` without ``else`` renders nothing in its
        other alternative)."""
        if not self.stack:
            return False
        _, cond, span, alts, loop = self.stack.pop()
        if len(alts) == 1 and not loop:  # a loop's empty run adds nothing its slot does not say
            alts.append([])
        self.cur.append(Piece("branch", slot=cond, span=span, branches=tuple(tuple(a) for a in alts), loop=loop))
        return True

    def finish(self) -> list[Piece]:
        while self.stack:
            self.close()
        return self.top


def _probes(expr: str, bindings: dict[str, str]) -> tuple[str, ...]:
    """Texts a slot's rules match against: ``{{ expr }}``, the bare expression, and what
    ``{% set %}`` bound its names to."""
    e = " ".join(expr.split())
    out = [f"{{{{ {e} }}}}", e]
    try:
        tree = _ENV.parse(f"{{{{ {expr} }}}}")
        for n in tree.find_all(nodes.Name):
            if n.name in bindings:
                b = bindings[n.name]
                out += [f"{{{{ {b} }}}}", b]
    except jinja2.TemplateSyntaxError:
        pass
    return tuple(dict.fromkeys(out))


# --------------------------------------------------------------------------------------- Jinja

_OPEN = re.compile(r"\{\{|\{%|\{#")
_CLOSE = {"{{": "}}", "{%": "%}", "{#": "#}"}
_STR = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
_RAW_END = re.compile(r"\{%-?\s*endraw\s*-?%\}")
_STMT = re.compile(r"\s*(\w+)")


def _find_close(text: str, pos: int, close: str) -> int:
    """Offset of ``close`` after ``pos``, skipping string literals; -1 if none."""
    i = pos
    while True:
        j = text.find(close, i)
        if j < 0:
            return -1
        m = _STR.search(text, i, j)
        if m is None:
            return j
        i = m.end()


def _jinja_error_at(text: str, line: int) -> int:
    """Offset of the place Jinja's error names: the first tag on its line (Jinja gives the
    line, not the column), else the line's start."""
    starts = [0] + [m.end() for m in LINE_BREAK.finditer(text)]
    a = starts[min(max(line, 1), len(starts)) - 1]
    b = starts[line] if line < len(starts) else len(text)
    m = _OPEN.search(text, a, b)
    return m.start() if m else a


#: Filters that keep a block set's text as it is, or only trim it.
_KEEP_FILTERS = frozenset({"trim", "safe", "string", "e", "escape", "indent"})


def _resolve_jinja(expr: str, blocks: dict[str, list[Piece]], bindings: dict[str, str],
                   depth: int = 0) -> list[Piece] | None:
    """What ``{{ expr }}`` renders when it is made only of text the template itself defines:
    ``{% set X %}...{% endset %}`` blocks, ``{% set Y = A + B %}`` of them, string constants,
    joined with ``+`` or ``~``, through ``trim``-like filters. ``None`` when any part is a value
    from outside (then the expression is a slot)."""
    if depth > 16:
        return None
    try:
        tree = _ENV.parse(f"{{{{ {expr} }}}}")
    except jinja2.TemplateSyntaxError:
        return None
    out = tree.body[0] if tree.body else None
    if not isinstance(out, nodes.Output) or len(out.nodes) != 1:
        return None

    def walk(n: nodes.Node, d: int) -> list[Piece] | None:
        if d > 64:
            return None
        if isinstance(n, nodes.Const) and isinstance(n.value, str):
            return [Piece("static", n.value)] if n.value else []
        if isinstance(n, nodes.Name):
            if n.name in blocks:
                return list(blocks[n.name])
            if n.name in bindings:
                return _resolve_jinja(bindings[n.name], blocks, bindings, depth + 1)
            return None
        if isinstance(n, (nodes.Add, nodes.Concat)):
            parts = [n.left, n.right] if isinstance(n, nodes.Add) else list(n.nodes)
            acc: list[Piece] = []
            for q in parts:
                got = walk(q, d + 1)
                if got is None:
                    return None
                acc += got
            return acc
        if isinstance(n, nodes.Filter) and n.name in _KEEP_FILTERS and n.node is not None:
            got = walk(n.node, d + 1)
            if got is not None and n.name == "trim":
                got = _trim_pieces(got)
            return got
        return None

    return walk(out.nodes[0], 0)


def _trim_pieces(pieces: list[Piece]) -> list[Piece]:
    out = list(pieces)
    if out and out[0].kind == "static":
        out[0] = Piece("static", out[0].text.lstrip(), span=out[0].span)
    if out and out[-1].kind == "static":
        out[-1] = Piece("static", out[-1].text.rstrip(), span=out[-1].span)
    return [p for p in out if p.kind != "static" or p.text]


def _loop_targets(rest: str) -> tuple[list[str], str]:
    """``for a, b in expr`` → (``["a", "b"]``, ``expr``)."""
    m = re.match(r"\s*\(?\s*([\w\s,]+?)\s*\)?\s+in\s+(.*)$", rest, re.S)
    if not m:
        return [], rest
    it = re.split(r"\s+(?:if|recursive)\b", m.group(2), maxsplit=1)[0]
    return [t.strip() for t in m.group(1).split(",") if t.strip()], it.strip()


def scan_jinja(text: str, locate: Locator, *, keep_trailing_newline: bool = False) -> Scan:
    """Scan a Jinja2 template.

    ``{% set X %}...{% endset %}`` renders nothing where it stands: its body is kept and
    rendered where ``{{ X }}`` uses it (also through ``{% set Y = X + Z %}``), as Jinja does. A
    loop's variables stand for its iterable (``{% for p in plugins %}...{{ p.name }}``: the
    names read are ``p.name`` and ``plugins``).

    Args:
        text: the template.
        locate: maps offsets in ``text`` to source spans.
        keep_trailing_newline: Jinja's option (default off: one trailing newline is dropped).

    Returns:
        The :class:`Scan`. A syntax error sets ``error`` at the place it is (an unclosed tag or
        block at its opening; else the first tag on the line Jinja's parser names) and still
        returns what was scanned.
    """
    out = Scan()
    jinja_error: tuple[int, str] | None = None
    try:
        _ENV.parse(text)
    except jinja2.TemplateSyntaxError as e:
        jinja_error = (_jinja_error_at(text, e.lineno or 1), e.message or "syntax error")
    bindings: dict[str, str] = {}
    loops: dict[str, tuple[str, ...]] = {}  # the open loops' variables, with their iterable's names
    saved_loops: list[dict[str, tuple[str, ...]]] = []  # per open {% for %}: the loops it shadows
    block_sets: dict[str, list[Piece]] = {}
    pending_strip = False  # the previous tag ended with '-': strip leading whitespace
    macro_depth = 0
    pos = 0
    tree = _Branches()
    captures: list[tuple[str, _Branches]] = []  # open block sets: (name, the tree they interrupted)
    blocks: list[tuple[str, int, str]] = []  # open block statements: (word, offset, tag)
    scan_error: tuple[int, str] | None = None

    def data(s: int, e: int, rstrip: bool = False) -> None:
        nonlocal pending_strip
        t = text[s:e]
        if pending_strip:
            t = t.lstrip()
            pending_strip = False
        if rstrip:
            t = t.rstrip()
        if t and macro_depth == 0:
            tree.cur.append(Piece("static", t, span=locate(s, e, text[s:e])))

    while True:
        m = _OPEN.search(text, pos)
        if m is None:
            data(pos, len(text))
            break
        opener = m.group(0)
        inner_start = m.end()
        strip_before = text.startswith("-", inner_start)
        close = _find_close(text, inner_start, _CLOSE[opener])
        if close < 0:
            scan_error = scan_error or (m.start(), f"`{opener}` is never closed")
            data(pos, len(text))
            break
        data(pos, m.start(), rstrip=strip_before)
        inner = text[inner_start:close]
        end = close + 2
        strip_after = inner.endswith("-")
        body = inner[1 if strip_before or inner.startswith("+") else 0:]
        body = body[:-1] if body.endswith(("-", "+")) else body
        raw = text[m.start():end]
        if opener == "{#":
            out.comments.append(Comment(body, m.start(), end))
        elif opener == "{{":
            if macro_depth == 0:
                expr = body.strip()
                got = _resolve_jinja(expr, block_sets, bindings) if (block_sets or bindings) else None
                if got is not None:  # text the template defines itself ({% set X %}...{% endset %})
                    tree.cur.extend(got)
                else:
                    tree.cur.append(Piece("slot", slot=Slot(locate(m.start(), end, raw), raw, "variable",
                                                            _probes(expr, bindings), _names(expr, bindings, loops),
                                                            _items(expr, loops))))
        else:
            sm = _STMT.match(body)
            word = sm.group(1) if sm else ""
            rest = body[sm.end():].strip() if sm else ""
            if word == "raw":
                r = _RAW_END.search(text, end)
                stop = r.start() if r else len(text)
                pending_strip = pending_strip or strip_after
                data(end, stop)
                pos = r.end() if r else len(text)
                continue
            if word == "set" and "=" in rest and not rest.split("=", 1)[0].strip().endswith(("!", "<", ">")):
                name, _, expr = rest.partition("=")
                for n in name.split(","):
                    bindings[n.strip()] = expr.strip()
            elif word == "set":  # a block set: {% set X %}...{% endset %} renders where X is used
                name = re.split(r"[\s|]", rest, maxsplit=1)[0] if rest else ""
                blocks.append(("set", m.start(), raw))
                captures.append((name, tree))
                tree = _Branches()
            elif word == "endset" and blocks and blocks[-1][0] == "set":
                blocks.pop()
                name, outer = captures.pop()
                block_sets[name] = tree.finish()
                bindings.pop(name, None)
                tree = outer
            elif word == "macro":
                macro_depth += 1
                blocks.append(("macro", m.start(), raw))
            elif word == "endmacro":
                macro_depth = max(0, macro_depth - 1)
                if blocks and blocks[-1][0] == "macro":
                    blocks.pop()
            elif macro_depth > 0:
                pass
            elif word == "if":
                blocks.append(("if", m.start(), raw))
                tree.open("if", Slot(locate(m.start(), end, raw), raw, "block", (raw, rest),
                                     _names(rest, bindings, loops), _items(rest, loops)))
            elif word == "elif":
                tree.alternative(Slot(locate(m.start(), end, raw), raw, "block", (raw, rest),
                                      _names(rest, bindings, loops), _items(rest, loops)))
            elif word == "else" and blocks and blocks[-1][0] in ("if", "for"):
                tree.alternative()
            elif word in ("endif", "endfor") and blocks and blocks[-1][0] == word[3:]:
                blocks.pop()
                tree.close()
                if word == "endfor" and saved_loops:
                    loops = saved_loops.pop()
            elif word == "for":
                blocks.append(("for", m.start(), raw))
                targets, it = _loop_targets(rest)
                tree.open("for", Slot(locate(m.start(), end, raw), raw, "block", (raw, rest),
                                      _names(it, bindings, loops), _items(it, loops)), loop=True)
                saved_loops.append(loops)
                # the loop's variables stand for its items: of the iterable's kind
                loops = {**loops, **{t: _names(it, bindings, loops) for t in targets}}
            elif word in ("include", "extends", "import", "from", "call", "filter", "with"):
                # a block whose output varies
                if word in ("call", "filter", "with"):
                    blocks.append((word, m.start(), raw))
                names = _names(rest, bindings) if word not in ("include", "extends", "import", "from") else ()
                tree.cur.append(Piece("slot", slot=Slot(locate(m.start(), end, raw), raw, "block",
                                                        (raw, rest), names)))
            elif word.startswith("end") and blocks and blocks[-1][0] == word[3:]:
                blocks.pop()
        pending_strip = strip_after
        pos = end
    while captures:  # an unclosed block set: what it held is not rendered where it stands
        name, outer = captures.pop()
        block_sets[name] = tree.finish()
        tree = outer
    if blocks and scan_error is None:
        word, at, tag = blocks[-1]
        scan_error = (at, f"`{' '.join(tag.split())[:60]}` is never closed")
    if jinja_error is not None:
        # the scanner's place is exact for what it sees (an unclosed tag or block); Jinja's
        # parser sees everything else (an unknown tag, a bad expression) and names the line
        unclosed = scan_error is not None and ("end of template" in jinja_error[1] or "never closed" in scan_error[1])
        out.error = (scan_error[0], f"{scan_error[1]} (Jinja: {jinja_error[1]})") if unclosed and scan_error \
            else jinja_error
    else:
        out.error = scan_error
    pieces = tree.finish()
    if not keep_trailing_newline and pieces and pieces[-1].kind == "static" and pieces[-1].text.endswith("\n"):
        last = pieces[-1]
        t = last.text[:-2] if last.text.endswith("\r\n") else last.text[:-1]
        pieces[-1] = Piece("static", t, span=last.span)
    out.pieces = [p for p in pieces if p.kind != "static" or p.text]
    return out


# ------------------------------------------------------------------------- Mustache/Handlebars

_MUSTACHE = re.compile(r"\{\{(\{|!--|[!#^/>&=~]|else\b)?")
_IDENT = re.compile(r"[A-Za-z_@][\w.@-]*")


#: Handlebars block helpers that repeat or rescope their body: kept as a block slot, the body
#: inline after it. Other sections (``{{#if}}``, ``{{#unless}}``, ``{{^x}}``, a bare ``{{#x}}``)
#: are conditionals: one variant per alternative.
_LOOP_HELPERS = frozenset({"each", "with", "let", "each-in", "forEach", "times", "repeat"})


#: One token of a Handlebars expression: a string, a ``key=`` hash argument's key, a
#: subexpression's helper (``(formatDate``), or a path (``user.name``, ``../x``, ``@index``).
_HBS_TOKEN = re.compile(r"""(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<key>[A-Za-z_][\w-]*)\s*=(?!=)"""
                        r"""|\(\s*(?P<sub>[A-Za-z_][\w.-]*)|(?P<path>(?:\.\./)*[@A-Za-z_.][\w.@/$-]*)""")


def _hbs_args(expr: str) -> tuple[str, ...]:
    """The names a Handlebars helper call renders from: its arguments' paths, not the helper's
    own name, a subexpression's helper or a hash argument's key (``escapeXml name`` →
    ``("name",)``; ``formatDate user.created_at format="YYYY"`` → ``("user.created_at",)``);
    the helper's name when every argument is a literal (``now "HH:mm"`` → ``("now",)``).
    A path keeps ``../`` (it reads the enclosing scope)."""
    paths: list[str] = []
    first = True
    head = ""
    expr = re.sub(r"\bas\s*\|[^|]*\|", " ", expr)  # {{#each xs as |x|}}: block parameters name the items
    for m in _HBS_TOKEN.finditer(expr):
        if m.group("path") is not None:
            p = m.group("path")
            if first:
                head = p
            elif p.lstrip("./") and p.lower() not in ("as", "true", "false", "null", "undefined"):
                paths.append(p)
        first = False
    if not paths and head:
        return (head,)
    return tuple(dict.fromkeys(paths))


def _hbs_names(names: tuple[str, ...] | list[str],
               scopes: list[tuple[str, str, tuple[str, ...]]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names, items) of what a Handlebars expression reads, given the open sections' scopes
    (``("with", obj, ())``, ``("loop", "", iterable names)`` or ``("", "", ())``, innermost
    last): inside a loop, a bare name, ``this`` and ``@index`` are an item of the iterable
    (its names stand for them, and ``items`` is set when nothing else is read); inside
    ``{{#with x}}``, a bare name is a field of x (``x.name``, and ``x``); ``../x`` reads the
    scope above."""
    out: list[str] = []
    item_names: list[str] = []
    other = False
    for raw in names:
        up = 0
        n = raw
        while n.startswith("../"):
            up, n = up + 1, n[3:]
        n = n.lstrip("./") if n.startswith("./") else n
        open_scopes = [x for x in scopes if x[0]]
        scope = open_scopes[-1 - up] if len(open_scopes) > up else ("", "", ())
        if not n:
            continue
        if n.startswith("@root."):
            out.append(n[6:])
            other = True
        elif scope[0] == "loop" and not (n.startswith("@") and n not in ("@index", "@key", "@first", "@last")):
            out += scope[2]
            item_names += scope[2]
        elif scope[0] == "with" and not n.startswith(("this", "@", ".")):
            out += [f"{scope[1]}.{n}", scope[1]]
            other = True
        else:
            out.append(n)
            other = True
    names_out = tuple(dict.fromkeys(x for x in out if x))
    return names_out, (() if other or not item_names else tuple(dict.fromkeys(item_names)))


def scan_mustache(text: str, locate: Locator) -> Scan:
    """Scan a Mustache or Handlebars template (``{{var}}``, ``{{{raw}}}``, ``{{#section}}``,
    ``{{^inverted}}``, ``{{/end}}``, ``{{! comment}}``, ``{{> partial}}``, helpers with
    arguments, ``{{else}}`` / ``{{else if x}}``, ``~`` whitespace control).

    Conditional sections become ``branch`` pieces. Each identifier a helper is called with is
    probed as a variable of its own, so ``{{formatDate now}}`` is seen as using ``now``.
    """
    out = Scan()
    tree = _Branches()
    stack: list[tuple[str, int, bool]] = []  # (name, offset, is a conditional)
    scopes: list[str] = []  # per open section: the object {{#with x}} / {{#each x}} makes the context, or ""
    pos = 0
    strip_next = False
    while True:
        m = _MUSTACHE.search(text, pos)
        if m is None:
            t = text[pos:]
            if strip_next:
                t = t.lstrip()
            if t:
                tree.cur.append(Piece("static", t, span=locate(pos, len(text), text[pos:])))
            break
        sigil = m.group(1) or ""
        if sigil == "!--":
            close_tok = "--}}"
        elif sigil == "{":
            close_tok = "}}}"
        else:
            close_tok = "}}"
        close = text.find(close_tok, m.end())
        if close < 0:
            out.error = out.error or (m.start(), "unclosed `{{`")
            t = text[pos:]
            if t:
                tree.cur.append(Piece("static", t, span=locate(pos, len(text), t)))
            break
        end = close + len(close_tok)
        inner = text[m.end():close]
        tilde_before = inner.startswith("~") or sigil == "~"
        if sigil == "~":
            sigil = ""
            if re.match(r"~\s*[#^/>&!]", inner):  # {{~#if}}: the sigil follows the tilde
                sigil = inner.lstrip("~ ")[0]
                inner = inner.lstrip("~ ")[1:]
            elif re.match(r"~\s*else\b", inner):
                sigil = "else"
                inner = inner.lstrip("~ ")[4:]
        t = text[pos:m.start()]
        if strip_next:
            t = t.lstrip()
        if tilde_before:
            t = t.rstrip()
        if t:
            tree.cur.append(Piece("static", t, span=locate(pos, m.start(), text[pos:m.start()])))
        strip_next = inner.endswith("~")
        body = inner.strip("~").strip()
        raw = text[m.start():end]
        span = locate(m.start(), end, raw)
        if sigil in ("!", "!--"):
            out.comments.append(Comment(inner[:-2] if sigil == "!--" and inner.endswith("--") else inner,
                                        m.start(), end))
        elif sigil == "=":
            out.error = out.error or (m.start(), "delimiter changes (`{{=...=}}`) are not supported")
        elif sigil == "/":
            name = body.split()[0] if body else ""
            if not stack or stack[-1][0] != name:
                want = stack[-1][0] if stack else None
                out.error = out.error or (m.start(), f"`{{{{/{name}}}}}` closes " +
                                          (f"`{want}`" if want else "no open section"))
            else:
                if stack.pop()[2]:
                    tree.close()
                if scopes:
                    scopes.pop()
        elif sigil in ("#", "^"):
            words = body.split()
            name = words[0] if words else ""
            # {{#with x}} / {{#let}} render their body once, when x is set: a conditional, not a loop
            cond = sigil == "^" or name in ("if", "unless", "with", "let") or \
                (len(words) == 1 and name not in _LOOP_HELPERS)
            args = _hbs_args(body) if len(words) > 1 else ()
            names, items = _hbs_names(args or names_in(body), scopes)
            probes = [raw, body] + [f"{{{{ {w} }}}}" for w in _IDENT.findall(" ".join(words[1:]))]
            slot = Slot(span, raw, "block", tuple(probes), names, items)
            stack.append((name, m.start(), True))
            tree.open(name, slot, loop=not cond)  # {{#each}}: a loop over the body
            # inside {{#with x}}, a bare name is a field of x ({{name}} is x.name); inside a loop
            # ({{#each x}}, {{#list x}}), an item of x: of x's kind
            if name == "with" and len(words) > 1:
                scopes.append(("with", words[1], ()))
            elif not cond and args:
                scopes.append(("loop", "", names))
            else:
                scopes.append(("", "", ()))
        elif sigil == "else" or (sigil == "^" and not body):
            rest = body[4:].strip() if body.startswith("else") else body
            if stack and stack[-1][2]:
                if rest.startswith("if ") or rest.startswith("unless "):
                    tree.alternative(Slot(span, raw, "block", (raw, rest), *_hbs_names(_hbs_args(rest), scopes)))
                else:
                    tree.alternative()
        else:  # variable, {{{raw}}}, {{& raw}}, {{> partial}}, helper call
            words = body.split()
            probes = [f"{{{{ {body} }}}}", body]
            if len(words) > 1:
                probes += [f"{{{{ {w} }}}}" for w in _IDENT.findall(" ".join(words[1:]))]
            partial = sigil == ">"
            # a helper call's value is its arguments' ({{escapeXml name}} renders `name`); a
            # helper called with literals only is the value itself ({{now "HH:mm"}})
            single = (body,) if body.startswith(("this", ".", "@", "../")) else names_in(body)
            names, items = _hbs_names(_hbs_args(body) if len(words) > 1 else single, scopes)
            scope = next((x for x in reversed(scopes) if x[0]), ("", "", ()))
            if scope[0] == "with" and len(words) == 1 and not body.startswith(("this", "@", ".")):
                probes = [f"{{{{ {scope[1]}.{body} }}}}", f"{scope[1]}.{body}"]
            tree.cur.append(Piece("slot", slot=Slot(span, raw, "block" if partial else "variable",
                                                    tuple(dict.fromkeys(probes)), () if partial else names,
                                                    () if partial else items)))
        pos = end
    if stack and out.error is None:
        name, at, _ = stack[-1]
        out.error = (at, f"section `{name}` is never closed")
    out.pieces = tree.finish()
    return out


# ---------------------------------------------------------------------------- plain placeholders

#: ``{{ expr }}``, ``${name}``, and Python ``str.format`` fields ``{name}``, ``{user.name}``,
#: ``{now:%H:%M}`` (an identifier right after the brace, so JSON examples are not placeholders).
_PLACEHOLDER = re.compile(
    r"\{\{\{?(?P<dbl>.*?)\}?\}\}"
    r"|\$\{(?P<dollar>[A-Za-z_][\w.:-]*)\}"
    r"|\$(?P<arg>ARGUMENTS|\d)\b"
    r"|(?P<bang>!`[^`\n]+`)"
    r"|(?<!\{)\{(?P<fmt>[A-Za-z_]\w*(?:\.\w+|\[[^\]{}]*\])*)(?:![rsa])?(?::[^{}\n]*)?\}(?!\})", re.S)


#: Claude Code's file references in commands and agents (``@package.json``, ``@src/app.ts``,
#: ``@docs/``): a path with an extension or a slash, not a mention (``@raphtlw``), an e-mail
#: address or a decorator call.
_FILE_REF = re.compile(r"(?<![\w@`/.])@(?P<path>(?:\.{1,2}/|~/)?[\w.-]*(?:/[\w.-]+)*\.[A-Za-z0-9]{1,10}"
                       r"|(?:\.{1,2}/|~/)?[\w.-]+/(?:[\w.-]+/?)*)(?![\w(/])")
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.M | re.S)


def scan_placeholders(text: str, locate: Locator, *, file_refs: bool = False) -> Scan:
    """Scan plain text for placeholders (``{{ x }}`` (also Semantic Kernel's ``{{$x}}`` and
    Dify's ``{{#node.x#}}``), ``${x}`` (also VS Code's ``${input:x}``), ``{x}``, Claude Code's
    ``$ARGUMENTS`` / ``$1`` and ``!`command` ``; with ``file_refs``, its ``@path`` file
    references outside code fences, which put the file's content in the prompt as ``!`cat
    path` `` would); everything else is static, comments included (plain text has none that
    stay out of the prompt)."""
    out = Scan()
    pos = 0
    found = list(_PLACEHOLDER.finditer(text))
    if file_refs and "@" in text:
        fences = [(f.start(), f.end()) for f in _FENCE.finditer(text)]
        taken = [(m.start(), m.end()) for m in found]
        refs = [r for r in _FILE_REF.finditer(text)
                if not any(a <= r.start() < b for a, b in fences) and not any(a <= r.start() < b for a, b in taken)]
        found = sorted(found + refs, key=lambda m: m.start())
    for m in found:
        if m.start() > pos:
            out.pieces.append(Piece("static", text[pos:m.start()], span=locate(pos, m.start(), text[pos:m.start()])))
        expr = "" if m.re is _FILE_REF else (m.group("dbl") if m.group("dbl") is not None else
                                               m.group("dollar") or m.group("fmt") or m.group("arg") or "").strip()
        raw = m.group(0)
        if m.re is _FILE_REF:  # @file: the file's content, read when the command runs
            probes, names = (raw, f"!`cat {m.group('path')}`"), ()
        elif m.group("bang"):  # Claude Code commands: !`git status` runs when the command is used
            probes, names = (raw, m.group("bang")[2:-1]), ()
        else:
            probes, names = (_probes(expr, {}) if expr else (raw,)), names_in(expr.replace(":", " "))
        out.pieces.append(Piece("slot", slot=Slot(locate(m.start(), m.end(), raw), raw, "variable", probes, names)))
        pos = m.end()
    if pos < len(text):
        out.pieces.append(Piece("static", text[pos:], span=locate(pos, len(text), text[pos:])))
    return out


def scan_string(text: str, locate: Locator) -> Scan:
    """Scan a prompt string held in data (YAML/JSON bodies, promptfoo prompts): Jinja when it
    has Jinja statements or comments, else Mustache-style ``{{ }}`` tags."""
    if "{%" in text or "{#" in text:
        return scan_jinja(text, locate, keep_trailing_newline=True)
    return scan_mustache(text, locate)


def span_at(span: Span) -> Span:
    """The first character of ``span``."""
    return Span(span.path, span.line, span.col, span.line, span.col + 1)


# ------------------------------------------------------------------------ Go templates, Liquid

_GO_OPEN = re.compile(r"\{\{(-\s)?")
_LIQUID_OPEN = re.compile(r"\{\{-?|\{%-?")
_GO_STR = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`|\'(?:[^\'\\\n]|\\.)*\'')
#: Per dialect: statements that open a conditional, start another alternative, close a
#: conditional; that open a block rendering its body (loops), close one; whose body is not
#: rendered (``define``, ``capture``, ``comment``); and that bind a variable.
_DIALECT = {
    "go": {"if": ("if", "with"), "alt": ("else",), "endif": (), "loop": ("range", "block"), "end": ("end",),
           "hidden": ("define",), "bind": ()},
    "liquid": {"if": ("if", "unless", "case"), "alt": ("elsif", "else", "when"),
               "endif": ("endif", "endunless", "endcase"), "loop": ("for", "tablerow"),
               "end": ("endfor", "endtablerow", "endcapture", "endcomment", "endraw"),
               "hidden": ("capture", "comment"), "bind": ("assign",)},
}


def scan_tags(text: str, locate: Locator, dialect: str) -> Scan:
    """Scan a Go ``text/template`` (``{{ .Name }}``, ``{{- if .X }}...{{ else }}...{{ end }}``,
    ``{{/* comment */}}``, ``{{ range }}``, ``{{ define }}``) or a Liquid template (``{{ x | f }}``,
    ``{% if %}{% elsif %}{% else %}{% endif %}``, ``{% case %}{% when %}``, ``{% for %}``,
    ``{% assign %}``, ``{% capture %}``, ``{% comment %}``, ``{% raw %}``, ``-`` trimming).

    Conditionals become ``branch`` pieces; loops are a block slot with the body inline after it;
    ``define`` / ``capture`` / ``comment`` bodies render nothing where they stand.
    """
    d = _DIALECT[dialect]
    out = Scan()
    tree = _Branches()
    stack: list[str] = []  # open statements: "if", "loop", "hidden"
    opened: list[tuple[int, str]] = []  # where each open statement is, and its tag
    bindings: dict[str, str] = {}
    loops: dict[str, tuple[str, ...]] = {}  # the open loops' variables (Go: "." too), with their iterable's names
    saved_loops: list[dict[str, tuple[str, ...]]] = []  # per open statement: the loops it shadows
    hidden = 0
    pending_strip = False
    pos = 0
    opener = _GO_OPEN if dialect == "go" else _LIQUID_OPEN

    def refs(expr: str) -> str:
        """Go: ``.Name`` (a field of the dot, an item inside ``range``) written as ``..Name``
        so that :func:`_names` sees the dot as the loop variable it is."""
        return re.sub(r"(?<![\w$)\]])\.(?=[A-Za-z_])", "__dot__.", expr) if dialect == "go" else expr

    def data(s: int, e: int, rstrip: bool) -> None:
        nonlocal pending_strip
        t = text[s:e]
        if pending_strip:
            t = t.lstrip()
        pending_strip = False
        if rstrip:
            t = t.rstrip()
        if t and hidden == 0:
            tree.cur.append(Piece("static", t, span=locate(s, e, text[s:e])))

    while True:
        m = opener.search(text, pos)
        if m is None:
            data(pos, len(text), False)
            break
        tok = m.group(0)
        is_stmt = tok.startswith("{%")
        close_tok = "%}" if is_stmt else "}}"
        strip_before = "-" in tok
        i = m.end()
        while True:  # the close, skipping string literals
            j = text.find(close_tok, i)
            sm = _GO_STR.search(text, i, j) if j >= 0 else None
            if sm is None:
                break
            i = sm.end()
        if j < 0:
            out.error = out.error or (m.start(), f"unclosed `{tok.strip()}`")
            data(pos, len(text), False)
            break
        inner = text[m.end():j]
        strip_after = inner.endswith("-") if dialect == "liquid" else inner.endswith(" -")
        body = inner[:-1] if strip_after else inner
        body = body.strip()
        end = j + 2
        data(pos, m.start(), strip_before)
        raw = text[m.start():end]
        span = locate(m.start(), end, raw)
        word, _, rest = body.partition(" ")
        if dialect == "go" and body.startswith("/*"):
            out.comments.append(Comment(body[2:-2] if body.endswith("*/") else body[2:], m.start(), end))
        elif dialect == "liquid" and is_stmt and word == "raw":
            r = re.compile(r"\{%-?\s*endraw\s*-?%\}").search(text, end)
            stop = r.start() if r else len(text)
            data(end, stop, False)
            pos = r.end() if r else len(text)
            continue
        elif dialect == "liquid" and is_stmt and word == "comment":
            r = re.compile(r"\{%-?\s*endcomment\s*-?%\}").search(text, end)
            stop = r.start() if r else len(text)
            out.comments.append(Comment(text[end:stop], m.start(), r.end() if r else len(text)))
            pos = r.end() if r else len(text)
            continue
        elif (is_stmt or dialect == "go") and word in d["if"]:
            stack.append("if")
            opened.append((m.start(), raw))
            tree.open(word, Slot(span, raw, "block", (raw, rest), _dotless(_names(refs(rest), bindings, loops)),
                                 _items(refs(rest), loops)))
        elif (is_stmt or dialect == "go") and word in d["alt"] and stack and stack[-1] in ("if", "loop"):
            cond = rest[3:] if rest.startswith("if ") else rest
            if word in ("elsif", "when") or rest.startswith("if "):
                tree.alternative(Slot(span, raw, "block", (raw, cond), _names(cond, bindings)))
            else:
                tree.alternative()
        elif (is_stmt or dialect == "go") and (word in d["endif"] or (word in d["end"] and stack and stack[-1] == "if")):
            if stack:
                stack.pop()
                opened.pop()
            tree.close()
        elif (is_stmt or dialect == "go") and word in d["hidden"]:
            stack.append("hidden")
            opened.append((m.start(), raw))
            hidden += 1
            if word == "capture":
                bindings[rest.strip()] = ""
        elif (is_stmt or dialect == "go") and word in d["loop"]:
            stack.append("loop")
            opened.append((m.start(), raw))
            it = rest.split(" in ", 1)[1] if " in " in rest else rest.split(":=", 1)[-1]
            if dialect == "liquid":
                it = it.split()[0] if it.split() else it
            it_names = _dotless(_names(refs(it), bindings, loops))
            tree.open(word, Slot(span, raw, "block", (raw, rest), it_names, _items(refs(it), loops)), loop=True)
            saved_loops.append(loops)
            # the loop's variables stand for its items, of the iterable's kind (Go: the dot and
            # `range $i, $t := .Tools`' variables; Liquid: `for p in plugins`)
            if dialect == "liquid" and " in " in rest:
                targets = [rest.split(" in ", 1)[0].strip()]
            elif dialect == "go" and word == "range":
                targets = ["__dot__"] + [t.strip() for t in rest.split(":=", 1)[0].split(",")] if ":=" in rest \
                    else ["__dot__"]
            else:
                targets = []
            loops = {**loops, **{t: it_names for t in targets if t}}
        elif (is_stmt or dialect == "go") and word in d["end"]:
            if stack:
                top = stack.pop()
                opened.pop()
                if top == "loop" and saved_loops:
                    loops = saved_loops.pop()
                if top == "hidden":
                    hidden = max(0, hidden - 1)
                elif top in ("if", "loop"):
                    tree.close()
        elif is_stmt and word in d["bind"]:
            name, _, expr = rest.partition("=")
            bindings[name.strip()] = expr.strip()
        elif is_stmt and word in ("include", "render", "section"):
            tree.cur.append(Piece("slot", slot=Slot(span, raw, "block", (raw, rest), ())))
        elif is_stmt:
            pass  # other Liquid tags (increment, cycle, echo...): rare in prompts
        elif dialect == "go" and word in ("template",):
            tree.cur.append(Piece("slot", slot=Slot(span, raw, "block", (raw, rest), ())))
        elif dialect == "go" and word in ("break", "continue"):
            pass
        elif hidden == 0:
            expr = body
            if dialect == "go":  # a Go variable or field: `.Name`, `$x.Name`; sprig functions by name
                probe_expr = re.sub(r"(?<![\w)])\.(?=[A-Za-z_])", "", expr)
            else:
                probe_expr = expr
            tree.cur.append(Piece("slot", slot=Slot(span, raw, "variable", _probes(probe_expr, bindings) + (expr,),
                                                    _dotless(_names(refs(expr), bindings, loops)),
                                                    _items(refs(expr), loops))))
        pending_strip = strip_after
        pos = end
    if stack and out.error is None:
        at, tag = opened[-1]
        out.error = (at, f"`{' '.join(tag.split())[:60]}` is never closed")
    out.pieces = [p for p in tree.finish() if p.kind != "static" or p.text]
    return out
