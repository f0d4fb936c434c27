"""The queue's and the deque's Python idiom (Redisson ``RQueue`` and
``RDeque``): the generated operations (``offer``, ``peek``, ``poll``,
``poll_many``; the deque's ``add_first``, ``add_last``, ``peek_first``,
``peek_last``, ``poll_first``, ``poll_last`` ...; ``docs/grid.md``), ``len``,
and iteration that reads (does not take) the elements head first, in pages
of 1000 (LRANGE).

A poll takes its element with a request marker: when its reply is lost
the poll is sent again and answers the element it took, so none is lost
or taken twice (``docs/grid.md``, mode *mark*). An ``offer`` whose reply is
lost raises ``OutcomeUnknown`` (added once or not at all, never twice).
"""

from __future__ import annotations

from typing import Iterator

from ._grid_gen import DequeBase, QueueBase
from ._grid_list import _pages

__all__ = ["Queue", "Deque"]


class Queue(QueueBase):
    """Redisson's ``RQueue``: a FIFO of ``bytes`` (``str`` goes in as UTF-8)
    on one Redis list, the head at the left."""

    def __len__(self) -> int:
        return self.size()

    def __iter__(self) -> Iterator[bytes]:
        """The elements from the head, read in pages (not taken)."""
        return _pages(self.read_range)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "<hilock.%s %r>" % (type(self).__name__, self._name)


class Deque(DequeBase):
    """Redisson's ``RDeque``: the queue's operations, and adds, peeks and
    polls at either end."""

    __len__ = Queue.__len__
    __iter__ = Queue.__iter__
    __repr__ = Queue.__repr__
