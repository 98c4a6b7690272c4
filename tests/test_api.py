"""The Python API: every function and method gives the same result when called again, and the
package's names stay the API's functions whatever is imported after them."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import promptcache

from conftest import SAMPLES

LOG = SAMPLES / "support_bot.jsonl"
SALT = bytes(range(32))


def same_frame(a, b) -> bool:
    return a.equals(b) and list(a.columns) == list(b.columns)


def test_propose_works_twice_in_a_fresh_interpreter():
    """``promptcache.propose(...)`` worked once: importing the ``propose`` subpackage then set the
    module over the function on the package."""
    code = ("import promptcache as pc; a = pc.propose([%r]); b = pc.propose([%r]); "
            "import promptcache.propose.engine; c = pc.propose([%r]); "
            "assert a.records() == b.records() == c.records(), 'differ'; print(type(pc.propose).__name__)") % (
        str(LOG), str(LOG), str(LOG))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "function"


def test_no_subpackage_replaces_an_api_name():
    """Importing every submodule of the package leaves each name of ``__all__`` what it was."""
    before = {n: getattr(promptcache, n) for n in promptcache.__all__}
    for mod in pkgutil.walk_packages(promptcache.__path__, "promptcache."):
        if mod.name.endswith("__main__") or (mod.name.split(".")[1] in ("replay", "distributed")
                                             and mod.name.count(".") > 1):
            continue  # the command line itself; engines import torch or dask (their packages below)
        try:
            importlib.import_module(mod.name)
        except ImportError:
            continue
    importlib.import_module("promptcache.replay")
    assert {n: getattr(promptcache, n) for n in promptcache.__all__} == before


def test_audit_twice_gives_the_same_result():
    a = promptcache.audit([LOG])
    b = promptcache.audit([LOG])
    assert a.record() == b.record()
    assert a.record() is a.record()  # computed once
    assert same_frame(a.to_pandas(), b.to_pandas()) and same_frame(a.to_pandas(), a.to_pandas())
    assert same_frame(a.findings_frame(), b.findings_frame()) and same_frame(a.findings_frame(), a.findings_frame())
    assert same_frame(a.scenarios_frame(), b.scenarios_frame())
    assert a.to_markdown() == b.to_markdown() == a.to_markdown()
    assert a.to_html() == b.to_html() == a.to_html()
    assert repr(a) == repr(b)
    assert len(a.findings) == len(b.findings) >= 1


def test_propose_twice_gives_the_same_result(tmp_path):
    # The same arguments twice (the "after" figures are the audit of the written file, so they
    # name its path: the same path both times).
    out = tmp_path / "proposed.jsonl"
    a = promptcache.propose([LOG], write=out)
    first = out.read_bytes()
    b = promptcache.propose([LOG], write=out)
    assert a.records() == b.records() == a.records() and a.records()
    assert out.read_bytes() == first
    assert same_frame(a.to_pandas(), b.to_pandas())
    assert a.to_markdown() == b.to_markdown() == a.to_markdown()
    assert a.to_html() == b.to_html()
    assert a.before.record() == b.before.record() and a.after.record() == b.after.record()
    assert repr(a) == repr(b)


def test_export_trace_twice_gives_the_same_result(tmp_path):
    a = promptcache.export_trace([LOG], tmp_path / "a.jsonl", salt=SALT)
    b = promptcache.export_trace([LOG], tmp_path / "b.jsonl", salt=SALT)
    assert a.records == b.records and a.records
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert same_frame(a.to_pandas(), b.to_pandas())
    salt_file = tmp_path / "salt.hex"
    c = promptcache.export_trace([LOG], salt_file=salt_file)
    d = promptcache.export_trace([LOG], salt_file=salt_file)
    assert c.records == d.records


def test_audit_and_propose_between_each_other_do_not_change_either():
    """An audit, a proposal run and an audit again: the two audits are the same."""
    a = promptcache.audit([LOG], cache_model="openai")
    promptcache.propose([LOG], cache_model="openai")
    promptcache.export_trace([LOG], salt=SALT)
    b = promptcache.audit([LOG], cache_model="openai")
    assert a.record() == b.record()


@pytest.mark.parametrize("name", promptcache.__all__)
def test_each_api_name_is_documented(name):
    obj = getattr(promptcache, name)
    assert isinstance(obj, str) or (obj.__doc__ or "").strip(), name
