"""Longest common prefix of two unit sequences held as bytes."""

from __future__ import annotations

import numpy as np

_DTYPES = {4: np.dtype("<u4"), 8: np.dtype("<u8")}


def common_prefix(a: bytes, b: bytes, width: int = 4, a_offset: int = 0) -> int:
    """Units shared at the start of ``a[a_offset:]`` and ``b`` (``a_offset`` in bytes).

    Short runs compare in Python; long ones with numpy, so a 100k-token comparison is one
    vectorised pass.

    >>> import numpy as np
    >>> common_prefix(np.array([1, 2, 3, 4], "<u4").tobytes(), np.array([1, 2, 9], "<u4").tobytes())
    2
    """
    m = min(len(b), len(a) - a_offset) // width
    if m <= 16:
        i = 0
        while i < m and a[a_offset + i * width:a_offset + (i + 1) * width] == b[i * width:(i + 1) * width]:
            i += 1
        return i
    # the common case, one extends the other: a memcmp, without copying either
    if len(b) <= len(a) - a_offset:
        if a.startswith(b, a_offset):
            return m
    elif b.startswith(memoryview(a)[a_offset:]):
        return m
    dt = _DTYPES[width]
    neq = np.frombuffer(a, dtype=dt, count=m, offset=a_offset) != np.frombuffer(b, dtype=dt, count=m)
    i = int(neq.argmax())
    return i if neq[i] else m
