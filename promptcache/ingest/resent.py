"""Re-sent request content skipped at the byte level: each JSONL line of an agent session is
decoded only for what it adds to the lines before it.

An agent gateway logs every turn with the whole conversation so far and the same tool list; a
100k-request log holds about 4 GB of message arrays and 1 GB of tool lists, almost all of it
logged before. Decoding that JSON again costs more than everything else the reader does.
:class:`ResentLines` keeps

- the message arrays it decoded last ("tips"), with their bytes and their decoded messages: a
  new line whose array starts with a tip's exact bytes is decoded with those bytes cut out, and
  the tip's very messages (the same objects) are put back in front of the new ones;
- the tool lists and system prompts it decoded, with their bytes: a line that repeats one byte
  for byte gets the object decoded before.

Why the result equals ``orjson.loads(line)``: a quoted ``"messages"`` followed by ``:`` can
only be a key in valid JSON (inside a string every ``"`` is escaped, so the quote after
``messages`` ends a string, and the ``:`` makes it a key), and a ``[`` after it starts its
array value; the same holds for the other keys. A tip's bytes decoded as whole elements right after an array's ``[``; the same bytes
right after an array's ``[`` decode the same way in any line, and a whole value's bytes decode
to the same value anywhere, so the cuts leave every other value as it was. Each cut is marked
with a sentinel string, by which its place is found again in the decoded record. A line whose
cut version does not decode, or whose sentinels are not all found, is decoded whole (so its
error, if any, is the one ``orjson`` gives).

Records built so share objects with earlier records: callers must not modify them.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

_WS = b" \t\r\n"
#: orjson's nesting limit: a record may hold arrays and objects 1,024 deep, not more. Reused
#: content is checked against it where it lands (the decoder checks only what it decodes).
MAX_DEPTH = 1024


def _sentinel(name: str) -> tuple[str, bytes]:
    """A string that marks a cut (it starts with a NUL character), and its JSON. Bytes that hold
    a NUL character (``\\u0000``, the only way JSON writes it) are decoded whole, never cut nor
    kept: the bytes a cut replaces were checked when they were first decoded, and the rest of
    the line before decoding, so a sentinel found in a record is always one a cut put there."""
    s = f"\x00promptcache:{name}\x00"
    return s, orjson.dumps(s)


HISTORY, _HISTORY = _sentinel("history")
#: How JSON writes the NUL character every sentinel starts with: bytes that hold it are never
#: decoded with cuts (their record could hold a sentinel of its own), nor kept to be reused.
_NUL = b"\\u0000"


class _Tip:
    """A message array decoded before: its bytes from ``[`` up to its last element, its
    elements, how many keys deep in the record it was (its elements passed the decoder's
    depth limit there), and where its first element ends (``t0``: the index of the ``,`` after
    it in ``raw``, or ``None``).

    ``key`` indexes the whole bytes; ``tail_key`` the bytes from ``t0`` on (the "tail": every
    element but the first, after its comma), or is ``None`` when the tail is short or unknown.
    """

    __slots__ = ("raw", "msgs", "level", "key", "t0", "tail_key")

    def __init__(self, raw: bytes, msgs: list[Any], level: int, t0: int | None = None):
        self.raw = raw
        self.msgs = msgs
        self.level = level
        self.key = _window_key(raw, 0, len(raw))
        self.t0 = t0
        self.tail_key = None
        if t0 is not None and len(raw) - t0 >= ResentLines.SMALLEST and raw[t0] == 0x2C:  # ','
            self.tail_key = _window_key(raw, t0, len(raw))

    def tail(self) -> bytes:
        """The bytes of every element but the first, from the comma after it."""
        assert self.t0 is not None
        return self.raw[self.t0:]


def _window_key(raw: bytes, start: int, end: int) -> tuple[int, int]:
    """``(level, hash of the WINDOW bytes before it)`` for ``raw[start:end]``: the level is the
    largest one at most its length."""
    p = _level(end - start)
    return p, hash(raw[start + p - ResentLines.WINDOW:start + p])


class _Value:
    """A whole value (a tool list, a system prompt) decoded before: its bytes, the object, and
    its nesting depth (``[]`` is 1)."""

    __slots__ = ("raw", "obj", "depth")

    def __init__(self, raw: bytes, obj: Any):
        self.raw = raw
        self.obj = obj
        self.depth = _depth(obj)


def _depth(obj: Any) -> int:
    """Nesting depth of a decoded value: 0 for a scalar, 1 for ``[]`` or ``{}``."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in (x.values() if isinstance(x, dict) else x))
    return deepest


def _level(n: int) -> int:
    """The largest level at most ``n`` (``n`` >= 8): levels are the multiples of ``2**(e-3)``
    in ``[2**e, 2**(e+1))``, eight per power of two, so a tip's window lies in its last ninth."""
    step = 1 << (n.bit_length() - 4)
    return n - n % step


def _levels(n: int, smallest: int) -> Any:
    """Every level at most ``n`` and at least ``smallest`` (a power of two), largest first."""
    e = n.bit_length() - 1
    while (1 << e) >= smallest:
        step = 1 << (e - 3)
        lo = 1 << e
        p = _level(min(n, (2 << e) - 1))
        while p >= lo:
            yield p
            p -= step
        e -= 1


class ResentLines:
    """Decode JSONL lines, reusing what they repeat byte for byte of earlier lines.

    ``loads(line)`` returns what ``orjson.loads(line)`` returns (equal values; the messages,
    tool lists and system prompts repeated from an earlier line are the very objects decoded
    for it). The message array used is the one after the first ``"messages":`` key of the line
    (chat and Messages bodies, and gateway records that wrap them); the whole values, those
    after the first ``"tools":`` and ``"system":`` keys.

    Tips are found by the length of their bytes, rounded down to one of eight levels per power
    of two, and the hash of their last :attr:`WINDOW` bytes before that level: a new line probes
    the levels below its own length, longest first (its session's tip is one or two levels down),
    and confirms a candidate with an exact byte comparison (``memcmp``).

    A session whose first message changes on every turn (a system prompt that starts with the
    current time) matches no tip from ``[``. Such a line's first element is decoded on its own
    to find where it ends, and the tips are looked for again by their bytes after their own first
    element (their "tail", indexed the same way): a line that holds a tip's tail right after its
    first element is decoded with the tail cut out, and the tip's messages but the first are put
    back after the line's own first message.
    Whole values are found by the hash of their first :attr:`WINDOW` bytes, confirmed the same
    way.

    Args:
        limit: tips kept (least recently used go first). A session's tip is replaced by the
            line that extends it.
        budget_bytes: bytes of tips kept, at most (the benchmark log's 1,024 most recent tips
            hold about 45 MB; its hit rate is the same with 768 of them, and 1% lower with 512,
            about 22 MB).
        values: whole values kept (least recently used go first).
    """

    MARKER = b'"messages"'
    #: Keys whose whole value is reused when repeated.
    VALUE_KEYS = ("tools", "system")
    #: Bytes hashed to index a tip or a value.
    WINDOW = 64
    #: Arrays and values shorter than this many bytes are decoded as they are (not worth it).
    SMALLEST = 1024
    #: A key not found after the history in this many lines in a row is looked for there only
    #: once every as many lines (searching a line for a key it lacks reads all of it).
    AFTER_CHECK = 64

    def __init__(self, limit: int = 1024, budget_bytes: int = 24 * 2**20, values: int = 256):
        self.limit = limit
        self.budget = budget_bytes
        self.size = 0  # bytes of the tips kept
        self.value_limit = values
        self._index: dict[tuple[int, int], list[_Tip]] = {}
        self._tails: dict[tuple[int, int], list[_Tip]] = {}
        self._lru: OrderedDict[int, _Tip] = OrderedDict()
        self._values: dict[tuple[str, int], list[_Value]] = {}
        self._value_lru: OrderedDict[int, tuple[tuple[str, int], _Value]] = OrderedDict()
        self._value_sent = {k: _sentinel(k) for k in self.VALUE_KEYS}
        self._value_marker = {k: f'"{k}"'.encode() for k in self.VALUE_KEYS}
        self._paths: dict[str, tuple[Any, ...]] = {}
        # per key: looked for after the history while > 0; not found there lately: less often
        self._after = {k: self.AFTER_CHECK for k in self.VALUE_KEYS}
        self._compact = True
        self._misses = 0
        #: Lines decoded with a tip's bytes cut out (of which: its tail, after a new first
        #: message) / without.
        self.reused = 0
        self.patched = 0
        self.whole = 0

    def loads(self, line: bytes) -> Any:
        """``orjson.loads(line)``, decoding only what no earlier line held.

        Raises:
            orjson.JSONDecodeError: when the line is not valid JSON.
        """
        try:
            rec = self._loads(line)
        except Exception:  # noqa: BLE001 - not valid JSON, or anything unforeseen: decode it whole
            rec = None
        if rec is None:
            self.whole += 1
            return orjson.loads(line)
        return rec

    # -- one line ---------------------------------------------------------------------------

    def _loads(self, line: bytes) -> Any:
        """The record, or ``None`` to decode the line whole."""
        n = len(line)
        cuts: list[tuple[int, int, bytes]] = []  # (start, end, replacement), not overlapping
        # the message history: extend a tip, or start one
        m, a = _key_at(line, self.MARKER, 0, n)
        tip = None
        e0 = None  # where the line's first message ends (the ',' after it), when looked for
        patched = False  # the tip's tail follows the line's own first message
        after = 0  # values are looked for before the marker, then from here on
        if a >= 0 and line[a] == 0x5B and n - a >= self.SMALLEST:  # '['
            tip = self._find(line, a)
            if tip is not None:
                q = a + len(tip.raw)
                while q < n and line[q] in _WS:
                    q += 1
                if q < n and line[q] in b",]":
                    cuts.append((a + 1, q, _HISTORY))
                    after = q
                else:
                    tip = None
            if tip is None:
                e0 = self._first_end(line, a)
                tip = self._find_tail(line, e0) if e0 is not None else None
                if tip is not None:
                    q = e0 + len(tip.raw) - tip.t0  # type: ignore[operator]
                    while q < n and line[q] in _WS:
                        q += 1
                    if q < n and line[q] in b",]":
                        cuts.append((e0 + 1, q, _HISTORY))
                        after = q
                        patched = True
                    else:
                        tip = None
            if tip is None:
                j = a + 1
                while j < n and line[j] in _WS:
                    j += 1
                cuts.append((a + 1, a + 1, _HISTORY if line[j:j + 1] == b"]" else _HISTORY + b","))
                after = a
        else:
            a, m = -1, n
        # whole values: the tool list and system prompt, when seen before
        found: list[tuple[str, _Value]] = []
        for key in self.VALUE_KEYS:
            marker = self._value_marker[key]
            k, v = _key_at(line, marker, 0, m)
            if k < 0 and after:
                st = self._after[key]
                if st > 0:
                    k, v = _key_at(line, marker, after, n)
                    st = self.AFTER_CHECK if k >= 0 else st - 1
                    if st == 0:
                        st = -self.AFTER_CHECK
                else:
                    st = st + 1 or 1  # skipped: look again once every AFTER_CHECK lines
                self._after[key] = st
            if v < 0 or line[v] not in b"[{" or n - v < self.SMALLEST:
                continue
            got = self._value_at(line, key, v)
            if got is not None:
                cuts.append((v, v + len(got.raw), self._value_sent[key][1]))
                found.append((key, got))
        if not cuts:
            return None
        cuts.sort()
        for (_, e1, _), (s2, _, _) in zip(cuts, cuts[1:]):
            if s2 < e1:
                return None  # overlapping (a value inside the history): decode whole
        view = memoryview(line)
        pieces: list[Any] = []
        pos = 0
        for s, e, rep in cuts:
            if line.find(_NUL, pos, s) >= 0:
                return None
            pieces.append(view[pos:s])
            pieces.append(rep)
            pos = e
        if line.find(_NUL, pos) >= 0:
            return None
        pieces.append(view[pos:])
        rec = orjson.loads(b"".join(pieces))
        for key, got in found:
            sent = self._value_sent[key][0]
            place = self._locate(rec, key, lambda x, s=sent: x == s)
            if place is None or len(self._paths[key]) + got.depth > MAX_DEPTH:
                return None  # not found, or deeper than the decoder allows: decode whole
            parent, k = place
            parent[k] = got.obj
        if a < 0:
            return rec
        place = self._locate(rec, "messages", _starts_history)
        if place is None:
            return None
        node = place[0][place[1]]
        if node[1 if patched else 0] != HISTORY:
            return None
        level = len(self._paths["messages"])
        t0 = None
        if tip is not None:
            if level != tip.level:
                return None  # its messages were checked against the depth limit at another level
            self.reused += 1
            if patched:
                self.patched += 1
                end = after if line[after] == 0x5D else self._end(line, after + 1, node[2:])
                node[1:2] = tip.msgs[1:]
                t0 = e0 - a  # type: ignore[operator]
            elif line[after] == 0x5D:  # ']': the same history (a retry)
                node[0:1] = tip.msgs
                self._lru.move_to_end(id(tip))
                return rec
            else:
                end = self._end(line, after + 1, node[1:])
                node[0:1] = tip.msgs
                t0 = tip.t0
            self._forget(tip)
        else:
            self.whole += 1
            del node[0]
            end = self._end(line, a + 1, node) if node else None
            t0 = None if e0 is None else e0 - a
        if end is not None:
            self._keep(_Tip(line[a:end].rstrip(_WS), list(node), level, t0))
        return rec

    # -- tips -------------------------------------------------------------------------------

    def _find(self, line: bytes, a: int) -> _Tip | None:
        """A tip whose bytes ``line`` holds at ``a``: the newest of those in the longest length
        class that has one. (In a valid line, a ``,`` or ``]`` follows: a tip ends after an
        element.)"""
        w = self.WINDOW
        index = self._index
        for p in _levels(len(line) - a, self.SMALLEST):
            bucket = index.get((p, hash(line[a + p - w:a + p])))
            if bucket is not None:
                for tip in reversed(bucket):  # the newest first: a session's own tip, mostly
                    if line.startswith(tip.raw, a):
                        return tip
        return None

    def _first_end(self, line: bytes, a: int) -> int | None:
        """The index of the ``,`` after the first element of the array whose ``[`` is at ``a``,
        or ``None`` (no second element, or none that the tails may be searched for)."""
        v = a + 1
        n = len(line)
        while v < n and line[v] in _WS:
            v += 1
        if v >= n or line[v] == 0x5D:  # ']': empty
            return None
        e = _value_end(line, v)
        if e is None or n - e < self.SMALLEST or line[e] != 0x2C:  # ','
            return None
        return e

    def _find_tail(self, line: bytes, e0: int) -> _Tip | None:
        """A tip whose tail ``line`` holds at ``e0`` (the ``,`` after its first element): the
        newest of those in the longest length class that has one."""
        w = self.WINDOW
        tails = self._tails
        for p in _levels(len(line) - e0, self.SMALLEST):
            bucket = tails.get((p, hash(line[e0 + p - w:e0 + p])))
            if bucket is not None:
                for tip in reversed(bucket):
                    if line.startswith(tip.tail(), e0):
                        return tip
        return None

    def _keep(self, tip: _Tip) -> None:
        lru = self._lru
        self._index.setdefault(tip.key, []).append(tip)
        if tip.tail_key is not None:
            self._tails.setdefault(tip.tail_key, []).append(tip)
        lru[id(tip)] = tip
        self.size += len(tip.raw)
        while len(lru) > self.limit or self.size > self.budget:
            self._forget(next(iter(lru.values())))

    def _forget(self, tip: _Tip) -> None:
        if self._lru.pop(id(tip), None) is None:
            return
        self.size -= len(tip.raw)
        for index, key in ((self._index, tip.key), (self._tails, tip.tail_key)):
            if key is None:
                continue
            bucket = index[key]
            bucket.remove(tip)
            if not bucket:
                del index[key]

    def _end(self, line: bytes, start: int, elems: list[Any]) -> int | None:
        """The index of the ``]`` that closes the array whose elements ``elems`` the line holds
        from ``start`` (the byte after the ``[`` or ``,`` before them). The compact JSON
        ``orjson`` writes (as JavaScript's ``JSON.stringify`` does) is checked first; other
        writers' spacing falls back to asking the decoder where the array ends (a second
        decoding of the elements)."""
        if self._compact:
            try:
                new = b",".join([orjson.dumps(x) for x in elems])
            except TypeError:
                new = None
            if new is not None and line.startswith(new, start) and line[start + len(new):start + len(new) + 1] == b"]":
                return start + len(new)
            self._misses += 1
            if self._misses > 64 and self._misses > self.reused // 4:
                self._compact = False  # this log is not written compactly: stop trying
        end = _value_end(line, start - 1, array=True)
        return None if end is None else end - 1

    # -- whole values -----------------------------------------------------------------------

    def _value_at(self, line: bytes, key: str, v: int) -> _Value | None:
        """The value kept for the bytes at ``v`` under ``key``, else a new one decoded and
        kept."""
        k = (key, hash(line[v:v + self.WINDOW]))
        for got in self._values.get(k, ()):
            if line.startswith(got.raw, v):
                self._value_lru.move_to_end(id(got))
                return got
        end = _value_end(line, v)
        if end is None:
            return None
        raw = line[v:end]
        if _NUL in raw:
            return None
        got = _Value(raw, orjson.loads(raw))
        lru = self._value_lru
        if len(lru) >= self.value_limit:
            old_key, old = lru.pop(next(iter(lru)))
            bucket = self._values[old_key]
            bucket.remove(old)
            if not bucket:
                del self._values[old_key]
        self._values.setdefault(k, []).append(got)
        lru[id(got)] = (k, got)
        return got

    # -- finding the cuts in the decoded record ---------------------------------------------

    def _locate(self, rec: Any, name: str, is_it: Any) -> tuple[Any, Any] | None:
        """``(container, key)`` of the value ``is_it`` accepts: at the path where it was last
        time, else searched for (and the path remembered)."""
        path = self._paths.get(name)
        if path:
            node: Any = rec
            try:
                for k in path[:-1]:
                    node = node[k]
                if is_it(node[path[-1]]):
                    return node, path[-1]
            except (KeyError, IndexError, TypeError):
                pass
        found = _search(rec, is_it)
        if found is None:
            return None
        self._paths[name] = found[0]
        return found[1], found[0][-1]


def _key_at(line: bytes, name: bytes, start: int, end: int) -> tuple[int, int]:
    """``(where the key is, where its value starts)`` for the first ``name`` (a quoted key)
    followed by ``:`` in ``line[start:end]``, or ``(-1, -1)``.

    In valid JSON a quoted name followed by ``:`` is a key: inside a string every ``"`` is
    escaped, so the closing quote of ``name`` ends a string and the ``:`` makes it a key.
    """
    n = len(line)
    k = line.find(name, start, end)
    while k >= 0:
        j = k + len(name)
        while j < n and line[j] in _WS:
            j += 1
        if j < n and line[j] == 0x3A:  # ':'
            j += 1
            while j < n and line[j] in _WS:
                j += 1
            if j < n:
                return k, j
        k = line.find(name, k + 1, end)
    return -1, -1


def _starts_history(x: Any) -> bool:
    """Whether ``x`` is the message array with the history sentinel first or second (after a
    first message decoded from the line)."""
    return isinstance(x, list) and bool(x) and (x[0] == HISTORY or (len(x) > 1 and x[1] == HISTORY))


def _value_end(line: bytes, v: int, array: bool = False) -> int | None:
    """The index just past the value that starts at ``line[v]`` (with ``array``, ``line[v]``
    is read as ``[`` whatever it is); ``None`` if no value followed by more JSON starts there.

    The decoder stops at the first byte after the value and says where, in characters: in a
    valid line that is the ``,`` or ``}`` after it. (A line that is not valid JSON may give a
    wrong index here; its record then fails to decode and nothing is kept from it.)
    """
    buf = (b"[" + line[v + 1:]) if array else line[v:]
    try:
        orjson.loads(buf)
    except orjson.JSONDecodeError as e:
        pos = e.pos  # code points, not bytes
        if not buf.isascii():
            try:
                pos = len(buf.decode("utf-8")[:pos].encode("utf-8"))
            except UnicodeError:
                return None
        end = len(buf[:pos].rstrip(_WS))
        if end < 1:
            return None
        return v + end
    return None


def _search(rec: Any, is_it: Any) -> tuple[tuple[Any, ...], Any] | None:
    """``(path, container)`` of a value ``is_it`` accepts (each container's own values first)."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), rec)]
    while stack:
        path, node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        later = []
        for k, v in items:
            if is_it(v):
                return path + (k,), node
            if isinstance(v, (dict, list)):
                later.append((path + (k,), v))
        stack.extend(reversed(later))
    return None
