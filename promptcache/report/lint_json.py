"""``promptcache lint --format json``: the ``promptcache.lint/v1`` record."""

from __future__ import annotations

import json
from typing import TextIO

from ..lint.engine import LintRun
from .jsontext import escape_controls
from .lint_records import records


def render(run: LintRun, out: TextIO) -> None:
    """Write the JSON report."""
    out.write(escape_controls(json.dumps(records(run), indent=1, ensure_ascii=False)) + "\n")
