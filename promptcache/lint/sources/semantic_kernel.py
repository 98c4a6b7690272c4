"""Semantic Kernel prompt files: prompt YAML (``template`` with ``template_format`` /
``input_variables`` / ``execution_settings``; formats ``semantic-kernel``, ``handlebars``,
``liquid``, ``jinja2``) split into messages at ``<message role="...">`` tags. (``skprompt.txt``
files are plain text: :func:`.files.parse_plain` reads ``{{$x}}`` and ``{{plugin.fn $x}}``.)
"""

from __future__ import annotations

import re
from typing import Callable

from yaml.nodes import Node

from ..model import Doc, Part, Piece
from .base import Locator
from .templating import Scan, scan_jinja, scan_mustache, scan_placeholders, scan_tags
from .workflow import _get, _str

_MESSAGE_TAG = re.compile(r"<message\s+role=[\"'](\w+)[\"']\s*>|</message>")


def is_semantic_kernel(root: Node) -> bool:
    return _str(_get(root, "template")) is not None and any(
        _get(root, k) is not None for k in ("template_format", "input_variables", "execution_settings"))


def _sk_scanner(fmt: str) -> Callable[[str, Locator], Scan]:
    fmt = fmt.lower()
    if fmt == "handlebars":
        return scan_mustache
    if fmt == "liquid":
        return lambda t, loc: scan_tags(t, loc, "liquid")
    if fmt in ("jinja2", "jinja"):
        return lambda t, loc: scan_jinja(t, loc, keep_trailing_newline=True)
    return scan_placeholders


def split_message_tags(pieces: list[Piece], default_role: str = "system") -> list[tuple[str, list[Piece]]]:
    """Split a prompt at ``<message role="...">`` / ``</message>`` tags in its static text
    (Semantic Kernel's chat prompts) into ``(role, pieces)``; text outside tags keeps the
    previous role."""
    out: list[tuple[str, list[Piece]]] = []
    role, cur = default_role, []
    for p in pieces:
        if p.kind != "static":
            cur.append(p)
            continue
        pos = 0
        for m in _MESSAGE_TAG.finditer(p.text):
            if p.text[pos:m.start()].strip():
                cur.append(Piece("static", p.text[pos:m.start()], span=p.span))
            if cur:
                out.append((role, cur))
            cur = []
            if m.group(1):
                role = {"human": "user", "bot": "assistant"}.get(m.group(1).lower(), m.group(1).lower())
            pos = m.end()
        if p.text[pos:].strip() or (pos == 0 and p.text):
            cur.append(Piece("static", p.text[pos:], span=p.span))
    if cur:
        out.append((role, cur))
    return out


def semantic_kernel_docs(ctx, root: Node) -> list[Doc]:
    """A Semantic Kernel prompt file: one doc, split at its ``<message>`` tags."""
    tmpl = _get(root, "template")
    fmt = _str(_get(root, "template_format")) or "semantic-kernel"
    pieces = ctx.string_pieces(tmpl, _sk_scanner(fmt))
    groups = split_message_tags(pieces)
    parts = [Part(role, f"messages[{k}]" if len(groups) > 1 else "template", ps, ctx.start(tmpl))
             for k, (role, ps) in enumerate(groups)]
    model = None
    for setting in (_get(_get(root, "execution_settings"), "default"), _get(root, "execution_settings")):
        model = model or _str(_get(setting, "model_id")) or _str(_get(setting, "ai_model_id"))
    name = _str(_get(root, "name")) or "template"
    return [Doc(ctx.path, name, parts, ctx.start(root), model=model)]



#: (recognise, read), as :data:`.workflow.READERS`.
READERS = (("semantic-kernel", is_semantic_kernel, semantic_kernel_docs),)
