"""The priority queue's and deque's Python idiom (Redisson ``RPriorityQueue``
and ``RPriorityDeque``): the generated operations (``add``, ``offer``,
``poll``, ``peek``, ``contains``, ``remove``, ``size``, ``read_range``; the
deque's ``peek_first``, ``peek_last``, ``poll_first``, ``poll_last``;
``docs/grid.md``), ``len``, ``in`` and iteration that reads (does not take)
the values lowest first, in pages of 1000 (LRANGE). The order, the lock and
the refused comparators: ``docs/grid-priority-queue.md``.
"""

from __future__ import annotations

from typing import Iterator

from ._grid_gen import PriorityDequeBase, PriorityQueueBase
from ._grid_list import _pages

__all__ = ["PriorityQueue", "PriorityDeque"]


class PriorityQueue(PriorityQueueBase):
    """Redisson's ``RPriorityQueue`` under ``StringCodec``: values kept in
    Java's natural order of Strings (``String.compareTo``: UTF-16 code
    units), the lowest at the head, equal values kept. ``add`` places a
    value (``bytes`` of valid UTF-8, or ``str``), ``poll`` takes the head
    (``None`` when empty), ``peek`` reads it; ``v in q``, ``len(q)`` and
    ``for v in q`` read the queue. While a Redisson writer holds the queue's
    lock, writes wait for it. A queue that a Java comparator orders raises
    :class:`hilock.InvalidArgumentError` on add, remove and ``in``.

    A ``poll`` whose reply is lost is sent again and answers the value it
    took (none lost or taken twice); an ``add`` whose reply is lost raises
    ``OutcomeUnknown`` (added once or not at all).
    """

    def __len__(self) -> int:
        return self.size()

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, (bytes, bytearray, memoryview, str)):
            return False
        return self.contains(value)

    def __iter__(self) -> Iterator[bytes]:
        """The values lowest first, read in pages (not taken). By index, as
        Redisson's iterator: values added or taken meanwhile before the
        current page shift it."""
        return _pages(self.read_range)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "<hilock.%s %r>" % (type(self).__name__, self._name)


class PriorityDeque(PriorityDequeBase):
    """Redisson's ``RPriorityDeque``: the priority queue, also read and taken
    at the tail (``peek_last``, ``poll_last``). There is no add at an end:
    the order decides (Redisson raises Unsupported for them)."""

    __len__ = PriorityQueue.__len__
    __contains__ = PriorityQueue.__contains__
    __iter__ = PriorityQueue.__iter__
    __repr__ = PriorityQueue.__repr__
