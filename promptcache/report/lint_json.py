"""``promptcache lint --format json``: the ``promptcache.lint/v1`` record."""

from __future__ import annotations

import json
from typing import TextIO

from ..lint.engine import LintRun
from .lint_records import json_printable, records


def render(run: LintRun, out: TextIO) -> None:
    """Write the JSON report."""
    out.write(json_printable(json.dumps(records(run), indent=1, ensure_ascii=False)) + "\n")
