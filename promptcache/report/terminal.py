"""What reaches a terminal: Rich consoles that show control characters as escapes, and
:func:`safe`, the one function that escapes them.

Prompt text, file names, model names and ids come from logs and templates a user did not write.
Printed raw, an escape sequence in them clears the screen, sets the window title, moves the
cursor over earlier lines or (OSC 52) writes the clipboard; a carriage return overwrites the
line it is on; a bidirectional override reorders what a report quotes. Every command prints
through :func:`console` (text reports on stdout, messages on stderr), which passes all text
through :func:`safe` before Rich lays it out; :func:`~promptcache.fileio.emit` passes a report
through it when stdout is a terminal; the Markdown report escapes each value with it.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from rich.console import Console, RenderableType
from rich.text import Span, Text

#: Characters :func:`safe` escapes: the C0 controls but tab and newline (ESC starts every escape
#: sequence; BEL, backspace, carriage return, form feed move or sound), DEL, the C1 controls
#: (U+009B is CSI, U+009D OSC on terminals that take 8-bit controls), and the bidirectional
#: embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069; CVE-2021-42574).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe(text: str) -> str:
    """``text`` with every :data:`CONTROL` character written as its escape (``\\x1b``,
    ``\\x9b``, ``\\u202e``), as Python's ``repr`` writes it; other text unchanged.

    >>> safe("ok \\x1b]0;title\\x07 \\u202eevil")
    'ok \\\\x1b]0;title\\\\x07 \\\\u202eevil'
    """
    return CONTROL.sub(_escape, text) if CONTROL.search(text) else text


def safe_text(text: Text) -> Text:
    """A Rich :class:`~rich.text.Text` with :func:`safe` applied to its characters, each style
    span kept on the same characters."""
    plain = text.plain
    found = list(CONTROL.finditer(plain))
    if not found:
        return text
    starts = [m.start() for m in found]
    grown = [0]
    for m in found:
        grown.append(grown[-1] + len(_escape(m)) - 1)

    def moved(i: int) -> int:  # where old offset i lands: after the escapes of controls before it
        return i + grown[bisect.bisect_left(starts, i)]

    spans = [Span(moved(s.start), moved(s.end), s.style) for s in text.spans]
    return Text(safe(plain), style=text.style, justify=text.justify, overflow=text.overflow,
                no_wrap=text.no_wrap, end=text.end, tab_size=text.tab_size, spans=spans)


class SafeConsole(Console):
    """A :class:`rich.console.Console` that shows control characters as escapes (:func:`safe`)
    in all text it prints: strings (markup included) and :class:`~rich.text.Text`, as they are
    turned into what Rich lays out. Rich's own control codes (colours, the progress bar's
    cursor moves) are not text and pass as they are."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        """As Rich's, on :func:`safe` of ``text``."""
        return super().render_str(safe(text), **kwargs)

    def render(self, renderable: RenderableType, options: Any = None) -> Any:
        """As Rich's, with a :class:`~rich.text.Text` passed through :func:`safe_text`."""
        if isinstance(renderable, Text):
            renderable = safe_text(renderable)
        return super().render(renderable, options)


def console(**kwargs: Any) -> Console:
    """A :class:`SafeConsole` that prints text as given, markup aside and control characters
    escaped: no ``:name:`` emoji codes, which would print ``log.jsonl:100: invalid JSON`` as
    ``log.jsonl💯 invalid JSON``. Keyword arguments go to :class:`rich.console.Console`."""
    kwargs.setdefault("emoji", False)
    return SafeConsole(**kwargs)
