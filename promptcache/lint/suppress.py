"""Suppression: inline directives, ``per-file-ignores``, and baselines; unused and malformed
directives reported (``unused-suppression`` PC901, ``invalid-suppression`` PC002).

Suppressed findings are kept with ``suppressed_by`` set (``inline``, ``config``, ``baseline``)
so SARIF can carry them as suppressed; only unsuppressed findings count for the exit code.

Directive forms (in a comment the template language strips before rendering):

- ``promptcache: ignore[PC101, uuid-in-prefix]``: the comment's line, or the next line with
  content when the comment stands alone on its line;
- ``promptcache: disable[PC1*]`` ... ``promptcache: enable[PC1*]``: a range of lines (to the
  end of the file when never enabled);
- ``promptcache: file-ignore[PC304]``: the whole file.

Codes, rule ids, aliases and globs (``PC1*``, ``*``) are accepted.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Iterable, Sequence

from ..diagnose.rules import Rule
from ..errors import InputError
from .model import Directive, LintFinding


def expand(selectors: Iterable[str], rules: Sequence[Rule]) -> set[str]:
    """Rule ids a list of selectors names (codes, ids, aliases, globs over codes and ids).

    Unknown selectors name nothing (the caller decides whether that is an error).
    """
    out: set[str] = set()
    for sel in selectors:
        for r in rules:
            names = (r.code, r.id, *r.aliases)
            if any(sel == n or fnmatch.fnmatchcase(n, sel) for n in names):
                out.add(r.id)
    return out


def unknown_selectors(selectors: Iterable[str], rules: Sequence[Rule]) -> list[str]:
    """Selectors that name no rule."""
    return [s for s in selectors if not expand([s], rules)]


def apply_directives(findings: list[LintFinding], directives: list[Directive], rules: Sequence[Rule]) -> None:
    """Mark findings covered by a directive as suppressed ``inline`` and record use."""
    if not directives:
        return
    ranges: list[tuple[Directive, set[str], int, int]] = []
    open_: list[tuple[Directive, set[str]]] = []
    for d in sorted(directives, key=lambda d: (d.span.line, d.span.col)):
        ids = expand(d.codes, rules)
        if d.action == "ignore":
            ranges.append((d, ids, d.applies_to, d.applies_to))
        elif d.action == "file-ignore":
            ranges.append((d, ids, 1, 10**9))
        elif d.action == "disable":
            open_.append((d, ids))
        elif d.action == "enable":
            for od, oids in list(open_):
                if oids & ids or set(od.codes) & set(d.codes):
                    ranges.append((od, oids, od.span.line, d.span.line))
                    open_.remove((od, oids))
                    d.used.add("enable")
    for od, oids in open_:
        ranges.append((od, oids, od.span.line, 10**9))
    for f in findings:
        if f.suppressed_by is not None or f.rule_id in ("invalid-suppression", "unused-suppression"):
            continue
        for d, ids, lo, hi in ranges:
            if f.rule_id in ids and lo <= f.span.line <= hi:
                f.suppressed_by = "inline"
                d.used.add(f.rule_id)
                break


def unused(directives: list[Directive], rules: Sequence[Rule], selected: set[str]) -> list[tuple[Directive, list[str]]]:
    """Directives (and the selectors in them) that suppressed nothing, counting only rules that
    ran (a directive for a deselected rule is not unused)."""
    out = []
    for d in directives:
        if d.action == "enable":
            continue
        idle = [c for c in d.codes if (expand([c], rules) & selected) and not (expand([c], rules) & d.used)]
        if idle and len(idle) == len([c for c in d.codes if expand([c], rules) & selected]):
            out.append((d, idle))
    return out


def apply_per_file(findings: list[LintFinding], patterns: Sequence[tuple[str, tuple[str, ...]]], rel: str | None,
                   rules: Sequence[Rule]) -> None:
    """Mark findings a ``per-file-ignores`` entry covers as suppressed by ``config``."""
    from .config import glob_match

    if rel is None or not patterns:
        return
    ids: set[str] = set()
    for glob, sels in patterns:
        if glob_match(glob, rel):
            ids |= expand(sels, rules)
    for f in findings:
        if f.suppressed_by is None and f.rule_id in ids:
            f.suppressed_by = "config"


def read_baseline(path: Path) -> set[str]:
    """Fingerprints of a baseline: a previous ``promptcache lint --format json`` report (or a
    JSON object with a ``fingerprints`` list).

    Raises:
        InputError: when the file is missing or is not such a report.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read baseline: {e.strerror}; create one with "
                         "`promptcache lint PATHS --format json --exit-zero > FILE`", path=str(path)) from None
    except json.JSONDecodeError as e:
        raise InputError(f"baseline is not JSON ({e.msg})", path=str(path), line=e.lineno) from None
    if isinstance(data, dict) and isinstance(data.get("fingerprints"), list):
        return {str(x) for x in data["fingerprints"]}
    if isinstance(data, dict) and isinstance(data.get("findings"), list):
        return {str(f.get("fingerprint")) for f in data["findings"] if isinstance(f, dict) and f.get("fingerprint")}
    raise InputError("baseline is not a `promptcache lint --format json` report", path=str(path))


def apply_baseline(findings: list[LintFinding], fingerprints: set[str]) -> None:
    """Mark findings whose fingerprint the baseline holds as suppressed by ``baseline``."""
    for f in findings:
        if f.suppressed_by is None and f.fingerprint in fingerprints:
            f.suppressed_by = "baseline"
