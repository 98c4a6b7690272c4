"""The optional compiled build (setup.py, promptcache._compiled): both builds give the same
reports, and a module loads from source when asked to or when its source changed since the
build."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import promptcache
from promptcache import _compiled

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
STATUS = _compiled.status()
COMPILED = sorted(m for m, s in STATUS.items() if s == "compiled")
needs_build = pytest.mark.skipif(not COMPILED, reason="no compiled build here (pure Python install)")


def _audit(args: list[str], out: Path, pure: bool) -> bytes:
    env = dict(os.environ)
    env.pop(_compiled.ENV, None)
    if pure:
        env[_compiled.ENV] = "1"
    probe = "import promptcache._compiled as c, json; print(json.dumps(c.status()))"
    status = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                       check=True).stdout)
    assert all(v == ("source (disabled)" if pure else "compiled") for v in status.values()), status
    subprocess.run([sys.executable, "-m", "promptcache", "audit", *args, "--format", "json", "--output", str(out)],
                   env=env, capture_output=True, check=True)
    return out.read_bytes()


def test_manifest_unreadable_or_malformed_is_empty(tmp_path):
    assert _compiled.manifest(tmp_path) == {}
    (tmp_path / _compiled.MANIFEST).write_text("{not json")
    assert _compiled.manifest(tmp_path) == {}
    (tmp_path / _compiled.MANIFEST).write_text('{"modules": ["a"]}')
    assert _compiled.manifest(tmp_path) == {}
    (tmp_path / _compiled.MANIFEST).write_text('{"modules": {"promptcache.tips": "ab"}}')
    assert _compiled.manifest(tmp_path) == {"promptcache.tips": "ab"}


def test_the_build_compiled_the_hot_modules():
    """Where there is a build at all, the prefix tree, the two halves of the pipeline and the
    diagnoser are in it (the modules a 100k-request audit spends its time in)."""
    if not STATUS:
        pytest.skip("no compiled build here (pure Python install)")
    for mod in ("promptcache.prefix.tree", "promptcache.prepare", "promptcache.pipeline", "promptcache.diagnose.engine",
                "promptcache.ingest.resent"):
        assert mod in STATUS


@needs_build
def test_source_is_loaded_when_disabled_stale_or_unlisted():
    name = "promptcache.tips"
    src = Path(promptcache.__file__).parent / "tips.py"
    good = _compiled.manifest()
    cases = [(good, False, None), (good, True, "disabled"), ({**good, name: "0" * 64}, False, "stale"),
             ({k: v for k, v in good.items() if k != name}, False, "unlisted")]
    for hashes, off, why in cases:
        finder = _compiled.SourceWhenStale(Path(promptcache.__file__).parent, hashes, off)
        spec = finder.find_spec(name, promptcache.__path__)
        if why is None:
            assert spec is not None and isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)
            assert finder.compiled == [name] and finder.source == {}
        else:
            assert spec is not None and spec.origin == str(src)
            assert isinstance(spec.loader, importlib.machinery.SourceFileLoader)
            assert finder.source == {name: why}
    # not the package's, or a module with no extension: left to the usual finders
    finder = _compiled.SourceWhenStale(Path(promptcache.__file__).parent, good, True)
    assert finder.find_spec("json", None) is None
    assert finder.find_spec("promptcache.cli", promptcache.__path__) is None


@needs_build
def test_compiled_and_source_give_the_same_report_on_the_samples(tmp_path):
    logs = [str(p) for p in sorted(SAMPLES.glob("*.jsonl"))]
    a = _audit(logs, tmp_path / "compiled.json", pure=False)
    b = _audit(logs, tmp_path / "source.json", pure=True)
    assert a == b
    assert len(json.loads(a)["requests"]) == 587  # 590 lines, 3 of them malformed


@needs_build
@pytest.mark.slow
def test_compiled_and_source_give_the_same_report_in_two_processes(tmp_path):
    """An agent log as the benchmark makes them (sessions, volatile prefixes, several models),
    read and tokenized in a second process: the path the benchmark times."""
    log = tmp_path / "agents.jsonl"
    subprocess.run([sys.executable, str(ROOT / "bench" / "genlog.py"), "--requests", "600", "--out", str(log)],
                   check=True, capture_output=True)
    args = [str(log), "--workers", "2"]
    assert _audit(args, tmp_path / "compiled.json", pure=False) == _audit(args, tmp_path / "source.json", pure=True)
