"""Lint on a corpus of real prompt templates (``tests/data/lint_corpus``).

Each template is taken from a public repository (named in ``corpus.json`` with its path), its
wording replaced with invented text and its structure kept: where the values sit, what they are
called, how they are built (template literals, ``fmt.Sprintf``, n8n expressions, Dify variables,
Semantic Kernel functions, Claude Code shell snapshots). ``flag`` lists the lines a reviewer
flags (worked out by hand: a value that varies between requests, sits in the cacheable part
and has a long static block after it); a template with none is a clean one. ``neutral`` (optional)
lists lines where a finding is acceptable either way (a reviewer would not flag them, nor fault a
finding there: a field inside a reported loop, a per-user value after the first one flagged, a
value of debatable kind): they count neither for recall nor as off-line.

The properties, per source kind and over the whole corpus: recall of the flagged lines at least
90%; no finding at all on a clean template; at most 10% of findings on lines not flagged.
``python tests/test_lint_corpus.py`` prints the table.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "data" / "lint_corpus"


def entries() -> list[dict]:
    return json.loads((CORPUS / "corpus.json").read_text(encoding="utf-8"))


def lint_corpus() -> tuple[list[dict], dict[str, list]]:
    """Lint every corpus file (from the corpus directory, with no config file: the defaults)."""
    from promptcache.lint import LintOptions, lint_paths

    es = entries()
    old = os.getcwd()
    os.chdir(CORPUS)
    try:
        run = lint_paths([Path(e["file"]) for e in es], LintOptions(config=CORPUS / "corpus.toml"))
    finally:
        os.chdir(old)
    assert not run.errors, run.errors
    assert not run.internal, run.internal
    by_file: dict[str, list] = defaultdict(list)
    for f in run.active:
        by_file[f.span.path].append(f)
    return es, by_file


def table(es: list[dict], by_file: dict[str, list]) -> tuple[dict[str, dict], str]:
    """Per kind: templates, clean ones, expected lines, found, findings, findings off the
    expected lines; and the printed table."""
    rows: dict[str, dict] = {}
    for e in es:
        r = rows.setdefault(e["kind"], {"templates": 0, "clean": 0, "clean_hit": 0, "expected": 0, "found": 0,
                                        "findings": 0, "off": 0})
        fs = by_file.get(e["file"], [])
        lines = {f.span.line for f in fs}
        want = set(e["flag"])
        ok = want | set(e.get("neutral", ()))
        r["templates"] += 1
        r["clean"] += not want
        r["clean_hit"] += bool(not want and fs)
        r["expected"] += len(want)
        r["found"] += len(want & lines)
        r["findings"] += len(fs)
        r["off"] += sum(1 for f in fs if f.span.line not in ok)
    total = {k: sum(r[k] for r in rows.values()) for k in next(iter(rows.values()))}
    out = [f"{'kind':<18}{'templates':>10}{'clean':>7}{'flagged':>9}{'found':>7}{'recall':>8}"
           f"{'findings':>10}{'off-line':>9}{'precision':>10}{'clean hit':>10}"]
    for name, r in [*sorted(rows.items()), ("all", total)]:
        rec = r["found"] / r["expected"] if r["expected"] else 1.0
        prec = 1 - r["off"] / r["findings"] if r["findings"] else 1.0
        out.append(f"{name:<18}{r['templates']:>10}{r['clean']:>7}{r['expected']:>9}{r['found']:>7}{rec:>8.0%}"
                   f"{r['findings']:>10}{r['off']:>9}{prec:>10.0%}{r['clean_hit']:>10}")
    return {**rows, "all": total}, "\n".join(out)


@pytest.fixture(scope="module")
def corpus_run():
    return lint_corpus()


def test_corpus_is_large_and_named():
    es = entries()
    assert len(es) >= 40
    kinds = {e["kind"] for e in es}
    assert {"typescript", "go", "n8n", "dify", "flowise", "langchain-python", "semantic-kernel", "markdown"} <= kinds
    for e in es:
        assert (CORPUS / e["file"]).is_file(), e["file"]
        assert e["source"].strip(), e["file"]
    assert sum(1 for e in es if not e["flag"]) >= 10  # a handful of clean ones in all


def test_recall_precision_and_clean_per_kind(corpus_run, capsys):
    es, by_file = corpus_run
    rows, text = table(es, by_file)
    with capsys.disabled():
        print("\nlint corpus (tests/data/lint_corpus):\n" + text)
    misses = [(e["file"], sorted(set(e["flag"]) - {f.span.line for f in by_file.get(e["file"], [])})) for e in es]
    misses = [m for m in misses if m[1]]
    extra = [(e["file"], f.span.line, f.code, f.match) for e in es for f in by_file.get(e["file"], [])
             if f.span.line not in e["flag"] and f.span.line not in e.get("neutral", ())]
    for kind, r in rows.items():
        assert r["found"] >= 0.9 * r["expected"], (kind, misses)
        assert r["clean_hit"] == 0, (kind, extra)
        assert r["off"] <= 0.1 * r["findings"], (kind, extra)


def span_text(lines: list[str], f) -> str:
    s = f.span
    if s.line == s.end_line:
        return lines[s.line - 1][s.col - 1:s.end_col - 1]
    return "\n".join([lines[s.line - 1][s.col - 1:], *lines[s.line:s.end_line - 1], lines[s.end_line - 1][:s.end_col - 1]])


def test_every_finding_points_at_the_value(corpus_run):
    """The span of each finding is the value it names, in the file as written: the placeholder,
    the expression, the JSON-escaped placeholder inside a workflow export, or the ``fmt.Sprintf``
    verb the argument fills (``%s (now)``)."""
    es, by_file = corpus_run
    n = 0
    for e in es:
        lines = (CORPUS / e["file"]).read_text(encoding="utf-8").split("\n")
        for f in by_file.get(e["file"], []):
            got = span_text(lines, f)
            assert got and (got == f.match or got == json.dumps(f.match, ensure_ascii=False)[1:-1]
                            or (f.match.startswith(got + " (") and got.startswith("%"))), (e["file"], f.span, f.match, got)
            n += 1
    assert n >= 50


if __name__ == "__main__":
    print(table(*lint_corpus())[1])
