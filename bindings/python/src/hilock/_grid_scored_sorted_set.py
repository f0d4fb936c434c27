"""The scored sorted set's Python idiom (Redisson ``RScoredSortedSet``):
``len``, ``in``, and iteration over ``(member, score)`` by ZSCAN pages, or
in rank order by ZRANGE pages (:meth:`ScoredSortedSet.in_order`)."""

from __future__ import annotations

from typing import Any, Iterator, Tuple

from ._grid import _i64
from ._grid_gen import ScoredSortedSetBase

__all__ = ["ScoredSortedSet"]


class ScoredSortedSet(ScoredSortedSetBase):
    """A sorted set of byte members with float scores, shared with
    Redisson's ``RScoredSortedSet`` (``StringCodec`` or ``ByteArrayCodec``
    on the Java side). Scores are finite floats (NaN and the infinities are
    refused); a range by score may end at ``-math.inf`` / ``math.inf``.

    ``len(z)``, ``m in z`` (the member has a score), and ``for member, score
    in z``: ZSCAN pages, in no particular order; as Redis's SCAN, a member
    there for the whole iteration is seen even while others come and go,
    and one reply is never the whole set. :meth:`in_order` iterates by
    rank instead (ZRANGE pages; a concurrent change can shift members
    across pages, so one may be missed or seen twice).
    ``get_score`` and ``rank`` answer ``None`` for a non-member.
    """

    #: the COUNT hint of the ZSCAN pages and the size of in_order's pages
    page_size = 1000

    def __len__(self) -> int:
        return self.size()

    def __contains__(self, value: Any) -> bool:
        if not isinstance(value, (bytes, bytearray, memoryview, str)):
            return False
        return self.get_score(value) is not None

    def __iter__(self) -> Iterator[Tuple[bytes, float]]:
        from ._grid import _scan

        return _scan(lambda cursor: self.scan(cursor, self.page_size))

    def in_order(self, reverse: bool = False, page_size: int = 0) -> Iterator[Tuple[bytes, float]]:
        """``(member, score)`` in rank order (highest first if ``reverse``),
        by ZRANGE pages of ``page_size`` (default ``page_size``)."""
        size = _i64(page_size or self.page_size, "page_size")
        if size < 1:
            raise ValueError("page_size must be positive")
        start = 0
        while True:
            if reverse:
                page = self.entry_range(-start - size, -start - 1)
                page.reverse()
            else:
                page = self.entry_range(start, start + size - 1)
            yield from page
            if len(page) < size:
                return
            start += size
