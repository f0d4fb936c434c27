"""The priority blocking deque's Python idiom (Redisson
``RPriorityBlockingDeque``): the priority blocking queue's (``add``,
``put``, ``poll``, ``take()``, ``poll(timeout)``, ``len``, ``in``,
iteration, the asyncio forms) and the same at the tail: ``peek_last``,
``poll_last([timeout])``, ``take_last()`` and their asyncio forms. The
waits are the priority blocking queue's tasks. See
``docs/grid-priority-queue.md``.
"""

from __future__ import annotations

from typing import Optional

from ._grid import _ms
from ._grid_gen import PriorityBlockingDequeBase
from ._grid_priority_blocking_queue import _PriorityWaits
from ._grid_priority_queue import PriorityQueue

__all__ = ["PriorityBlockingDeque"]

_TAKE = 0x1709  # HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE
_POLL_TIMEOUT = 0x170A  # HL_OP_PRIORITY_BLOCKING_DEQUE_POLL_TIMEOUT
_TAKE_LAST = 0x1710  # HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST
_POLL_LAST_TIMEOUT = 0x1712  # HL_OP_PRIORITY_BLOCKING_DEQUE_POLL_LAST_TIMEOUT


class PriorityBlockingDeque(_PriorityWaits, PriorityBlockingDequeBase):  # type: ignore[misc]
    """Redisson's ``RPriorityBlockingDeque`` under ``StringCodec``: the
    priority blocking queue (Java's String order, lowest first, duplicates
    kept), also read, taken and waited for at the tail: ``take_last()``
    waits for the highest value, ``poll_last(timeout)`` at most ``timeout``
    seconds. No add at an end (the order decides). A take whose reply is
    lost answers what it took; a value taken just before a cancel goes
    back."""

    _OP_TAKE = _TAKE
    _OP_POLL_TIMEOUT = _POLL_TIMEOUT

    __len__ = PriorityQueue.__len__
    __contains__ = PriorityQueue.__contains__
    __iter__ = PriorityQueue.__iter__
    __repr__ = PriorityQueue.__repr__

    def take_first(self) -> bytes:
        """:meth:`take`: the head, waiting as long as it takes."""
        return self.take()

    def take_last(self) -> bytes:
        """Take the tail (the highest value), waiting as long as it takes
        (a cancel or the client's close ends the wait)."""
        v = self._wait(_TAKE_LAST, -1)
        assert v is not None
        return v

    def poll_first_timeout(self, timeout: float) -> Optional[bytes]:
        """:meth:`poll_timeout`: the head, waiting at most ``timeout``."""
        return self.poll_timeout(timeout)

    def poll_last_timeout(self, timeout: float) -> Optional[bytes]:
        """Take the tail, waiting at most ``timeout`` seconds: None when
        none came in time."""
        return self._wait(_POLL_LAST_TIMEOUT, _ms(timeout, "timeout"))

    def poll_first(self, timeout: Optional[float] = None) -> Optional[bytes]:  # type: ignore[override]
        """Take the head: without ``timeout`` at once (None when empty);
        with it, waiting at most ``timeout`` seconds."""
        if timeout is None:
            return super().poll_first()
        return self.poll_timeout(timeout)

    def poll_last(self, timeout: Optional[float] = None) -> Optional[bytes]:  # type: ignore[override]
        """Take the tail (the highest value): without ``timeout`` at once
        (None when empty); with it, waiting at most ``timeout`` seconds
        (None when none came)."""
        if timeout is None:
            return super().poll_last()
        return self.poll_last_timeout(timeout)

    async def take_first_async(self) -> bytes:
        """:meth:`take_async`."""
        return await self.take_async()

    async def take_last_async(self) -> bytes:
        """:meth:`take_last` for asyncio: a libhilock task (no thread);
        cancelling the awaiting task cancels it (a value it took goes
        back)."""
        v = await self._await_value(_TAKE_LAST, -1)
        assert v is not None
        return v

    async def poll_first_async(self, timeout: float) -> Optional[bytes]:
        """:meth:`poll_async`."""
        return await self.poll_async(timeout)

    async def poll_last_async(self, timeout: float) -> Optional[bytes]:
        """:meth:`poll_last` with a timeout, for asyncio."""
        return await self._await_value(_POLL_LAST_TIMEOUT, _ms(timeout, "timeout"))
