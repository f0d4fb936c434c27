"""The priority blocking queue's Python idiom (Redisson
``RPriorityBlockingQueue``): the priority queue's (``add``, ``poll``,
``peek``, ``len``, ``in``, iteration) plus ``put``, ``take()``,
``poll(timeout)`` and their asyncio forms. A wait is a libhilock task (no
thread waits): it tries again after a bounded back-off and at once when a
hilock process adds. See ``docs/grid-priority-queue.md``.
"""

from __future__ import annotations

import asyncio
import select
import threading
import time
from typing import Any, Callable, Optional

from ._grid import _convert, _ms, _take
from ._grid_gen import PriorityBlockingQueueBase
from ._grid_priority_queue import PriorityQueue
from ._lowlevel import check, error_for, ffi, lib

__all__ = ["PriorityBlockingQueue"]

_TAKE = 0x1609  # HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE
_POLL_TIMEOUT = 0x160A  # HL_OP_PRIORITY_BLOCKING_QUEUE_POLL_TIMEOUT


def _task_value(t: Any) -> Optional[bytes]:
    """A done task's value (raises its error)."""
    out = ffi.new("const hl_value **")
    check(lib.hl_task_value(out, t))
    return _convert(out[0]) if out[0] != ffi.NULL else None  # type: ignore[no-any-return]


class _PriorityWaits:
    """The waits of the priority blocking queue and deque (a take has
    ``wait_ms`` -1, a timed poll its timeout), whatever the end: the ops
    are the subclass's. ``_OP_TAKE`` and ``_OP_POLL_TIMEOUT`` wait at the
    head."""

    _OP_TAKE = _TAKE
    _OP_POLL_TIMEOUT = _POLL_TIMEOUT
    _h: Any
    _client: Any
    add: Callable[[Any], bool]  # the generated kind's

    def _poll_now(self) -> Optional[bytes]:
        """The generated poll (the next class's): at once."""
        return super().poll()  # type: ignore[misc,no-any-return]

    def _starter(self, op: int, wait_ms: int) -> Callable[[Any], int]:
        h = self._h
        if wait_ms < 0:  # a take
            return lambda out: lib.hl_object_call_start(out, h, op, ffi.NULL, 0)
        arg = ffi.new("hl_arg *")
        arg.type = lib.HL_ARG_INT
        arg.i = wait_ms

        def start(out: Any) -> int:
            return lib.hl_object_call_start(out, h, op, arg, 1)  # type: ignore[no-any-return]
        return start

    def _put_back(self, v: Optional[bytes]) -> None:
        if v is not None:
            self.add(v)

    def _wait(self, op: int, wait_ms: int) -> Optional[bytes]:
        if threading.current_thread() is not threading.main_thread():
            out = ffi.new("hl_value **")  # the blocking call (GIL released)
            if wait_ms < 0:
                check(lib.hl_object_call(out, self._h, op, ffi.NULL, 0))
            else:
                arg = ffi.new("hl_arg *")
                arg.type = lib.HL_ARG_INT
                arg.i = wait_ms
                check(lib.hl_object_call(out, self._h, op, arg, 1))
            return _take(out[0])  # type: ignore[no-any-return]
        out = ffi.new("hl_task **")
        check(self._starter(op, wait_ms)(out))
        t = ffi.gc(out[0], lib.hl_task_free)
        fdp = ffi.new("int *")
        check(lib.hl_task_fd(fdp, t))
        try:
            while not lib.hl_task_done(t):
                select.select([fdp[0]], [], [])
        except BaseException:
            lib.hl_task_cancel(t)
            deadline = time.monotonic() + 60.0  # the cancel ends it promptly
            while not lib.hl_task_done(t) and time.monotonic() < deadline:
                try:
                    select.select([fdp[0]], [], [], 0.05)
                except BaseException:  # a second Ctrl-C: keep cleaning up
                    pass
            if lib.hl_task_done(t) and lib.hl_task_result(ffi.NULL, t) == 0:
                self._put_back(_task_value(t))  # taken just before
            raise
        return _task_value(t)

    def take(self) -> bytes:  # type: ignore[override]
        """Take the head (the lowest value), waiting as long as it takes (a
        cancel or the client's close ends the wait)."""
        v = self._wait(self._OP_TAKE, -1)
        assert v is not None
        return v

    def poll_timeout(self, timeout: float) -> Optional[bytes]:
        """Take the head, waiting at most ``timeout`` seconds: None when
        none came in time."""
        return self._wait(self._OP_POLL_TIMEOUT, _ms(timeout, "timeout"))

    def poll(self, timeout: Optional[float] = None) -> Optional[bytes]:  # type: ignore[override]
        """Take the head: without ``timeout`` at once (None when empty);
        with it, waiting at most ``timeout`` seconds (None when none came)."""
        if timeout is None:
            return self._poll_now()
        wait_ms = _ms(timeout, "timeout")
        return self._wait(self._OP_POLL_TIMEOUT, wait_ms)

    # -- asyncio -----------------------------------------------------------

    async def _await_value(self, op: int, wait_ms: int) -> Optional[bytes]:
        from ._client import _settle

        client = self._client
        hub = client._hub()
        loop = asyncio.get_running_loop()
        t, fut = hub.start(self._starter(op, wait_ms))
        value: Optional[bytes] = None
        try:
            (rc, _, msg), cancelled = await _settle(fut, lambda: lib.hl_task_cancel(t))
            if rc == 0:
                value = _task_value(t)
        finally:
            hub.finish(t, loop)
        if cancelled is not None:
            if rc == 0 and value is not None:  # taken just before the cancel
                await _settle(client._run_short(self._put_back, value))
            raise cancelled
        if rc != 0:
            raise error_for(rc, msg)
        return value

    async def take_async(self) -> bytes:
        """:meth:`take` for asyncio: the wait is a libhilock task (no
        thread); cancelling the awaiting task cancels it (a value it took
        goes back)."""
        v = await self._await_value(self._OP_TAKE, -1)
        assert v is not None
        return v

    async def poll_async(self, timeout: float) -> Optional[bytes]:
        """:meth:`poll` with a timeout, for asyncio."""
        return await self._await_value(self._OP_POLL_TIMEOUT, _ms(timeout, "timeout"))


class PriorityBlockingQueue(_PriorityWaits, PriorityBlockingQueueBase):  # type: ignore[misc]
    """Redisson's ``RPriorityBlockingQueue`` under ``StringCodec``: the
    priority queue (Java's String order, lowest first, duplicates kept)
    whose ``take()`` waits for a value and ``poll(timeout)`` waits at most
    ``timeout`` seconds (``poll()`` does not wait). In the main thread a
    wait sleeps in ``select()`` on its task, so Ctrl-C cancels it; a value
    taken just before such a cancel (or an asyncio cancel) goes back in the
    queue. A take whose reply is lost answers what it took."""

    __len__ = PriorityQueue.__len__
    __contains__ = PriorityQueue.__contains__
    __iter__ = PriorityQueue.__iter__
    __repr__ = PriorityQueue.__repr__
