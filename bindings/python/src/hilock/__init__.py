"""hilock: Redisson-compatible distributed locks on Redis.

A lock that feels like :class:`threading.RLock`::

    import hilock

    with hilock.Client("redis://127.0.0.1:6379/0") as client:
        with client.lock("orders:42"):          # watchdog keeps it alive
            ...
        with client.lock("report", lease=10.0):  # fixed lease, no watchdog
            ...

The other lock kinds have the same interface: ``client.fair_lock(name)``,
``client.read_write_lock(name).read`` / ``.write``, ``client.spin_lock(name)``,
``client.fenced_lock(name)`` (its ``token`` fences the guarded resource) and
``client.lock(name, reentrant=False)``.

Several locks as one: ``with hilock.MultiLock(a, b):`` (all or none), or
``with hilock.RedLock(l1, l2, l3):`` (a majority of independent servers).

Synchronizers: ``client.semaphore(name)`` (like :class:`threading.Semaphore`),
``client.expirable_semaphore(name, lease=...)`` (permits with ids and
leases, given back when a lease ends) and ``client.count_down_latch(name)``
(``count_down()``, and ``wait(timeout)`` like :class:`threading.Event`).

The owner of a lock is the thread that took it, or in asyncio the task
(``async with client.lock(...)``). Times are float seconds. Locks are
compatible with Redisson's RLock: Java services and hilock processes can
share them.
"""

from ._errors import (
    AuthenticationError,
    ClientClosedError,
    ConnectionError,
    DeadlockError,
    ForkedError,
    HilockError,
    Interrupted,
    InvalidArgumentError,
    LockLost,
    LockTimeout,
    NotHeldError,
    OutcomeUnknown,
    OutOfMemory,
    RedisError,
)
from ._client import Backoff, Client, FencedLock, Lock, Name, ReadWriteLock, SpinLock
from ._multi import MultiLock, RedLock
from ._observe import Event, Stats
from ._sync import CountDownLatch, ExpirableSemaphore, Semaphore
from ._grid import GridObject
from ._grid_gen import *  # noqa: F401,F403  (the grid's kinds)
from ._grid_gen import __all__ as _grid_all
from ._grid_rate_limiter import RateLimiter
from ._grid_delayed_queue import DelayedQueue
from ._grid_list import List
from ._grid_queue import Deque, Queue
from ._grid_priority_queue import PriorityDeque, PriorityQueue
from ._grid_priority_blocking_queue import PriorityBlockingQueue
from ._grid_priority_blocking_deque import PriorityBlockingDeque
from ._grid_blocking_queue import BlockingDeque, BlockingQueue, BoundedBlockingQueue
from ._grid_map import Map
from ._grid_scored_sorted_set import ScoredSortedSet
from ._grid_set import Set
from ._grid_sorted_set import SortedSet
from ._lowlevel import ffi as _ffi, lib as _lib

__version__ = "0.1.0"


def library_version() -> str:
    """The version of the libhilock this module runs on ("0.1.0")."""
    return str(_ffi.string(_lib.hl_version()).decode("ascii"))


__all__ = [
    "Client",
    "Lock",
    "FencedLock",
    "SpinLock",
    "ReadWriteLock",
    "Backoff",
    "MultiLock",
    "RedLock",
    "Semaphore",
    "ExpirableSemaphore",
    "CountDownLatch",
    "Name",
    "Stats",
    "Event",
    "HilockError",
    "InvalidArgumentError",
    "NotHeldError",
    "DeadlockError",
    "LockTimeout",
    "ConnectionError",
    "AuthenticationError",
    "OutcomeUnknown",
    "LockLost",
    "ClientClosedError",
    "ForkedError",
    "Interrupted",
    "RedisError",
    "OutOfMemory",
    "library_version",
    "__version__",
    "GridObject",
    "RateLimiter",
    "DelayedQueue",
    "List",
    "Queue",
    "BlockingQueue",
    "BlockingDeque",
    "BoundedBlockingQueue",
    "Deque",
    "PriorityQueue",
    "PriorityDeque",
    "PriorityBlockingQueue",
    "PriorityBlockingDeque",
    "Map",
    "Set",
    "ScoredSortedSet",
    "SortedSet",
] + list(_grid_all)
