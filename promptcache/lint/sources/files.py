"""Template files: Jinja2 (``.j2``, ``.jinja``, ``.jinja2``), Mustache/Handlebars
(``.mustache``, ``.hbs``, ``.handlebars``), plain prompts (``.txt``, ``.md``, ``.prompt``) and
Prompty (``.prompty``: YAML front matter, then a Jinja2 or Mustache body split into messages by
``system:`` / ``user:`` / ``assistant:`` lines).
"""

from __future__ import annotations

import re

import yaml

from ..model import Directive, Doc, Issue, Parsed, Part, Piece, Span
from .base import LineIndex, line_removal, next_content_line, parse_directive, refuse_directives
from .templating import Scan, scan_jinja, scan_mustache, scan_placeholders, scan_tags

PLAIN_NO_COMMENTS = ("a comment in a plain-text prompt is sent to the model; "
                     "use per-file-ignores in the config or a baseline instead")


def _doc(path: str, index: LineIndex, scan: Scan, name: str = "template", base: int = 0) -> Doc:
    start = index.span(path, base, base)
    return Doc(path, name, [Part("template", name, scan.pieces, start)], start)


def directives_from_comments(scan: Scan, index: LineIndex, path: str, base: int = 0) -> list[Directive | Issue]:
    """Directives (or ``invalid-suppression`` issues) in a scan's comments."""
    out: list[Directive | Issue] = []
    for c in scan.comments:
        s, e = base + c.start, base + c.end
        span = index.span(path, s, e)
        line_start = index.starts[span.line - 1]
        line_end_l = span.end_line
        line_end = index.starts[line_end_l] - 1 if line_end_l < len(index.starts) else len(index.text)
        alone = not index.text[line_start:s].strip() and not index.text[e:line_end].strip()
        got = parse_directive(c.text, span, alone=alone, next_line=next_content_line(index, span.end_line),
                              removal=line_removal(index, path, s, e))
        if got is not None:
            out.append(got)
    return out


def _finish(parsed: Parsed, scan: Scan, index: LineIndex, path: str, base: int = 0) -> None:
    if scan.error is not None:
        off, msg = scan.error
        parsed.issues.append(Issue("template-syntax", index.span(path, base + off, base + off + 1), msg,
                                   {"reason": msg}))
    for d in directives_from_comments(scan, index, path, base):
        (parsed.issues if isinstance(d, Issue) else parsed.directives).append(d)  # type: ignore[arg-type]


def parse_jinja(path: str, text: str) -> Parsed:
    """A Jinja2 template file: one prompt (role ``template``)."""
    index = LineIndex(text)
    scan = scan_jinja(text, index.locator(path))
    parsed = Parsed(path, "jinja", [_doc(path, index, scan)])
    _finish(parsed, scan, index, path)
    return parsed


def parse_mustache(path: str, text: str) -> Parsed:
    """A Mustache or Handlebars template file: one prompt."""
    index = LineIndex(text)
    scan = scan_mustache(text, index.locator(path))
    parsed = Parsed(path, "mustache", [_doc(path, index, scan)])
    _finish(parsed, scan, index, path)
    return parsed


def parse_gotemplate(path: str, text: str) -> Parsed:
    """A Go ``text/template`` file (``.tmpl``, ``.gotmpl``): one prompt; ``{{/* */}}`` comments
    hold directives."""
    index = LineIndex(text)
    scan = scan_tags(text, index.locator(path), "go")
    parsed = Parsed(path, "gotemplate", [_doc(path, index, scan)])
    _finish(parsed, scan, index, path)
    return parsed


def parse_liquid(path: str, text: str) -> Parsed:
    """A Liquid template file (``.liquid``): one prompt; ``{% comment %}`` blocks hold
    directives."""
    index = LineIndex(text)
    scan = scan_tags(text, index.locator(path), "liquid")
    parsed = Parsed(path, "liquid", [_doc(path, index, scan)])
    _finish(parsed, scan, index, path)
    return parsed


def parse_plain(path: str, text: str) -> Parsed:
    """A plain-text or Markdown prompt with placeholders. It has no comments that stay out of
    the prompt, so inline directives are refused (``invalid-suppression``).

    Markdown prompt files with YAML front matter (Claude Code agents and commands, Copilot
    ``.prompt.md``, Cursor ``.mdc`` rules): the front matter is metadata, not prompt text; its
    ``model`` names the model; the body is the prompt.
    """
    index = LineIndex(text)
    m = _FRONT.match(text)
    base = 0
    model = None
    parsed = Parsed(path, "text", comments=False)
    if m and path.lower().endswith((".md", ".mdc", ".markdown", ".prompt")):
        base = m.end()
        parsed.language = "markdown"
        try:
            front = yaml.safe_load(m.group(1) or "") or {}
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = (mark.line + 2) if mark is not None else 2
            parsed.issues.append(Issue("template-syntax", Span.point(path, line, 1), "front matter",
                                       {"reason": f"front matter is not valid YAML: {getattr(e, 'problem', e)}"}))
            front = {}
        if isinstance(front, dict) and isinstance(front.get("model"), str):
            model = front["model"]
    body = text[base:]
    dialect = text_dialect(body)
    locate = index.locator(path, base)
    if dialect == "go":
        scan = scan_tags(body, locate, "go")
    elif dialect == "jinja":
        scan = scan_jinja(body, locate)
    elif dialect == "handlebars":
        scan = scan_mustache(body, locate)
    else:
        scan = scan_placeholders(body, locate, file_refs=path.lower().endswith((".md", ".mdc")))
    if scan.error is not None:
        off, msg = scan.error
        parsed.issues.append(Issue("template-syntax", index.span(path, base + off, base + off + 1), msg,
                                   {"reason": f"{msg} (read as a {_DIALECT_NAMES[dialect]})"}))
    doc = _doc(path, index, scan, base=base)
    doc.model = model if model and re.match(r"(?i)^(gpt|o\d|claude|gemini|deepseek)", model) else None
    parsed.docs.append(doc)
    parsed.issues += refuse_directives(text[base:], index, path, PLAIN_NO_COMMENTS) if not base else \
        [i for i in refuse_directives(text, index, path, PLAIN_NO_COMMENTS) if i.span.line > index.pos(base)[0] - 1]
    return parsed


#: What marks the template language of a plain-text prompt (``.txt``, ``.md``, ``.prompt``):
#: Go ``text/template`` actions (kubectl-ai's ``systemprompt_template_default.txt``), Jinja
#: statements, Handlebars sections; else placeholders (``{{ x }}``, ``{{$x}}``, ``{x}``, ``${x}``).
_GO_MARK = re.compile(r"\{\{-?\s*(?:\.[A-Za-z_]|end\s*-?\}\}|(?:if|range|with|define|template|block)\s+[.$(\"]"
                      r"|else(?:\s+if\b)?\s*-?\}\})")
_JINJA_MARK = re.compile(r"\{%-?\s*(?:if|for|set|macro|include|block|raw|filter|with|extends|import|from|call)\b")
_HBS_MARK = re.compile(r"\{\{~?[#^](?:if|each|unless|with)\b.*?\{\{~?/(?:if|each|unless|with)\s*~?\}\}", re.S)
_DIALECT_NAMES = {"go": "Go template", "jinja": "Jinja template", "handlebars": "Handlebars template",
                  "plain": "plain-text prompt"}


def text_dialect(text: str) -> str:
    """``go``, ``jinja``, ``handlebars`` or ``plain``: the template language a plain-text
    prompt is written in, by the tags it holds."""
    if _GO_MARK.search(text):
        return "go"
    if _JINJA_MARK.search(text):
        return "jinja"
    if _HBS_MARK.search(text):
        return "handlebars"
    return "plain"


_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)
_ROLE = re.compile(r"^[ \t]*(system|user|assistant|developer|tool|function)[ \t]*:[ \t]*$", re.M | re.I)


def _prompty_model(front: dict) -> str | None:
    model = front.get("model")
    if isinstance(model, str):
        return model
    if isinstance(model, dict):
        if isinstance(model.get("id"), str):
            return model["id"]
        conf = model.get("configuration") or {}
        if isinstance(conf, dict):
            for k in ("name", "model", "azure_deployment", "deployment"):
                if isinstance(conf.get(k), str) and "${" not in conf[k]:
                    return conf[k]
    return None


def parse_prompty(path: str, text: str) -> Parsed:
    """A Prompty file: front matter (model configuration) and a templated body whose
    ``role:`` lines start messages.

    The body is Jinja2 unless the front matter says ``template: mustache`` (or
    ``template: {format: mustache}``).
    """
    index = LineIndex(text)
    parsed = Parsed(path, "prompty")
    m = _FRONT.match(text)
    front: dict = {}
    base = 0
    if m:
        base = m.end()
        try:
            front = yaml.safe_load(m.group(1) or "") or {}
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = (mark.line + 2) if mark is not None else 2
            parsed.issues.append(Issue("template-syntax", Span.point(path, line, 1), "front matter",
                                       {"reason": f"front matter is not valid YAML: {getattr(e, 'problem', e)}"}))
        if not isinstance(front, dict):
            front = {}
        for cm in re.finditer(r"#([^\n]*)", m.group(1) or ""):
            s = m.start(1) + cm.start()
            e = m.start(1) + cm.end()
            span = index.span(path, s, e)
            alone = not index.line_text(span.line)[:span.col - 1].strip()
            got = parse_directive(cm.group(1), span, alone=alone, next_line=next_content_line(index, span.line),
                                  removal=line_removal(index, path, s, e))
            if got is not None:
                (parsed.issues if isinstance(got, Issue) else parsed.directives).append(got)  # type: ignore[arg-type]
    body = text[base:]
    tmpl = front.get("template")
    fmt = tmpl.get("format") if isinstance(tmpl, dict) else tmpl
    locate = index.locator(path, base)
    scan = scan_mustache(body, locate) if str(fmt or "").lower() in ("mustache", "handlebars") else \
        scan_jinja(body, locate)
    _finish(parsed, scan, index, path, base)
    # split static text at role lines into messages
    parts: list[Part] = []
    role, pieces, start = "system", [], index.span(path, base, base)
    n_msg = 0

    def flush() -> None:
        nonlocal n_msg
        if any(p.kind != "static" or p.text.strip() for p in pieces):
            parts.append(Part(role.lower(), f"messages[{n_msg}]", list(pieces), start))
            n_msg += 1

    for p in scan.pieces:
        if p.kind != "static" or p.span is None:
            pieces.append(p)
            continue
        t, off = p.text, index.offset(p.span.line, p.span.col)
        pos = 0
        for rm in _ROLE.finditer(t):
            if t[pos:rm.start()]:
                pieces.append(Piece("static", t[pos:rm.start()], span=index.span(path, off + pos, off + rm.start())))
            flush()
            role, pieces = rm.group(1), []
            start = index.span(path, off + rm.start(), off + rm.end())
            pos = rm.end() + 1 if t[rm.end():rm.end() + 1] == "\n" else rm.end()
        if t[pos:]:
            pieces.append(Piece("static", t[pos:], span=index.span(path, off + pos, off + len(t))))
    flush()
    for part in parts:  # trim the blank lines around each message, as Prompty does
        if part.pieces and part.pieces[0].kind == "static":
            first = part.pieces[0]
            part.pieces[0] = Piece("static", first.text.lstrip(), span=first.span)
        if part.pieces and part.pieces[-1].kind == "static":
            last = part.pieces[-1]
            part.pieces[-1] = Piece("static", last.text.rstrip(), span=last.span)
        part.pieces = [p for p in part.pieces if p.kind != "static" or p.text]
    start = index.span(path, base, base)
    parsed.docs.append(Doc(path, "prompt", parts, start, model=_prompty_model(front)))
    return parsed
