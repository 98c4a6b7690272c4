"""Optional compiled build of the audit's hot modules (the rest of the build is in pyproject.toml).

The modules in :data:`COMPILED` stay plain Python: they are the only source, they run as they
are wherever nothing compiles them, and Cython (``pip install`` fetches it as a build
requirement) compiles the same files into extension modules of the same names where a C compiler
is present. A 100k-request audit runs about 15% faster compiled (bench/speed.py prints which
build it timed). ``prefix/tree.pxd`` adds C types to the prefix tree; every other module
compiles unchanged.

- ``PROMPTCACHE_NO_EXTENSIONS=1`` (anything but empty, ``0``, ``false``, ``no``) at build time
  builds none, as at run time it loads none (:mod:`promptcache._compiled` owns the switch, the
  manifest and its hash; this file reads them from there).
- A module that Cython fails to translate, or the C compiler to compile (``optional``), is
  skipped with a warning: the install goes on, that module plain Python.
- Next to the extensions the build writes ``promptcache/_compiled.json``, the SHA-256 of each
  compiled module's source; at run time an extension whose source has changed since (an edited
  checkout) is not loaded, its source is.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _load_compiled():
    """``promptcache/_compiled.py`` alone (standard library only; the package's dependencies are
    not in the build environment): the switch, the manifest's name and the hash it checks."""
    spec = importlib.util.spec_from_file_location("_promptcache_compiled", ROOT / "promptcache" / "_compiled.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_compiled = _load_compiled()

#: The modules a run spends its time in (by profile: reading, rendering, tokenizing, simulating,
#: diagnosing), as paths under the repository root.
COMPILED = (
    "promptcache/ingest/__init__.py",
    "promptcache/ingest/anthropic.py",
    "promptcache/ingest/bodies.py",
    "promptcache/ingest/common.py",
    "promptcache/ingest/fields.py",
    "promptcache/ingest/jsonio.py",
    "promptcache/ingest/openai.py",
    "promptcache/ingest/resent.py",
    "promptcache/ingest/seen.py",
    "promptcache/ingest/usage.py",
    "promptcache/render/__init__.py",
    "promptcache/tokenize/__init__.py",
    "promptcache/tips.py",
    "promptcache/prepare.py",
    "promptcache/prefix/lcp.py",
    "promptcache/prefix/tree.py",
    "promptcache/simulate/__init__.py",
    "promptcache/simulate/boundaries.py",
    "promptcache/pricing/__init__.py",
    "promptcache/pipeline.py",
    "promptcache/diagnose/engine.py",
)


def extension_name(path: str) -> str:
    """``promptcache/prefix/tree.py`` -> ``promptcache.prefix.tree``; a package's
    ``__init__.py`` keeps its ``__init__`` (the extension goes inside the package's directory)."""
    return path[:-3].replace("/", ".")


def module_name(path: str) -> str:
    """``promptcache/prefix/tree.py`` -> ``promptcache.prefix.tree`` (a package's ``__init__.py``
    -> the package)."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def extensions() -> list[Extension]:
    """The Cython extensions to build: none with ``PROMPTCACHE_NO_EXTENSIONS=1``, or without Cython."""
    if _compiled.disabled():
        # an editable install's earlier build stays in the checkout: without its manifest every
        # extension there is "unlisted" and its source runs
        (ROOT / "promptcache" / _compiled.MANIFEST).unlink(missing_ok=True)
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print(f"promptcache: Cython is not installed: pure Python build (set {_compiled.ENV}=1 to say so)")
        return []
    out: list[Extension] = []
    for p in COMPILED:
        try:  # a module Cython cannot translate stays plain Python, like one gcc cannot compile
            exts = cythonize([Extension(extension_name(p), [p])], build_dir="build/cython", quiet=True,
                             compiler_directives={"language_level": 3, "annotation_typing": False})
            for ext in exts:
                ext.optional = True  # cythonize makes new Extensions, without this flag
            out += exts
        except Exception as e:  # noqa: BLE001 - CompileError, or whatever else translating raises
            print(f"promptcache: {p} stays plain Python: Cython failed ({type(e).__name__}: {e})")
    return out


class OptionalBuildExt(build_ext):
    """``build_ext`` on every core, skipping what fails to compile, then writing the manifest of
    the extensions built (module -> source SHA-256) beside them."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type == "unix" and "-g0" not in ext.extra_compile_args:
            ext.extra_compile_args.append("-g0")  # no debug info: 31 -> a few MB installed
        super().build_extension(ext)

    def run(self) -> None:
        super().run()
        if not self.extensions:
            return
        sources = {extension_name(p): p for p in COMPILED}
        built = {module_name(sources[ext.name]): _compiled.source_hash(ROOT / sources[ext.name]) for ext in self.extensions
                 if os.path.exists(os.path.join(self.build_lib, self.get_ext_filename(ext.name)))}
        text = json.dumps({"modules": {m: built[m] for m in sorted(built)}}, indent=1) + "\n"
        dirs = [Path(self.build_lib) / "promptcache"]
        if self.inplace:
            dirs.append(ROOT / "promptcache")
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
            (d / _compiled.MANIFEST).write_text(text)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
