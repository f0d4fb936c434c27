"""The list's Python idiom (Redisson ``RList``): a
:class:`collections.abc.MutableSequence` over one Redis list, plus the
generated operations (``add``, ``get``, ``set``, ``insert``, ``remove_at``,
``index_of``, ``read_range`` ...; ``docs/grid.md``).

Where it differs from a Python list (and from Redisson):

* ``l[i]``, ``l[i] = v``, ``del l[i]`` take negative indexes as Python does
  (Redis counts them from the end too); out of range is ``IndexError``.
  Slices read (``l[2:5]``, two round trips) but do not assign or delete.
* ``remove(v)`` raises ``ValueError`` when no element equals ``v``, as
  Python's does (Redisson's ``remove`` answers false); ``remove(v, count)``
  removes up to ``count`` (0: all, negative: from the tail), LREM.
* ``insert(i, v)`` clamps an index out of range to the ends, as Python's
  (one more round trip then); the C ``insert`` refuses it.
* ``index(v)`` raises ``ValueError`` when absent (``index_of`` answers -1).
* Iteration reads pages of 1000 (LRANGE), so it sees the list as it is
  while it goes (an element added behind the cursor is missed, one removed
  before it shifts the rest), as Redisson's iterator.
* ``pop(i)`` is ``remove_at``: one script, answered once even when its
  reply is lost; ``clear()`` deletes the key; ``extend`` is one round trip.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import Any, Iterable, Iterator, Optional

from . import _errors as E
from ._grid import Value, _bytes, _scan
from ._grid_gen import ListBase

__all__ = ["List"]

PAGE = 1000


def _out_of_range(e: E.InvalidArgumentError) -> bool:
    return "out of range" in str(e)


def _pages(read_range: Any, start: int = 0) -> Iterator[Optional[bytes]]:
    """Every element from start, in pages of LRANGE (the scan helper's
    cursor is the next index)."""

    def fetch(cursor: bytes) -> Any:
        at = start if cursor == b"0" else int(cursor)
        page = read_range(at, at + PAGE - 1)
        nxt = b"0" if len(page) < PAGE else str(at + PAGE).encode()
        return nxt, page

    return _scan(fetch)


class List(ListBase, MutableSequence):  # type: ignore[misc]
    """Redisson's ``RList``: values ``bytes`` (or ``str``, as UTF-8) in,
    ``bytes`` out; a ``MutableSequence``. Java side: ``StringCodec`` or
    ``ByteArrayCodec``."""

    # -- the sequence ---------------------------------------------------

    def __len__(self) -> int:
        return self.size()

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            r = range(*index.indices(len(self)))
            if not r:
                return []
            lo, hi = min(r[0], r[-1]), max(r[0], r[-1])
            items = self.read_range(lo, hi)
            return [items[i - lo] for i in r if i - lo < len(items)]
        v = self.get(index)
        if v is None:
            raise IndexError("list index out of range: %d" % index)
        return v

    def __setitem__(self, index: Any, value: Value) -> None:
        if isinstance(index, slice):
            raise TypeError("a hilock List assigns one index at a time, not a slice")
        try:
            self.fast_set(index, value)
        except E.InvalidArgumentError as e:
            if _out_of_range(e):
                raise IndexError("list assignment index out of range: %d" % index) from e
            raise
        except E.RedisError as e:
            if "no such key" in str(e):  # LSET on a missing list
                raise IndexError("list assignment index out of range: %d" % index) from e
            raise

    def __delitem__(self, index: Any) -> None:
        if isinstance(index, slice):
            raise TypeError("a hilock List deletes one index at a time, not a slice")
        self.pop(index)

    def __iter__(self) -> Iterator[bytes]:
        return _pages(self.read_range)  # type: ignore[return-value]

    def __reversed__(self) -> Iterator[bytes]:
        end = len(self) - 1
        while end >= 0:
            start = max(end - PAGE + 1, 0)
            page = self.read_range(start, end)
            yield from reversed(page)  # type: ignore[misc]
            end = start - 1

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, (bytes, bytearray, memoryview, str)):
            return False
        return self.index_of(value) >= 0

    def __iadd__(self, values: Iterable[Value]) -> "List":  # type: ignore[override]
        self.extend(values)
        return self

    def __repr__(self) -> str:
        return "<hilock.List %r>" % (self._name,)

    # -- Python's list methods over the generated ones --------------------

    def append(self, value: Value) -> None:
        """Append value (RPUSH)."""
        self.add(value)

    def extend(self, values: Iterable[Value]) -> None:
        """Append every value in one round trip."""
        vals = [_bytes(v, "value") for v in values]
        if vals:
            self.add_all(*vals)

    def insert(self, index: int, value: Value) -> int:  # type: ignore[override]
        """Insert value before index; an index out of range goes to the
        nearer end, as Python's ``list.insert``. The new size."""
        try:
            return ListBase.insert(self, index, value)
        except E.InvalidArgumentError as e:
            if not _out_of_range(e):
                raise
        n = len(self)
        at = 0 if index < 0 else n
        return ListBase.insert(self, at, value)

    def remove(self, value: Value, count: int = 1) -> None:  # type: ignore[override]
        """Remove the first element equal to value (LREM; count as
        ``remove`` of the C API); ``ValueError`` when there is none."""
        if not ListBase.remove(self, value, count):
            raise ValueError("%r is not in the list" % (value,))

    def pop(self, index: int = -1) -> bytes:
        """Remove the element at index (default the last) and return it;
        ``IndexError`` when out of range (an empty list)."""
        try:
            v = self.remove_at(index)
        except E.InvalidArgumentError as e:
            if _out_of_range(e):
                raise IndexError("pop index out of range: %d" % index) from e
            raise
        assert v is not None
        return v

    def index(self, value: Any, start: int = 0, stop: Optional[int] = None) -> int:
        """The index of the first element equal to value (a script in Redis
        when start and stop are not given); ``ValueError`` when absent."""
        if start == 0 and stop is None:
            i = self.index_of(value)
            if i < 0:
                raise ValueError("%r is not in the list" % (value,))
            return i
        return MutableSequence.index(self, value, start, stop if stop is not None else len(self))

    def count(self, value: Any) -> int:
        """How many elements equal value (reads the list page by page)."""
        b = _bytes(value, "value")
        return sum(1 for v in self if v == b)

    def clear(self) -> None:
        """Remove every element (deletes the key)."""
        self.delete()
