"""The audit on Dask equals the single-process audit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from promptcache.pipeline import AuditOptions, assemble, audit
from promptcache.cli import _dask_default
from promptcache.distributed import audit_partition, merge
from promptcache.pricing import PriceBook
from promptcache.report.audit_records import audit_record

from conftest import SAMPLES

LOGS = [SAMPLES / f"{n}.jsonl" for n in ("support_bot", "agent_timestamp", "anthropic_app", "rag_app", "well_structured")]


@pytest.mark.parametrize("count", [1, 3, 7])
def test_partitions_merge_to_the_single_run(count):
    opts = AuditOptions()
    local = audit_record(audit(LOGS, opts))
    parts = [audit_partition([str(p) for p in LOGS], opts, k, count) for k in range(count)]
    assert sum(len(p.outcomes) for p in parts) == local["summary"]["requests"]
    assert audit_record(assemble(merge(parts, opts.top), opts, PriceBook())) == local


def test_dask_local_cluster_equals_single_process(tmp_path):
    pytest.importorskip("dask.distributed")
    out = tmp_path / "dask.json"
    p = subprocess.run([sys.executable, "-m", "promptcache", "audit", *map(str, LOGS), "--dask", "--format", "json",
                        "--output", str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    local = audit_record(audit(LOGS, AuditOptions(top=5)))  # the command's default --top
    got = json.loads(out.read_text())
    assert got == json.loads(json.dumps(local))


def test_dask_flag_takes_an_optional_address():
    assert _dask_default(["audit", "a.jsonl", "--dask"]) == ["audit", "a.jsonl", "--dask", "local"]
    assert _dask_default(["audit", "--dask", "a.jsonl"]) == ["audit", "--dask", "local", "a.jsonl"]
    assert _dask_default(["audit", "--dask", "tcp://10.0.0.5:8786", "a.jsonl"]) == ["audit", "--dask", "tcp://10.0.0.5:8786", "a.jsonl"]
    assert _dask_default(["audit", "--dask", "sched:8786"]) == ["audit", "--dask", "sched:8786"]
