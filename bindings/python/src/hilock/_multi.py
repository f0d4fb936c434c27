"""Groups of locks taken as one: :class:`MultiLock` and :class:`RedLock`.

Both are thin layers over ``hl_multilock``: the C library takes the members
in order, gives back what a failed attempt took, and records per owner which
members each acquisition took, so that a release gives back exactly those.
Its waits are libhilock tasks of the first member's client (each member
waited for by a task of its own client): ``acquire_async`` awaits one through
that client's task fd, with no thread per waiting task, and the main
thread's blocking wait sleeps in select() on one so that Ctrl-C works.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import weakref
from typing import Any, Awaitable, Coroutine, Optional, Tuple

from . import _errors as E
from ._client import _DEFAULT, Client, Lock, _current_task, _task_in_main_thread, _wait_ms
from ._lowlevel import NULL, check, error_for, ffi, last_detail, lib, ms

__all__ = ["MultiLock", "RedLock"]


def _try_acquire(m: Any, wait_ms: int, lease_ms: int, cancel: Any) -> Tuple[int, int, str]:
    out = ffi.new("int *")
    rc = lib.hl_multilock_try_acquire(out, m, wait_ms, lease_ms, cancel)
    return rc, out[0], (last_detail() if rc else "")


def _release(m: Any) -> Tuple[int, str]:
    rc = lib.hl_multilock_release(m)
    return rc, (last_detail() if rc else "")


class MultiLock:
    """Several locks taken as one: all of them or none (Redisson's
    RedissonMultiLock).

    ``hilock.MultiLock(lock_a, lock_b, ...)`` over :class:`Lock` objects of
    any clients (so the locks may live on different Redis servers).
    :meth:`acquire` takes them in the given order, each waiting what is left
    of the timeout; if one cannot be taken, those already taken are released
    again (last first) and nothing is held. :meth:`release` releases every
    lock, last first, trying all of them even when one fails.

    Shaped like :class:`Lock`: ``with multi:`` acquires (as long as it
    takes, or ``timeout`` seconds, raising :class:`LockTimeout`) and
    releases, raising :class:`LockLost` at the end of the block if a member
    stopped being held. The owner is the calling thread, as for
    :class:`Lock` (inside a running asyncio task, the task). Reentrant.
    Ctrl-C interrupts a wait in the main thread and nothing stays held.

    In asyncio, :meth:`acquire_async`, :meth:`release_async` and ``async
    with multi:`` wait without blocking the event loop and without a thread
    per waiting task: the wait is a libhilock task of the first lock's
    client (each member waited for by a task of its own client).
    Cancelling the awaiting task cancels it, and every member it had taken
    is released before the cancellation propagates.

    ``lease`` (seconds) gives every member a fixed lease instead of the
    watchdog; the hold is then valid for ``lease - time taken - drift``
    (drift = 1% of the lease + 2 ms), and not reported held if nothing
    is left. :attr:`lost` turns True once that time has passed.

    Raises :class:`InvalidArgumentError` for no locks, a lock given twice
    (the same object, or two objects of one name on one client) or
    something that is not a :class:`Lock`, and :class:`ClientClosedError`
    when a lock's client is closed (the message names the lock).
    """

    _kind = lib.HL_MULTILOCK_ALL
    _kind_name = "MultiLock"

    def __init__(self, *locks: Lock, lease: Optional[float] = None,
                 timeout: Optional[float] = None) -> None:
        for lk in locks:
            if not isinstance(lk, Lock):
                raise TypeError("%s members must be hilock.Lock objects, not %s"
                                % (self._kind_name, type(lk).__name__))
        self._locks = tuple(locks)
        self._lease = lease
        self._lease_ms = -1 if lease is None else ms(lease, "lease", allow_zero=False)
        self._timeout = timeout
        if timeout is not None:
            ms(timeout, "timeout")
        self._mu = threading.Lock()
        # Each owner acts through one C multilock, which records what its
        # acquisitions took: threads through the members' default handles
        # (the calling thread is the owner), the main thread through
        # handles that carry its owner id explicitly, each asyncio task
        # through its own. A C multilock borrows its member handles: keep
        # them with it (a task started from it works from copies).
        self._default = self._new_multi([lk._handle for lk in self._locks])
        self._main: "Optional[Tuple[Any, Tuple[Any, ...]]]" = None
        self._tasks: "weakref.WeakKeyDictionary[Any, Tuple[Any, Tuple[Any, ...]]]" = \
            weakref.WeakKeyDictionary()

    def _new_multi(self, handles: "list[Any]") -> "Tuple[Any, Tuple[Any, ...]]":
        out = ffi.new("hl_multilock **")
        arr = ffi.new("hl_lock *[]", handles) if handles else NULL
        check(lib.hl_multilock_new(out, arr, len(handles), self._kind))
        return ffi.gc(out[0], lib.hl_multilock_free), tuple(handles)

    def _handles(self, get: Any) -> "list[Any]":
        """A handle of each member for one owner; a failure names the
        member, as the C library's messages do."""
        out = []
        for i, lk in enumerate(self._locks):
            try:
                out.append(get(lk))
            except E.HilockError as exc:
                if exc.code is None:
                    raise
                name = lk.name if isinstance(lk.name, str) else repr(lk.name)
                raise error_for(exc.code, '%s member %d ("%s"): %s' % (
                    self._kind_name, i, name, exc.detail), cls=type(exc)) from None
        return out

    def _multi_for(self, task: "asyncio.Task[Any]") -> Any:
        """The C multilock of an asyncio task (its members' task handles)."""
        with self._mu:
            entry = self._tasks.get(task)
        if entry is None:
            entry = self._new_multi(self._handles(lambda lk: lk._task_handle(task)))
            with self._mu:
                entry = self._tasks.setdefault(task, entry)
        return entry[0]

    def _multi(self) -> Any:
        """The C multilock of the calling owner."""
        task = _current_task()
        if task is not None:
            return self._multi_for(task)
        if threading.current_thread() is threading.main_thread():
            with self._mu:
                entry = self._main
            if entry is None:
                owner = int(lib.hl_thread_owner_id())
                entry = self._new_multi(self._handles(lambda lk: lk._owner_handle(owner)))
                with self._mu:
                    if self._main is None:
                        self._main = entry
                    entry = self._main
            return entry[0]
        return self._default[0]

    # -- properties ------------------------------------------------------

    @property
    def locks(self) -> Tuple[Lock, ...]:
        """The member locks, in the order they are taken."""
        return self._locks

    @property
    def quorum(self) -> int:
        """How many members must be taken (all of them for a MultiLock)."""
        return int(lib.hl_multilock_quorum(self._default[0]))

    @property
    def lost(self) -> bool:
        """True if the current owner's newest hold is lost (local, no round
        trip): its fixed lease's validity ended, or fewer members than
        :attr:`quorum` are still held (the watchdog found one lost, or its
        client was closed). False if it holds nothing."""
        out = ffi.new("int *")
        check(lib.hl_multilock_is_lost(out, self._multi()))
        return bool(out[0])

    # -- acquire / release -------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: float = -1,
                lease: Optional[float] = _DEFAULT) -> bool:
        """Acquire every member (a RedLock: a majority), as
        :meth:`Lock.acquire`: as long as it takes (``timeout=-1``), at most
        ``timeout`` seconds, or one attempt per member
        (``blocking=False``). Returns True if held, False if not (then
        nothing this call took is held). ``lease``: seconds for each
        member, None for the watchdog; by default the object's own.

        Raises :class:`ClientClosedError` (a member's client is closed),
        :class:`ConnectionError` (a member's Redis failed: a RedLock only
        when more than a minority did), :class:`Interrupted`; the message
        names the member."""
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = self._lease_arg(lease)
        m = self._multi()
        if (wait_ms == 0 or _current_task() is not None
                or threading.current_thread() is not threading.main_thread()):
            rc, acquired, detail = _try_acquire(m, wait_ms, lease_ms, NULL)
        else:
            # Main thread: signals are handled here, between bytecodes. The
            # wait is a task of this thread's owners (fixed when it starts),
            # and this thread sleeps in select() on its fd: Ctrl-C cancels
            # it, which gives back whatever it had taken.
            rc, acquired, detail = _task_in_main_thread(
                lambda out: lib.hl_multilock_try_acquire_start(out, m, wait_ms, lease_ms),
                lambda res: lib.hl_multilock_release(m) if res[0] == 0 and res[1] else None)
        if rc:
            raise error_for(rc, detail)
        return bool(acquired)

    def release(self) -> None:
        """Release what the current owner's newest acquire took, last member
        first; every member is tried. Raises the first member's error
        (:class:`NotHeldError`, :class:`LockLost`, :class:`OutcomeUnknown`,
        :class:`ClientClosedError`...) naming it; a RedLock raises only
        when fewer than a quorum of members were released. A member whose
        hold was lost (or released through its :class:`Lock`) while this
        multilock held it, and that the owner has taken again since, is in
        a newer hold: that one is left as it is, and the member counts as
        lost (:class:`LockLost`)."""
        rc, detail = _release(self._multi())
        if rc:
            raise error_for(rc, detail)

    def _lease_arg(self, lease: Any) -> int:
        if lease is _DEFAULT:
            return self._lease_ms
        if lease is None:
            return -1
        return ms(lease, "lease", allow_zero=False)

    def __enter__(self) -> "MultiLock":
        if not self.acquire(timeout=-1 if self._timeout is None else self._timeout):
            raise self._enter_timeout()
        return self

    def _exit_error(self, rc: int, detail: str) -> BaseException:
        if rc in (lib.HL_ELOST, lib.HL_ENOTHELD):
            return error_for(rc, detail, cls=E.LockLost,
                             prefix="%s was not held at the end of its with block: " % self._label())
        return error_for(rc, detail)

    def _enter_timeout(self) -> E.LockTimeout:
        return E.LockTimeout("could not acquire %s within %s s" % (self._label(), self._timeout))

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        rc, detail = _release(self._multi())
        if rc == 0:
            return
        err = self._exit_error(rc, detail)
        if exc is None:
            raise err
        if hasattr(exc, "add_note"):
            exc.add_note("hilock: " + str(err))

    # -- asyncio -------------------------------------------------------------
    #
    # As for Lock: the owner of an async call is the task that calls the
    # method (found when it is called), however the awaitable is wrapped.
    # The library's task belongs to the first member's client, whose task
    # fd delivers it.

    def _require_task(self, owner: "Optional[asyncio.Task[Any]]" = None) -> "asyncio.Task[Any]":
        task = owner if owner is not None else _current_task()
        if task is None:
            raise RuntimeError("the async methods of hilock.%s must run in an asyncio task"
                               % self._kind_name)
        return task

    def _hub_client(self) -> Client:
        return self._locks[0].client

    def acquire_async(self, blocking: bool = True, timeout: float = -1,
                      lease: Optional[float] = _DEFAULT) -> "Coroutine[Any, Any, bool]":
        """:meth:`acquire` for asyncio: ``await multi.acquire_async(...)``.

        The owner is the task that calls this method (also when the
        awaitable is wrapped in ``asyncio.wait_for``, ``shield``,
        ``gather`` or ``create_task``); it releases with
        :meth:`release_async`. The event loop never blocks, and the wait
        takes no thread. Cancelling the wait (the task, or a wait_for
        timeout) cancels it in the library: the member being waited for is
        cancelled and every member taken is released, last first, before
        the cancellation propagates; nothing stays held."""
        return self._acquire_async_for(_current_task(), blocking, timeout, lease)

    async def _acquire_async_for(self, owner: "Optional[asyncio.Task[Any]]", blocking: bool,
                                 timeout: float, lease: Any) -> bool:
        task = self._require_task(owner)
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = self._lease_arg(lease)
        m = self._multi_for(task)
        client = self._hub_client()
        (rc, acquired, detail), cancelled = await client._await_task(
            lambda out: lib.hl_multilock_try_acquire_start(out, m, wait_ms, lease_ms),
            cancellable=True)
        if cancelled is not None:
            if rc == 0 and acquired:
                # it got every member just before the cancel reached it
                await client._await_task(lambda out: lib.hl_multilock_release_start(out, m))
            raise cancelled
        if rc:
            raise error_for(rc, detail)
        return bool(acquired)

    def release_async(self) -> "Coroutine[Any, Any, None]":
        """:meth:`release` for asyncio: ``await multi.release_async()``
        releases what the newest acquire of the calling task took, last
        member first, on an executor of the first lock's client. Completes
        even if the task is cancelled meanwhile. Raises as
        :meth:`release`."""
        return self._release_async_for(_current_task())

    async def _release_async_for(self, owner: "Optional[asyncio.Task[Any]]") -> None:
        task = self._require_task(owner)
        (rc, _released, detail), cancelled = await self._release_task(task)
        if rc:
            raise error_for(rc, detail)
        if cancelled is not None:
            raise cancelled

    def _release_task(self, task: "asyncio.Task[Any]"
                      ) -> "Awaitable[Tuple[Tuple[int, int, str], Optional[BaseException]]]":
        # A release runs to its end even if the awaiting task is cancelled.
        m = self._multi_for(task)
        return self._hub_client()._await_task(lambda out: lib.hl_multilock_release_start(out, m))

    async def __aenter__(self) -> "MultiLock":
        if not await self.acquire_async(timeout=-1 if self._timeout is None else self._timeout):
            raise self._enter_timeout()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        task = self._require_task()
        (rc, _released, detail), cancelled = await self._release_task(task)
        if rc:
            err = self._exit_error(rc, detail)
            if exc is None and cancelled is None:
                raise err
            target = exc if exc is not None else cancelled
            if target is not None and hasattr(target, "add_note"):
                target.add_note("hilock: " + str(err))
        if cancelled is not None:
            raise cancelled

    def _label(self) -> str:
        return "%s(%s)" % (self._kind_name, ", ".join(repr(lk.name) for lk in self._locks))

    def __repr__(self) -> str:
        return "<hilock.%s>" % self._label()


class RedLock(MultiLock):
    """The RedLock: held once a majority of its locks is, each on its own
    independent Redis server (Redisson's RedissonRedLock).

    ``hilock.RedLock(lock_on_server_1, lock_on_server_2, lock_on_server_3)``
    with each lock from its own :class:`Client`. Acquire succeeds when
    ``len(locks) // 2 + 1`` members are taken; each member waits
    ``max(timeout / n, 1 ms)`` at most, so one server down (or hanging)
    costs at most its share of the timeout. Servers down beyond the
    minority make it fail within the timeout. Release frees what was taken;
    it raises only when fewer than a quorum could be released. Everything
    else is as :class:`MultiLock`.

    Its safety rests on timing. Martin Kleppmann ("How to do distributed
    locking", 2016) showed that a process pause (GC, swap, SIGSTOP) or a
    server clock jump can end a lease while its holder still acts under it,
    and nothing stops its late writes. Where correctness matters, use the
    fenced lock kind and check its token where you write.
    """

    _kind = lib.HL_MULTILOCK_RED
    _kind_name = "RedLock"


# The async methods are plain functions returning a coroutine (so the owner
# is found when they are called); tell inspect they are to be awaited.
if hasattr(inspect, "markcoroutinefunction"):  # Python 3.12+
    for _name in ("acquire_async", "release_async"):
        inspect.markcoroutinefunction(getattr(MultiLock, _name))
    del _name
