"""Model presets (``rules/models/<id>.yaml``), engine defaults (``rules/kv.yaml``) and
``config.json`` files: the data capacity planning starts from.

A preset holds the architecture part of a model's Hugging Face ``config.json`` under
``config``, with the URL it came from (``source``), the copies actually read where the
official repository is gated (``read_from``) and the date they were checked. Numbers live in
these files, never in code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..datafiles import RULES_DIR, check_id, check_source, load_dir, read_mapping
from ..errors import ConfigError, InputError

_PRESET_KEYS = {"id", "name", "source", "checked", "read_from", "notes", "config", "published_params", "weights_dtype"}
_DEFAULT_KEYS = {"gpu_memory_utilization", "gpu_tflops", "mfu"}


@dataclass(frozen=True)
class Preset:
    """One ``rules/models/<id>.yaml``.

    Attributes:
        id: the ``--preset`` name.
        name: display name.
        source: URL of the official ``config.json``.
        checked: date the numbers were checked (YYYY-MM-DD).
        read_from: URLs actually read (copies, when the official repository is gated).
        notes: caveats (sliding windows, context defaults).
        config: the config.json subset (transformers key names).
        published_params: the parameter count the model's authors publish, if recorded.
        weights_dtype: the dtype the released weights use (``fp8`` for DeepSeek-V3), if not bf16.
        path: the file.
    """

    id: str
    name: str
    source: str
    checked: str
    read_from: tuple[str, ...]
    notes: str
    config: Mapping[str, Any]
    published_params: int | None = None
    weights_dtype: str | None = None
    path: str = ""


def parse_preset(path: Path) -> Preset:
    """Load and validate one preset file.

    Raises:
        ConfigError: naming the file and the bad key.
    """
    d = read_mapping(path, _PRESET_KEYS)
    check_source(d, str(path))
    check_id(d, path)
    cfg = d.get("config")
    if not isinstance(cfg, dict) or not cfg:
        raise ConfigError(f"{path}: 'config' must be a mapping of config.json keys")
    reads = d.get("read_from") or []
    if not isinstance(reads, list) or not all(isinstance(u, str) and u.startswith("http") for u in reads):
        raise ConfigError(f"{path}: 'read_from' must be a list of URLs")
    pp = d.get("published_params")
    if pp is not None and (not isinstance(pp, int) or pp <= 0):
        raise ConfigError(f"{path}: 'published_params' must be a positive integer")
    return Preset(id=d["id"], name=str(d.get("name", d["id"])), source=d["source"], checked=str(d["checked"]),
                  read_from=tuple(reads), notes=" ".join(str(d.get("notes", "")).split()), config=cfg,
                  published_params=pp, weights_dtype=d.get("weights_dtype"), path=str(path))


@lru_cache(maxsize=None)
def load_presets(directory: str | None = None) -> dict[str, Preset]:
    """Every preset in ``directory`` (default: the shipped ``rules/models``), by id.

    Raises:
        ConfigError: for the first invalid file.
    """
    return load_dir(directory, "models", parse_preset, "model presets")


def preset(name: str) -> Preset:
    """The preset for ``--preset NAME`` (case-insensitive).

    Raises:
        ConfigError: listing the known presets.
    """
    presets = load_presets()
    p = presets.get(name.strip().lower())
    if p is None:
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(sorted(presets))}")
    return p


@dataclass(frozen=True)
class Default:
    """One engine or hardware default: value, source URL, date checked, notes."""

    value: float
    source: str
    checked: str
    notes: str = ""


@dataclass(frozen=True)
class Defaults:
    """``rules/kv.yaml``: ``gpu_memory_utilization`` (fraction), ``gpu_tflops`` (dense BF16
    TFLOP/s of one GPU), ``mfu`` (fraction of peak a prefill reaches)."""

    gpu_memory_utilization: Default
    gpu_tflops: Default
    mfu: Default
    path: str = field(default="")


@lru_cache(maxsize=None)
def load_defaults(path: str | None = None) -> Defaults:
    """Load ``rules/kv.yaml`` (or ``path``).

    Raises:
        ConfigError: naming the file and the bad key.
    """
    p = Path(path) if path else RULES_DIR / "kv.yaml"
    d = read_mapping(p)
    if set(d) != _DEFAULT_KEYS:
        raise ConfigError(f"{p}: needs exactly the keys {', '.join(sorted(_DEFAULT_KEYS))}")
    out = {}
    for k in sorted(_DEFAULT_KEYS):
        v = d[k]
        where = f"{p}: {k}"
        if not isinstance(v, dict) or not isinstance(v.get("value"), (int, float)):
            raise ConfigError(f"{where}: needs a numeric 'value'")
        check_source(v, where)
        out[k] = Default(float(v["value"]), v["source"], str(v["checked"]), " ".join(str(v.get("notes", "")).split()))
    return Defaults(path=str(p), **out)


def read_config(path: str | Path) -> dict[str, Any]:
    """Parse a ``config.json`` (or a model directory holding one).

    Raises:
        InputError: naming the file when it is missing or not a JSON object.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(e.strerror or str(e), path=str(p)) from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON ({e.msg} at line {e.lineno})", path=str(p)) from None
    if not isinstance(d, dict):
        raise InputError("not a JSON object", path=str(p))
    return d
