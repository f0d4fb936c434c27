"""Observability: a client's counters (:class:`Stats`) and its events
(:class:`Event`), logged through :mod:`logging`.

The library's own threads never run Python code: they queue each event in
the C client and make a file descriptor readable. A Python daemon thread of
the client's, ``hilock-events``, waits on that descriptor and logs each event
to the logger ``"hilock"``: ``WARNING`` for a lock lost, a renewal without
an answer, fencing turned off or an acquire taken back in the background,
``INFO`` for a reconnect or a failover. The
record carries the event itself as ``record.hilock_event``.
"""

from __future__ import annotations

import logging
import select
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Optional, Tuple

from ._lowlevel import NULL, ffi, last_detail, lib, status_name

__all__ = ["Stats", "Event", "logger", "LEVELS"]

logger = logging.getLogger("hilock")
"""The logger the events go to."""

LEVELS = {
    "lost": logging.WARNING,
    "renewal_failed": logging.WARNING,
    "reconnect": logging.INFO,
    "failover": logging.INFO,
    "fencing_off": logging.WARNING,
    "undo": logging.WARNING,
}
"""The logging level of each event type."""


@dataclass(frozen=True)
class Stats:
    """A client's counters since it was created (they never go back).

    ``acquisitions``: acquires that got the lock (reentrant ones too).
    ``acquire_waits``: acquires that found the lock taken and waited, got
    it or not; ``wait_time``: the seconds those waits took, in total.
    ``releases``: holds given back. ``renewals``: renewals of a hold Redis
    confirmed; ``renewal_failures``: renewals that got no answer (each
    retry counts). ``losses``: holds found lost while held (the key gone or
    another owner's, no renewal confirmed in time, force-unlocked, or found
    gone at release). ``reconnects``: connections made again after one to
    the same server broke. ``failovers``: new masters followed (Sentinel),
    or cluster masters replaced. ``events_dropped``: events dropped because
    the client's queue (1024) was full. ``waiting`` is a gauge, not a
    count: the client's waits (lock, semaphore, latch; threads and asyncio
    tasks) waiting now, found taken with their subscription active or
    queued behind this client's own waiters. ``wakeups_read_by_waiter``:
    wake-ups a blocking waiter read from the subscriber connection itself,
    with no hop through the subscriber thread.
    """

    acquisitions: int
    acquire_waits: int
    wait_time: float
    releases: int
    renewals: int
    renewal_failures: int
    losses: int
    reconnects: int
    failovers: int
    events_dropped: int
    waiting: int
    wakeups_read_by_waiter: int


@dataclass(frozen=True)
class Event:
    """Something the library noticed on its own threads.

    ``type``: ``"lost"``, ``"renewal_failed"``, ``"reconnect"``,
    ``"failover"``, ``"fencing_off"`` (the server refused CLIENT KILL: a
    command delayed past its caller's deadline may still run late) or
    ``"undo"`` (an acquire nobody got is being taken back in the background:
    status ``HL_EINDOUBT``, then ``HL_OK`` or ``HL_ETIMEDOUT``).
    ``time``: when, as :func:`time.time`; ``monotonic``: the same as
    :func:`time.monotonic`. ``name``: the lock's name (bytes), or
    None for an event about no lock; ``owner``: the hold's owner string;
    ``node``: the server concerned (``"host:port"``), or ``""``.
    ``status``: the status name it reports (``"HL_ELOST"``, ``"HL_EIO"``,
    ``"HL_OK"``, ``"HL_EREDIS"``); ``message``: a sentence for a log. Never a
    password.
    """

    type: str
    time: float
    monotonic: float
    name: Optional[bytes]
    owner: str
    node: str
    status: str
    message: str

    def __str__(self) -> str:
        return self.message


def _s(p: Any) -> str:
    return str(ffi.string(p).decode("utf-8", "replace")) if p != NULL else ""


def _event(e: Any) -> Event:
    n = ffi.new("size_t *")
    name = lib.hl_event_lock_name(n, e)
    return Event(
        type=_s(lib.hl_event_type_name(lib.hl_event_type(e))),
        time=lib.hl_event_time_ms(e) / 1000.0,
        monotonic=lib.hl_event_monotonic_ms(e) / 1000.0,
        name=None if name == NULL else bytes(ffi.buffer(name, n[0])),
        owner=_s(lib.hl_event_owner(e)),
        node=_s(lib.hl_event_node(e)),
        status=status_name(lib.hl_event_status(e)),
        message=_s(lib.hl_event_message(e)),
    )


def stats(ptr: Any) -> Tuple[int, Optional[Stats], str]:
    """The client's counters: (status, Stats or None, detail)."""
    s = ffi.new("hl_client_stats *")
    s.version = lib.HL_CLIENT_STATS_VERSION
    rc = lib.hl_client_stats_get(s, ptr)
    if rc:
        return rc, None, last_detail()
    return 0, Stats(
        acquisitions=int(s.acquisitions),
        acquire_waits=int(s.acquire_waits),
        wait_time=int(s.wait_time_ms) / 1000.0,
        releases=int(s.releases),
        renewals=int(s.renewals),
        renewal_failures=int(s.renewal_failures),
        losses=int(s.losses),
        reconnects=int(s.reconnects),
        failovers=int(s.failovers),
        events_dropped=int(s.events_dropped),
        waiting=int(s.waiting),
        wakeups_read_by_waiter=int(s.wakeups_read_by_waiter),
    ), ""


def next_event(ptr: Any) -> Tuple[int, Optional[Event], str]:
    """The oldest queued event: (status, Event or None, detail).
    HL_ECLOSED once the client is closed and every event was taken."""
    out = ffi.new("hl_event **")
    rc = lib.hl_client_next_event(out, ptr)
    if rc:
        return rc, None, last_detail()
    e = out[0]
    if e == NULL:
        return 0, None, ""
    try:
        return 0, _event(e), ""
    finally:
        lib.hl_event_free(e)


def log(ev: Event) -> None:
    """Log one event to the "hilock" logger, at its level."""
    try:
        logger.log(LEVELS.get(ev.type, logging.WARNING), "%s", ev.message,
                   extra={"hilock_event": ev})
    except Exception:  # a filter that raised: keep taking events
        traceback.print_exc(file=sys.stderr)


def drain_forever(ptr: Any, fd: int) -> None:
    """The body of the ``hilock-events`` thread: wait on the client's event
    fd, log what is queued, and end once the client is closed (the fd is
    then readable for good and the library answers HL_ECLOSED after the
    last event). Holds the C client, not the Python one, so a client that
    is dropped unclosed can still be collected (its finalizer closes it,
    which ends this thread)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        poller.poll()  # releases the GIL; EINTR is retried (PEP 475)
        while True:
            rc, ev, _ = next_event(ptr)
            if rc:
                return  # HL_ECLOSED (or a forked child's HL_EFORKED)
            if ev is None:
                break
            log(ev)
