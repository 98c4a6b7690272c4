"""What the readers built on tree-sitter share (TypeScript/JavaScript, Go): loading a grammar,
byte positions → file spans, an iterative walk (no recursion: a file nested 10,000 deep is
read like any other), syntax errors, directive comments, and the placeholder fields of a
template string held in code.

The grammars come from the ``tree-sitter-typescript`` and ``tree-sitter-go`` wheels (prebuilt,
offline). Nothing is executed: tree-sitter only parses.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from typing import Any, Callable, Iterator

from ..classify import names_in
from ..model import Directive, Issue, Parsed, Piece, Slot, Span
from .base import ByteColumns, LineIndex, Occurrences, line_removal, next_content_line, parse_directive, split_lines

Node = Any  # tree_sitter.Node


@lru_cache(maxsize=None)
def parser(grammar: str) -> Any:
    """A tree-sitter parser for ``typescript``, ``tsx`` or ``go``.

    Raises:
        ImportError: when the grammar's package is not installed.
    """
    import tree_sitter

    if grammar in ("typescript", "tsx"):
        import tree_sitter_typescript as mod

        lang = mod.language_typescript() if grammar == "typescript" else mod.language_tsx()
    elif grammar == "go":
        import tree_sitter_go as mod  # type: ignore[no-redef]

        lang = mod.language()
    else:
        raise ValueError(f"no grammar {grammar!r}")
    return tree_sitter.Parser(tree_sitter.Language(lang))


class TSFile:
    """One file parsed with tree-sitter: its tree and the helpers that place nodes in it."""

    def __init__(self, path: str, text: str, grammar: str):
        self.path = path
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.index = LineIndex(text)
        self.columns = ByteColumns(split_lines(text))
        # byte offset of each line's start, lines broken as LineIndex breaks them (a lone CR
        # too, which tree-sitter's rows do not count)
        self.bstarts = [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", self.data)]
        self.tree = parser(grammar).parse(self.data)
        self.root = self.tree.root_node

    def char_offset(self, byte: int) -> int:
        """Character offset in the text of a byte offset in its UTF-8."""
        if len(self.data) == len(self.text):
            return byte
        row = bisect_right(self.bstarts, byte) - 1
        return self.index.starts[row] + self.columns.col(row, byte - self.bstarts[row])

    def span(self, node: Node) -> Span:
        """The span of a node."""
        return self.index.span(self.path, self.char_offset(node.start_byte), self.char_offset(node.end_byte))

    def offset(self, node: Node) -> int:
        """Character offset of a node's start."""
        return self.char_offset(node.start_byte)

    def src(self, node: Node) -> str:
        """The source text of a node."""
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def plus_operands(self, node: Node, unwrap: Callable[[Node], Node]) -> list[Node]:
        """The operands of a ``+`` chain (``binary_expression`` nodes whose operator is ``+``),
        left to right, found without recursion (a chain of 100,000 concatenations is read);
        ``unwrap`` looks through what the grammar wraps an operand in (parentheses)."""
        out: list[Node] = []
        stack = [node]
        while stack:
            n = unwrap(stack.pop())
            op = n.child_by_field_name("operator") if n.type == "binary_expression" else None
            left, right = (n.child_by_field_name("left"), n.child_by_field_name("right")) if op is not None else (None, None)
            if op is not None and self.src(op) == "+" and left is not None and right is not None:
                stack.append(right)
                stack.append(left)
            else:
                out.append(n)
        return out

    def walk(self, node: Node | None = None) -> Iterator[Node]:
        """Every node under ``node`` (default: the root), in document order, without recursion."""
        stack = [node or self.root]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(n.children))

    def syntax_issue(self, language: str) -> Issue | None:
        """A ``template-syntax`` issue at the first ``ERROR`` or missing node, or ``None``."""
        if not self.root.has_error:
            return None
        for n in self.walk():
            if n.is_error or n.is_missing:
                sp = self.span(n)
                what = f"missing `{n.type}`" if n.is_missing else f"unexpected `{self.src(n)[:20].strip()}`"
                return Issue("template-syntax", Span.point(self.path, sp.line, sp.col), language,
                             {"reason": f"{language} syntax error: {what}"})
        return None

    def directives(self, parsed: Parsed, comment_types: tuple[str, ...] = ("comment",)) -> None:
        """``// promptcache: ...`` (and ``/* */``) comments → directives or issues."""
        for n in self.walk():
            if n.type not in comment_types:
                continue
            body = self.src(n)
            if "promptcache" not in body:
                continue
            sp = self.span(n)
            s = self.offset(n)
            e = s + len(body)
            alone = not self.index.line_text(sp.line)[:sp.col - 1].strip()
            got = parse_directive(body.lstrip("/*").rstrip("*/"), sp, alone=alone,
                                  next_line=next_content_line(self.index, sp.end_line),
                                  removal=line_removal(self.index, self.path, s, e))
            if got is not None:
                if isinstance(got, Directive):
                    parsed.directives.append(got)
                else:
                    parsed.issues.append(got)


#: ``{name}`` placeholders (f-string templates: LangChain, Python ``str.format``), ``{{ name }}``
#: (Mustache), ``{{$name}}``: an identifier right after the brace, so JSON examples are text.
FSTRING_FIELD = re.compile(r"(?<!\{)\{([A-Za-z_][\w.]*)\}(?!\})")
MUSTACHE_FIELD = re.compile(r"\{\{\{?\s*([#^/]?[$A-Za-z_][\w.$ ]*?)\s*\}?\}\}")
#: n8n expressions: ``{{ $now }}``, ``{{ $json.x }}``, ``{{ $('Node').item.json.x }}``.
N8N_FIELD = re.compile(r"\{\{(.*?)\}\}", re.S)


def split_fields(pieces: list[Piece], index: LineIndex, path: str,
                 pattern: re.Pattern[str] = FSTRING_FIELD,
                 probe: Callable[[str], tuple[str, ...]] | None = None) -> list[Piece]:
    """Placeholder fields in the static text of ``pieces`` (a template held in string literals)
    as slots, each located inside the source of the literal its text came from."""
    occ: dict[tuple[int, int, int, int], Occurrences] = {}
    out: list[Piece] = []
    for p in pieces:
        if p.kind != "static":
            out.append(p)
            continue
        pos = 0
        for m in pattern.finditer(p.text):
            if m.start() > pos:
                out.append(Piece("static", p.text[pos:m.start()], span=p.span))
            raw = m.group(0)
            span = p.span
            if p.span is not None:
                key = (p.span.line, p.span.col, p.span.end_line, p.span.end_col)
                base = index.offset(p.span.line, p.span.col)
                if key not in occ:
                    occ[key] = Occurrences(index.text[base:index.offset(p.span.end_line, p.span.end_col)])
                i = occ[key].find(raw)
                if i >= 0:
                    span = index.span(path, base + i, base + i + len(raw))
            name = m.group(1).strip().lstrip("#^/")
            probes = probe(name) if probe else (f"{{{{ {name} }}}}", name)
            out.append(Piece("slot", slot=Slot(span or Span.point(path, 1, 1), raw, "variable", probes,
                                               names_in(name))))
            pos = m.end()
        if pos < len(p.text):
            out.append(Piece("static", p.text[pos:], span=p.span))
    return out


def dedent_pieces(pieces: list[Piece]) -> list[Piece]:
    """``dedent`` / ``stripIndent`` applied to the static text around slots."""
    from .python import _dedent

    return _dedent(pieces, True)
