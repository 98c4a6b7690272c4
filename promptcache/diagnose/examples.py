"""Run a rule's ``examples.logs`` cases: every ``bad`` case must produce the rule, no ``good``
case may. Used by the test suite and by ``promptcache rules test``.

A case is a list of request records (any log format the reader accepts). ``<<filler N>>`` in a
string expands to N words of fixed filler text, so examples can pass providers' minimum lengths
without pages of prose. ``examples.logs.options`` sets audit options (``cache_model``, ``ttl``,
``capacity_tokens``, ``block_size``).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from .rules import Rule

_FILLER = re.compile(r"<<filler (\d+)>>")
_WORDS = ("policy order refund customer shipping account payment invoice return warranty support agent "
          "priority ticket review balance transfer limit statement card branch delivery parcel tracking "
          "address contract renewal discount voucher escalation summary handbook section record").split()


def filler(n: int) -> str:
    """``n`` words of deterministic filler text.

    >>> filler(3)
    'section record payment'
    """
    out, x = [], 7
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(_WORDS[x % len(_WORDS)])
    return " ".join(out)


def expand(obj: Any) -> Any:
    """Expand ``<<filler N>>`` everywhere in a JSON-like value."""
    if isinstance(obj, str):
        return _FILLER.sub(lambda m: filler(int(m.group(1))), obj)
    if isinstance(obj, list):
        return [expand(x) for x in obj]
    if isinstance(obj, dict):
        return {k: expand(v) for k, v in obj.items()}
    return obj


def fired(rule: Rule, case: list[dict[str, Any]], options: dict[str, Any] | None = None) -> list[str]:
    """Rule ids the diagnosis reports on one example case."""
    from ..pipeline import AuditOptions, audit

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{rule.id}.jsonl"
        path.write_text("".join(json.dumps(expand(r)) + "\n" for r in case), encoding="utf-8")
        res = audit([path], AuditOptions(**(options or {})))
    return [f.rule.id for f in res.findings]


def check_examples(rule: Rule) -> list[str]:
    """Problems with a rule's log examples (empty when every case behaves)."""
    logs = rule.examples.get("logs") or {}
    opts = logs.get("options") or {}
    problems = []
    for k, case in enumerate(logs.get("bad") or []):
        if rule.id not in fired(rule, case, opts):
            problems.append(f"{rule.path}: examples.logs.bad[{k}] does not produce {rule.id}")
    for k, case in enumerate(logs.get("good") or []):
        got = fired(rule, case, opts)
        if rule.id in got:
            problems.append(f"{rule.path}: examples.logs.good[{k}] produces {rule.id}")
    return problems
