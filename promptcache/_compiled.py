"""Which build of the compiled modules a run loads: the Cython extension, or the source.

``setup.py`` compiles some of the package's own modules, unchanged, into extension modules of
the same names (where Cython and a C compiler are present), and records each one's source
SHA-256 in ``_compiled.json`` beside them. Python would load an extension before a ``.py`` of the
same name; :class:`SourceWhenStale`, installed when the package is imported, loads the source
instead when

- ``PROMPTCACHE_NO_EXTENSIONS`` is set to anything but empty, ``0``, ``false`` or ``no`` (to
  profile, or to compare the two builds: they must give the same results), or
- the source (or the ``.pxd`` beside it) has changed since the extension was built (an edited
  checkout: the extension would run the old code), or the manifest does not name it.

:func:`status` says which build each module runs.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path

ENV = "PROMPTCACHE_NO_EXTENSIONS"
MANIFEST = "_compiled.json"
PACKAGE = Path(__file__).resolve().parent


def disabled() -> bool:
    """Whether ``PROMPTCACHE_NO_EXTENSIONS`` asks for the source of every module (at build time:
    builds none): set to anything but empty, ``0``, ``false`` or ``no``."""
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no")


def manifest(package: Path = PACKAGE) -> dict[str, str]:
    """Module name -> SHA-256 of the source it was compiled from, as the build recorded it
    (empty where nothing was compiled, or the manifest is unreadable)."""
    try:
        data = json.loads((package / MANIFEST).read_text())
        mods = data.get("modules", {})
        return {str(k): str(v) for k, v in mods.items()} if isinstance(mods, dict) else {}
    except (OSError, ValueError, AttributeError):
        return {}


def _source_of(origin: str) -> Path:
    """The ``.py`` beside an extension module (``tree.cpython-311-x86_64-linux-gnu.so`` ->
    ``tree.py``)."""
    p = Path(origin)
    return p.with_name(p.name.split(".", 1)[0] + ".py")


def source_hash(path: Path) -> str:
    """SHA-256 (hex) of a module's source and of the ``.pxd`` beside it if any (its C types):
    what setup.py records for each module it compiles.

    Raises:
        OSError: when the source cannot be read.
    """
    pxd = path.with_suffix(".pxd")
    return hashlib.sha256(path.read_bytes() + (pxd.read_bytes() if pxd.exists() else b"")).hexdigest()


def _current(src: Path, want: str) -> bool:
    try:
        return source_hash(src) == want
    except OSError:
        return False


class SourceWhenStale(importlib.abc.MetaPathFinder):
    """Finds the package's modules that have both an extension and a source, and picks the
    source where the extension must not run (see the module docstring).

    Args:
        package: the package's directory.
        hashes: :func:`manifest`.
        off: load every module from source (:func:`disabled`).

    Attributes:
        compiled: modules loaded from their extension.
        source: modules with an extension that were loaded from source, with why (``disabled``,
            ``stale``, ``unlisted``).
    """

    def __init__(self, package: Path, hashes: dict[str, str], off: bool):
        self.prefix = package.name + "."
        self.hashes = hashes
        self.off = off
        self.compiled: list[str] = []
        self.source: dict[str, str] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: object = None) -> ModuleSpec | None:
        """The source's spec where the extension must not run; else ``None`` (the usual finders
        load the extension, or the only file there is)."""
        if not fullname.startswith(self.prefix) or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader) or not spec.origin:
            return None
        src = _source_of(spec.origin)
        if not src.exists():
            return None
        want = self.hashes.get(fullname)
        why = "disabled" if self.off else "unlisted" if want is None else None if _current(src, want) else "stale"
        if why is None:
            self.compiled.append(fullname)
            return spec
        self.source[fullname] = why
        return importlib.util.spec_from_file_location(fullname, src,
                                                      submodule_search_locations=spec.submodule_search_locations)


_FINDER: SourceWhenStale | None = None


def install() -> None:
    """Put :class:`SourceWhenStale` first in ``sys.meta_path`` (once); the package calls it
    before importing its modules. It costs a second directory lookup per module imported
    (about 2 ms in all)."""
    global _FINDER
    if _FINDER is None:
        _FINDER = SourceWhenStale(PACKAGE, manifest(), disabled())
        sys.meta_path.insert(0, _FINDER)


class Status(dict):  # type: ignore[type-arg]
    """:func:`status`'s mapping (module -> the build it runs), printed as one line per module,
    or, when nothing was compiled, as why (:attr:`note`)."""

    note: str = ""

    def __str__(self) -> str:
        if not self:
            return self.note
        return "\n".join(f"{k}: {v}" for k, v in self.items())


def _installed_elsewhere() -> Path | None:
    """The package directory of an installed promptcache that is not this one (a checkout
    imported from the current directory shadows it; a build leaves ``promptcache.egg-info`` in
    the checkout too, so every distribution of the name is looked at)."""
    try:
        from importlib.metadata import distributions

        for dist in distributions(name=PACKAGE.name):
            where = Path(str(dist.locate_file(PACKAGE.name))).resolve()
            if where.is_dir() and where != PACKAGE:
                return where
    except (ImportError, OSError, ValueError):
        return None
    return None


def nothing_compiled() -> str:
    """Why no module of this package runs compiled: what :func:`status` says when empty."""
    why = (f"nothing compiled: {PACKAGE} has no {MANIFEST}, so every module runs from its source "
           f"(setup.py writes {MANIFEST} when `pip install .` compiles the modules, where Cython and a C "
           f"compiler are present and {ENV} is not set)")
    other = _installed_elsewhere()
    if other is not None:
        n = len(manifest(other))
        why += (f". This is the promptcache in {PACKAGE.parent} (a checkout: the current directory comes first on "
                f"sys.path); the installed one, {other}, has "
                + (f"{n} compiled modules: run from another directory to use it" if n else "none compiled either"))
    return why


def status() -> Status:
    """Every module the build compiled -> the build it runs: ``compiled``, or ``source`` with
    why (``source (disabled)``, ``source (stale)``); imports each one to find out. Empty when
    nothing was compiled; printed, it then says why (:func:`nothing_compiled`: in a checkout,
    which shadows an installed build)."""
    out = Status()
    for name in sorted(manifest()):
        try:
            importlib.import_module(name)
        except ImportError as e:
            out[name] = f"not importable ({e})"
            continue
        if _FINDER is not None and name in _FINDER.source:
            out[name] = f"source ({_FINDER.source[name]})"
        else:
            mod = sys.modules[name]
            out[name] = "compiled" if (getattr(mod, "__file__", "") or "").endswith(
                tuple(importlib.machinery.EXTENSION_SUFFIXES)) else "source"
    if not out:
        out.note = nothing_compiled()
    return out
