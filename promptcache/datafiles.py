"""The shipped data files (``rules/``: provider cache rules, lint rules, model presets, engine
defaults): where they live, how a YAML file is read and checked, and the ``source``/``checked``
provenance every number carries. One owner, so every loader reports a bad file the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Callable, TypeVar

import yaml

from .errors import ConfigError

#: ``rules/`` as installed (the package ships it as ``promptcache/_rules``).
RULES_DIR = Path(__file__).resolve().parent / "_rules"

#: libyaml's loader when PyYAML was built with it (several times faster), else the pure one.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

T = TypeVar("T")


def read_mapping(path: Path, allowed: set[str] | frozenset[str] | None = None) -> dict[str, Any]:
    """Load a YAML file that holds one mapping.

    Args:
        path: the file.
        allowed: the keys it may have (``None``: any).

    Raises:
        ConfigError: naming the file when it cannot be read or parsed, is not a mapping, or has
            a key outside ``allowed``.
    """
    try:
        d = yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: {e}") from None
    if not isinstance(d, dict):
        raise ConfigError(f"{path}: not a mapping")
    if allowed is not None:
        unknown = set(d) - set(allowed)
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; "
                              f"allowed: {', '.join(sorted(allowed))}")
    return d


def check_id(d: Mapping[str, Any], path: Path) -> None:
    """A file's ``id`` must equal its name.

    Raises:
        ConfigError: when it does not.
    """
    if d.get("id") != path.stem:
        raise ConfigError(f"{path}: 'id' must equal the file name ({path.stem!r})")


def check_source(d: Mapping[str, Any], where: str) -> None:
    """Every fact carries its provenance: a ``source`` URL and a ``checked`` date (YYYY-MM-DD).

    Raises:
        ConfigError: naming ``where`` when either is missing or malformed.
    """
    src = d.get("source")
    if not isinstance(src, str) or not src.startswith("http"):
        raise ConfigError(f"{where}: every entry needs a 'source' URL")
    chk = d.get("checked")
    if isinstance(chk, date):
        return
    try:
        date.fromisoformat(str(chk))
    except ValueError:
        raise ConfigError(f"{where}: 'checked' must be a date (YYYY-MM-DD), got {chk!r}") from None


def load_dir(directory: str | Path | None, default: str, parse: Callable[[Path], T], what: str) -> dict[str, T]:
    """Parse every ``*.yaml`` in ``directory`` (default: ``RULES_DIR / default``), by file stem.

    Raises:
        ConfigError: when there is none, or for the first invalid file.
    """
    d = Path(directory) if directory else RULES_DIR / default
    files = sorted(d.glob("*.yaml"))
    if not files:
        raise ConfigError(f"no {what} in {d}")
    return {p.stem: parse(p) for p in files}
