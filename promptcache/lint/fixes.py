"""Apply findings' mechanical fixes to files (``--fix``), atomically, one file at a time.

Only unsuppressed findings whose rule's fix is ``safe`` are applied unless unsafe fixes are
asked for. Edits that overlap an edit already chosen in the same file are skipped (the next
run applies them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..fileio import write_atomic
from .model import Edit, LintFinding
from .reading import decode, encode_like
from .sources.base import LineIndex


def plan(findings: Iterable[LintFinding], *, unsafe: bool = False) -> dict[str, list[Edit]]:
    """Edits to apply, by file."""
    out: dict[str, list[Edit]] = {}
    for f in findings:
        if f.suppressed_by is not None or not f.edits:
            continue
        if f.fix_safety != "safe" and not unsafe:
            continue
        out.setdefault(f.span.path, []).extend(f.edits)
    return out


def apply_text(text: str, edits: list[Edit]) -> tuple[str, int]:
    """``text`` with the non-overlapping edits applied, and how many were applied.

    >>> from promptcache.lint.model import Span
    >>> apply_text("json.dumps(x)", [Edit(Span("f", 1, 13, 1, 13), ", sort_keys=True")])
    ('json.dumps(x, sort_keys=True)', 1)
    """
    index = LineIndex(text)
    spans = []
    for e in edits:
        a = index.offset(e.span.line, e.span.col)
        b = index.offset(e.span.end_line, e.span.end_col)
        spans.append((a, b, e.text))
    spans.sort(key=lambda x: (x[0], x[1]))
    chosen: list[tuple[int, int, str]] = []
    end = -1
    for a, b, t in spans:
        if a < end or (chosen and a == chosen[-1][0] and b == chosen[-1][1]):
            continue
        chosen.append((a, b, t))
        end = max(b, a + (1 if a == b else 0))
    for a, b, t in reversed(chosen):
        text = text[:a] + t + text[b:]
    return text, len(chosen)


def apply(findings: Iterable[LintFinding], *, unsafe: bool = False) -> int:
    """Apply fixes to the files; returns the number of edits applied."""
    n = 0
    for path, edits in plan(findings, unsafe=unsafe).items():
        p = Path(path)
        text, enc = decode(p.read_bytes(), p)
        new, k = apply_text(text, edits)
        if new != text:
            write_atomic(p, encode_like(new, enc))  # in the file's own encoding, its byte order mark kept
            n += k
    return n
