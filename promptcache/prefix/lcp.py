"""Longest common prefix of two unit sequences held as bytes."""

from __future__ import annotations

import numpy as np

_DTYPES = {4: np.dtype("<u4"), 8: np.dtype("<u8")}


def common_prefix(a: bytes, b: bytes, width: int = 4, a_offset: int = 0, b_offset: int = 0) -> int:
    """Units shared at the start of ``a[a_offset:]`` and ``b[b_offset:]`` (offsets in bytes; no
    copy of either is made).

    Short runs compare in Python; long ones with a memcmp when one extends the other, else with
    numpy over windows of 256, 2,048, 16,384 ... units (at most one pass over both).

    >>> import numpy as np
    >>> common_prefix(np.array([1, 2, 3, 4], "<u4").tobytes(), np.array([1, 2, 9], "<u4").tobytes())
    2
    >>> common_prefix(np.array([1, 2, 3, 4], "<u4").tobytes(), np.array([9, 2, 3, 5], "<u4").tobytes(), 4, 4, 4)
    2
    """
    m = min(len(b) - b_offset, len(a) - a_offset) // width
    if m <= 16:
        i = 0
        while i < m and a[a_offset + i * width:a_offset + (i + 1) * width] == b[b_offset + i * width:b_offset + (i + 1) * width]:
            i += 1
        return i
    # the common case, one extends the other: a memcmp, without copying either
    if len(b) - b_offset <= len(a) - a_offset:
        if a.startswith(memoryview(b)[b_offset:] if b_offset else b, a_offset):
            return m
    elif b.startswith(memoryview(a)[a_offset:], b_offset):
        return m
    # they differ: compare growing windows, so that an early difference (a timestamp near the
    # start of a long prompt) does not cost a pass over the whole prompt
    dt = _DTYPES[width]
    lo, step = 0, 256
    while lo < m:
        hi = min(m, lo + step)
        neq = np.frombuffer(a, dtype=dt, count=hi - lo, offset=a_offset + lo * width) != \
            np.frombuffer(b, dtype=dt, count=hi - lo, offset=b_offset + lo * width)
        i = int(neq.argmax())
        if neq[i]:
            return lo + i
        lo, step = hi, step * 8
    return m
