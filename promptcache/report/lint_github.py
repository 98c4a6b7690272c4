"""``promptcache lint --format github``: GitHub Actions workflow commands, one annotation per
unsuppressed finding, grouped per file.

``::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=T::message``; ``col`` and
``endColumn`` are left out when a finding spans lines (GitHub rejects them then). ``info``
findings become ``::notice``.
"""

from __future__ import annotations

from itertools import groupby
from typing import TextIO

from ..lint.engine import LintRun
from .terminal import safe

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _data(s: str) -> str:
    """A workflow command's value: ``%``, CR and LF percent-encoded (GitHub's escapes), other
    control characters escaped (:func:`~promptcache.report.terminal.safe`): the runner's log
    and a terminal both act on escape sequences."""
    return safe(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _prop(s: str) -> str:
    return _data(s).replace(":", "%3A").replace(",", "%2C")


def render(run: LintRun, out: TextIO) -> None:
    """Write the annotations."""
    for path, group in groupby(run.active, key=lambda f: f.span.path):
        out.write(f"::group::{_data(path)}\n")
        for f in group:
            s = f.span
            props = [f"file={_prop(s.path)}", f"line={s.line}"]
            if s.line == s.end_line:
                props += [f"col={s.col}", f"endLine={s.end_line}", f"endColumn={s.end_col}"]
            else:
                props += [f"endLine={s.end_line}"]
            props.append(f"title={_prop(f'promptcache {f.code} ({f.rule_id})')}")
            msg = f"{f.message}\nFix: {f.fix_description}"
            out.write(f"::{LEVEL[f.severity]} {','.join(props)}::{_data(msg)}\n")
        out.write("::endgroup::\n")
    for path, msg in (*run.errors, *run.internal):
        out.write(f"::error file={_prop(path)},title=promptcache::{_data(msg)}\n")
    for path, msg in run.notes:
        out.write(f"::notice file={_prop(path)},title=promptcache::{_data(msg)}\n")
