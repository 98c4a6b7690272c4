"""Where reports go: stdout, or a file written atomically."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..errors import OutputClosed


def write_atomic(path: str | Path, data: str | bytes, mode: int | None = None) -> None:
    """Write a file atomically (temporary file in the same directory, then rename), with the
    permissions a plain ``open()`` would give (or ``mode``, e.g. 0o600 for secrets)."""
    p = Path(path)
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


def emit(data: str, output: Path | None) -> None:
    """Write a machine-format report to ``output`` or stdout."""
    if output is not None:
        write_atomic(output, data)
    else:
        try:
            sys.stdout.write(data)
            if not data.endswith("\n"):
                sys.stdout.write("\n")
            sys.stdout.flush()
        except BrokenPipeError:
            raise OutputClosed from None
