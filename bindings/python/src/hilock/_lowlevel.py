"""The thin layer over the generated cffi module: status codes to exceptions.

``hilock._hilock`` is the out-of-line API-mode module generated from
``hilock.h``. Everything here is a 1:1 helper; the Pythonic API lives in
:mod:`hilock._client`. cffi releases the GIL around every C call, so a
blocking call never stalls other Python threads.
"""

from __future__ import annotations

import math
from typing import Any, Dict, NoReturn, Optional, Type

from . import _errors as E
from ._hilock import ffi, lib

__all__ = ["ffi", "lib", "check", "error_for", "last_detail", "ms", "NULL"]

NULL = ffi.NULL

_CLASSES: Dict[int, Type[E.HilockError]] = {
    lib.HL_EINVAL: E.InvalidArgumentError,
    lib.HL_ETIMEDOUT: E.LockTimeout,
    lib.HL_EINTERRUPTED: E.Interrupted,
    lib.HL_ENOTHELD: E.NotHeldError,
    lib.HL_ELOST: E.LockLost,
    lib.HL_ECLOSED: E.ClientClosedError,
    lib.HL_EFORKED: E.ForkedError,
    lib.HL_ECONNECT: E.ConnectionError,
    lib.HL_EAUTH: E.AuthenticationError,
    lib.HL_EIO: E.ConnectionError,
    lib.HL_EREDIS: E.RedisError,
    lib.HL_EPROTOCOL: E.RedisError,
    lib.HL_ENOMEM: E.OutOfMemory,
    lib.HL_EINDOUBT: E.OutcomeUnknown,
    lib.HL_EDEADLK: E.DeadlockError,
}


def _s(p: Any) -> str:
    return str(ffi.string(p).decode("utf-8", "replace")) if p != ffi.NULL else ""


def last_detail() -> str:
    """The calling thread's detail of its last failed hilock call."""
    return _s(lib.hl_error_last())


def status_name(code: int) -> str:
    return _s(lib.hl_status_name(code))


def status_str(code: int) -> str:
    return _s(lib.hl_status_str(code))


def error_for(code: int, detail: Optional[str] = None, cls: Optional[Type[E.HilockError]] = None,
              prefix: str = "") -> E.HilockError:
    """Build the exception for a status code (detail: the library's message)."""
    if detail is None:
        detail = last_detail()
    if cls is None:
        cls = _CLASSES.get(code, E.HilockError)
    message = status_str(code)
    if detail and detail != message:
        message = message + ": " + detail
    name = status_name(code)
    text = "%s%s (%s)" % (prefix, message, name)
    exc = cls(text)
    exc.code = code
    exc.status = name
    exc.detail = detail
    return exc


def check(rc: int) -> None:
    """Raise the exception for rc unless it is HL_OK. Call it right after the
    C call, on the same thread (the detail is thread-local)."""
    if rc != 0:
        raise error_for(rc)


def fail(rc: int, detail: str) -> NoReturn:
    raise error_for(rc, detail)


_MAX_MS = 1 << 40


def ms(seconds: float, what: str, *, allow_zero: bool = True) -> int:
    """Float seconds to int milliseconds, rounded up (a wait of 0.0001 s is
    still a wait). Rejects negatives, NaN and infinities."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError("%s must be a number of seconds, not %s" % (what, type(seconds).__name__))
    s = float(seconds)
    if math.isnan(s) or math.isinf(s):
        raise E.InvalidArgumentError("%s must be a finite number of seconds, not %r" % (what, seconds))
    if s < 0 or (s == 0 and not allow_zero):
        raise E.InvalidArgumentError("%s must be %s, not %r" % (what, "positive" if not allow_zero else "non-negative", seconds))
    v = int(math.ceil(s * 1000.0))
    if v == 0 and s > 0:
        v = 1
    if v > _MAX_MS:
        raise E.InvalidArgumentError("%s is too large: %r s" % (what, seconds))
    return v
