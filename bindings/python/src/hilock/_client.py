"""The Pythonic layer: :class:`Client` and :class:`Lock`.

Ownership follows the standard library: a lock is held by the thread that
acquired it (each OS thread is its own owner, as with
:class:`threading.RLock`), and inside asyncio by the *task* that acquired it
(each task gets its own owner id, whatever thread runs it).

How waiting works
-----------------
* In a thread other than the main thread a blocking acquire is one C call:
  cffi releases the GIL, the library sleeps on pub/sub, other threads run.
* In the main thread, where Python delivers signals, a blocking acquire
  first makes one attempt; if the lock is taken, the wait is a libhilock
  *task* (a record in the C client, driven by the client's executor
  threads), and the main thread sleeps in ``select()`` on the task's fd,
  where signal handlers run. On Ctrl-C (or any exception raised by a signal
  handler) the task is cancelled, the library gives back a hold that raced
  in, and the exception propagates: the latency is that of the signal
  handler plus one cancellation, a few milliseconds. The waiter keeps its
  place in the library's in-process queue while it waits (no polling).
* In asyncio, a wait (``acquire_async``, ``release_async``,
  ``wait_lost_async``, ``async with``) is a libhilock task too: starting it
  is a short non-blocking C call on the event loop's thread, and the loop
  watches the client's task fd (``loop.add_reader``) while any of its tasks
  wait, completing their futures from the reader callback. So a waiting
  asyncio task costs no thread: 10,000 of them wait on the threads the
  process had. Cancelling the asyncio task cancels the library's task,
  which gives back anything it was taking. The queries (``locked_async``
  and the like, one round trip each) run on a small per-client pool.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import math
import os
import select
import sys
import threading
import time
import weakref
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, Coroutine, Dict, NamedTuple, Optional, Tuple,
                    TypeVar, Union)

from . import _errors as E
from . import _observe as O
from ._lowlevel import NULL, check, error_for, ffi, last_detail, lib, ms
from ._observe import Event, Stats
from ._grid_gen import GridFactories

if TYPE_CHECKING:  # _sync builds on this module
    from ._sync import CountDownLatch, ExpirableSemaphore, Semaphore

__all__ = ["Client", "Lock", "FencedLock", "SpinLock", "ReadWriteLock", "Backoff", "Name", "Stats",
           "Event"]

Name = Union[str, bytes, bytearray, memoryview]
"""A lock name: ``str`` (encoded as UTF-8) or bytes (any byte values)."""

_T = TypeVar("_T")


class _Default:
    def __repr__(self) -> str:
        return "<default>"


_DEFAULT: Any = _Default()

# One owner id per asyncio task, unique in the process (hl_owner_id_new), so
# ownership follows the task and never the thread that happens to run it.
_task_owners: "weakref.WeakKeyDictionary[asyncio.Task[Any], int]" = weakref.WeakKeyDictionary()
_task_owners_mu = threading.Lock()


def _task_owner(task: "asyncio.Task[Any]") -> int:
    with _task_owners_mu:
        owner = _task_owners.get(task)
        if owner is None:
            owner = int(lib.hl_owner_id_new())
            _task_owners[task] = owner
        return owner


# The running loop of this thread, or None (asyncio's own, in C): no
# exception to catch on the common path, a thread outside asyncio.
_get_running_loop = asyncio.events._get_running_loop


def _current_task() -> "Optional[asyncio.Task[Any]]":
    loop = _get_running_loop()
    return None if loop is None else asyncio.current_task(loop)


# The main thread's id, for the acquire's fast path: the thread where Python
# runs signal handlers (after fork(), the thread that forked, as threading
# says too).
_main_ident = threading.main_thread().ident


def _after_fork_in_child() -> None:
    global _main_ident
    _main_ident = threading.get_ident()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

_get_ident = threading.get_ident
# hl_lock_try_acquire in one call (hilock_build.py): a negative status, else
# 1 if acquired and 0 if not.
_c_try_acquire = lib.hlpy_lock_try_acquire
# the same with the watchdog (lease -1): wait as long as it takes, or once
_c_acquire_wd = lib.hlpy_lock_acquire_watchdog
# the main thread's: the first attempt here, then (2) a task to wait on in
# select(), so that signal handlers run (hlpy_begun_task() hands it over)
_c_begin = lib.hlpy_lock_begin
_c_begin_wd = lib.hlpy_lock_begin_watchdog
_c_release = lib.hlpy_lock_release  # hl_lock_release(NULL, lock)


def _encode_name(name: Name) -> bytes:
    if isinstance(name, str):
        return name.encode("utf-8")
    if isinstance(name, (bytes, bytearray, memoryview)):
        return bytes(name)
    raise TypeError("lock name must be str or bytes, not %s" % type(name).__name__)


def _wait_ms(blocking: bool, timeout: float) -> int:
    """threading's acquire(blocking, timeout) rules, as a C wait in ms.

    ``blocking`` must be a bool: ``acquire(5)`` would otherwise wait forever
    (threading reads 5 as ``blocking=True``) where the caller meant five
    seconds, so it raises TypeError, as :meth:`Semaphore.acquire` does
    (docs/consistency.md)."""
    if not isinstance(blocking, bool):
        raise TypeError("blocking must be a bool, not %s (the wait is the keyword argument "
                        "timeout=, e.g. acquire(timeout=5))" % type(blocking).__name__)
    if not blocking:
        if timeout != -1:
            raise E.InvalidArgumentError("can't specify a timeout for a non-blocking call")
        return 0
    if timeout is None or timeout == -1:
        return -1
    return ms(timeout, "timeout")


def _safe_url(url: str) -> str:
    """The URL with its password masked, as the C library quotes it: the
    user info is what precedes the *last* '@' after the scheme (so a
    password with an unescaped '/' or '@' is masked too); "user:***@" keeps
    the user, a lone token (a password) becomes "***@"."""
    i = url.find("://")
    start = 0 if i < 0 else i + 3
    at = url.rfind("@", start)
    if at < 0:
        return url
    colon = url.find(":", start, at)
    if colon >= 0:
        return url[:colon + 1] + "***" + url[at:]
    return url[:start] + "***" + url[at:]


def _flag(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise TypeError("%s must be a bool, not %s" % (what, type(v).__name__))
    return v


def _kind_values() -> Dict[str, int]:
    """The lock kinds by the C library's names ("fair": HL_LOCK_FAIR...)."""
    kinds: Dict[str, int] = {}
    for v in range(64):
        name = ffi.string(lib.hl_lock_kind_name(v)).decode("ascii")
        if name == "unknown":
            break
        kinds[name] = v
    return kinds


_KIND_VALUES = _kind_values()

class _KindOnly:
    """A call that only some kinds have, on a lock of another kind: reading
    it raises AttributeError saying whose call it is. (A descriptor, not
    ``__getattr__``, which would slow every attribute read of a Lock.)"""

    def __init__(self, attr: str, kind: str) -> None:
        self.attr = attr
        self.kind = kind

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        raise AttributeError("%s is a call of %s locks (Client.%s_lock); %r is a %s lock" % (
            self.attr, self.kind, self.kind, obj.__dict__.get("_name"), obj.kind))


# read_from's values, as the C library numbers them.
_READ_FROM = {"master": lib.HL_READ_MASTER, "replica": lib.HL_READ_REPLICA, "any": lib.HL_READ_ANY}


PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def _c_path(what: str, path: PathArg) -> bytes:
    """A file option as the C library wants it: bytes without NUL."""
    try:
        b = os.fsencode(path)
    except TypeError:
        raise TypeError("%s must be a path (str, bytes or os.PathLike), not %s"
                        % (what, type(path).__name__)) from None
    if not b:
        raise E.InvalidArgumentError("%s is empty" % what)
    if b"\0" in b:
        raise E.InvalidArgumentError("%s contains a NUL character" % what)
    return b


def _try_acquire(handle: Any, wait_ms: int, lease_ms: int, cancel: Any) -> Tuple[int, int, str]:
    """One C acquire; returns (status, acquired, detail) so that the detail,
    which is thread-local, is read on the thread that made the call."""
    out = ffi.new("int *")
    rc = lib.hl_lock_try_acquire(out, handle, wait_ms, lease_ms, cancel)
    return rc, out[0], (last_detail() if rc else "")


def _release(handle: Any) -> Tuple[int, int, str]:
    out = ffi.new("int *")
    rc = lib.hl_lock_release(out, handle)
    return rc, out[0], (last_detail() if rc else "")


def _release_quietly(handle: Any) -> None:
    lib.hl_lock_release(NULL, handle)


def _abandon_on_done(handle: Any, _task: Any) -> None:
    # A task that ends while it still holds the lock can never release it;
    # stop renewing so its lease runs out instead of living forever.
    lib.hl_lock_abandon(handle)


def _task_result(t: Any) -> Tuple[int, int, str]:
    """A done task's (status, result, detail), read on this thread."""
    out = ffi.new("int *")
    rc = lib.hl_task_result(out, t)
    return rc, (int(out[0]) if rc == 0 else 0), (last_detail() if rc else "")


def _task_in_main_thread(start: Callable[[Any], int],
                         undo: Optional[Callable[[Tuple[int, int, str]], Any]]) -> Tuple[int, int, str]:
    """Run a libhilock task started by start(out) from the main thread,
    sleeping in select() on the task's fd so that signal handlers run.

    If a handler raises (Ctrl-C), the task is cancelled (the library gives
    back what it was taking), its end is awaited, undo gets a result that
    completed just before the cancel, and the exception propagates.
    """
    out = ffi.new("hl_task **")
    rc = start(out)
    if rc:
        return rc, 0, last_detail()
    return _run_task_in_main_thread(out[0], undo)


def _run_task_in_main_thread(task: Any,
                             undo: Optional[Callable[[Tuple[int, int, str]], Any]]) -> Tuple[int, int, str]:
    """_task_in_main_thread for a task started already (owned from here)."""
    t = ffi.gc(task, lib.hl_task_free)
    fdp = ffi.new("int *")
    rc = lib.hl_task_fd(fdp, t)
    if rc:
        detail = last_detail()
        ffi.release(t)
        return rc, 0, detail
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
        if lib.hl_task_done(t) and undo is not None:
            undo(_task_result(t))
        ffi.release(t)
        raise
    res = _task_result(t)
    ffi.release(t)
    return res


class _TaskHub:
    """The completed libhilock tasks of one client, handed to the asyncio
    futures that wait for them.

    Starting a task is a short C call on the event loop's thread; its data
    is a key into ``_futures``, set under ``_mu``, which is also held while
    completed tasks are taken, so a task is never taken without its key.
    Each loop with tasks waiting watches the client's task fd (readable
    while completed tasks wait to be taken); whichever loop takes a task
    hands it to its future's own loop. The tasks themselves stay their
    awaiting coroutine's, which frees them (:meth:`finish`).
    """

    def __init__(self, client: "Client") -> None:
        self._client = client
        self._mu = threading.Lock()
        self._seq = 0
        self._futures: Dict[int, Tuple[asyncio.AbstractEventLoop, "asyncio.Future[Tuple[int, int, str]]"]] = {}
        self._loops: Dict[asyncio.AbstractEventLoop, int] = {}  # tasks waiting per loop
        self._fd = -1

    def pending(self) -> int:
        """Tasks started and not yet taken (for tests)."""
        with self._mu:
            return len(self._futures)

    def start(self, starter: Callable[[Any], int]) -> Tuple[Any, "asyncio.Future[Tuple[int, int, str]]"]:
        loop = asyncio.get_running_loop()
        fut: "asyncio.Future[Tuple[int, int, str]]" = loop.create_future()
        out = ffi.new("hl_task **")
        with self._mu:
            if self._fd < 0:
                fdp = ffi.new("int *")
                check(lib.hl_client_task_fd(fdp, self._client._ptr))
                self._fd = fdp[0]
            check(starter(out))
            self._seq += 1
            lib.hl_task_set_data(out[0], self._seq)
            self._futures[self._seq] = (loop, fut)
            n = self._loops.get(loop, 0)
            self._loops[loop] = n + 1
        if n == 0:
            loop.add_reader(self._fd, self._take)
        return ffi.gc(out[0], lib.hl_task_free), fut

    def finish(self, t: Any, loop: asyncio.AbstractEventLoop) -> None:
        """Free the task; the loop stops watching once none of its tasks
        wait. On the loop's thread."""
        ffi.release(t)
        with self._mu:
            n = self._loops.get(loop, 0) - 1
            if n > 0:
                self._loops[loop] = n
            else:
                self._loops.pop(loop, None)
        if n <= 0 and not loop.is_closed():
            loop.remove_reader(self._fd)

    def _take(self) -> None:
        """The reader callback: take every completed task."""
        out = ffi.new("hl_task **")
        try:
            here: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - always inside a loop
            here = None
        while True:
            with self._mu:
                if lib.hl_client_task_next(out, self._client._ptr) != 0 or out[0] == NULL:
                    return
                key = int(lib.hl_task_data(out[0]))
                result = _task_result(out[0])
                entry = self._futures.pop(key, None)
            if entry is None:
                continue  # a blocking call's task of the main thread
            loop, fut = entry
            if loop is here:
                _resolve(fut, result)
            else:
                try:
                    loop.call_soon_threadsafe(_resolve, fut, result)
                except RuntimeError:  # that loop is closed
                    pass


def _resolve(fut: "asyncio.Future[_T]", result: _T) -> None:
    if not fut.done():
        fut.set_result(result)


async def _settle(fut: "asyncio.Future[_T]", on_cancel: Optional[Callable[[], None]] = None
                  ) -> Tuple[_T, Optional[BaseException]]:
    """Await fut to its end even if the awaiting task is cancelled meanwhile.

    Returns (result, the CancelledError if the task was cancelled, else
    None); the caller cleans up, then re-raises it. on_cancel runs once, at
    the first cancellation (it cancels the C call so fut ends promptly).
    """
    cancelled: Optional[BaseException] = None
    while True:
        try:
            res = await asyncio.shield(fut)
            return res, cancelled
        except asyncio.CancelledError as exc:
            if fut.cancelled():
                raise
            if cancelled is None:
                cancelled = exc
                if on_cancel is not None:
                    on_cancel()


class Client(GridFactories):
    """A connection to one Redis deployment, shared by every thread and task.

    ``url`` picks the deployment (times are float seconds):

    * one server: ``redis://[[user]:password@]host[:port][/db]``,
      ``rediss://...`` (the same over TLS) or
      ``unix://[[user]:password@]/path/to/redis.sock[?db=N]``;
    * Sentinel: ``redis-sentinel://[[user]:password@]h1[:port][,h2...]/master-name[/db]``
      (the hosts are the sentinels, port 26379 by default; the user info is
      the data nodes'). The master is asked of the sentinels and failovers
      are followed. ``sentinel_username`` and ``sentinel_password`` are the
      sentinels' own credentials when they differ;
    * Cluster: ``redis-cluster://[[user]:password@]h1[:port][,h2...]``: any
      nodes as seeds; the slot map is learnt, MOVED and ASK followed, and
      wake-ups use sharded pub/sub on Redis 7;
    * a master and replicas without Sentinel:
      ``redis-replica://[[user]:password@]master[:port][,replica[:port]...][/db]``;
    * ``rediss-sentinel://``, ``rediss-cluster://``, ``rediss-replica://``:
      the same over TLS (the ``tls_*`` options below).

    Every lock-changing command goes to the master. ``read_from`` says
    where the read-only queries (:meth:`Lock.locked`, :attr:`Lock.ttl`)
    go when there are replicas: ``"master"`` (the default: a replica may
    lag, so what it says can be stale), ``"replica"`` or ``"any"``. After
    each lock change on a master that has replicas the client waits for
    them (Redis's WAIT, as Redisson does): ``wait_replicas=-1`` for all
    connected replicas, ``0`` never, ``n`` for n, at most ``wait_timeout``
    seconds; an acquire no replica confirmed is undone and tried again.

    ``fair_wait_timeout`` is how long a waiter of a fair lock
    (:meth:`fair_lock`) stays in the lock's queue in Redis past its turn
    before it counts as gone (a process that died while waiting), when its
    acquire has no timeout of its own: Redisson's ``fairLockWaitTimeout``
    (default 300 s); hilock and Redisson processes sharing fair locks should
    agree on it.

    TLS (``rediss://``): the server's certificate is verified against
    ``tls_ca_file`` (PEM CA certificates) and/or ``tls_ca_dir`` (a hashed
    directory), or the system's store when neither is given, and must carry
    ``tls_server_name`` (default: the URL's host; an IP address is checked as
    one). ``tls_cert_file`` and ``tls_key_file`` (PEM, unencrypted) are the
    client certificate for servers that require one (``tls-auth-clients``).
    ``tls_verify=False`` encrypts but trusts any server: for tests only.
    A file that cannot be read raises :class:`InvalidArgumentError` naming
    it; a certificate refused (wrong CA, expired, another name), a plain
    server on the port or a server that wants a client certificate raises
    :class:`ConnectionError` saying which.

    ``watchdog_timeout`` is the lease of a lock taken without one; the
    watchdog renews it every third of that while it is held. A hold whose
    renewal Redis does not confirm counts as lost a tenth of that before
    its lease would end, measured by this machine's clock, so the holder
    hears of it (:class:`LockLost`) before anyone else can take the lock.

    Every call is bounded however the network behaves: ``command_timeout``
    for one reply, ``retry_attempts`` resends (only of commands that are
    safe to run twice) ``retry_delay`` apart, and an acquire's own timeout.
    ``subscription_timeout`` bounds Redis's confirmation of a subscription
    and ``ping_interval`` is how long the subscriber connection may stay
    silent while someone waits before it is checked with a PING (0: never);
    a connection that fails either is replaced, so no wake-up is lost.

    A client is thread-safe and a context manager (``with`` and
    ``async with``) that closes it. Closing stops renewing its locks (their
    leases then run out) and wakes every blocked call with
    :class:`ClientClosedError`.

    After ``fork()`` the child must not use a client inherited from the
    parent (every call raises :class:`ForkedError`); it creates its own.

    Observability: :meth:`stats` returns the client's counters
    (:class:`Stats`). What the library notices on its own threads (a lock
    lost, a renewal without an answer, a reconnect, a failover) is logged
    to the :mod:`logging` logger ``"hilock"``: ``WARNING`` for a loss or a
    failed renewal, ``INFO`` for a reconnect or a failover, each record
    carrying the :class:`Event` as ``record.hilock_event``. The records are
    made by a daemon thread of the client's, ``hilock-events`` (started
    with the client's first lock, ended by :meth:`close`), never by the
    library's own threads. ``log_events=False`` starts no thread: the
    events then wait in the client (the newest 1024) for :meth:`events`,
    for instance when :meth:`event_fd` is readable (``loop.add_reader``).

    Raises :class:`ConnectionError` (Redis unreachable, no sentinel that
    knows the master, no cluster node), :class:`AuthenticationError`,
    :class:`InvalidArgumentError` (bad URL or option), :class:`TypeError`
    (an option of the wrong type). No message, repr or attribute ever
    shows a password (the URL's or ``sentinel_password``).
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        watchdog_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        command_timeout: float = 3.0,
        retry_attempts: int = 4,
        retry_delay: float = 1.0,
        pool_size: int = 32,
        client_name: Optional[str] = None,
        subscription_timeout: float = 7.5,
        ping_interval: float = 1.0,
        tls_ca_file: Optional[PathArg] = None,
        tls_ca_dir: Optional[PathArg] = None,
        tls_cert_file: Optional[PathArg] = None,
        tls_key_file: Optional[PathArg] = None,
        tls_server_name: Optional[str] = None,
        tls_verify: bool = True,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        read_from: str = "master",
        wait_replicas: int = -1,
        wait_timeout: float = 1.0,
        fair_wait_timeout: float = 300.0,
        log_events: bool = True,
    ) -> None:
        if not isinstance(url, str):
            raise TypeError("url must be str, not %s" % type(url).__name__)
        self._ptr: Any = None
        self._closed = True
        self._url = _safe_url(url)  # the password is never kept
        self._pid = os.getpid()
        self._mu = threading.Lock()
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._executor_pid = 0
        if not isinstance(log_events, bool):
            raise TypeError("log_events must be a bool")
        self._log_events = log_events
        self._events_thread: Optional[threading.Thread] = None
        self._tasks: Optional[_TaskHub] = None
        for what, val, low in (("retry_attempts", retry_attempts, 0), ("pool_size", pool_size, 0),
                               ("wait_replicas", wait_replicas, -1)):
            if isinstance(val, bool) or not isinstance(val, int):
                raise TypeError("%s must be an int" % what)
            if val < low or val > 1 << 20:
                raise E.InvalidArgumentError("%s out of range: %r" % (what, val))
        if not isinstance(read_from, str):
            raise TypeError("read_from must be str, not %s" % type(read_from).__name__)
        if read_from not in _READ_FROM:
            raise E.InvalidArgumentError("read_from must be 'master', 'replica' or 'any', not %r"
                                         % (read_from,))

        opts = ffi.new("hl_client_options *")
        check(lib.hl_client_options_init(opts, lib.HL_CLIENT_OPTIONS_VERSION))
        opts.watchdog_timeout_ms = ms(watchdog_timeout, "watchdog_timeout", allow_zero=False)
        opts.connect_timeout_ms = ms(connect_timeout, "connect_timeout", allow_zero=False)
        opts.command_timeout_ms = ms(command_timeout, "command_timeout", allow_zero=False)
        opts.retry_delay_ms = ms(retry_delay, "retry_delay")
        opts.subscription_timeout_ms = ms(subscription_timeout, "subscription_timeout", allow_zero=False)
        opts.ping_interval_ms = ms(ping_interval, "ping_interval")
        opts.retry_attempts = retry_attempts
        opts.pool_size = pool_size
        opts.read_from = _READ_FROM[read_from]
        opts.wait_replicas = wait_replicas
        opts.wait_timeout_ms = ms(wait_timeout, "wait_timeout", allow_zero=False)
        opts.fair_wait_timeout_ms = ms(fair_wait_timeout, "fair_wait_timeout", allow_zero=False)
        keep: list = []  # C strings, alive until hl_client_new copied them
        if client_name is not None:
            keep.append(ffi.new("char[]", client_name.encode("utf-8")))
            opts.client_name = keep[-1]
        if not isinstance(tls_verify, bool):
            raise TypeError("tls_verify must be a bool")
        opts.tls_verify = 1 if tls_verify else 0
        for field, val in (("tls_ca_file", tls_ca_file), ("tls_ca_dir", tls_ca_dir),
                           ("tls_cert_file", tls_cert_file), ("tls_key_file", tls_key_file)):
            if val is not None:
                keep.append(ffi.new("char[]", _c_path(field, val)))
                setattr(opts, field, keep[-1])
        if tls_server_name is not None:
            if not isinstance(tls_server_name, str):
                raise TypeError("tls_server_name must be str")
            if "\0" in tls_server_name:
                raise E.InvalidArgumentError("tls_server_name contains a NUL character")
            name = tls_server_name.encode("ascii" if tls_server_name.isascii() else "idna")
            keep.append(ffi.new("char[]", name))
            opts.tls_server_name = keep[-1]
        # The sentinels' own credentials. The password is never quoted in a
        # message, and never kept: hl_client_new copies it.
        for field, val in (("sentinel_username", sentinel_username),
                           ("sentinel_password", sentinel_password)):
            if val is None:
                continue
            if not isinstance(val, str):
                raise TypeError("%s must be str, not %s" % (field, type(val).__name__))
            if "\0" in val:
                raise E.InvalidArgumentError("%s contains a NUL character" % field)
            try:
                raw: Optional[bytes] = val.encode("utf-8")
            except UnicodeEncodeError:
                raw = None  # raised below, outside this handler: no context
            if raw is None:  # that would carry the whole value
                raise E.InvalidArgumentError("%s is not encodable as UTF-8" % field)
            keep.append(ffi.new("char[]", raw))
            setattr(opts, field, keep[-1])
        try:
            curl = url.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise E.InvalidArgumentError("url is not encodable: %s" % exc) from None
        if b"\0" in curl:
            raise E.InvalidArgumentError("url contains a NUL character")
        out = ffi.new("hl_client **")
        check(lib.hl_client_new(out, curl, opts))
        del keep
        self._ptr = ffi.gc(out[0], lib.hl_client_free)
        self._closed = False
        self._watchdog_timeout = float(watchdog_timeout)
        # A client dropped without close() is closed when it is collected,
        # which also ends its hilock-events thread (that thread holds the C
        # client only, so it does not keep this object alive).
        self._finalizer = weakref.finalize(self, lib.hl_client_close, self._ptr)
        self._finalizer.atexit = False

    # -- properties ---------------------------------------------------------

    @property
    def id(self) -> str:
        """The client's UUID: the first part of every owner it writes."""
        return str(ffi.string(lib.hl_client_id(self._ptr)).decode("ascii"))

    @property
    def url(self) -> str:
        """The URL, with any password masked."""
        return self._url

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    @property
    def watchdog_timeout(self) -> float:
        """The lease, in seconds, of locks taken without one."""
        return self._watchdog_timeout

    # -- locks ----------------------------------------------------------------

    def lock(self, name: Name, *, lease: Optional[float] = None, timeout: Optional[float] = None,
             reentrant: bool = True) -> "Lock":
        """A reentrant lock called ``name`` (Redisson RLock). Cheap: no round
        trip. ``lease`` (seconds) makes ``with`` and :meth:`Lock.acquire`
        take it for a fixed time with no watchdog; ``None`` uses the
        watchdog. ``timeout`` bounds the wait of ``with`` (raising
        :class:`LockTimeout`); ``None`` waits as long as it takes.

        ``reentrant=False`` makes it non-reentrant (Redisson's
        ``getNonReentrantLock``, the same keys): like :class:`threading.Lock`,
        but an owner that acquires it again gets :class:`DeadlockError`
        instead of waiting for itself forever."""
        return Lock(self, name, lease=lease, timeout=timeout,
                    kind="reentrant" if _flag(reentrant, "reentrant") else "nonreentrant")

    def fair_lock(self, name: Name, *, lease: Optional[float] = None, timeout: Optional[float] = None,
                  reentrant: bool = True) -> "Lock":
        """A fair lock called ``name`` (Redisson RFairLock): waiters get it in
        the order they asked, across threads and processes, through a queue
        kept in Redis (even a non-blocking attempt never jumps it). The
        options are :meth:`lock`'s; a waiter that dies leaves the queue
        ``fair_wait_timeout`` (a :class:`Client` option) after its turn came.
        The queue's deadlines are wall-clock times: keep the clocks of the
        machines in step (NTP)."""
        return Lock(self, name, lease=lease, timeout=timeout,
                    kind="fair" if _flag(reentrant, "reentrant") else "fair-nonreentrant")

    def read_write_lock(self, name: Name, *, lease: Optional[float] = None,
                        timeout: Optional[float] = None) -> "ReadWriteLock":
        """A read-write lock called ``name`` (Redisson RReadWriteLock): its
        ``.read`` half is held by many owners at once while nobody writes,
        its ``.write`` half by one owner alone (see :class:`ReadWriteLock`).
        ``lease`` and ``timeout`` are the halves' defaults, as for
        :meth:`lock`."""
        return ReadWriteLock(self, name, lease=lease, timeout=timeout)

    def spin_lock(self, name: Name, *, backoff: "Optional[Backoff]" = None, lease: Optional[float] = None,
                  timeout: Optional[float] = None) -> "SpinLock":
        """A spin lock called ``name`` (Redisson RSpinLock): the reentrant
        lock's keys, but a waiter tries again after an exponential
        ``backoff`` (a :class:`Backoff`; by default Redisson's: 1 ms doubling
        up to 128 ms) instead of subscribing to a channel, for deployments
        where pub/sub is unavailable or costly."""
        return SpinLock(self, name, backoff=backoff, lease=lease, timeout=timeout)

    def fenced_lock(self, name: Name, *, lease: Optional[float] = None,
                    timeout: Optional[float] = None) -> "FencedLock":
        """A fenced lock called ``name`` (Redisson RFencedLock): a reentrant
        lock whose every acquisition takes the next number of a counter kept
        in Redis, read with :attr:`FencedLock.token`. Hand the token to the
        resource the lock guards, which refuses a token older than one it
        has seen: a holder paused past its lease (GC, SIGSTOP, a slow
        network) then cannot do harm."""
        return FencedLock(self, name, lease=lease, timeout=timeout)

    # -- observability -----------------------------------------------------------

    def stats(self) -> Stats:
        """The client's counters (:class:`Stats`), read without a round
        trip. Also after :meth:`close`: the final counts."""
        rc, st, detail = O.stats(self._ptr)
        if rc:
            raise error_for(rc, detail)
        assert st is not None
        return st

    def events(self) -> "list[Event]":
        """Take the queued events, oldest first (empty if none). Only with
        ``log_events=False``: otherwise the ``hilock-events`` thread takes
        and logs them. After :meth:`close`, the events queued before it."""
        if self._log_events:
            raise RuntimeError("events are logged by the hilock-events thread: "
                               "create the client with log_events=False to take them")
        out: "list[Event]" = []
        while True:
            rc, ev, detail = O.next_event(self._ptr)
            if rc == lib.HL_ECLOSED:
                return out
            if rc:
                raise error_for(rc, detail)
            if ev is None:
                return out
            out.append(ev)

    def event_fd(self) -> int:
        """A file descriptor that is readable while events are queued (and
        for good once the client is closed), for ``select`` or
        ``loop.add_reader``; then call :meth:`events`. Owned by the
        client: do not read or close it."""
        fd = ffi.new("int *")
        check(lib.hl_client_event_fd(fd, self._ptr))
        return int(fd[0])

    def _start_events(self) -> None:
        """Start the hilock-events thread (once, with the first lock)."""
        if not self._log_events or self._events_thread is not None:
            return
        with self._mu:
            if self._events_thread is not None or self._closed or self._pid != os.getpid():
                return
            fd = ffi.new("int *")
            check(lib.hl_client_event_fd(fd, self._ptr))
            t = threading.Thread(target=O.drain_forever, args=(self._ptr, int(fd[0])),
                                 name="hilock-events", daemon=True)
            t.start()
            self._events_thread = t

    # -- synchronizers -------------------------------------------------------

    def semaphore(self, name: Name, *, timeout: Optional[float] = None) -> "Semaphore":
        """A semaphore called ``name`` (Redisson RSemaphore), shaped like
        :class:`threading.Semaphore`: ``acquire(blocking=True, timeout=None,
        *, n=1)``, ``release(n=1)``, ``with`` (one permit), the ``*_async``
        forms, and Redisson's ``try_set_permits``, ``add_permits``... Cheap:
        no round trip. ``timeout`` bounds the wait of ``with`` (raising
        :class:`LockTimeout`). See :class:`Semaphore`."""
        from ._sync import Semaphore

        return Semaphore(self, name, timeout=timeout)

    def expirable_semaphore(self, name: Name, *, lease: Optional[float] = None,
                            timeout: Optional[float] = None) -> "ExpirableSemaphore":
        """A permit-expirable semaphore called ``name`` (Redisson
        RPermitExpirableSemaphore): each permit taken is an id with a lease,
        and goes back by itself when its lease ends (a holder that dies
        returns its permits then). ``lease`` is the default lease in seconds
        (None: permits go back only when released); ``timeout`` bounds the
        wait of ``with``. See :class:`ExpirableSemaphore`."""
        from ._sync import ExpirableSemaphore

        return ExpirableSemaphore(self, name, lease=lease, timeout=timeout)

    def count_down_latch(self, name: Name) -> "CountDownLatch":
        """A count-down latch called ``name`` (Redisson RCountDownLatch):
        ``try_set_count(n)``, ``count_down()``, ``count()``, and
        ``wait(timeout=None) -> bool`` as :meth:`threading.Event.wait`
        (``wait_async`` in asyncio). See :class:`CountDownLatch`."""
        from ._sync import CountDownLatch

        return CountDownLatch(self, name)

    def interrupt(self) -> None:
        """Wake every call of this client blocked right now: they raise
        :class:`Interrupted`. Any thread."""
        check(lib.hl_client_interrupt(self._ptr))

    def close(self) -> None:
        """Close the client: stop renewing its locks (nothing is unlocked:
        their leases run out), wake blocked calls, close the connections.
        Locks made from it then raise :class:`ClientClosedError`.
        Idempotent."""
        with self._mu:
            if self._closed:
                return
            self._closed = True
            ex, self._executor = self._executor, None
            events = self._events_thread
        if self._ptr is not None:
            lib.hl_client_close(self._ptr)
        if ex is not None and self._executor_pid == os.getpid():
            ex.shutdown(wait=False)
        # Closing made the event fd readable: the hilock-events thread logs
        # what was queued and ends (not waited for from that very thread: a
        # logging handler that closes the client).
        if (events is not None and self._pid == os.getpid()
                and events is not threading.current_thread()):
            events.join(10.0)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return "<hilock.Client %s %s>" % (self.url, state)

    # -- asyncio plumbing ------------------------------------------------------

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        """Threads for short C calls made on behalf of asyncio tasks."""
        with self._mu:
            pid = os.getpid()
            if self._executor is None or self._executor_pid != pid:
                # after fork the parent's pool threads do not exist here
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=4, thread_name_prefix="hilock-async")
                self._executor_pid = pid
            return self._executor

    def _run_short(self, fn: Callable[..., _T], *args: Any) -> "asyncio.Future[_T]":
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(self._pool(), fn, *args)

    def _hub(self) -> _TaskHub:
        with self._mu:
            if self._tasks is None:
                self._tasks = _TaskHub(self)
            return self._tasks

    async def _await_task(self, starter: Callable[[Any], int], cancellable: bool = False
                          ) -> Tuple[Tuple[int, int, str], Optional[BaseException]]:
        """Start a libhilock task and await its result without blocking the
        loop or taking a thread. Returns (result, the CancelledError if the
        awaiting task was cancelled meanwhile); cancellable: such a cancel
        cancels the library's task, else it runs to its end."""
        hub = self._hub()
        loop = asyncio.get_running_loop()
        t, fut = hub.start(starter)
        try:
            return await _settle(fut, (lambda: lib.hl_task_cancel(t)) if cancellable else None)
        finally:
            hub.finish(t, loop)


class Lock:
    """A reentrant distributed lock (Redisson RLock), shaped like
    :class:`threading.RLock`, or another lock kind with the same interface.

    Made by :meth:`Client.lock`, and for the other kinds by
    :meth:`Client.fair_lock`, :meth:`Client.read_write_lock` (its ``.read``
    and ``.write``), ``Client.lock(name, reentrant=False)``; ``kind`` names
    the kind (:attr:`kind`). The kinds with calls of their own are
    :class:`FencedLock` and :class:`SpinLock`. The owner is the calling thread, or inside
    asyncio the calling task: an owner that holds the lock can acquire it
    again, and must release it as many times. Any number of threads and
    tasks may share one ``Lock`` object; two ``Lock`` objects with one name
    are the same lock.

    ``with lock:`` acquires (waiting as long as it takes, or the lock's
    ``timeout``) and releases at the end; if the lock stopped being held
    meanwhile (the watchdog found it lost, a lease ran out, someone
    force-unlocked it), the end of the block raises :class:`LockLost`.
    ``async with lock:`` does the same without blocking the event loop.

    A non-reentrant kind raises :class:`DeadlockError` when its owner
    acquires it again; so does the write half of a read-write lock asked for
    by an owner that holds the read half.
    """

    # The kinds this class makes (the subclasses make theirs).
    _KINDS: Tuple[str, ...] = ("reentrant", "nonreentrant", "fair", "fair-nonreentrant", "read", "write")

    # The calls of other kinds (FencedLock, SpinLock define the real ones).
    token: Any = _KindOnly("token", "fenced")
    last_token: Any = _KindOnly("last_token", "fenced")
    last_token_async: Any = _KindOnly("last_token_async", "fenced")
    backoff: Any = _KindOnly("backoff", "spin")

    def __init__(self, client: Client, name: Name, *, lease: Optional[float] = None,
                 timeout: Optional[float] = None, kind: str = "reentrant") -> None:
        if not isinstance(client, Client):
            raise TypeError("client must be a hilock.Client")
        if kind not in self._KINDS:
            raise E.InvalidArgumentError("a %s cannot be a %r lock (kinds: %s)" % (
                type(self).__name__, kind, ", ".join(self._KINDS)))
        self._kind = _KIND_VALUES[kind]
        client._start_events()
        self._client = client
        self._name = name
        self._bname = _encode_name(name)
        self._lease_ms = -1 if lease is None else ms(lease, "lease", allow_zero=False)
        self._lease = lease
        self._timeout = timeout
        self._with_wait_ms = -1 if timeout is None else ms(timeout, "timeout")
        self._mu = threading.Lock()
        self._handle = self._new_handle(0)
        self._owned: Dict[int, Any] = {}
        self._task_handles: "weakref.WeakKeyDictionary[asyncio.Task[Any], Any]" = weakref.WeakKeyDictionary()
        self._task_watch: "weakref.WeakKeyDictionary[asyncio.Task[Any], Any]" = weakref.WeakKeyDictionary()

    # -- handles -------------------------------------------------------------

    def _new_handle(self, owner: int) -> Any:
        out = ffi.new("hl_lock **")
        check(lib.hl_lock_new_kind(out, self._client._ptr, self._kind, self._bname, len(self._bname)))
        handle = ffi.gc(out[0], lib.hl_lock_free)
        self._setup_handle(handle)
        if owner:
            check(lib.hl_lock_set_owner(handle, owner))
        return handle

    def _setup_handle(self, handle: Any) -> None:
        """Kind-specific settings of a new handle (SpinLock: its back-off)."""

    def _owner_handle(self, owner: int) -> Any:
        """A handle with an explicit owner id (used by MultiLock)."""
        with self._mu:
            h = self._owned.get(owner)
            if h is None:
                h = self._owned[owner] = self._new_handle(owner)
            return h

    def _task_handle(self, task: "asyncio.Task[Any]") -> Any:
        with self._mu:
            h = self._task_handles.get(task)
            if h is not None:
                return h
        h = self._new_handle(_task_owner(task))
        with self._mu:
            old = self._task_handles.get(task)
            if old is not None:
                return old
            self._task_handles[task] = h
        return h

    def _watch_task(self, task: "Optional[asyncio.Task[Any]]", held: bool) -> None:
        """Keep a done callback on a task while it holds this lock, so that a
        task that ends holding it stops being renewed (its lease runs out).
        Loop thread only."""
        if task is None:
            return
        cb = self._task_watch.get(task)
        if held and cb is None:
            cb = functools.partial(_abandon_on_done, self._task_handle(task))
            self._task_watch[task] = cb
            task.add_done_callback(cb)
        elif not held and cb is not None:
            del self._task_watch[task]
            task.remove_done_callback(cb)

    def _current(self) -> Any:
        """The handle of the current owner: the running task, else the thread."""
        task = _current_task()
        return self._handle if task is None else self._task_handle(task)

    def _lease_arg(self, lease: Any) -> int:
        if lease is _DEFAULT:
            return self._lease_ms
        if lease is None:
            return -1
        return ms(lease, "lease", allow_zero=False)

    # -- properties ----------------------------------------------------------

    @property
    def name(self) -> Name:
        """The name as given."""
        return self._name

    @property
    def client(self) -> Client:
        """The client this lock belongs to."""
        return self._client

    @property
    def kind(self) -> str:
        """The lock's kind: ``"reentrant"``, ``"nonreentrant"``, ``"fair"``,
        ``"fair-nonreentrant"``, ``"read"``, ``"write"``, ``"spin"`` or
        ``"fenced"``."""
        return str(ffi.string(lib.hl_lock_kind_name(self.__dict__.get("_kind", -1))).decode("ascii"))

    @property
    def lease(self) -> Optional[float]:
        """The default lease in seconds, or None for the watchdog."""
        return self._lease

    @property
    def owner(self) -> str:
        """The owner string of the current thread or task
        (``"<client uuid>:<owner id>"``, the field written in Redis)."""
        handle = self._current()
        n = ffi.new("size_t *")
        buf = ffi.new("char[]", 96)
        rc = lib.hl_lock_owner(n, handle, buf, 96)
        if rc != 0 and n[0] >= 96:
            buf = ffi.new("char[]", n[0] + 1)
            rc = lib.hl_lock_owner(n, handle, buf, n[0] + 1)
        check(rc)
        return str(ffi.string(buf, n[0]).decode("ascii"))

    # -- acquire / release ---------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: float = -1, lease: Optional[float] = _DEFAULT) -> bool:
        """Acquire the lock, as :meth:`threading.RLock.acquire` does.

        Waits as long as it takes (``timeout=-1``), at most ``timeout``
        seconds, or not at all (``blocking=False``). Returns True if the
        lock is now held by the caller (its hold count grew), False if the
        wait ran out with the lock held by someone else. A wait during which
        Redis never answered raises :class:`ConnectionError` instead (an
        outage is not contention). ``blocking`` must be a bool
        (``acquire(5)`` raises TypeError: the wait is ``timeout=5``).
        ``lease``: seconds after which Redis frees the lock, or None to hold
        it with the watchdog; by default the lock's own.

        Ctrl-C interrupts the wait (:class:`KeyboardInterrupt` is raised
        and the lock is not taken). The GIL is released while waiting.
        Raises :class:`ClientClosedError`, :class:`ForkedError`,
        :class:`ConnectionError`, :class:`Interrupted`.
        """
        if blocking is True and lease is _DEFAULT and _get_running_loop() is None and (
                timeout is None or timeout == -1):
            # The usual call, from a thread outside asyncio (the thread is
            # the owner): what _acquire does for it, with less Python.
            lease_ms = self._lease_ms
            if _get_ident() != _main_ident:
                rc = _c_acquire_wd(self._handle) if lease_ms == -1 else \
                    _c_try_acquire(self._handle, -1, lease_ms)
            else:
                rc = _c_begin_wd(self._handle) if lease_ms == -1 else \
                    _c_begin(self._handle, -1, lease_ms)
                if rc == 2:
                    # taken: the wait (in line already) rides it out
                    return self._wait_begun(self._handle)
            if rc < 0:
                raise error_for(rc, last_detail())
            return rc == 1
        task = _current_task()
        ok = self._acquire(task, blocking, timeout, lease)
        if ok:
            self._watch_task(task, True)
        return ok

    def _acquire(self, task: Any, blocking: bool, timeout: float, lease: Any) -> bool:
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = self._lease_arg(lease)
        handle = self._handle if task is None else self._task_handle(task)
        if wait_ms == 0 or threading.current_thread() is not threading.main_thread():
            rc, acquired, detail = _try_acquire(handle, wait_ms, lease_ms, NULL)
            if rc:
                raise error_for(rc, detail)
            return bool(acquired)

        # Main thread: signals are handled here, and only between bytecodes.
        # The first attempt is made here (one round trip); a wait goes on as
        # a task, in the place that attempt took in the line.
        rc = _c_begin(handle, wait_ms, lease_ms)
        if rc == 2:
            return self._wait_begun(handle)
        if rc < 0:
            raise error_for(rc, last_detail())
        return rc == 1

    def _wait_begun(self, handle: Any) -> bool:
        """The main thread's wait after a first attempt found the lock
        taken: the libhilock task hl_lock_try_acquire_begin started (of this
        thread's owner), waited on so that signal handlers run meanwhile."""
        rc, acquired, detail = _run_task_in_main_thread(
            lib.hlpy_begun_task(),
            lambda res: _release_quietly(handle) if res[0] == 0 and res[1] else None)
        if rc:
            raise error_for(rc, detail)
        return bool(acquired)

    def release(self) -> None:
        """Release one hold of the current thread (or task); the lock is
        freed when the count reaches zero.

        Raises :class:`NotHeldError` (a :class:`RuntimeError`) if the
        caller does not hold it, :class:`LockLost` (also a
        :class:`NotHeldError`) if the hold had been lost (the watchdog
        found it gone, it could not be renewed in time, or its lease ran
        out), and :class:`OutcomeUnknown` (a
        :class:`ConnectionError`) if Redis did not confirm the release: the
        hold is then no longer renewed and its lease ends it."""
        if _get_running_loop() is None:
            # A thread outside asyncio: no task to stop watching.
            rc = _c_release(self._handle)
            if rc:
                raise error_for(rc, last_detail())
            return
        task = _current_task()
        rc, released, detail = _release(self._handle if task is None else self._task_handle(task))
        if rc == 0 and released or rc in (lib.HL_ENOTHELD, lib.HL_ELOST):
            self._watch_task(task, False)
        if rc:
            raise error_for(rc, detail)

    def _exit_error(self, rc: int, detail: str) -> BaseException:
        if rc in (lib.HL_ELOST, lib.HL_ENOTHELD):
            return error_for(rc, detail, cls=E.LockLost,
                             prefix="lock %r was not held at the end of its with block: " % (self._name,))
        return error_for(rc, detail)

    def _enter_timeout(self) -> E.LockTimeout:
        return E.LockTimeout("could not acquire lock %r within %s s" % (self._name, self._timeout))

    def __enter__(self) -> "Lock":
        if self._with_wait_ms == -1:
            ok = self.acquire()
        else:
            ok = self.acquire(timeout=self._timeout if self._timeout is not None else -1)
        if not ok:
            raise self._enter_timeout()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if _get_running_loop() is None:
            # A thread outside asyncio: no task to stop watching.
            rc = _c_release(self._handle)
            if rc == 0:
                return
            detail = last_detail()
        else:
            task = _current_task()
            rc, released, detail = _release(self._handle if task is None else self._task_handle(task))
            if rc == 0 and released or rc in (lib.HL_ENOTHELD, lib.HL_ELOST):
                self._watch_task(task, False)
            if rc == 0:
                return
        err = self._exit_error(rc, detail)
        if exc is None:
            raise err
        # Do not hide the block's own exception; tell it what else happened.
        if hasattr(exc, "add_note"):
            exc.add_note("hilock: " + str(err))

    # -- state -----------------------------------------------------------------

    def _int_query(self, fn: Any, ctype: str = "int *") -> int:
        out = ffi.new(ctype)
        check(fn(out, self._current()))
        return int(out[0])

    def locked(self) -> bool:
        """True if anyone holds the lock (one round trip)."""
        return bool(self._int_query(lib.hl_lock_is_locked))

    def held(self) -> bool:
        """True if the current thread (or task) holds the lock."""
        return bool(self._int_query(lib.hl_lock_is_held))

    @property
    def hold_count(self) -> int:
        """How many times the current thread (or task) holds the lock."""
        return self._int_query(lib.hl_lock_hold_count, "int64_t *")

    @staticmethod
    def _ttl_seconds(v: int) -> Optional[float]:
        if v == -2:
            return None
        if v == -1:
            return math.inf
        return v / 1000.0

    @property
    def ttl(self) -> Optional[float]:
        """Seconds the lock has left to live in Redis: None if it is free,
        ``math.inf`` if it has no expiry."""
        return self._ttl_seconds(self._int_query(lib.hl_lock_ttl, "int64_t *"))

    @property
    def lost(self) -> bool:
        """True if the watchdog found the current owner's hold lost, or its
        fixed lease ended before it was released (local, no round trip).
        Cleared by the owner's next acquire or release."""
        return bool(self._int_query(lib.hl_lock_is_lost))

    def force_unlock(self) -> bool:
        """Delete the lock whoever holds it and wake a waiter. Returns True
        if it was locked."""
        return bool(self._int_query(lib.hl_lock_force_unlock))

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Block until the current owner's hold is found lost (True), or
        ``timeout`` seconds pass, or the owner holds nothing watched
        (False)."""
        wait = -1 if timeout is None else ms(timeout, "timeout")
        handle = self._current()

        def call(cancel: Any) -> Tuple[int, int, str]:
            out = ffi.new("int *")
            rc = lib.hl_lock_wait_lost(out, handle, wait, cancel)
            return rc, out[0], (last_detail() if rc else "")

        if wait != 0 and threading.current_thread() is threading.main_thread():
            rc, lost, detail = _task_in_main_thread(  # Ctrl-C works
                lambda out: lib.hl_lock_wait_lost_start(out, handle, wait), None)
        else:
            rc, lost, detail = call(NULL)
        if rc:
            raise error_for(rc, detail)
        return bool(lost)

    # -- asyncio -------------------------------------------------------------
    #
    # The owner of an async call is the task that *calls* the method, found
    # when the method is called (the public methods are plain functions that
    # return a coroutine), not the task that happens to run the coroutine:
    # asyncio.wait_for (before 3.12), shield, gather and create_task run a
    # coroutine in a task of their own, and the lock must still belong to
    # the task that awaits it. A coroutine made outside any task (say, handed
    # to asyncio.run) belongs to the task that runs it.

    def _require_task(self, owner: "Optional[asyncio.Task[Any]]" = None) -> "asyncio.Task[Any]":
        task = owner if owner is not None else _current_task()
        if task is None:
            raise RuntimeError("the async methods of hilock.Lock must run in an asyncio task")
        return task

    def acquire_async(self, blocking: bool = True, timeout: float = -1,
                      lease: Optional[float] = _DEFAULT) -> "Coroutine[Any, Any, bool]":
        """:meth:`acquire` for asyncio: ``await lock.acquire_async(...)``.

        The owner is the task that calls this method, also when the
        awaitable is wrapped: ``await asyncio.wait_for(lock.acquire_async(),
        5)`` (which runs it in a task of its own before Python 3.12),
        ``asyncio.shield(...)``, ``asyncio.gather(...)`` or
        ``asyncio.create_task(...)`` all take the lock for the calling task,
        which then releases it with :meth:`release_async`. The event loop
        never blocks. Cancelling the wait (the task, or a wait_for timeout)
        cancels it in the library and the lock is not taken."""
        return self._acquire_async_for(_current_task(), blocking, timeout, lease)

    async def _acquire_async_for(self, owner: "Optional[asyncio.Task[Any]]", blocking: bool,
                                 timeout: float, lease: Any) -> bool:
        task = self._require_task(owner)
        ok = await self._acquire_async(task, blocking, timeout, lease)
        if ok:
            self._watch_task(task, True)
        return ok

    async def _acquire_async(self, task: "asyncio.Task[Any]", blocking: bool, timeout: float,
                             lease: Any) -> bool:
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = self._lease_arg(lease)
        handle = self._task_handle(task)
        (rc, acquired, detail), cancelled = await self._client._await_task(
            lambda out: lib.hl_lock_try_acquire_start(out, handle, wait_ms, lease_ms),
            cancellable=True)
        if cancelled is not None:
            if rc == 0 and acquired:
                # it got the lock just before the cancel reached it
                await self._client._await_task(lambda out: lib.hl_lock_release_start(out, handle))
            raise cancelled
        if rc:
            raise error_for(rc, detail)
        return bool(acquired)

    def release_async(self) -> "Coroutine[Any, Any, None]":
        """:meth:`release` for asyncio: ``await lock.release_async()``
        releases a hold of the task that calls it (wrapped in wait_for or
        shield, too; see :meth:`acquire_async`). Completes even if the task
        is cancelled meanwhile."""
        return self._release_async_for(_current_task())

    async def _release_async_for(self, owner: "Optional[asyncio.Task[Any]]") -> None:
        task = self._require_task(owner)
        (rc, released, detail), cancelled = await self._release_task(task)
        if rc == 0 and released or rc in (lib.HL_ENOTHELD, lib.HL_ELOST):
            self._watch_task(task, False)
        if rc:
            raise error_for(rc, detail)
        if cancelled is not None:
            raise cancelled

    def _release_task(self, task: "asyncio.Task[Any]"
                      ) -> "Awaitable[Tuple[Tuple[int, int, str], Optional[BaseException]]]":
        # A release runs to its end even if the awaiting task is cancelled.
        handle = self._task_handle(task)
        return self._client._await_task(lambda out: lib.hl_lock_release_start(out, handle))

    def wait_lost_async(self, timeout: Optional[float] = None) -> "Coroutine[Any, Any, bool]":
        """:meth:`wait_lost` for asyncio: wait until the calling task's hold
        is found lost (True), or ``timeout`` seconds pass, or the task holds
        nothing watched (False), without blocking the loop or taking a
        thread. Cancelling the awaiting task ends the wait."""
        return self._wait_lost_async_for(_current_task(), timeout)

    async def _wait_lost_async_for(self, owner: "Optional[asyncio.Task[Any]]",
                                   timeout: Optional[float]) -> bool:
        wait = -1 if timeout is None else ms(timeout, "timeout")
        handle = self._task_handle(self._require_task(owner))
        (rc, lost, detail), cancelled = await self._client._await_task(
            lambda out: lib.hl_lock_wait_lost_start(out, handle, wait), cancellable=True)
        if cancelled is not None:
            raise cancelled
        if rc:
            raise error_for(rc, detail)
        return bool(lost)

    async def __aenter__(self) -> "Lock":
        if not await self.acquire_async(timeout=-1 if self._timeout is None else self._timeout):
            raise self._enter_timeout()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        task = self._require_task()
        (rc, released, detail), cancelled = await self._release_task(task)
        if rc == 0 and released or rc in (lib.HL_ENOTHELD, lib.HL_ELOST):
            self._watch_task(task, False)
        if rc:
            err = self._exit_error(rc, detail)
            if exc is None and cancelled is None:
                raise err
            target = exc if exc is not None else cancelled
            if target is not None and hasattr(target, "add_note"):
                target.add_note("hilock: " + str(err))
        if cancelled is not None:
            raise cancelled

    async def _query_async(self, owner: "Optional[asyncio.Task[Any]]", fn: Any, ctype: str,
                           conv: Callable[[int], _T]) -> _T:
        handle = self._task_handle(self._require_task(owner))

        def call() -> Tuple[int, int, str]:
            out = ffi.new(ctype)
            rc = fn(out, handle)
            return rc, int(out[0]) if rc == 0 else 0, (last_detail() if rc else "")

        (rc, value, detail), cancelled = await _settle(self._client._run_short(call))
        if cancelled is not None:
            raise cancelled
        if rc:
            raise error_for(rc, detail)
        return conv(value)

    # The queries, like acquire_async, speak for the task that calls them.

    def locked_async(self) -> "Coroutine[Any, Any, bool]":
        """:meth:`locked` without blocking the event loop."""
        return self._query_async(_current_task(), lib.hl_lock_is_locked, "int *", bool)

    def held_async(self) -> "Coroutine[Any, Any, bool]":
        """:meth:`held` for the calling task, without blocking the loop."""
        return self._query_async(_current_task(), lib.hl_lock_is_held, "int *", bool)

    def hold_count_async(self) -> "Coroutine[Any, Any, int]":
        """:attr:`hold_count` for the calling task, without blocking the loop."""
        return self._query_async(_current_task(), lib.hl_lock_hold_count, "int64_t *", int)

    def ttl_async(self) -> "Coroutine[Any, Any, Optional[float]]":
        """:attr:`ttl` without blocking the event loop."""
        return self._query_async(_current_task(), lib.hl_lock_ttl, "int64_t *", self._ttl_seconds)

    def force_unlock_async(self) -> "Coroutine[Any, Any, bool]":
        """:meth:`force_unlock` without blocking the event loop."""
        return self._query_async(_current_task(), lib.hl_lock_force_unlock, "int *", bool)

    def __repr__(self) -> str:
        lease = "watchdog" if self._lease_ms == -1 else "lease=%gs" % (self._lease_ms / 1000.0)
        # A subclass's name says its kind; a Lock's kind is shown unless reentrant.
        kind = "" if type(self) is not Lock or self._kind == lib.HL_LOCK_REENTRANT else self.kind + " "
        return "<hilock.%s %r %s%s>" % (type(self).__name__, self._name, kind, lease)


# The async methods are plain functions returning a coroutine (so the owner
# is found when they are called); tell inspect they are to be awaited.
if hasattr(inspect, "markcoroutinefunction"):  # Python 3.12+
    for _name in ("acquire_async", "release_async", "wait_lost_async", "locked_async",
                  "held_async", "hold_count_async", "ttl_async", "force_unlock_async"):
        inspect.markcoroutinefunction(getattr(Lock, _name))
    del _name


class FencedLock(Lock):
    """A fenced lock (Redisson RFencedLock): a reentrant :class:`Lock` whose
    every acquisition, re-entries too, takes the next number of a counter in
    Redis (strictly increasing, never reset), so the resource it guards can
    refuse a holder that was paused past its lease::

        lock = client.fenced_lock("ledger")
        with lock:
            ledger.write(entry, fence=lock.token)

    Made by :meth:`Client.fenced_lock`.
    """

    _KINDS = ("fenced",)

    def __init__(self, client: Client, name: Name, *, lease: Optional[float] = None,
                 timeout: Optional[float] = None) -> None:
        super().__init__(client, name, lease=lease, timeout=timeout, kind="fenced")

    @property
    def token(self) -> int:
        """The token of the current thread's (or task's) hold: that of its
        last acquisition. Local, no round trip. Raises
        :class:`NotHeldError` when the caller holds nothing, and
        :class:`LockLost` when its hold was lost (its token fences nothing
        any more)."""
        return self._int_query(lib.hl_lock_token, "int64_t *")

    def last_token(self) -> int:
        """The last token given out for this name by anyone, 0 if none yet
        (one round trip)."""
        return self._int_query(lib.hl_lock_last_token, "int64_t *")

    def last_token_async(self) -> "Coroutine[Any, Any, int]":
        """:meth:`last_token` without blocking the event loop."""
        return self._query_async(_current_task(), lib.hl_lock_last_token, "int64_t *", int)


class Backoff(NamedTuple):
    """A spin lock's pause between attempts: ``initial`` seconds, multiplied
    by ``multiplier`` (plus a little jitter) after each failed attempt, up to
    ``max`` seconds. ``Backoff(0.01, 0.01, 1)`` is a constant 10 ms. The
    default is Redisson's: 1 ms doubling up to 128 ms."""

    initial: float = 0.001
    max: float = 0.128
    multiplier: int = 2


class SpinLock(Lock):
    """A spin lock (Redisson RSpinLock): the reentrant lock's keys, so it
    excludes :meth:`Client.lock` of the same name, but waiters try again
    after a :class:`Backoff` instead of waiting for a pub/sub message.
    Made by :meth:`Client.spin_lock`."""

    _KINDS = ("spin",)

    def __init__(self, client: Client, name: Name, *, backoff: Optional[Backoff] = None,
                 lease: Optional[float] = None, timeout: Optional[float] = None) -> None:
        b = Backoff() if backoff is None else backoff
        if not isinstance(b, tuple) or len(b) != 3:
            raise TypeError("backoff must be a hilock.Backoff(initial, max, multiplier)")
        b = Backoff(*b)
        if isinstance(b.multiplier, bool) or not isinstance(b.multiplier, int):
            raise TypeError("backoff multiplier must be an int")
        self._backoff = b
        self._backoff_ms = (ms(b.initial, "backoff initial", allow_zero=False),
                            ms(b.max, "backoff max", allow_zero=False), b.multiplier)
        super().__init__(client, name, lease=lease, timeout=timeout, kind="spin")

    def _setup_handle(self, handle: Any) -> None:
        initial, max_ms, mult = self._backoff_ms
        check(lib.hl_lock_set_backoff(handle, initial, max_ms, mult))

    @property
    def backoff(self) -> Backoff:
        """The back-off between attempts."""
        return self._backoff


class ReadWriteLock:
    """A read-write lock (Redisson RReadWriteLock): two :class:`Lock` objects
    on one name. ``.read`` is held by any number of owners together while
    nobody holds ``.write``; ``.write`` by one owner, while nobody else reads::

        rw = client.read_write_lock("catalog")
        with rw.read:       # shared
            ...
        with rw.write:      # exclusive
            ...

    Both halves are reentrant. The writer may take the read half too (and
    keeps it after releasing the write half); a reader asking for the write
    half gets :class:`DeadlockError` (it would wait for itself). Releasing a
    half the caller does not hold raises :class:`NotHeldError`. Waiting
    threads of one client are served in order whichever half they want, so
    readers in this process do not starve a writer here. Made by
    :meth:`Client.read_write_lock`.
    """

    def __init__(self, client: Client, name: Name, *, lease: Optional[float] = None,
                 timeout: Optional[float] = None) -> None:
        self.read = Lock(client, name, lease=lease, timeout=timeout, kind="read")
        """The read half: shared among readers."""
        self.write = Lock(client, name, lease=lease, timeout=timeout, kind="write")
        """The write half: exclusive."""

    @property
    def name(self) -> Name:
        """The name as given."""
        return self.read.name

    def __repr__(self) -> str:
        return "<hilock.ReadWriteLock %r>" % (self.read.name,)


if hasattr(inspect, "markcoroutinefunction"):  # Python 3.12+
    inspect.markcoroutinefunction(FencedLock.last_token_async)
