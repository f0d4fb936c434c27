"""The rate limiter's Python idiom (Redisson ``RRateLimiter``): modes by
name, durations in seconds, waits that sleep the delay Redis answers, the
retry-after answer, and asyncio forms whose waits are libhilock tasks (no
thread). The algorithm and the lost-reply rule: ``docs/grid-rate-limiter.md``.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from . import _errors as E
from ._grid import _i64, _ms
from ._grid_gen import RateLimiterBase
from ._lowlevel import check, error_for, ffi, last_detail, lib, ms

__all__ = ["RateLimiter"]

_MODES = {"overall": 0, "per_client": 1}


def _mode(mode: Any) -> int:
    if mode not in _MODES:
        raise E.InvalidArgumentError("mode must be 'overall' or 'per_client', not %r" % (mode,))
    return _MODES[mode]


def _keep(keep_alive: Optional[float]) -> int:
    return -1 if keep_alive is None else _ms(keep_alive, "keep_alive")


def _timeout(timeout: Optional[float]) -> int:
    return -1 if timeout is None else ms(timeout, "timeout")


class RateLimiter(RateLimiterBase):
    """At most ``rate`` permits in any ``interval`` (seconds), for every
    client together (``"overall"``) or for each client apart
    (``"per_client"``). Shared with Redisson's ``RRateLimiter`` on the same
    name (no codec involved).

    A lost reply never takes permits twice: the acquire carries an id that
    the script recognises when it is sent again. No fairness across
    processes (as Redisson); this client's own waiters take turns.
    """

    def try_set_rate(self, mode: str, rate: int, interval: float,
                     keep_alive: Optional[float] = None) -> bool:
        """Set the rate if none is set: True if it was. ``keep_alive``
        (seconds, at least the interval) lets the keys expire after that
        long unused. Raises OutcomeUnknown when its reply is lost after it
        may have run."""
        out = ffi.new("int *")
        check(lib.hl_rate_limiter_try_set_rate(out, self._h, _mode(mode), _i64(rate, "rate"),
                                               _ms(interval, "interval"), _keep(keep_alive)))
        return bool(out[0])

    def set_rate(self, mode: str, rate: int, interval: float,
                 keep_alive: Optional[float] = None) -> None:
        """Set the rate, replacing any, and forget this client's grants of
        that mode (Redisson's ``setRate``)."""
        check(lib.hl_rate_limiter_set_rate(self._h, _mode(mode), _i64(rate, "rate"),
                                           _ms(interval, "interval"), _keep(keep_alive)))

    def try_acquire_ex(self, permits: int = 1, timeout: Optional[float] = 0) -> Tuple[bool, float]:
        """Take ``permits``, waiting at most ``timeout`` seconds (0: one
        attempt, None: as long as it takes): ``(taken, retry_after)``, where
        ``retry_after`` is 0 when taken, else the seconds until a permit may
        be free (go-redis's RetryAfter). A wait shorter than that ends at
        once."""
        from ._sync import _raise, _wait

        n = _i64(permits, "permits")
        wait_ms = _timeout(timeout)
        h = self._h
        retry = ffi.new("int64_t *")

        def blocking() -> Tuple[int, int, str]:
            ok = ffi.new("int *")
            rc = lib.hl_rate_limiter_try_acquire_ex(ok, retry, h, n, wait_ms, ffi.NULL)
            return rc, int(ok[0]) if rc == 0 else 0, last_detail() if rc else ""

        if wait_ms >= 0:  # bounded: the blocking call, which says retry_after
            res = blocking()
        else:  # in the main thread a task, so that Ctrl-C ends the wait
            res = _wait(wait_ms, blocking,
                        lambda out: lib.hl_rate_limiter_try_acquire_start(out, h, n, wait_ms),
                        lambda r: lib.hl_rate_limiter_release(h, n) if r[0] == 0 and r[1] else None)
        taken = bool(_raise(res))
        return taken, (0.0 if taken else retry[0] / 1000.0)

    def try_acquire(self, permits: int = 1, timeout: Optional[float] = 0) -> bool:
        """Take ``permits``, waiting at most ``timeout`` seconds (0: one
        attempt, None: as long as it takes): True if taken."""
        if timeout is not None:  # bounded: the blocking call, in one C call
            r = lib.hlpy_g_rate_limiter_try_acquire(self._h, _i64(permits, "permits"),
                                                    _timeout(timeout))
            if r < 0:
                check(r)
            return r == 1
        return self.try_acquire_ex(permits, timeout)[0]

    def acquire(self, permits: int = 1) -> None:
        """Take ``permits``, waiting as long as it takes."""
        self.try_acquire_ex(permits, None)

    def get_config(self) -> Dict[str, Any]:  # type: ignore[override]
        """The config: ``rate``, ``interval`` (seconds), ``mode``
        (``"overall"`` or ``"per_client"``), ``keep_alive`` (seconds, or
        None)."""
        rate, interval, mode, keep = super().get_config()
        return {"rate": rate, "interval": interval / 1000.0,
                "mode": "per_client" if mode == 1 else "overall",
                "keep_alive": keep / 1000.0 if keep else None}

    # -- asyncio -----------------------------------------------------------

    async def try_acquire_async(self, permits: int = 1, timeout: Optional[float] = 0) -> bool:
        """:meth:`try_acquire` for asyncio: the wait is a libhilock task
        (no thread) and the event loop never blocks. Cancelling the awaiting
        task cancels the wait and takes nothing."""
        n = _i64(permits, "permits")
        wait_ms = _timeout(timeout)
        h = self._h
        client = self._client
        res, cancelled = await client._await_task(
            lambda out: lib.hl_rate_limiter_try_acquire_start(out, h, n, wait_ms), cancellable=True)
        if cancelled is not None:
            if res[0] == 0 and res[1]:  # taken just before the cancel
                from ._client import _settle

                await _settle(client._run_short(lambda: (lib.hl_rate_limiter_release(h, n), 0, "")))
            raise cancelled
        rc, result, msg = res
        if rc != 0:
            raise error_for(rc, msg)
        return bool(result)

    async def acquire_async(self, permits: int = 1) -> None:
        """:meth:`acquire` for asyncio (no thread waits)."""
        await self.try_acquire_async(permits, None)
