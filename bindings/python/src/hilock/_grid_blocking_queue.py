"""The blocking queue's Python idiom (Redisson ``RBlockingQueue``):
``offer``/``put`` at the tail, ``take`` (waits as long as it takes),
``poll(timeout=None)`` (no timeout: at once; else waits up to ``timeout``
seconds), ``drain_to``, ``len`` and iteration (reads, does not take), and
asyncio forms ``take_async`` / ``poll_async`` whose waits are libhilock
tasks: any number of them wait on one blocking command of the client, no
thread and no connection each.

Nothing is lost: a take moves its element into an in-flight list and
removes it there once the answer arrived; a lost reply, a killed process or
a cancel gives it back (``docs/grid-blocking-queue.md``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterator, Optional, Tuple

from ._grid import _convert, _take
from ._grid import _bytes, _bytes_int_args
from ._grid_gen import BlockingDequeBase, BlockingQueueBase, BoundedBlockingQueueBase
from ._grid_list import _pages
from ._lowlevel import check, error_for, ffi, lib, ms

__all__ = ["BlockingQueue", "BlockingDeque", "BoundedBlockingQueue"]


class BlockingQueue(BlockingQueueBase):
    """Redisson's ``RBlockingQueue``: a FIFO of ``bytes`` (``str`` goes in
    as UTF-8) on one Redis list, whose takers wait for elements."""

    _TAKE = lib.HL_OP_BLOCKING_QUEUE_TAKE
    _POLL_TIMEOUT = lib.HL_OP_BLOCKING_QUEUE_POLL_TIMEOUT

    def _wait(self, op: int, wait_ms: int) -> Optional[bytes]:
        """A blocking take (wait_ms -1) or poll with a timeout."""
        out = ffi.new("hl_value **")
        args = ffi.new("hl_arg[1]")
        n = 0
        if wait_ms >= 0:
            args[0].type = lib.HL_ARG_INT
            args[0].i = wait_ms
            n = 1
        check(lib.hl_object_call(out, self._h, op, args, n))
        return _take(out[0])  # type: ignore[no-any-return]

    def take(self) -> bytes:
        """Take the head, waiting as long as it takes for one."""
        v = self._wait(self._TAKE, -1)
        assert v is not None
        return v

    def poll(self, timeout: Optional[float] = None) -> Optional[bytes]:  # type: ignore[override]
        """Take the head: at once without a timeout (None when empty), else
        waiting up to ``timeout`` seconds for one (None when none came)."""
        if timeout is None or timeout == 0:
            return super().poll()
        return self._wait(self._POLL_TIMEOUT, ms(timeout, "timeout"))

    def poll_timeout(self, timeout: float) -> Optional[bytes]:
        """:meth:`poll` with a timeout (seconds)."""
        return self.poll(timeout)

    # -- asyncio -----------------------------------------------------------

    async def _wait_async(self, op: int, wait_ms: int) -> Optional[bytes]:
        client = self._client
        hub = client._hub()
        loop = asyncio.get_running_loop()
        h = self._h
        args = ffi.new("hl_arg[1]")
        n = 0
        if wait_ms >= 0:
            args[0].type = lib.HL_ARG_INT
            args[0].i = wait_ms
            n = 1
        t, fut = hub.start(lambda out: lib.hl_object_call_start(out, h, op, args, n))
        from ._client import _settle

        try:
            (rc, _, detail), cancelled = await _settle(fut, lambda: lib.hl_task_cancel(t))
            value: Any = None
            if rc == 0:
                vp = ffi.new("const hl_value **")
                check(lib.hl_task_value(vp, t))
                value = _convert(vp[0])
            if cancelled is not None:
                if value is not None:
                    # taken just before the cancel: back at the head
                    self._back(value)
                raise cancelled
            if rc:
                raise error_for(rc, detail)
            return value  # type: ignore[no-any-return]
        finally:
            hub.finish(t, loop)

    def _back(self, value: bytes) -> None:
        words = [b"LPUSH", self._key(), value]
        argv = [ffi.new("char[]", w) for w in words]
        check(lib.hl_client_command(ffi.NULL, self._client._ptr, 3, argv,
                                    [len(w) for w in words], ffi.NULL, 0, 0))

    def _key(self) -> bytes:
        from ._client import _encode_name

        return _encode_name(self._name)  # type: ignore[no-any-return]

    async def take_async(self) -> bytes:
        """:meth:`take` for asyncio: a libhilock task (no thread). Cancelling
        the awaiting task cancels the wait; an element taken just before
        goes back to the head."""
        v = await self._wait_async(self._TAKE, -1)
        assert v is not None
        return v

    async def poll_async(self, timeout: Optional[float] = None) -> Optional[bytes]:
        """:meth:`poll` for asyncio (a wait with a timeout is a task)."""
        if timeout is None or timeout == 0:
            return super().poll()
        return await self._wait_async(self._POLL_TIMEOUT, ms(timeout, "timeout"))

    # -- poll from several queues (Redisson's pollFromAny) ----------------

    def _any_args(self, timeout: Optional[float], other_names: Any) -> Any:
        from ._client import _encode_name

        names = [_encode_name(n) for n in other_names]
        keep = [ffi.new("char[]", n) for n in names]
        lens = ffi.new("size_t[]", [len(n) for n in names] or [0])
        argv = ffi.new("const char *[]", keep or [ffi.NULL])
        wait_ms = -1 if timeout is None else ms(timeout, "timeout")
        # the name as the caller gave it, by its bytes
        by = {self._key(): self._name}
        for raw, n in zip(names, other_names):
            by.setdefault(raw, n)
        return argv, lens, len(names), wait_ms, (keep, by)

    @staticmethod
    def _any_pair(v: Any, by: Any) -> Any:
        if v is None:
            return None
        return (by.get(v[0], v[0]), v[1])

    def poll_from_any(self, timeout: Optional[float], *other_names: Any) -> Optional[Tuple[Any, bytes]]:
        """Take the head of whichever of this queue and ``other_names`` has
        an element first (Redisson's ``pollFromAny``; the queues may be in
        different cluster slots), waiting up to ``timeout`` seconds (None:
        as long as it takes; 0: one look at each). Returns ``(name,
        element)``, the name as given, or None when none came. Nothing is
        lost: a queue that had an element too keeps it."""
        argv, lens, n, wait_ms, (keep, by) = self._any_args(timeout, other_names)
        out = ffi.new("hl_value **")
        check(lib.hl_blocking_queue_poll_from_any(out, self._h, argv, lens, n, wait_ms, ffi.NULL))
        del keep
        return self._any_pair(_take(out[0]), by)  # type: ignore[no-any-return]

    async def poll_from_any_async(self, timeout: Optional[float], *other_names: Any) -> Optional[Tuple[Any, bytes]]:
        """:meth:`poll_from_any` for asyncio: a libhilock task (no thread;
        each queue's waiters share one blocking command). Cancelling the
        awaiting task cancels the wait; an element taken just before goes
        back to the head of its queue."""
        argv, lens, n, wait_ms, (keep, by) = self._any_args(timeout, other_names)
        client = self._client
        hub = client._hub()
        loop = asyncio.get_running_loop()
        h = self._h
        t, fut = hub.start(lambda out: lib.hl_blocking_queue_poll_from_any_start(out, h, argv, lens, n, wait_ms))
        from ._client import _settle

        try:
            (rc, _, detail), cancelled = await _settle(fut, lambda: lib.hl_task_cancel(t))
            value: Any = None
            if rc == 0:
                vp = ffi.new("const hl_value **")
                check(lib.hl_task_value(vp, t))
                value = _convert(vp[0])
            if cancelled is not None:
                if value is not None:
                    # taken just before the cancel: back at its head
                    words = [b"LPUSH", value[0], value[1]]
                    wv = [ffi.new("char[]", w) for w in words]
                    check(lib.hl_client_command(ffi.NULL, client._ptr, 3, wv,
                                                [len(w) for w in words], ffi.NULL, 0, 0))
                raise cancelled
            if rc:
                raise error_for(rc, detail)
            del keep
            return self._any_pair(value, by)  # type: ignore[no-any-return]
        finally:
            hub.finish(t, loop)

    def __len__(self) -> int:
        return self.size()

    def __iter__(self) -> Iterator[bytes]:
        """The elements from the head, read in pages (not taken)."""
        return _pages(self.read_range)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "<hilock.%s %r>" % (type(self).__name__, self._name)


class BlockingDeque(BlockingDequeBase):
    """Redisson's ``RBlockingDeque``: the blocking queue's operations, and
    adds, peeks, polls and takes at either end (an element taken from the
    tail and given back goes back to the tail)."""

    _TAKE = lib.HL_OP_BLOCKING_DEQUE_TAKE
    _POLL_TIMEOUT = lib.HL_OP_BLOCKING_DEQUE_POLL_TIMEOUT
    _wait = BlockingQueue._wait
    take = BlockingQueue.take
    poll_timeout = BlockingQueue.poll_timeout
    _wait_async = BlockingQueue._wait_async
    _back = BlockingQueue._back
    _key = BlockingQueue._key
    take_async = BlockingQueue.take_async
    _any_args = BlockingQueue._any_args
    _any_pair = BlockingQueue._any_pair
    poll_from_any = BlockingQueue.poll_from_any
    poll_from_any_async = BlockingQueue.poll_from_any_async
    __len__ = BlockingQueue.__len__
    __iter__ = BlockingQueue.__iter__
    __repr__ = BlockingQueue.__repr__

    def poll(self, timeout: Optional[float] = None) -> Optional[bytes]:  # type: ignore[override]
        """:meth:`BlockingQueue.poll` (the head)."""
        return self.poll_first(timeout)

    async def poll_async(self, timeout: Optional[float] = None) -> Optional[bytes]:
        """:meth:`BlockingQueue.poll_async` (the head)."""
        return await self.poll_first_async(timeout)

    def take_first(self) -> bytes:
        """Take the head, waiting as long as it takes."""
        return self.take()

    def take_last(self) -> bytes:
        """Take the tail, waiting as long as it takes."""
        v = self._wait(lib.HL_OP_BLOCKING_DEQUE_TAKE_LAST, -1)
        assert v is not None
        return v

    def poll_first(self, timeout: Optional[float] = None) -> Optional[bytes]:  # type: ignore[override]
        """Take the head: at once without a timeout, else waiting up to
        ``timeout`` seconds (None when none came)."""
        if timeout is None or timeout == 0:
            return super().poll_first()
        return self._wait(lib.HL_OP_BLOCKING_DEQUE_POLL_FIRST_TIMEOUT, ms(timeout, "timeout"))

    def poll_last(self, timeout: Optional[float] = None) -> Optional[bytes]:  # type: ignore[override]
        """Take the tail: at once without a timeout, else waiting up to
        ``timeout`` seconds (None when none came)."""
        if timeout is None or timeout == 0:
            return super().poll_last()
        return self._wait(lib.HL_OP_BLOCKING_DEQUE_POLL_LAST_TIMEOUT, ms(timeout, "timeout"))

    async def take_first_async(self) -> bytes:
        """:meth:`take_first` for asyncio (a task, no thread)."""
        return await self.take_async()

    async def take_last_async(self) -> bytes:
        """:meth:`take_last` for asyncio (a task, no thread). A cancel loses
        nothing (an element taken just before goes back to the head)."""
        v = await self._wait_async(lib.HL_OP_BLOCKING_DEQUE_TAKE_LAST, -1)
        assert v is not None
        return v

    async def poll_first_async(self, timeout: Optional[float] = None) -> Optional[bytes]:
        """:meth:`poll_first` for asyncio."""
        if timeout is None or timeout == 0:
            return super().poll_first()
        return await self._wait_async(lib.HL_OP_BLOCKING_DEQUE_POLL_FIRST_TIMEOUT,
                                      ms(timeout, "timeout"))

    async def poll_last_async(self, timeout: Optional[float] = None) -> Optional[bytes]:
        """:meth:`poll_last` for asyncio."""
        if timeout is None or timeout == 0:
            return super().poll_last()
        return await self._wait_async(lib.HL_OP_BLOCKING_DEQUE_POLL_LAST_TIMEOUT,
                                      ms(timeout, "timeout"))


class BoundedBlockingQueue(BoundedBlockingQueueBase):
    """Redisson's ``RBoundedBlockingQueue``: a blocking queue with a
    capacity on Redisson's ``redisson_bqs:{name}`` (the remaining
    capacity). ``try_set_capacity(k)``, ``offer(v, timeout=0)``,
    ``put(v)``, ``take()``, ``poll(timeout=None)``,
    ``remaining_capacity()``; every take and poll gives its capacity back in
    the same script, and publishes it (Redisson's waiting puts wake)."""

    _TAKE = lib.HL_OP_BOUNDED_BLOCKING_QUEUE_TAKE
    _POLL_TIMEOUT = lib.HL_OP_BOUNDED_BLOCKING_QUEUE_POLL_TIMEOUT
    _wait = BlockingQueue._wait
    take = BlockingQueue.take
    poll = BlockingQueue.poll  # type: ignore[assignment]
    poll_timeout = BlockingQueue.poll_timeout
    _wait_async = BlockingQueue._wait_async
    _back = BlockingQueue._back
    _key = BlockingQueue._key
    take_async = BlockingQueue.take_async
    poll_async = BlockingQueue.poll_async
    _any_args = BlockingQueue._any_args
    _any_pair = BlockingQueue._any_pair
    poll_from_any = BlockingQueue.poll_from_any
    poll_from_any_async = BlockingQueue.poll_from_any_async
    __len__ = BlockingQueue.__len__
    __iter__ = BlockingQueue.__iter__
    __repr__ = BlockingQueue.__repr__

    def _offer_args(self, value: Any, wait_ms: int) -> Any:
        return _bytes_int_args(_bytes(value, "value"), wait_ms)

    def offer(self, value: Any, timeout: float = 0) -> bool:  # type: ignore[override]
        """Add value at the tail if there is room: at once (timeout 0), or
        waiting up to ``timeout`` seconds for room. True if added. Raises
        when no capacity is set."""
        if timeout == 0:
            return super().offer(value)
        args, keep = self._offer_args(value, ms(timeout, "timeout"))
        out = ffi.new("hl_value **")
        check(lib.hl_object_call(out, self._h, lib.HL_OP_BOUNDED_BLOCKING_QUEUE_OFFER_TIMEOUT, args, 2))
        del keep
        return bool(_take(out[0]))

    def put(self, value: Any) -> None:
        """Add value at the tail, waiting as long as it takes for room."""
        args, keep = self._offer_args(value, -1)
        check(lib.hl_object_call(ffi.NULL, self._h, lib.HL_OP_BOUNDED_BLOCKING_QUEUE_PUT, args, 1))
        del keep

    async def _offer_task(self, value: Any, op: int, n: int, wait_ms: int) -> bool:
        args, keep = self._offer_args(value, wait_ms)
        h = self._h
        (rc, result, detail), cancelled = await self._client._await_task(
            lambda out: lib.hl_object_call_start(out, h, op, args, n), cancellable=True)
        del keep
        if cancelled is not None:
            raise cancelled
        if rc:
            raise error_for(rc, detail)
        return bool(result)

    async def offer_async(self, value: Any, timeout: float = 0) -> bool:
        """:meth:`offer` for asyncio: a wait for room is a libhilock task."""
        if timeout == 0:
            return super().offer(value)
        return await self._offer_task(value, lib.HL_OP_BOUNDED_BLOCKING_QUEUE_OFFER_TIMEOUT, 2,
                                      ms(timeout, "timeout"))

    async def put_async(self, value: Any) -> None:
        """:meth:`put` for asyncio (no thread waits)."""
        await self._offer_task(value, lib.HL_OP_BOUNDED_BLOCKING_QUEUE_PUT, 1, -1)
