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
int hlpy_lock_begin(hl_lock *lock, int64_t wait_ms, int64_t lease_ms);
int hlpy_lock_begin_watchdog(hl_lock *lock);
hl_task *hlpy_begun_task(void);
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

/* hl_lock_try_acquire_begin in one call: a negative status, 1 acquired,
 * 0 not, 2 a task to wait on (hlpy_begun_task() hands it over, once). */
static _Thread_local hl_task *hlpy_begun;

static int hlpy_lock_begin(hl_lock *lock, int64_t wait_ms, int64_t lease_ms)
{
        hl_task *t = NULL;
        int acquired = 0;
        int rc = hl_lock_try_acquire_begin(&t, &acquired, lock, wait_ms,
                                           lease_ms);
        if (rc != HL_OK)
                return rc;
        if (t) {
                hlpy_begun = t;
                return 2;
        }
        return acquired != 0;
}

static int hlpy_lock_begin_watchdog(hl_lock *lock)
{
        return hlpy_lock_begin(lock, -1, -1);
}

static hl_task *hlpy_begun_task(void)
{
        hl_task *t = hlpy_begun;
        hlpy_begun = NULL;
        return t;
}

static int hlpy_lock_release(hl_lock *lock)
{
        return hl_lock_release(NULL, lock);
}
"""

# The data grid's typed calls in one call each, without an out-parameter to
# allocate (ffi.new) and read back: hlpy_g_<kind>_<op>(obj, args...) for
# every hl_<kind>_<op>(T *out, hl_object *obj, args...) of the header
# (tools/gridgen.py writes the Python side in _grid_gen.py). A bool comes
# back as 0/1, or the negative status; an i64 or a double as itself, with
# INT64_MIN or NaN telling the caller to read the status
# (hlpy_grid_status(): the calling thread's last helper call's, HL_OK if the
# value is genuine); bytes as their length (-1: nil; -2: an error, see
# hlpy_grid_status; -3: not bytes, read hlpy_held_value()), the value held
# for the calling thread until its next helper call, so the binding copies
# the bytes out (hlpy_held_bytes(n)) with no call to free them; a thread's
# last value is freed when it ends, a big one by hlpy_held_drop().
GRID_HELPERS_SOURCE = """
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local int hlpy_grid_rc;
static pthread_key_t hlpy_held_key;
static pthread_once_t hlpy_held_once = PTHREAD_ONCE_INIT;
static int hlpy_held_ok;

static void hlpy_held_free(void *v)
{
        hl_value_free((hl_value *)v);
}

static void hlpy_held_init(void)
{
        hlpy_held_ok = pthread_key_create(&hlpy_held_key, hlpy_held_free) == 0;
}

static int hlpy_grid_status(void)
{
        return hlpy_grid_rc;
}

static void hlpy_hold(hl_value *v)
{
        pthread_once(&hlpy_held_once, hlpy_held_init);
        if (!hlpy_held_ok) {
                hl_value_free(v); /* no key: cannot hold; never expected */
                return;
        }
        hl_value_free((hl_value *)pthread_getspecific(hlpy_held_key));
        pthread_setspecific(hlpy_held_key, v);
}

static const hl_value *hlpy_held_value(void)
{
        pthread_once(&hlpy_held_once, hlpy_held_init);
        return hlpy_held_ok ? (const hl_value *)pthread_getspecific(hlpy_held_key)
                            : NULL;
}

/* The held bytes if they are the n the caller was told (else NULL: had
 * another helper call run on this thread in between, e.g. from a
 * finalizer, the caller must not read n bytes of another value). */
static const char *hlpy_held_bytes(int64_t n)
{
        size_t len = 0;
        const char *p = hl_value_bytes(hlpy_held_value(), &len);
        return p && n >= 0 && (uint64_t)n == (uint64_t)len ? p : NULL;
}

static void hlpy_held_drop(void)
{
        hlpy_hold(NULL);
}

/* An array's bytes gathered into buf (hl_value_gather, cap its total),
 * with ends[i] where element i ends in buf (the running sum of their
 * lengths, which the binding would otherwise add up element by element):
 * 1; 0 when an element is not bytes (ends then holds hl_value_gather's
 * lengths, that element's (size_t)-1). */
static int hlpy_gather_ends(const hl_value *v, size_t *ends, char *buf,
                            size_t cap)
{
        size_t i, n = hl_value_len(v), at = 0;
        hl_value_gather(v, ends, buf, cap);
        for (i = 0; i < n; i++)
                if (ends[i] == (size_t)-1)
                        return 0;
        for (i = 0; i < n; i++)
                ends[i] = at += ends[i];
        return 1;
}

/* The generic call (hl_object_call) with its n arguments packed, so the
 * binding makes no cdata per argument: types[i] an HL_ARG_*; an
 * HL_ARG_INT's value is ints[i], an HL_ARG_DOUBLE's dbls[i], an
 * HL_ARG_BYTES' the next lens[i] bytes of blob. The result as a bytes
 * helper's (hlpy_grid_value). */
static int64_t hlpy_grid_value(int rc, hl_value *v);

static int64_t hlpy_call(hl_object *obj, int op, size_t n, const char *types,
                         const int64_t *ints, const double *dbls,
                         const char *blob, const size_t *lens)
{
        hl_arg small[16], *a = small;
        hl_value *v = NULL;
        size_t i, off = 0;
        int rc;
        if (n > 16 && !(a = malloc(n * sizeof(*a)))) {
                hlpy_grid_rc = HL_ENOMEM;
                return -2;
        }
        for (i = 0; i < n; i++) {
                memset(&a[i], 0, sizeof(a[i]));
                a[i].type = (unsigned char)types[i];
                if (a[i].type == HL_ARG_INT) {
                        a[i].i = ints[i];
                } else if (a[i].type == HL_ARG_DOUBLE) {
                        a[i].d = dbls[i];
                } else if (a[i].type == HL_ARG_BYTES) {
                        a[i].bytes = blob + off;
                        a[i].len = lens[i];
                        off += lens[i];
                }
        }
        rc = hl_object_call(&v, obj, op, n ? a : NULL, n);
        if (a != small)
                free(a);
        return hlpy_grid_value(rc, v);
}

static int hlpy_grid_bool(int rc, int v)
{
        return rc != HL_OK ? rc : v != 0;
}

static int64_t hlpy_grid_i64(int rc, int64_t v)
{
        hlpy_grid_rc = rc;
        return rc != HL_OK ? INT64_MIN : v;
}

static double hlpy_grid_f64(int rc, double v)
{
        hlpy_grid_rc = rc;
        return rc != HL_OK ? NAN : v;
}

static int64_t hlpy_grid_value(int rc, hl_value *v)
{
        size_t n = 0;
        hlpy_grid_rc = rc;
        if (rc != HL_OK) {
                hl_value_free(v);
                hlpy_hold(NULL);
                return -2;
        }
        hlpy_hold(v);
        switch (hl_value_type(v)) {
        case HL_VALUE_NIL:
                return -1;
        case HL_VALUE_BYTES:
                hl_value_bytes(v, &n);
                return (int64_t)n;
        default:
                return -3;
        }
}
"""
GRID_HELPERS_BASE_CDEF = """
int hlpy_grid_status(void);
int64_t hlpy_call(hl_object *obj, int op, size_t n, const char *types, const int64_t *ints,
                  const double *dbls, const char *blob, const size_t *lens);
const hl_value *hlpy_held_value(void);
int hlpy_gather_ends(const hl_value *v, size_t *ends, char *buf, size_t cap);
const char *hlpy_held_bytes(int64_t n);
void hlpy_held_drop(void);
"""
# out type -> (helper's C result type, local, what wraps the status)
# (the local's name is no argument's: the arguments are the spec's names)
_GRID_OUT = {
    "int": ("int", "int hlpy_v_ = 0", "hlpy_grid_bool"),
    "int64_t": ("int64_t", "int64_t hlpy_v_ = 0", "hlpy_grid_i64"),
    "double": ("double", "double hlpy_v_ = 0", "hlpy_grid_f64"),
    "hl_value *": ("int64_t", "hl_value *hlpy_v_ = NULL", "hlpy_grid_value"),
}


def grid_helpers(cdef):
    """(cdef, source) of the typed calls' helpers, from the declarations."""
    import re

    decls, defs = [GRID_HELPERS_BASE_CDEF], [GRID_HELPERS_SOURCE]
    pat = re.compile(r"^\s*int (hl_(\w+))\((int|int64_t|double|hl_value \*) ?\*out, "
                     r"hl_object \*obj((?:, [^()]*)?)\);\s*$", re.M)
    for m in pat.finditer(cdef):
        fn, name, out, rest = m.groups()
        if name.startswith("object_"):
            continue
        ret, local, wrap = _GRID_OUT[out]
        params = rest[2:] if rest else ""
        names = [re.findall(r"\w+", p)[-1] for p in params.split(", ")] if params else []
        sig = "%s hlpy_g_%s(hl_object *obj%s)" % (ret, name, rest)
        decls.append(sig + ";\n")
        defs.append("static %s\n{\n        %s;\n        int hlpy_rc_ = %s(&hlpy_v_, obj%s);\n"
                    "        return %s(hlpy_rc_, hlpy_v_);\n}\n" % (
                        sig, local, fn, "".join(", " + n for n in names), wrap))
    return "".join(decls), "\n".join(defs)


_cdef = build_support.generate_cdef(_plan.header, _plan.include_dirs)
_grid_cdef, _grid_source = grid_helpers(_cdef)

ffibuilder = FFI()
ffibuilder.cdef(_cdef + HELPERS_CDEF + _grid_cdef)
ffibuilder.set_source(
    "hilock._hilock",
    '#include "hilock.h"\n' + HELPERS_SOURCE + _grid_source,
    include_dirs=list(_plan.include_dirs),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
