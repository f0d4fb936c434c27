"""The sorted set's Python idiom (Redisson ``RSortedSet``): ``in``, ``len``
and iteration in order (by pages of the list, never one reply with all of
it) over the generated operations. The order, the lock and the refused
comparators: ``docs/grid-sorted-set.md``.
"""

from __future__ import annotations

from typing import Iterator, Optional, Tuple

from ._grid import Value, _bytes, _i64, _out, _page, _scan, _take
from ._grid_gen import SortedSetBase
from ._lowlevel import check, lib

__all__ = ["SortedSet"]


class SortedSet(SortedSetBase):
    """Distinct values in Java's natural order of Strings (``String.compareTo``:
    UTF-16 code units), shared with Redisson's ``RSortedSet`` under
    ``StringCodec``. ``add`` and ``remove`` answer whether they changed the
    set; ``v in s``, ``len(s)`` and ``for v in s`` (lowest first, a page of
    1000 values per round trip) read it. A set that a Java comparator
    orders raises :class:`hilock.InvalidArgumentError` on add, remove and
    ``in``; a value to add must be valid UTF-8 (``str`` always is).

    Iteration goes by index: values added or removed meanwhile before the
    current page shift it (a value may be seen twice or skipped), as with
    Redisson's iterator.
    """

    def scan(self, cursor: Value = b"0", count: int = 1000) -> Tuple[bytes, list[Optional[bytes]]]:
        """One page of ``count`` values in order from ``cursor`` (``b"0"`` to
        start): ``(next cursor, values)``, the cursor ``b"0"`` after the last
        page."""
        _bcursor = _bytes(cursor, "cursor")
        out = _out("hl_value **")
        check(lib.hl_sorted_set_scan(out, self._h, _bcursor, len(_bcursor), _i64(count, "count")))
        return _page(_take(out[0]), None)

    def __contains__(self, value: object) -> bool:
        return self.contains(value)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.size()

    def __iter__(self) -> Iterator[bytes]:
        return _scan(self.scan)  # type: ignore[no-any-return]
