"""Reading deeply nested input: parsers (Python's ``ast``, PyYAML's composer, Jinja's parser)
and lint's own tree walks recurse once per level of nesting, and Python stops at 1,000 levels.

:func:`deep` runs a parse on a thread of its own with a large stack (:data:`STACK_BYTES`) and
Python's recursion limit raised to :data:`DEPTH` for as long as it runs, so YAML nested past
libyaml's 1,000 levels, Jinja and TypeScript nested 10,000 deep and a string built from 100,000
concatenations are read like any other file (the depths the tests read).
Deeper input still raises :class:`RecursionError`, which the caller reports (a
``template-syntax`` finding that names the limit); nothing is lost without saying so.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: Stack of the parsing thread (bytes of address space; only the pages a parse touches are used).
STACK_BYTES = 1 << 30
#: Python's recursion limit while a parse runs on that thread.
DEPTH = 250_000

_LOCK = threading.Lock()


def deep(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on a thread with a :data:`STACK_BYTES` stack and the recursion limit at
    :data:`DEPTH`; what it returns or raises is returned or raised here. Where no such thread
    can be started (a platform that refuses the stack size), it runs here, under the usual
    limit.

    Raises:
        Whatever ``fn`` raises (:class:`RecursionError` past :data:`DEPTH` levels).
    """
    box: dict[str, Any] = {}

    def job() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller as it was
            box["error"] = e

    with _LOCK:
        try:
            old_size = threading.stack_size(STACK_BYTES)
        except (ValueError, RuntimeError):
            return fn(*args)
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, DEPTH))
        try:
            th = threading.Thread(target=job, name="promptcache-parse", daemon=True)
            try:
                th.start()
            except (RuntimeError, MemoryError):
                th = None
            finally:
                threading.stack_size(old_size)
            if th is None:
                sys.setrecursionlimit(old_limit)
                return fn(*args)
            th.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
