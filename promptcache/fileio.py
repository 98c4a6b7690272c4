"""Where output goes: stdout (a closed pipe is :class:`~promptcache.errors.OutputClosed`), or
files written safely: atomically (a temporary file in the same directory, flushed to disk, then
a rename), through symbolic links, and never over one of the run's own inputs.

Every command that writes a file names its outputs and its inputs to :func:`refuse_inputs`
before any work, and writes through :func:`write_atomic` (or :func:`emit`).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from .errors import ConfigError, OutputClosed

PathLike = str | Path


def _stat(p: Path) -> os.stat_result | None:
    try:
        return os.stat(p)  # through links
    except (OSError, ValueError):
        return None


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths are one existing file (through symbolic and hard links)."""
    sa, sb = _stat(a), _stat(b)
    return sa is not None and sb is not None and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _in_directory(target: Path, directory: Path) -> bool:
    """Whether ``target`` is an existing file inside the existing directory ``directory``."""
    st, sd = _stat(target), _stat(directory)
    if st is None or sd is None or not stat.S_ISDIR(sd.st_mode) or stat.S_ISDIR(st.st_mode):
        return False
    try:
        return Path(os.path.realpath(target)).is_relative_to(os.path.realpath(directory))
    except (OSError, ValueError):
        return False


def refuse_inputs(targets: Mapping[str, PathLike | None] | Iterable[PathLike | None],
                  inputs: Iterable[PathLike | None], *, flag: str = "--output") -> None:
    """Fail before any work when a file about to be written is one of the run's inputs.

    The same file is found through symbolic links, hard links and relative paths; an existing
    file inside an input directory (a model or tokenizer directory) counts as an input. Inputs
    that do not exist (``-`` for standard input, an encoding name where a path may be given)
    hold nothing to lose and are skipped. Two outputs naming one file are refused too.

    Args:
        targets: the files about to be written, as ``{option: path}`` (``None`` paths are
            skipped), or a list of paths all named by ``flag``.
        inputs: every file and directory the run reads (``None`` entries are skipped).
        flag: the option that named the targets, when they are a list.

    Raises:
        ConfigError: naming the file, the option and the input.
    """
    named = list(targets.items()) if isinstance(targets, Mapping) else [(flag, t) for t in targets]
    outs = [(f, Path(t)) for f, t in named if t is not None and str(t) != "-"]
    ins = [Path(i) for i in inputs if i is not None and str(i) != "-"]
    keep = "(promptcache never overwrites its input)"
    for f, t in outs:
        for i in ins:
            if _same_file(t, i):
                alias = "" if os.path.abspath(t) == os.path.abspath(i) else f" ({i})"
                raise ConfigError(f"{t}: is one of the inputs{alias}; {f} must name another file {keep}")
            if _in_directory(t, i):
                raise ConfigError(f"{t}: is inside the input directory {i}; {f} must name a file outside it {keep}")
    for k, (f, t) in enumerate(outs):
        for g, u in outs[k + 1:]:
            if os.path.realpath(t) == os.path.realpath(u) or _same_file(t, u):
                raise ConfigError(f"{t}: named by both {f} and {g}; give each its own file")


def write_atomic(path: PathLike, data: str | bytes, mode: int | None = None, *,
                 inputs: Iterable[PathLike | None] = ()) -> None:
    """Write a file atomically: a temporary file beside it, flushed to disk, renamed over it, so
    a reader (or a crash) sees the old file or the new one, never a part. It gets the permissions
    a plain ``open()`` would give (or the replaced file's, or ``mode``, e.g. 0o600 for secrets).
    A symbolic link is written through (its target is replaced, the link stays). A target that
    is no regular file (``/dev/stdout``, a named pipe) is written to in place: it cannot be
    replaced, and holds nothing to lose.

    Raises:
        ConfigError: when ``path`` is one of ``inputs`` (see :func:`refuse_inputs`), is a
            directory, or cannot be written (the reason from the operating system).
    """
    refuse_inputs([path], inputs)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    st = _stat(Path(path))  # through links
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{path}: is a directory; name a file to write")
    p = Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(path, "wb") as fh:  # the path itself: /dev/stdout resolves only so
                fh.write(blob)
            return
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as e:
        raise ConfigError(f"{path}: cannot write: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes the file 0600; give it what a plain open() would (0666 minus the umask),
        # or keep the mode of the file it replaces
        if mode is None:
            if st is not None:
                mode = st.st_mode & 0o7777
            else:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise ConfigError(f"{path}: cannot write: {e.strerror or e}") from None
        raise


def create_atomic(path: PathLike, data: str | bytes, mode: int = 0o600) -> bool:
    """Create a file that does not exist yet, whole or not at all (a temporary file beside it,
    flushed to disk, then hard-linked into place): of two runs creating it at once, one wins and
    the other finds the winner's file.

    Returns:
        ``True`` when this call created it, ``False`` when the file already existed.

    Raises:
        ConfigError: when the directory cannot be written (the reason from the operating system).
    """
    p = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.", suffix=".tmp")
    except OSError as e:
        raise ConfigError(f"{path}: cannot create: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        try:
            os.link(tmp, p)
        except FileExistsError:
            return False
        except OSError as e:
            raise ConfigError(f"{path}: cannot create: {e.strerror or e}") from None
        return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write ``data`` to a descriptor to the last byte (a write may take only part of it).

    Raises:
        OSError: as ``os.write`` does (``BrokenPipeError`` when the reader has gone away).
    """
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def emit(data: str, output: str | Path | None, *, inputs: Iterable[str | Path] = ()) -> None:
    """Write a text report to ``output`` (atomically) or, when ``None``, to stdout; on a
    terminal, with control characters escaped (:func:`promptcache.report.terminal.safe`).

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
    if _is_terminal(out):
        from .report.terminal import safe

        data = safe(data)
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
