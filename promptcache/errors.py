"""Errors and exit codes: one module, so findings and failures never share a code.

| code | meaning |
|------|---------|
| 0    | ran; nothing at or above ``--fail-on`` |
| 1    | findings at or above ``--fail-on``, or a budget not met |
| 2    | usage, config, rule-file or input error |
| 3    | internal error (a bug) |
| 130  | interrupted |
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes (see the module docstring)."""

    OK = 0
    FINDINGS = 1
    USAGE = 2
    INTERNAL = 3
    INTERRUPTED = 130
    PIPE_CLOSED = 141


class OutputClosed(Exception):
    """The reader of stdout went away (``promptcache audit LOG | head``): exit 141, the shell's
    SIGPIPE convention, quietly. Not an ``OSError``, so no layer mistakes it for a failure."""


class PromptcacheError(Exception):
    """Base of every error the tool reports to the user as one line.

    The CLI prints ``error: <message>`` and exits with :attr:`exit_code`.
    """

    exit_code: ExitCode = ExitCode.USAGE


class ConfigError(PromptcacheError):
    """A bad option, config file, rule file or provider file."""


class InputError(PromptcacheError):
    """An input file that cannot be read or parsed (fatal only with ``--strict``)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = f"{path}:{line}: " if path and line else (f"{path}: " if path else "")
        super().__init__(where + message)


class BadRecord(ValueError):
    """One malformed log record; carries the reason. Readers raise it, ingest counts it."""
