"""Lint configuration: ``[tool.promptcache]`` in ``pyproject.toml`` or a ``.promptcache.toml``.

Discovery (ruff's model): for each linted file, the closest ``.promptcache.toml``, or
``pyproject.toml`` holding a ``[tool.promptcache]`` table, walking up from the file's directory
and stopping at the repository root (a directory with ``.git``) or the home directory. Only the
closest file counts; ``--config FILE`` replaces discovery; command-line flags beat every file.
Relative paths (``baseline``, ``lockfile``) and the globs of ``per-file-ignores`` and
``exclude`` resolve against the directory of the file that declares them.

Keys (``.promptcache.toml`` holds them at the top level, ``pyproject.toml`` under
``[tool.promptcache]``):

| key | value |
|---|---|
| ``select`` | codes, ids, aliases or globs to run (default: every rule lint implements) |
| ``extend-select`` | added to ``select`` |
| ``ignore`` | removed from the selection |
| ``per-file-ignores`` | ``{"glob" = ["PC101", ...]}``: findings kept but marked suppressed |
| ``exclude`` | globs of files a directory walk skips |
| ``provider`` / ``model`` | cache rules for prompts whose source names no model |
| ``tokenizer`` | ``o200k_base``, ``cl100k_base``, ``approx``, or a tokenizer path |
| ``fail-on`` | ``info``, ``warning`` or ``error`` (default ``error``) |
| ``baseline`` | a previous ``--format json`` report: its findings are suppressed |
| ``lockfile`` | the prefix lockfile (default ``promptcache-lock.json`` beside the config) |
| ``requests-per-day`` | the request rate lockfile costs are stated at (default 10,000) |
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError

SEVERITIES = ("info", "warning", "error")
KEYS = ("select", "extend-select", "ignore", "per-file-ignores", "exclude", "provider", "model", "tokenizer",
        "fail-on", "baseline", "lockfile", "requests-per-day")
DEFAULT_LOCKFILE = "promptcache-lock.json"
DEFAULT_REQUESTS_PER_DAY = 10_000.0


@dataclass(frozen=True)
class Settings:
    """The settings that apply to one file.

    Attributes:
        root: directory relative paths and globs resolve against.
        source: the config file, or ``None`` for defaults.
        select, extend_select, ignore: rule selectors (codes, ids, aliases, globs).
        per_file_ignores: ``(glob, selectors)`` pairs.
        exclude: globs a directory walk skips.
        provider, model, tokenizer: cache rules and tokenizer for prompts that name none.
        fail_on: lowest severity that makes the run exit 1.
        baseline: a previous JSON report, or ``None``.
        lockfile: the prefix lockfile path.
        requests_per_day: request rate for lockfile costs.
    """

    root: Path
    source: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    provider: str | None = None
    model: str | None = None
    tokenizer: str | None = None
    fail_on: str = "error"
    baseline: Path | None = None
    lockfile: Path | None = None
    requests_per_day: float = DEFAULT_REQUESTS_PER_DAY
    explicit: frozenset[str] = field(default_factory=frozenset)

    def lockfile_path(self) -> Path:
        """The lockfile (configured, or the default beside the config file)."""
        return self.lockfile or self.root / DEFAULT_LOCKFILE


def _strs(v: Any, where: str) -> tuple[str, ...]:
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return tuple(v)
    raise ConfigError(f"{where}: expected a list of strings")


def parse_table(table: dict[str, Any], source: Path | None, root: Path) -> Settings:
    """Validate one ``[tool.promptcache]`` table.

    Raises:
        ConfigError: naming the file and the unknown key or bad value.
    """
    where = str(source) if source else "settings"
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        # pyproject.toml holds the keys in [tool.promptcache]; .promptcache.toml (or --config) at its top level
        table_name = "in [tool.promptcache]" if source is not None and source.name == "pyproject.toml" else \
            "at the top level" if source is not None else "among the settings"
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} {table_name}; allowed: {', '.join(KEYS)}")
    s = Settings(root=root, source=source, explicit=frozenset(table))
    kw: dict[str, Any] = {}
    for key, attr in (("select", "select"), ("extend-select", "extend_select"), ("ignore", "ignore"),
                      ("exclude", "exclude")):
        if key in table:
            kw[attr] = _strs(table[key], f"{where}: {key}")
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: per-file-ignores must be a table of glob = [codes]")
        kw["per_file_ignores"] = tuple((g, _strs(v, f"{where}: per-file-ignores.{g}")) for g, v in pfi.items())
    for key in ("provider", "model", "tokenizer"):
        if key in table:
            if not isinstance(table[key], str):
                raise ConfigError(f"{where}: {key} must be a string")
            kw[key] = table[key]
    if "provider" in kw:
        from ..simulate.rules import load_providers

        if kw["provider"] not in load_providers():
            raise ConfigError(f"{where}: provider {kw['provider']!r} unknown; allowed: {', '.join(sorted(load_providers()))}")
    if "fail-on" in table:
        if table["fail-on"] not in SEVERITIES:
            raise ConfigError(f"{where}: fail-on must be one of {', '.join(SEVERITIES)}")
        kw["fail_on"] = table["fail-on"]
    for key in ("baseline", "lockfile"):
        if key in table:
            if not isinstance(table[key], str):
                raise ConfigError(f"{where}: {key} must be a path")
            kw[key] = (root / table[key]).resolve()
    if "requests-per-day" in table:
        v = table["requests-per-day"]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
            raise ConfigError(f"{where}: requests-per-day must be a positive number")
        kw["requests_per_day"] = float(v)
    return replace(s, **kw)


def read_table(path: Path) -> dict[str, Any]:
    """The ``[tool.promptcache]`` table of a ``pyproject.toml`` (empty when it has none), or the
    top level of a ``.promptcache.toml``.

    Raises:
        ConfigError: for an unreadable file or invalid TOML.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    if path.name == "pyproject.toml" or isinstance(data.get("tool"), dict):
        table = (data.get("tool") or {}).get("promptcache") or {}
    else:
        table = data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.promptcache] must be a table")
    return table


def _stop(d: Path) -> bool:
    home = Path(os.path.expanduser("~")).resolve()
    return (d / ".git").exists() or d == home or d.parent == d


@lru_cache(maxsize=1024)
def discover(directory: Path) -> Path | None:
    """The config file that governs files in ``directory`` (closest first), or ``None``."""
    d = directory.resolve()
    while True:
        for name in (".promptcache.toml", "pyproject.toml"):
            p = d / name
            if p.is_file() and (name != "pyproject.toml" or _has_table(p)):
                return p
        if _stop(d):
            return None
        d = d.parent


def _has_table(p: Path) -> bool:
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(data.get("tool"), dict) and "promptcache" in data["tool"]


# ------------------------------------------------------------------------------------- globs

@lru_cache(maxsize=None)
def _glob_re(pattern: str) -> re.Pattern[str]:
    """A gitignore-style glob as a regex over ``/``-separated relative paths.

    >>> bool(_glob_re("legacy/**").match("legacy/a/b.j2")), bool(_glob_re("*.txt").match("x/y.txt"))
    (True, True)
    """
    p = pattern.strip()
    anchored = "/" in p.rstrip("/")
    p = p.lstrip("/")
    if p.endswith("/"):
        p += "**"
    out, i = [], 0
    while i < len(p):
        if p.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif p.startswith("**", i):
            out.append(".*")
            i += 2
        elif p[i] == "*":
            out.append("[^/]*")
            i += 1
        elif p[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(p[i]))
            i += 1
    body = "".join(out)
    return re.compile(("" if anchored else "(?:.*/)?") + body + "(?:/.*)?$")


def glob_match(pattern: str, relpath: str) -> bool:
    """Whether a relative path (``/``-separated) matches a gitignore-style glob."""
    return bool(_glob_re(pattern).match(relpath))


def relative_to(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` with ``/`` separators, or ``None`` when outside it."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
