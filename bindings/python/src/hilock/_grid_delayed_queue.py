"""The delayed queue's Python idiom (Redisson ``RDelayedQueue``):
``offer(value, delay_seconds)`` with the delay in float seconds (0 or
more), ``len`` and iteration over the elements still waiting (insertion
order, read in pages). The due elements move to the queue ``name``: read
them with ``client.queue(name)``. While a delayed queue of the name is
open in this client, the client moves due elements (a consumer alone too):
``docs/grid-delayed-queue.md``. ``offer_async`` is the offer for asyncio:
a libhilock task (``hl_object_call_start``), no thread of Python's.
"""

from __future__ import annotations

from typing import Any, Iterator

from ._grid import _bytes, _bytes_int_args
from ._grid_gen import DelayedQueueBase
from ._grid_list import _pages
from ._lowlevel import check, error_for, lib, ms

__all__ = ["DelayedQueue"]


class DelayedQueue(DelayedQueueBase):
    """Redisson's ``RDelayedQueue`` on the destination queue ``name``:
    values ``bytes`` (``str`` goes in as UTF-8) offered with a delay, moved
    to the queue once each when due. Drop it or call ``destroy()`` to stop
    this object's part in moving them."""

    def offer(self, value: Any, delay_seconds: float) -> None:
        """Add ``value`` to reach the queue after ``delay_seconds`` (0 or
        more; rounded up to ms). A resend after a lost reply adds nothing
        twice."""
        b = _bytes(value, "value")
        check(lib.hl_delayed_queue_offer(self._h, b, len(b), ms(delay_seconds, "delay_seconds")))

    async def offer_async(self, value: Any, delay_seconds: float) -> None:
        """:meth:`offer` for asyncio: a libhilock task (the core's
        ``hl_object_call_start``), so the event loop never blocks and no
        thread waits for the reply. Like ``release_async``, the offer runs
        to its end even if the awaiting task is cancelled meanwhile (one
        write, which a resend never doubles): the value is offered, then
        ``CancelledError`` propagates."""
        args, keep = _bytes_int_args(_bytes(value, "value"),
                                     ms(delay_seconds, "delay_seconds"))
        h = self._h
        (rc, _, detail), cancelled = await self._client._await_task(
            lambda out: lib.hl_object_call_start(out, h, lib.HL_OP_DELAYED_QUEUE_OFFER, args, 2))
        del keep
        if cancelled is not None:
            raise cancelled
        if rc:
            raise error_for(rc, detail)

    def __len__(self) -> int:
        return self.size()

    def __iter__(self) -> Iterator[bytes]:
        """The waiting values in insertion order, read in pages."""
        return _pages(self.read_range)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "<hilock.DelayedQueue %r>" % (self._name,)
