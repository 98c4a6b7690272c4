"""Rich consoles for the terminal: every command prints through one kind."""

from __future__ import annotations

from typing import Any

from rich.console import Console


def console(**kwargs: Any) -> Console:
    """A Rich console that prints text as given, markup aside: no ``:name:`` emoji codes, which
    would print ``log.jsonl:100: invalid JSON`` as ``log.jsonl💯 invalid JSON``. Keyword
    arguments go to :class:`rich.console.Console`."""
    kwargs.setdefault("emoji", False)
    return Console(**kwargs)
