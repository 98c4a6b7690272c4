"""Where output goes: stdout (a closed pipe is :class:`~promptcache.errors.OutputClosed`), or
files written safely: atomically (a temporary file in the same directory, then a rename),
through symbolic links, and never over one of the run's own inputs."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .errors import ConfigError, OutputClosed


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def refuse_inputs(targets: Iterable[str | Path | None], inputs: Iterable[str | Path], *, flag: str = "--output") -> None:
    """Fail before any work when an output file is one of the inputs (through links too).

    Args:
        targets: the files about to be written (``None`` entries are skipped).
        inputs: the input files of the run.
        flag: the option that named the target, for the message.

    Raises:
        ConfigError: naming the file.
    """
    ins = [Path(p) for p in inputs]
    for t in targets:
        if t is None:
            continue
        tp = Path(t)
        for i in ins:
            if _same_file(tp, i) or os.path.abspath(tp) == os.path.abspath(i):
                raise ConfigError(f"{t}: is one of the inputs; {flag} must name another file "
                                  "(promptcache never overwrites its input)")


def write_atomic(path: str | Path, data: str | bytes, mode: int | None = None, *,
                 inputs: Iterable[str | Path] = ()) -> None:
    """Write a file atomically, with the permissions a plain ``open()`` would give (or the
    replaced file's, or ``mode``, e.g. 0o600 for secrets). A symbolic link is written through
    (its target is replaced, the link stays).

    Raises:
        ConfigError: when ``path`` is one of ``inputs``.
        OSError: when the directory cannot be written.
    """
    refuse_inputs([path], inputs)
    p = Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        # mkstemp makes the file 0600; give it what a plain open() would (0666 minus the umask),
        # or keep the mode of the file it replaces
        if mode is None:
            try:
                mode = os.stat(p).st_mode & 0o7777
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write ``data`` to a descriptor to the last byte (a write may take only part of it).

    Raises:
        OSError: as ``os.write`` does (``BrokenPipeError`` when the reader has gone away).
    """
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def emit(data: str, output: str | Path | None, *, inputs: Iterable[str | Path] = ()) -> None:
    """Write a text report to ``output`` (atomically) or, when ``None``, to stdout.

    Raises:
        ConfigError: when ``output`` is one of ``inputs``.
        OutputClosed: when stdout's reader has gone away.
    """
    if output is not None:
        write_atomic(output, data, inputs=inputs)
        return
    if not data.endswith("\n"):
        data += "\n"
    out = sys.stdout
    try:
        out.flush()
        try:
            fd = out.fileno()
        except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
            out.write(data)
            out.flush()
            return
        # the descriptor itself, to the last byte: with PYTHONUNBUFFERED, the text layer drops
        # what a partial write (a reader going away mid-report) left, and reports success
        write_all(fd, data.encode(out.encoding or "utf-8", out.errors or "strict"))
    except BrokenPipeError:
        raise OutputClosed from None
