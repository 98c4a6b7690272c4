"""Data flows one way: the diagnosis stage reads what the pipeline produced and never imports
the pipeline (issue 17: ``pipeline.py`` and ``diagnose/engine.py`` imported each other)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "promptcache"


def _imports(path: Path) -> set[str]:
    """Every promptcache module a file imports, at module level or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = ["promptcache", *path.relative_to(PKG).with_suffix("").parts]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("promptcache")}


def test_diagnosis_never_imports_the_pipeline():
    for path in sorted((PKG / "diagnose").glob("*.py")):
        bad = {m for m in _imports(path) if m == "promptcache.pipeline" or m.startswith("promptcache.pipeline.")}
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_per_request_record_lives_below_both():
    """``Step`` is defined in promptcache/step.py, which imports neither the pipeline nor diagnosis."""
    mods = _imports(PKG / "step.py")
    assert not {m for m in mods if m.startswith(("promptcache.pipeline", "promptcache.diagnose"))}
    from promptcache import pipeline, step
    from promptcache.diagnose import engine

    assert pipeline.Step is step.Step and engine.Step is step.Step
