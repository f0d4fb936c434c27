"""cffi build script: the out-of-line API-mode module ``hilock._hilock``.

The declarations are generated from the public header at build time
(build_support.generate_cdef); there is no hand-kept copy. Linking is
decided in setup.py's build_ext (build_support.plan).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cffi import FFI  # noqa: E402

import build_support  # noqa: E402

_plan = build_support.plan()

# The binding's own helpers, compiled into the module beside the library's
# declarations: the hot path of Lock.acquire() in one call without an
# out-parameter to allocate and read back (a negative status, else 1 if
# acquired and 0 if not), and of Lock.release(). The one-argument forms (the
# watchdog's lease; waiting as long as it takes, or one attempt) are called
# without an argument tuple, so the hot path allocates no object that the
# cyclic garbage collector tracks.
HELPERS_CDEF = """
int hlpy_lock_try_acquire(hl_lock *lock, int64_t wait_ms, int64_t lease_ms);
int hlpy_lock_acquire_watchdog(hl_lock *lock);
int hlpy_lock_try_once_watchdog(hl_lock *lock);
int hlpy_lock_release(hl_lock *lock);
"""
HELPERS_SOURCE = """
static int hlpy_lock_try_acquire(hl_lock *lock, int64_t wait_ms,
                                 int64_t lease_ms)
{
        int acquired = 0;
        int rc = hl_lock_try_acquire(&acquired, lock, wait_ms, lease_ms, NULL);
        return rc != HL_OK ? rc : acquired != 0;
}

static int hlpy_lock_acquire_watchdog(hl_lock *lock)
{
        return hlpy_lock_try_acquire(lock, -1, -1);
}

static int hlpy_lock_try_once_watchdog(hl_lock *lock)
{
        return hlpy_lock_try_acquire(lock, 0, -1);
}

static int hlpy_lock_release(hl_lock *lock)
{
        return hl_lock_release(NULL, lock);
}
"""

ffibuilder = FFI()
ffibuilder.cdef(build_support.generate_cdef(_plan.header, _plan.include_dirs) + HELPERS_CDEF)
ffibuilder.set_source(
    "hilock._hilock",
    '#include "hilock.h"\n' + HELPERS_SOURCE,
    include_dirs=list(_plan.include_dirs),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
