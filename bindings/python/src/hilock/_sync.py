"""Synchronizers: :class:`Semaphore`, :class:`ExpirableSemaphore` and
:class:`CountDownLatch` (Redisson's RSemaphore, RPermitExpirableSemaphore
and RCountDownLatch: the same keys, channels and messages, so Java and
hilock processes share them).

Each is a thin view over its C handle (a name and a reference to the
client: cheap, no round trip to make one). Their waits are the lock's:

* in a thread other than the main thread, one C call (the GIL released);
* in the main thread, a libhilock task whose fd the thread sleeps on in
  ``select()``, so that Ctrl-C runs its handler: the task is cancelled, the
  library gives back what it was taking, and the exception propagates;
* in asyncio, a libhilock task completed through the client's task fd
  (:meth:`Client._await_task`): a waiting asyncio task costs no thread, and
  cancelling it cancels the library's task, which leaves nothing taken.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, overload

from . import _errors as E
from ._client import (
    _DEFAULT,
    Client,
    Name,
    _current_task,
    _encode_name,
    _settle,
    _task_in_main_thread,
)
from ._lowlevel import NULL, check, error_for, ffi, last_detail, lib, ms

__all__ = ["Semaphore", "ExpirableSemaphore", "CountDownLatch"]

_MAX_COUNT = 1 << 40  # permits, counts and deltas: hilock.h's bound
_MAX_IDS = 1000  # permits of one expirable acquire (hilock.h: 1 to 1000)
_ID_SIZE = lib.HL_PERMIT_ID_LEN + 1  # an id and its NUL, as the C call writes them

_Result = Tuple[int, int, str]  # (status, value, detail read on the calling thread)


def _int(v: Any, what: str, low: int, high: int = _MAX_COUNT) -> int:
    """An int argument in [low, high]: TypeError for a non-int (bool too),
    InvalidArgumentError (a ValueError) out of range."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, not %s" % (what, type(v).__name__))
    if v < low or v > high:
        raise E.InvalidArgumentError("%s must be %d to %d, not %d" % (what, low, high, v))
    return v


def _acquire_wait_ms(blocking: Any, timeout: Optional[float]) -> int:
    """acquire(blocking, timeout) as threading.Semaphore.acquire reads them
    (timeout None or -1: as long as it takes), as a C wait in ms."""
    if not isinstance(blocking, bool):
        raise TypeError("blocking must be a bool, not %s (the number of permits is the keyword "
                        "argument n=)" % type(blocking).__name__)
    forever = timeout is None or (not isinstance(timeout, bool) and timeout == -1)
    if not blocking:
        if not forever:
            raise E.InvalidArgumentError("can't specify a timeout for a non-blocking call")
        return 0
    return -1 if forever else ms(timeout, "timeout")  # type: ignore[arg-type]


def _lease_ms(lease: Optional[float]) -> int:
    return -1 if lease is None else ms(lease, "lease", allow_zero=False)


def _permit_id(permit: Any) -> bytes:
    """A permit id as the C library takes it (hex characters; the library
    says whether they are)."""
    if not isinstance(permit, str):
        raise TypeError("a permit id must be str, not %s" % type(permit).__name__)
    if "\0" in permit or not permit.isascii():
        raise E.InvalidArgumentError("permit id %r is not hex (32 lowercase hex characters, as "
                                     "acquire gives them)" % (permit[:80],))
    return permit.encode("ascii")


def _rc(rc: int, value: int = 0) -> _Result:
    """A C call's status, with the detail read now, on the calling thread."""
    return rc, value, (last_detail() if rc else "")


def _raise(res: _Result) -> int:
    rc, value, detail = res
    if rc:
        raise error_for(rc, detail)
    return value


def _wait(wait_ms: int, blocking_call: Callable[[], _Result], start: Callable[[Any], int],
          undo: Optional[Callable[[_Result], Any]]) -> _Result:
    """A wait made from a thread: the blocking C call, or in the main thread
    (where Python runs signal handlers) the task started by start(out),
    slept on in select() so that Ctrl-C cancels it; undo gets a result that
    completed just before that cancel."""
    if wait_ms != 0 and threading.current_thread() is threading.main_thread():
        return _task_in_main_thread(start, undo)
    return blocking_call()


class _Object:
    """What the synchronizers share: the client, the name and the C handle,
    made by ``new`` and freed by ``free`` when the object is collected."""

    def __init__(self, client: Client, name: Name, new: Any, free: Any, ctype: str) -> None:
        if not isinstance(client, Client):
            raise TypeError("client must be a hilock.Client")
        self._client = client
        self._name = name
        bname = _encode_name(name)
        out = ffi.new(ctype)
        check(new(out, client._ptr, bname, len(bname)))
        self._h = ffi.gc(out[0], free)

    @property
    def name(self) -> Name:
        """The name as given."""
        return self._name

    @property
    def client(self) -> Client:
        """The client this object belongs to."""
        return self._client

    def _get(self, fn: Any, ctype: str = "int64_t *", *args: Any) -> int:
        """A call with one integer output, raising on failure."""
        out = ffi.new(ctype)
        check(fn(out, self._h, *args))
        return int(out[0])

    def _exists_call(self, fn: Any) -> bool:
        return bool(self._get(fn, "int *"))

    def _call_int(self, fn: Any) -> _Result:
        """fn(int64_t *out, handle) as a result, for the pool's threads."""
        out = ffi.new("int64_t *")
        rc = fn(out, self._h)
        return _rc(rc, int(out[0]) if rc == 0 else 0)

    async def _short_async(self, call: Callable[[], _Result]) -> int:
        """A short C call (one round trip) on the client's small pool, so the
        event loop does not block; it runs to its end even if the awaiting
        task is cancelled meanwhile (then CancelledError is raised after)."""
        res, cancelled = await _settle(self._client._run_short(call))
        value = _raise(res)
        if cancelled is not None:
            raise cancelled
        return value

    async def _await_wait(self, start: Callable[[Any], int],
                          undo: Optional[Callable[[], Any]]) -> _Result:
        """A wait as a libhilock task awaited through the client's task fd
        (no thread). If the awaiting task is cancelled, so is the library's
        task (which gives back what it was taking); if it had completed with
        its result just before, undo (a blocking call, run on the pool) gives
        that back, and CancelledError propagates."""
        res, cancelled = await self._client._await_task(start, cancellable=True)
        if cancelled is not None:
            if undo is not None and res[0] == 0 and res[1]:
                await _settle(self._client._run_short(undo))
            raise cancelled
        return res

    def __repr__(self) -> str:
        return "<hilock.%s %r>" % (type(self).__name__, self._name)


class Semaphore(_Object):
    """A distributed counting semaphore (Redisson RSemaphore), shaped like
    :class:`threading.Semaphore`::

        sem = client.semaphore("workers")
        sem.try_set_permits(3)          # once, by whoever creates it
        with sem:                       # one permit, waiting as long as it takes
            ...
        if sem.acquire(timeout=5, n=2):
            try:
                ...
            finally:
                sem.release(2)

    The number of permits lives in Redis at the key ``name``; a semaphore
    that was never set has 0 (:meth:`try_set_permits`, :meth:`set_permits`
    or :meth:`add_permits` create it). Waiters of one client queue in
    order, and a release anywhere (a Java process's too) wakes the first
    through the channel ``redisson_sc:{name}``: no polling.

    Permits have no owner: any thread or task of the client may give back
    permits another took, as with :class:`threading.Semaphore`. But the
    client counts the permits it took and has not given back
    (:attr:`held_permits`), and :meth:`release` of more than that raises
    :class:`NotHeldError` and changes nothing: a permit given back twice
    would let one holder too many in. To change how many permits exist, use
    :meth:`add_permits` or :meth:`set_permits`.

    ``timeout`` (seconds) bounds the wait of ``with`` and ``async with``
    (raising :class:`LockTimeout`); None waits as long as it takes. Made by
    :meth:`Client.semaphore`.
    """

    def __init__(self, client: Client, name: Name, *, timeout: Optional[float] = None) -> None:
        self._timeout = timeout
        _acquire_wait_ms(True, timeout)  # checked now, not at the first with
        super().__init__(client, name, lib.hl_semaphore_new, lib.hl_semaphore_free,
                         "hl_semaphore **")

    # -- permits -----------------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None, *, n: int = 1) -> bool:
        """Take ``n`` permits (1 to 2^40) at once, as
        :meth:`threading.Semaphore.acquire` takes one.

        Waits as long as it takes (``timeout`` None or -1), at most
        ``timeout`` seconds, or not at all (``blocking=False``). Returns
        True if the permits were taken, False if the wait ran out. Ctrl-C
        interrupts a wait in the main thread and nothing is taken.

        Raises :class:`InvalidArgumentError` (a ValueError) for ``n`` below
        1 or a bad timeout, :class:`TypeError` for a ``blocking`` that is
        not a bool (``sem.acquire(3)``: the count is ``n=3``),
        :class:`ClientClosedError`, :class:`ConnectionError`,
        :class:`Interrupted` (:meth:`Client.interrupt`).
        """
        wait_ms = _acquire_wait_ms(blocking, timeout)
        n = _int(n, "n", 1)
        h = self._h

        def call() -> _Result:
            out = ffi.new("int *")
            rc = lib.hl_semaphore_try_acquire(out, h, n, wait_ms, NULL)
            return _rc(rc, out[0] if rc == 0 else 0)

        res = _wait(wait_ms, call,
                    lambda out: lib.hl_semaphore_try_acquire_start(out, h, n, wait_ms),
                    lambda r: lib.hl_semaphore_release(h, n) if r[0] == 0 and r[1] else None)
        return bool(_raise(res))

    def release(self, n: int = 1) -> None:
        """Give back ``n`` permits (at least 1), waking waiters.

        Raises :class:`NotHeldError` (a RuntimeError) if this client holds
        fewer than ``n`` (:attr:`held_permits`; nothing is given back then),
        :class:`InvalidArgumentError` for ``n`` below 1,
        :class:`OutcomeUnknown` (a ConnectionError) if the release was sent
        and Redis never confirmed it (it ran at most once; the permits no
        longer count as held, so releasing them again cannot give them
        back twice), :class:`ConnectionError` if nothing reached Redis (the
        permits then still count as held)."""
        n = _int(n, "n", 1)
        check(lib.hl_semaphore_release(self._h, n))

    @property
    def held_permits(self) -> int:
        """The permits this client took (or drained) and has not given back:
        all of its threads and tasks together. Local, no round trip."""
        return self._get(lib.hl_semaphore_held)

    def available_permits(self) -> int:
        """The permits available now (0 if the semaphore does not exist;
        below 0 after :meth:`add_permits` took more than were free)."""
        return self._get(lib.hl_semaphore_available)

    def drain_permits(self) -> int:
        """Take every available permit; returns how many. They count as this
        client's (:meth:`release` gives them back)."""
        return self._get(lib.hl_semaphore_drain)

    def try_set_permits(self, permits: int) -> bool:
        """Set the number of permits (0 or more) if the semaphore does not
        exist yet; True if this call set it."""
        permits = _int(permits, "permits", 0)
        return bool(self._get(lib.hl_semaphore_try_set_permits, "int *", permits))

    def set_permits(self, permits: int) -> None:
        """Set the number of available permits (0 or more), whatever it was."""
        permits = _int(permits, "permits", 0)
        check(lib.hl_semaphore_set_permits(self._h, permits))

    def add_permits(self, delta: int) -> int:
        """Add ``delta`` permits (negative to take some away: the count may
        go below zero, and then nobody acquires until enough come back).
        Returns the available permits after."""
        delta = _int(delta, "delta", -_MAX_COUNT)
        return self._get(lib.hl_semaphore_add_permits, "int64_t *", delta)

    def delete(self) -> bool:
        """Delete the semaphore; True if it existed."""
        return self._exists_call(lib.hl_semaphore_delete)

    # -- with --------------------------------------------------------------

    def _enter_timeout(self) -> E.LockTimeout:
        return E.LockTimeout("could not acquire a permit of semaphore %r within %s s"
                             % (self._name, self._timeout))

    def __enter__(self) -> "Semaphore":
        """Take one permit, waiting at most the semaphore's timeout (raising
        :class:`LockTimeout`)."""
        if not self.acquire(timeout=self._timeout):
            raise self._enter_timeout()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Give the permit back."""
        res = _rc(lib.hl_semaphore_release(self._h, 1))
        _exit_raise(res, exc)

    # -- asyncio -----------------------------------------------------------

    async def acquire_async(self, blocking: bool = True, timeout: Optional[float] = None, *,
                            n: int = 1) -> bool:
        """:meth:`acquire` for asyncio: the wait is a record in the client,
        not a thread, and the event loop never blocks. Cancelling the
        awaiting task (``cancel()``, ``asyncio.wait_for``) cancels the wait
        and leaves no permit taken."""
        wait_ms = _acquire_wait_ms(blocking, timeout)
        n = _int(n, "n", 1)
        h = self._h
        res = await self._await_wait(
            lambda out: lib.hl_semaphore_try_acquire_start(out, h, n, wait_ms),
            lambda: lib.hl_semaphore_release(h, n))
        return bool(_raise(res))

    async def release_async(self, n: int = 1) -> None:
        """:meth:`release` without blocking the event loop (one round trip on
        the client's small thread pool); completes even if the awaiting task
        is cancelled meanwhile."""
        n = _int(n, "n", 1)
        h = self._h
        await self._short_async(lambda: _rc(lib.hl_semaphore_release(h, n)))

    async def available_permits_async(self) -> int:
        """:meth:`available_permits` without blocking the event loop."""
        return await self._short_async(lambda: self._call_int(lib.hl_semaphore_available))

    async def __aenter__(self) -> "Semaphore":
        if not await self.acquire_async(timeout=self._timeout):
            raise self._enter_timeout()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        h = self._h
        res, cancelled = await _settle(self._client._run_short(
            lambda: _rc(lib.hl_semaphore_release(h, 1))))
        _exit_raise(res, exc if exc is not None else cancelled)
        if cancelled is not None:
            raise cancelled


def _exit_raise(res: _Result, exc: Optional[BaseException], lost: Optional[str] = None) -> None:
    """The end of a with block: raise the release's error, or, if the block
    itself raised, add it to that exception as a note. lost: the prefix of a
    LockLost raised for a permit that was no longer out."""
    rc, _, detail = res
    if rc == 0:
        return
    if lost is not None and rc in (lib.HL_ELOST, lib.HL_ENOTHELD):
        err = error_for(rc, detail, cls=E.LockLost, prefix=lost)
    else:
        err = error_for(rc, detail)
    if exc is None:
        raise err
    if hasattr(exc, "add_note"):
        exc.add_note("hilock: " + str(err))


class ExpirableSemaphore(_Object):
    """A semaphore whose permits have ids and leases (Redisson
    RPermitExpirableSemaphore)::

        sem = client.expirable_semaphore("uploads", lease=60.0)
        sem.try_set_permits(5)
        with sem as permit:               # one permit; its id
            ...
        permit = sem.acquire(timeout=2)   # an id, or None if the wait ran out
        if permit is not None:
            try:
                sem.update_lease(permit, 120.0)
                ...
            finally:
                sem.release(permit)

    Each permit taken is a random id (32 lowercase hex characters) with a
    lease: when the lease ends the permit goes back by itself, so a holder
    that dies (even SIGKILLed) gives its permits back when their leases
    end, never later. A permit taken with no lease (``lease=None``) goes
    back only when released. The available permits live at the key
    ``name``, the permits out in the sorted set ``{name}:timeout``, scored
    with the wall-clock time their lease ends: keep the machines' clocks in
    step (NTP). Waiters of one client queue in order and sleep until a
    release or the nearest lease's end.

    ``lease`` is the default lease of :meth:`acquire` and ``with`` (None:
    no lease); ``timeout`` bounds the wait of ``with`` (raising
    :class:`LockTimeout`; None: as long as it takes). Made by
    :meth:`Client.expirable_semaphore`.
    """

    def __init__(self, client: Client, name: Name, *, lease: Optional[float] = None,
                 timeout: Optional[float] = None) -> None:
        self._lease = lease
        self._lease_default = _lease_ms(lease)
        self._timeout = timeout
        _acquire_wait_ms(True, timeout)  # checked now, not at the first with
        self._mu = threading.Lock()
        self._with_ids: Dict[Any, List[str]] = {}  # the ids of open with blocks, per thread or task
        super().__init__(client, name, lib.hl_expsem_new, lib.hl_expsem_free, "hl_expsem **")

    @property
    def lease(self) -> Optional[float]:
        """The default lease in seconds, or None for no lease."""
        return self._lease

    def _lease_arg(self, lease: Any) -> int:
        return self._lease_default if lease is _DEFAULT else _lease_ms(lease)

    @staticmethod
    def _ids(buf: Any, n: int) -> List[str]:
        raw = ffi.buffer(buf)[:]
        return [raw[i * _ID_SIZE:i * _ID_SIZE + lib.HL_PERMIT_ID_LEN].decode("ascii") for i in range(n)]

    def _undo(self, ids: List[str]) -> None:
        for x in ids:
            lib.hl_expsem_release(self._h, x.encode("ascii"))

    # -- permits -----------------------------------------------------------

    @overload
    def acquire(self, blocking: bool = ..., timeout: Optional[float] = ..., *,
                lease: Optional[float] = ..., n: None = ...) -> Optional[str]: ...

    @overload
    def acquire(self, blocking: bool = ..., timeout: Optional[float] = ..., *,
                lease: Optional[float] = ..., n: int) -> Optional[List[str]]: ...

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None, *,
                lease: Optional[float] = _DEFAULT, n: Optional[int] = None
                ) -> Union[str, List[str], None]:
        """Take a permit, or ``n`` permits (1 to 1000) at once, each with a
        lease of ``lease`` seconds (None: no lease; by default the
        semaphore's own).

        Waits as long as it takes (``timeout`` None or -1), at most
        ``timeout`` seconds, or not at all (``blocking=False``), as
        :meth:`threading.Semaphore.acquire`. Returns the permit's id (a str
        of 32 hex characters), or with ``n`` a list of ``n`` ids, as
        Redisson's ``acquire()`` and ``acquire(permits)``; None if the wait
        ran out. Ctrl-C interrupts a wait in the main thread and nothing is
        taken.

        Raises :class:`InvalidArgumentError` (a ValueError) for ``n`` out of
        range, a lease of 0 or less, a bad timeout; :class:`TypeError` for a
        ``blocking`` that is not a bool; :class:`ClientClosedError`,
        :class:`ConnectionError`, :class:`Interrupted`.
        """
        wait_ms = _acquire_wait_ms(blocking, timeout)
        k = 1 if n is None else _int(n, "n", 1, _MAX_IDS)
        lease_ms = self._lease_arg(lease)
        h = self._h
        buf = ffi.new("char[]", k * _ID_SIZE)

        def call() -> _Result:
            out = ffi.new("int *")
            rc = lib.hl_expsem_try_acquire(out, buf, k, h, wait_ms, lease_ms, NULL)
            return _rc(rc, out[0] if rc == 0 else 0)

        res = _wait(wait_ms, call,
                    lambda out: lib.hl_expsem_try_acquire_start(out, buf, k, h, wait_ms, lease_ms),
                    lambda r: self._undo(self._ids(buf, k)) if r[0] == 0 and r[1] else None)
        if not _raise(res):
            return None
        ids = self._ids(buf, k)
        return ids[0] if n is None else ids

    def release(self, permit: Union[str, Sequence[str]]) -> None:
        """Give back a permit by its id, or each of a list of ids.

        Raises :class:`NotHeldError` (a RuntimeError) for an id that is not
        out (released already, or never acquired), :class:`LockLost` when
        the permit's lease had ended (it went back by itself: someone else
        may have had it meanwhile), :class:`OutcomeUnknown` (a
        ConnectionError) when the release was sent and never confirmed (it
        may or may not be back; releasing it again is safe),
        :class:`InvalidArgumentError` (a ValueError) for an id that is not
        hex. Of a list, every id is given
        back that can be, then the first error is raised."""
        if isinstance(permit, str):
            check(lib.hl_expsem_release(self._h, _permit_id(permit)))
            return
        if isinstance(permit, (bytes, bytearray, memoryview)) or not hasattr(permit, "__iter__"):
            raise TypeError("release takes a permit id (str) or a list of them, not %s"
                            % type(permit).__name__)
        ids = [_permit_id(x) for x in permit]
        first: Optional[BaseException] = None
        for x in ids:
            rc = lib.hl_expsem_release(self._h, x)
            if rc and first is None:
                first = error_for(rc)
        if first is not None:
            raise first

    def update_lease(self, permit: str, lease: Optional[float]) -> None:
        """Give a permit that is out a new lease of ``lease`` seconds from now
        (None: no lease). Raises :class:`NotHeldError` when it is not out
        (released, or its lease ended)."""
        check(lib.hl_expsem_update_lease(self._h, _permit_id(permit), _lease_ms(lease)))

    def lease_time(self, permit: str) -> float:
        """Seconds left of a permit's lease (``math.inf`` for a permit with
        no lease). Raises :class:`NotHeldError` when it is not out."""
        out = ffi.new("int64_t *")
        check(lib.hl_expsem_lease_time(out, self._h, _permit_id(permit)))
        return math.inf if out[0] == -1 else out[0] / 1000.0

    def available_permits(self) -> int:
        """The permits available now (permits whose lease ended count as
        available: they went back)."""
        return self._get(lib.hl_expsem_available)

    def permits(self) -> int:
        """All permits: available and out."""
        return self._get(lib.hl_expsem_permits)

    def acquired_permits(self) -> int:
        """The permits out (taken, lease not ended), by anyone."""
        return self._get(lib.hl_expsem_acquired)

    def try_set_permits(self, permits: int) -> bool:
        """Set the number of permits (0 or more) if the semaphore does not
        exist yet; True if this call set it."""
        permits = _int(permits, "permits", 0)
        return bool(self._get(lib.hl_expsem_try_set_permits, "int *", permits))

    def set_permits(self, permits: int) -> None:
        """Set the number of all permits (available and out) to ``permits``
        (0 or more): the available ones follow."""
        permits = _int(permits, "permits", 0)
        check(lib.hl_expsem_set_permits(self._h, permits))

    def add_permits(self, delta: int) -> int:
        """Add ``delta`` available permits (negative to take some away);
        returns the available permits after."""
        delta = _int(delta, "delta", -_MAX_COUNT)
        return self._get(lib.hl_expsem_add_permits, "int64_t *", delta)

    def delete(self) -> bool:
        """Delete the semaphore (its permits and the permits out); True if
        it existed."""
        return self._exists_call(lib.hl_expsem_delete)

    # -- with --------------------------------------------------------------

    def _with_key(self) -> Any:
        task = _current_task()
        return task if task is not None else threading.get_ident()

    def _push(self, permit: str) -> None:
        key = self._with_key()
        with self._mu:
            self._with_ids.setdefault(key, []).append(permit)

    def _pop(self) -> str:
        key = self._with_key()
        with self._mu:
            stack = self._with_ids[key]
            permit = stack.pop()
            if not stack:
                del self._with_ids[key]
        return permit

    def _enter_timeout(self) -> E.LockTimeout:
        return E.LockTimeout("could not acquire a permit of semaphore %r within %s s"
                             % (self._name, self._timeout))

    def _lost_prefix(self, permit: str) -> str:
        return "permit %s of semaphore %r was not out at the end of its with block: " % (
            permit, self._name)

    def __enter__(self) -> str:
        """Take one permit (the default lease, waiting at most the
        semaphore's timeout); the block gets its id."""
        permit = self.acquire(timeout=self._timeout)
        if permit is None:
            raise self._enter_timeout()
        self._push(permit)
        return permit

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Give the block's permit back; raise :class:`LockLost` if its
        lease had ended (or it was released) before."""
        permit = self._pop()
        res = _rc(lib.hl_expsem_release(self._h, permit.encode("ascii")))
        _exit_raise(res, exc, self._lost_prefix(permit))

    # -- asyncio -----------------------------------------------------------

    @overload
    async def acquire_async(self, blocking: bool = ..., timeout: Optional[float] = ..., *,
                            lease: Optional[float] = ..., n: None = ...) -> Optional[str]: ...

    @overload
    async def acquire_async(self, blocking: bool = ..., timeout: Optional[float] = ..., *,
                            lease: Optional[float] = ..., n: int) -> Optional[List[str]]: ...

    async def acquire_async(self, blocking: bool = True, timeout: Optional[float] = None, *,
                            lease: Optional[float] = _DEFAULT, n: Optional[int] = None
                            ) -> Union[str, List[str], None]:
        """:meth:`acquire` for asyncio: no thread waits, the loop never
        blocks; cancelling the awaiting task leaves no permit taken."""
        wait_ms = _acquire_wait_ms(blocking, timeout)
        k = 1 if n is None else _int(n, "n", 1, _MAX_IDS)
        lease_ms = self._lease_arg(lease)
        h = self._h
        buf = ffi.new("char[]", k * _ID_SIZE)
        res = await self._await_wait(
            lambda out: lib.hl_expsem_try_acquire_start(out, buf, k, h, wait_ms, lease_ms),
            lambda: self._undo(self._ids(buf, k)))
        if not _raise(res):
            return None
        ids = self._ids(buf, k)
        return ids[0] if n is None else ids

    async def release_async(self, permit: Union[str, Sequence[str]]) -> None:
        """:meth:`release` without blocking the event loop; completes even if
        the awaiting task is cancelled meanwhile."""
        if isinstance(permit, str):
            _permit_id(permit)
        err, cancelled = await _settle(self._client._run_short(self._release_quietly, permit))
        if err is not None:
            raise err
        if cancelled is not None:
            raise cancelled

    def _release_quietly(self, permit: Union[str, Sequence[str]]) -> Optional[BaseException]:
        """release(), on a pool thread: returns its error instead of raising
        it (so the detail is read on the thread that made the call)."""
        try:
            self.release(permit)
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting task
            return exc
        return None

    async def available_permits_async(self) -> int:
        """:meth:`available_permits` without blocking the event loop."""
        return await self._short_async(lambda: self._call_int(lib.hl_expsem_available))

    async def __aenter__(self) -> str:
        permit = await self.acquire_async(timeout=self._timeout)
        if permit is None:
            raise self._enter_timeout()
        self._push(permit)
        return permit

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        permit = self._pop()
        h = self._h
        res, cancelled = await _settle(self._client._run_short(
            lambda: _rc(lib.hl_expsem_release(h, permit.encode("ascii")))))
        _exit_raise(res, exc if exc is not None else cancelled, self._lost_prefix(permit))
        if cancelled is not None:
            raise cancelled

    def __repr__(self) -> str:
        lease = "no lease" if self._lease is None else "lease=%gs" % self._lease
        return "<hilock.%s %r %s>" % (type(self).__name__, self._name, lease)


class CountDownLatch(_Object):
    """A distributed count-down latch (Redisson RCountDownLatch), waited on
    like :class:`threading.Event`::

        latch = client.count_down_latch("batch:7")
        latch.try_set_count(10)     # closed until counted down 10 times
        ...
        latch.count_down()          # in each of 10 workers, any process
        ...
        if latch.wait(timeout=30):  # every waiter, in every process, wakes
            ...

    The count lives at the key ``name``; at zero the latch opens: the key is
    deleted and ``"0"`` published on
    ``redisson_countdownlatch__channel__{name}``, which wakes every waiter
    at once (never polling). A latch that was never set, or opened, has
    count 0 and :meth:`wait` returns at once; :meth:`try_set_count` closes
    it again. Made by :meth:`Client.count_down_latch`.
    """

    def __init__(self, client: Client, name: Name) -> None:
        super().__init__(client, name, lib.hl_latch_new, lib.hl_latch_free, "hl_latch **")

    def try_set_count(self, count: int) -> bool:
        """Set the count (1 to 2^40) if none is set (the latch is open or
        new); True if this call set it."""
        count = _int(count, "count", 1)
        return bool(self._get(lib.hl_latch_try_set_count, "int *", count))

    def count_down(self) -> int:
        """Count down by one; at zero the latch opens and every waiter
        wakes. Returns the count left (0 once open; counting down an open
        latch changes nothing). Raises :class:`OutcomeUnknown` (a
        ConnectionError) when the count-down was sent and never confirmed:
        it may or may not have counted."""
        return self._get(lib.hl_latch_count_down)

    def count(self) -> int:
        """The count now (0: open, or never set)."""
        return self._get(lib.hl_latch_count)

    def delete(self) -> bool:
        """Delete the latch (its count); True if it existed."""
        return self._exists_call(lib.hl_latch_delete)

    @staticmethod
    def _timeout_ms(timeout: Optional[float]) -> int:
        return -1 if timeout is None else ms(timeout, "timeout")

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the count is 0, at most ``timeout`` seconds (None: as
        long as it takes), as :meth:`threading.Event.wait`: True if the
        latch is open, False if the time ran out. Woken by the latch's
        message, not by polling. Ctrl-C interrupts a wait in the main
        thread. Raises :class:`InvalidArgumentError` for a negative timeout,
        :class:`ClientClosedError`, :class:`ConnectionError`,
        :class:`Interrupted`."""
        wait_ms = self._timeout_ms(timeout)
        h = self._h

        def call() -> _Result:
            out = ffi.new("int *")
            rc = lib.hl_latch_wait(out, h, wait_ms, NULL)
            return _rc(rc, out[0] if rc == 0 else 0)

        return bool(_raise(_wait(wait_ms, call, lambda out: lib.hl_latch_wait_start(out, h, wait_ms),
                                 None)))

    async def wait_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`wait` for asyncio: a waiting task costs no thread and the
        loop never blocks; cancelling the awaiting task ends the wait."""
        wait_ms = self._timeout_ms(timeout)
        h = self._h
        res = await self._await_wait(lambda out: lib.hl_latch_wait_start(out, h, wait_ms), None)
        return bool(_raise(res))

    async def count_down_async(self) -> int:
        """:meth:`count_down` without blocking the event loop; completes even
        if the awaiting task is cancelled meanwhile."""
        return await self._short_async(lambda: self._call_int(lib.hl_latch_count_down))

    async def count_async(self) -> int:
        """:meth:`count` without blocking the event loop."""
        return await self._short_async(lambda: self._call_int(lib.hl_latch_count))
