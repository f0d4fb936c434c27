"""Exceptions of the hilock binding.

Every exception derives from :class:`HilockError`; where a builtin means the
same thing, the class derives from it too, so ``except TimeoutError`` or
``except RuntimeError`` work as they do with :mod:`threading`.
"""

from __future__ import annotations

import builtins
from typing import Optional

__all__ = [
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
]


class HilockError(Exception):
    """Root of every error raised by hilock.

    ``code`` is the library's status code (a negative int, ``None`` for
    errors raised by the Python layer itself), ``status`` its name
    (``"HL_ENOTHELD"``) and ``detail`` the library's message for the failed
    call (may be empty).
    """

    code: Optional[int] = None
    status: str = ""
    detail: str = ""


class InvalidArgumentError(HilockError, ValueError):
    """An argument was rejected (empty or too long name, bad URL, bad time)."""


class NotHeldError(HilockError, RuntimeError):
    """Release of a lock the calling thread (or task) does not hold; of more
    semaphore permits than the client took; of a permit id that is not out.

    Also a :class:`RuntimeError`, which is what :class:`threading.RLock`
    raises in the same case. A hold that was lost is not held either:
    :class:`LockLost` derives from this class, so ``except NotHeldError``
    catches both; to tell them apart, catch :class:`LockLost` first.
    """


class DeadlockError(HilockError, RuntimeError):
    """The acquire would wait for its own caller: a non-reentrant lock
    (``client.lock(name, reentrant=False)``, ``client.fair_lock(name,
    reentrant=False)``) asked for again by the owner that holds it, or the
    write half of a read-write lock asked for by an owner that holds the read
    half. Nothing was taken; the owner's holds are unchanged.

    Also a :class:`RuntimeError`, as a second ``acquire()`` of a
    :class:`threading.Lock` by its holder would never return.
    """


class LockTimeout(HilockError, TimeoutError):
    """A timeout that is an error rather than a ``False`` result.

    Raised by ``with lock:`` when the lock was made with ``timeout=`` and
    could not be taken in time, and when Redis does not answer in the
    client's command timeout. Also a :class:`TimeoutError`.
    """


class ConnectionError(HilockError, builtins.ConnectionError):
    """Redis cannot be reached, or the connection broke. Also raised by an
    acquire (and a ``with`` block) whose wait ended without Redis answering
    any attempt: an outage is not contention, which is a plain ``False``
    (see docs/consistency.md). Also the builtin :class:`ConnectionError`."""


class AuthenticationError(ConnectionError):
    """Redis refused the credentials in the URL."""


class OutcomeUnknown(ConnectionError):
    """Redis did not confirm a change that was sent (it stayed unreachable,
    or the reply was lost and could not be resent in time), so it may or
    may not have happened.

    A lock's hold is no longer renewed, so its lease ends it: ``detail``
    says within how many milliseconds at the latest. A semaphore's permits
    no longer count as the client's; a latch's count-down may or may not
    have counted. Also a
    :class:`ConnectionError` (and so the builtin one).
    """


class LockLost(NotHeldError):
    """The lock stopped being held before its ``with`` block ended.

    The watchdog found the lock gone or owned by someone else (or could not
    renew it in time), or a fixed lease ran out, or it was force-unlocked:
    the block did not run under the lock to its end.

    Also raised by :meth:`ExpirableSemaphore.release` for a permit whose
    lease had ended (it went back by itself, and someone else may have had
    it meanwhile).

    A lost hold is not held: this is also a :class:`NotHeldError` (and so a
    :class:`RuntimeError`), so ``except NotHeldError`` catches it too. Put
    ``except LockLost`` first where a loss needs its own handling.
    """


class ClientClosedError(HilockError):
    """The :class:`~hilock.Client` was closed; make a new one."""


class ForkedError(HilockError):
    """A :class:`~hilock.Client` inherited through ``fork()`` was used in the
    child. Create a new ``Client`` in the child process."""


class Interrupted(HilockError):
    """A blocking call was woken by :meth:`~hilock.Client.interrupt`."""


class RedisError(HilockError):
    """Redis replied with an error, or with a reply hilock did not expect."""


class OutOfMemory(HilockError, MemoryError):
    """The library could not allocate memory."""
