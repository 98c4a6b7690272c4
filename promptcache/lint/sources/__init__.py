"""Template sources: one parser per template language, chosen by file name.

| language | files | inline directives |
|---|---|---|
| ``jinja`` | ``.j2``, ``.jinja``, ``.jinja2`` | ``{# promptcache: ignore[CODE] #}`` |
| ``prompty`` | ``.prompty`` | Jinja comments in the body, ``#`` in the front matter |
| ``mustache`` | ``.mustache``, ``.hbs``, ``.handlebars`` | ``{{! promptcache: ignore[CODE] }}`` |
| ``text`` / ``markdown`` | ``.txt``, ``.md``, ``.mdc``, ``.prompt`` (front matter read as metadata) | none: a comment would be sent to the model |
| ``yaml`` / ``json`` | ``.yaml``, ``.yml`` / ``.json``: request bodies, message lists, promptfoo, and (:mod:`.workflow`) n8n, Dify, Flowise, Semantic Kernel | ``# promptcache: ...`` in YAML; none in JSON |
| ``python`` | ``.py`` (SDK calls, LangChain templates, prompt constants) | ``# promptcache: ignore[CODE]`` |
| ``typescript`` / ``javascript`` | ``.ts``, ``.tsx``, ``.mts``, ``.cts`` / ``.js``, ``.jsx``, ``.mjs``, ``.cjs`` (:mod:`.javascript`) | ``// promptcache: ignore[CODE]`` |
| ``go`` | ``.go`` (:mod:`.golang`) | ``// promptcache: ignore[CODE]`` |
| ``gotemplate`` | ``.tmpl``, ``.gotmpl`` | ``{{/* promptcache: ignore[CODE] */}}`` |
| ``liquid`` | ``.liquid`` | ``{% comment %}promptcache: ignore[CODE]{% endcomment %}`` |
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ...errors import InputError
from ..model import Parsed
from .data import parse_data
from .files import parse_gotemplate, parse_jinja, parse_liquid, parse_mustache, parse_plain, parse_prompty
from .python import parse_python


def _grammar_missing(path: str, e: ImportError) -> InputError:
    return InputError(f"reading this file needs tree-sitter's grammars, which are part of promptcache's install "
                      f"(`pip install tree-sitter tree-sitter-typescript tree-sitter-go`): {e}", path=path)


def _js(path: str, text: str) -> Parsed:
    """TypeScript / JavaScript (tree-sitter loads only when a file needs it).

    Raises:
        InputError: when the grammar is not installed.
    """
    try:
        from .javascript import parse_javascript
        from .treesitter import parser

        parser("typescript")
    except ImportError as e:
        raise _grammar_missing(path, e) from None
    return parse_javascript(path, text)


def _go(path: str, text: str) -> Parsed:
    """Go (see :func:`_js`)."""
    try:
        from .golang import parse_go
        from .treesitter import parser

        parser("go")
    except ImportError as e:
        raise _grammar_missing(path, e) from None
    return parse_go(path, text)

Parser = Callable[[str, str], Parsed]

#: File suffix → (language, parser).
PARSERS: dict[str, tuple[str, Parser]] = {
    ".j2": ("jinja", parse_jinja),
    ".jinja": ("jinja", parse_jinja),
    ".jinja2": ("jinja", parse_jinja),
    ".prompty": ("prompty", parse_prompty),
    ".mustache": ("mustache", parse_mustache),
    ".hbs": ("mustache", parse_mustache),
    ".handlebars": ("mustache", parse_mustache),
    ".txt": ("text", parse_plain),
    ".md": ("text", parse_plain),
    ".prompt": ("text", parse_plain),
    ".mdc": ("text", parse_plain),
    ".yaml": ("yaml", lambda p, t: parse_data(p, t, "yaml")),
    ".yml": ("yaml", lambda p, t: parse_data(p, t, "yaml")),
    ".json": ("json", lambda p, t: parse_data(p, t, "json")),
    ".py": ("python", parse_python),
    ".go": ("go", _go),
    ".tmpl": ("gotemplate", parse_gotemplate),
    ".gotmpl": ("gotemplate", parse_gotemplate),
    ".liquid": ("liquid", parse_liquid),
    **{ext: ("typescript", _js) for ext in (".ts", ".tsx", ".mts", ".cts")},
    **{ext: ("javascript", _js) for ext in (".js", ".jsx", ".mjs", ".cjs")},
}


def language_of(path: str | Path) -> str | None:
    """The template language of a file, by suffix (``None``: not a template source)."""
    got = PARSERS.get(Path(path).suffix.lower())
    return got[0] if got else None


def parse_source(path: str, text: str) -> Parsed:
    """Parse one file's text with the parser for its suffix.

    Raises:
        KeyError: for a suffix no parser handles (check :func:`language_of` first).
    """
    return PARSERS[Path(path).suffix.lower()][1](path, text)
