"""Shared test helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

# A fixed fingerprint key for quoted personal values (promptcache.diagnose.redact): the suite
# does not write one into the developer's ~/.config; subprocesses inherit it.
os.environ.setdefault("PROMPTCACHE_FINGERPRINT_KEY", "5a" * 32)

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
TRACES = ROOT.parent / "shared" / "traces" / "mooncake"


def write_jsonl(path: Path, records: list) -> Path:
    """Write records (dicts, or raw strings for bad lines) as JSONL."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def units(ids: list[int]) -> bytes:
    """Token ids as the simulator's unit bytes."""
    return np.asarray(ids, dtype="<u4").tobytes()


@pytest.fixture
def tmp_log(tmp_path):
    """Factory: ``tmp_log(records, name="log.jsonl")`` → path."""
    def make(records: list, name: str = "log.jsonl") -> Path:
        return write_jsonl(tmp_path / name, records)
    return make
