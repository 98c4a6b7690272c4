"""Filler text for rule examples: ``<<filler N>>`` in a string expands to N words of fixed
filler text, so examples can pass providers' minimum lengths without pages of prose. The log
examples run through a whole audit in :mod:`promptcache.examples`; template examples in
:mod:`promptcache.lint.examples`.
"""

from __future__ import annotations

import re
from typing import Any

_FILLER = re.compile(r"<<filler (\d+)>>")
_WORDS = ("policy order refund customer shipping account payment invoice return warranty support agent "
          "priority ticket review balance transfer limit statement card branch delivery parcel tracking "
          "address contract renewal discount voucher escalation summary handbook section record").split()


def filler(n: int) -> str:
    """``n`` words of deterministic filler text.

    >>> filler(3)
    'section record payment'
    """
    out, x = [], 7
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(_WORDS[x % len(_WORDS)])
    return " ".join(out)


def expand(obj: Any) -> Any:
    """Expand ``<<filler N>>`` everywhere in a JSON-like value."""
    if isinstance(obj, str):
        return _FILLER.sub(lambda m: filler(int(m.group(1))), obj)
    if isinstance(obj, list):
        return [expand(x) for x in obj]
    if isinstance(obj, dict):
        return {k: expand(v) for k, v in obj.items()}
    return obj
