"""pybench: the Python scenarios of `make bench`, for hilock and its peers.

    pybench.py URL LIB uncontended SECONDS
    pybench.py URL LIB paired SECONDS FLOORLIB
    pybench.py URL LIB contend SECONDS W MODE CS_US [SAMPLES_FILE]
    pybench.py URL LIB random SECONDS MAX_HOLD_MS [WAIT_MS]
    pybench.py URL LIB grid SECONDS FLOORLIB FLOORFILE KIND NAME OP N ARG...

grid: one operation of the data grid (the last OP group; the ones before
it set up, e.g. a bucket's set before its get) in 5 ms slices that
alternate with slices of its floor: FLOORFILE (the commands hilock sent
for it, bench/floor.h's hlfloor_cmds) replayed by the C floor in this
process; FLOORFILE "-": no floor (a peer of a kind hilock has not yet).
hilock's runs add slices of the crossing: the floor's round called once
per operation from Python (cffi), which is what a call into C costs
without hilock (cross_ops_per_s, cross_cpu_us).
LIB: hilock, or a peer of GRID_PEERS (redispy: raw redis-py; limits; pottery).
ARG: b:TEXT, x:HEX, i:N, f:X, m:MODE, s:SECONDS, - (None), as
bench/hlbench.c takes them.

paired: the uncontended pairs in 5 ms slices that alternate, in this
process, with slices of the raw-hiredis floor (FLOORLIB: libhlfloor, the C
floor of bench/floor.c, loaded with ctypes), after 300 ms of each to warm
up: both see the same load, as hlbench's paired scenario for C.

random: one worker (this process, one client) loops acquire with a wait
of WAIT_MS (20000 by default), hold a time drawn uniformly in
0..MAX_HOLD_MS, release, for SECONDS (an acquire begun before then is
waited for); bench/run.py starts W of these processes and merges their
waits and hold intervals (wall clock).

HLBENCH_WINDOW in the environment (contend, random): "#window start" once
every worker is ready and "#window end" once all are done, each waiting
for a line on stdin (bench/run.py reads INFO commandstats meanwhile), as
bench/hlbench.c does.

LIB: hilock (the cffi binding), redispy (redis-py's Lock), pyredislock
(python-redis-lock). MODE: threads or processes. Prints one JSON object,
the same shape as bench/hlbench.c's, so bench/run.py treats all alike.

Each library is used the way its documentation shows, with its defaults:
redis-py's Lock polls every 0.1 s while it waits (its `sleep` argument), and
python-redis-lock waits on a BLPOP signal list.
"""

import functools
import json
import multiprocessing as mp
import os
import sys
import threading
import time

LOCK_NAME = "bench:py:contend"


_client_mu = threading.Lock()
_client = {}


def per_process(new_client):
    """One client per process, shared by its threads, made on first use
    (so after fork in a child). The mutex matters: threads starting
    together would otherwise each make a client of their own."""
    with _client_mu:
        if _client.get("pid") != os.getpid():
            _client["client"] = new_client()
            _client["pid"] = os.getpid()
        return _client["client"]


def make_factory(url, lib):
    """Return make_lock(name) -> object with acquire() and release()."""
    if lib == "hilock":
        import hilock

        def make(name):
            return per_process(lambda: hilock.Client(url)).lock(name)

        return make
    if lib == "redispy":
        import redis

        def make(name):
            # No timeout: like a watchdog-held lock, no expiry while held.
            return per_process(lambda: redis.Redis.from_url(url)).lock(name)

        return make
    if lib == "pyredislock":
        import redis
        import redis_lock

        def make(name):
            # expire + auto_renewal: its equivalent of a watchdog.
            return redis_lock.Lock(
                per_process(lambda: redis.Redis.from_url(url)), name,
                expire=30, auto_renewal=True)

        return make
    raise SystemExit("unknown lib " + lib)


def uncontended(url, lib, seconds):
    make = make_factory(url, lib)
    lk = make("bench:py:uncontended:" + lib)
    n = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        lk.acquire()
        lk.release()
        n += 1
    el = time.perf_counter() - t0
    return {"scenario": "uncontended", "lang": "python", "lib": lib,
            "pairs_per_s": round(n / el, 1)}


SLICE_S = 0.005  # (1)'s slices: see bench/hlbench.c PAIRED_SLICE_NS
GRID_SLICE_S = 0.005  # the grid's slices: see bench/hlbench.c GRID_SLICE_NS
WARMUP_S = 0.3


def open_floor(url, floorlib, name):
    """The C floor (bench/floor.h) through ctypes: run(seconds) -> (pairs,
    elapsed seconds)."""
    import ctypes

    lib = ctypes.CDLL(floorlib)
    lib.hlfloor_open.restype = ctypes.c_void_p
    lib.hlfloor_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.c_size_t]
    lib.hlfloor_run.restype = ctypes.c_longlong
    lib.hlfloor_run.argtypes = [ctypes.c_void_p, ctypes.c_double,
                                ctypes.POINTER(ctypes.c_double)]
    lib.hlfloor_error.restype = ctypes.c_char_p
    lib.hlfloor_error.argtypes = [ctypes.c_void_p]
    err = ctypes.create_string_buffer(256)
    f = lib.hlfloor_open(url.encode(), name.encode(), err, len(err))
    if not f:
        raise SystemExit("pybench: floor: " + err.value.decode())
    elapsed = ctypes.c_double()

    def run(seconds):
        n = lib.hlfloor_run(f, seconds, ctypes.byref(elapsed))
        if n < 0:
            raise SystemExit("pybench: " + lib.hlfloor_error(f).decode())
        return n, elapsed.value
    return run


def paired(url, lib, seconds, floorlib):
    name = "bench:py:paired:" + lib
    floor = open_floor(url, floorlib, name)
    lk = make_factory(url, lib)(name)

    def pairs(secs):
        n = 0
        t0 = time.perf_counter()
        end = t0 + secs
        while True:
            t = time.perf_counter()
            if t >= end:
                return n, t - t0
            lk.acquire()
            lk.release()
            n += 1

    floor(WARMUP_S)
    pairs(WARMUP_S)
    nf = nh = 0
    tf = th = 0.0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        n, el = floor(SLICE_S)
        nf, tf = nf + n, tf + el
        n, el = pairs(SLICE_S)
        nh, th = nh + n, th + el
    return {"scenario": "paired", "lang": "python", "lib": lib,
            "floor_pairs_per_s": round(nf / tf, 1),
            "hilock_pairs_per_s": round(nh / th, 1)}


# ---- the data grid ---------------------------------------------------------
def grid_args(argv):
    """OP N ARG... groups -> [(op, [values])]."""
    # m: a rate limiter's mode by name; s: a duration in seconds
    conv = {"b": lambda t: t.encode(), "x": bytes.fromhex, "i": int,
            "f": float, "m": str, "s": float}
    ops, i = [], 0
    while i < len(argv):
        op, n = argv[i], int(argv[i + 1])
        vals = [None if a == "-" else conv[a[0]](a[2:])
                for a in argv[i + 2:i + 2 + n]]
        ops.append((op, vals))
        i += 2 + n
    return ops


# Scripts a redis-py user writes for what Redis has no command for (their
# own, not hilock's: a peer is used as its users use it).
CAS_BYTES = """if redis.call('get', KEYS[1]) == ARGV[1] then
redis.call('set', KEYS[1], ARGV[2]) return 1 end return 0"""
CAS_LONG = """local v = redis.call('get', KEYS[1]) or '0'
if v == ARGV[1] then redis.call('set', KEYS[1], ARGV[2]) return 1 end
return 0"""
RATE = 1000000  # permits per second: high enough never to deny here


def _limits(url, name, a):
    import limits
    import limits.storage
    import limits.strategies
    lim = limits.strategies.MovingWindowRateLimiter(
        limits.storage.RedisStorage(url))
    item = limits.RateLimitItemPerSecond(RATE)
    return lambda: lim.hit(item, name)


def _pottery(url, name, a, op):
    import pottery
    import redis
    bf = pottery.BloomFilter(redis=redis.Redis.from_url(url), key=name,
                             num_elements=100000, false_positives=0.01)
    v = a[0].decode()  # pottery keeps JSON-encodable values
    if op == "add":
        return lambda: bf.add(v)
    return lambda: v in bf


# (lib, "kind.op") -> make(url, name, args): a call of no arguments. A
# set-up (not the measured op) a peer has no entry for is skipped.
def _rp(url):
    import redis
    return per_process(lambda: redis.Redis.from_url(url))


GRID_PEERS = {
    ("redispy", "bucket.get"): lambda u, n, a: lambda r=_rp(u): r.get(n),
    ("redispy", "bucket.set"): lambda u, n, a: lambda r=_rp(u): r.set(n, a[0]),
    ("redispy", "bucket.compare_and_set"): lambda u, n, a: (
        lambda s=_rp(u).register_script(CAS_BYTES): s(keys=[n], args=a)),
    ("redispy", "atomic_long.get"): lambda u, n, a: (
        lambda r=_rp(u): int(r.get(n) or 0)),
    ("redispy", "atomic_long.set"): lambda u, n, a: lambda r=_rp(u): r.set(n, a[0]),
    ("redispy", "atomic_long.increment_and_get"): lambda u, n, a: (
        lambda r=_rp(u): r.incr(n)),
    ("redispy", "atomic_long.compare_and_set"): lambda u, n, a: (
        lambda s=_rp(u).register_script(CAS_LONG): s(keys=[n], args=a)),
    ("redispy", "atomic_double.add_and_get"): lambda u, n, a: (
        lambda r=_rp(u): r.incrbyfloat(n, a[0])),
    ("limits", "rate_limiter.try_acquire"): _limits,
    ("pottery", "bloom_filter.add"): lambda u, n, a: _pottery(u, n, a, "add"),
    ("pottery", "bloom_filter.contains"): lambda u, n, a: _pottery(
        u, n, a, "contains"),
}
# the collections' peers (bench/grid_coll.py, --only grid-coll)
GRID_PEERS.update(__import__("grid_coll_peers").peers(_rp))


def open_cmds_floor(floorlib, path, url):
    """The grid's C floor (hlfloor_cmds) through ctypes: run(seconds) ->
    (rounds, elapsed seconds)."""
    import ctypes

    lib = ctypes.CDLL(floorlib)
    lib.hlfloor_cmds_open.restype = ctypes.c_void_p
    lib.hlfloor_cmds_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_char_p, ctypes.c_size_t]
    lib.hlfloor_cmds_run.restype = ctypes.c_longlong
    lib.hlfloor_cmds_run.argtypes = [ctypes.c_void_p, ctypes.c_double,
                                     ctypes.POINTER(ctypes.c_double)]
    lib.hlfloor_cmds_error.restype = ctypes.c_char_p
    lib.hlfloor_cmds_error.argtypes = [ctypes.c_void_p]
    err = ctypes.create_string_buffer(256)
    f = lib.hlfloor_cmds_open(url.encode(), path.encode(), err, len(err))
    if not f:
        raise SystemExit("pybench: floor: " + err.value.decode())
    elapsed = ctypes.c_double()

    def run(seconds):
        n = lib.hlfloor_cmds_run(f, seconds, ctypes.byref(elapsed))
        if n < 0:
            raise SystemExit("pybench: " + lib.hlfloor_cmds_error(f).decode())
        return n, elapsed.value
    return run


def open_cmds_cross(floorlib, path, url):
    """The crossing: the grid's floor (hlfloor_cmds) on a connection of
    its own, one call from Python a round, through cffi as the binding
    calls C (ABI mode: no compiler needed): what calling C costs each
    operation, without hilock. Returns the call of one round."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef("void *hlfloor_cmds_open(const char *, const char *, char *,"
             " size_t); int hlfloor_cmds_once(void *);"
             " const char *hlfloor_cmds_error(void *);")
    lib = ffi.dlopen(floorlib)
    err = ffi.new("char[]", 256)
    f = lib.hlfloor_cmds_open(url.encode(), path.encode(), err, 256)
    if f == ffi.NULL:
        raise SystemExit("pybench: floor: " + ffi.string(err).decode())
    once = lib.hlfloor_cmds_once

    def round_():
        if once(f):
            raise SystemExit("pybench: " + ffi.string(
                lib.hlfloor_cmds_error(f)).decode())
    return round_


def grid(url, lib, seconds, floorlib, floorfile, kind, name, argv):
    ops = grid_args(argv)
    if lib == "hilock":
        import hilock
        obj = getattr(hilock.Client(url), kind)(name)
        for op, a in ops[:-1]:
            getattr(obj, op)(*a)
        op, a = ops[-1]
        # the bound method itself, or with its arguments bound by
        # functools.partial (C): no frame of the harness's own around
        # hilock's call, as a program calls it (a lambda cost about 0.02x)
        fn, a = getattr(obj, op), tuple(a)
        call = functools.partial(fn, *a) if a else fn
    else:
        for op, a in ops[:-1]:
            make = GRID_PEERS.get((lib, kind + "." + op))
            if make:
                make(url, name, a)()
        op, a = ops[-1]
        make = GRID_PEERS.get((lib, kind + "." + op))
        if not make:
            raise SystemExit("pybench: %s has no %s.%s" % (lib, kind, op))
        call = make(url, name, a)

    def ops_for(secs, call):
        n = 0
        t0 = time.perf_counter()
        end = t0 + secs
        while True:
            t = time.perf_counter()
            if t >= end:
                return n, t - t0
            call()
            n += 1

    floor = open_cmds_floor(floorlib, floorfile, url) \
        if floorfile != "-" else None
    # hilock's runs also time the crossing: the floor's round called
    # once per operation from Python (open_cmds_cross), in slices of
    # its own.
    cross = open_cmds_cross(floorlib, floorfile, url) \
        if floor and lib == "hilock" else None
    slices = [("h", call)] + ([("x", cross)] if cross else [])
    if floor:
        floor(WARMUP_S)
    for _, each in slices:
        ops_for(WARMUP_S, each)
    nf, tf, cf = 0, 0.0, 0.0  # cf: the process's CPU time in them
    got = {k: [0, 0.0, 0.0] for k, _ in slices}  # ops, seconds, CPU
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        if floor:
            c0 = time.process_time()
            n, el = floor(GRID_SLICE_S)
            nf, tf = nf + n, tf + el
            cf += time.process_time() - c0
        for k, each in slices:
            c0 = time.process_time()
            n, el = ops_for(GRID_SLICE_S, each)
            g = got[k]
            g[0], g[1] = g[0] + n, g[1] + el
            g[2] += time.process_time() - c0
    nh, th, ch = got["h"]
    res = {"scenario": "grid", "lang": "python", "lib": lib, "kind": kind,
           "op": op, "ops_per_s": round(nh / th, 1),
           "cpu_us": round(ch / nh * 1e6, 2)}
    if floor:
        res["floor_ops_per_s"] = round(nf / tf, 1)
        res["floor_cpu_us"] = round(cf / nf * 1e6, 2)
    if cross:
        nx, tx, cx = got["x"]
        res["cross_ops_per_s"] = round(nx / tx, 1)
        res["cross_cpu_us"] = round(cx / nx * 1e6, 2)
    return res


def worker(*args):
    out = args[-1]
    try:
        work(*args)
    except BaseException as e:  # report it, or the main side waits in vain
        out.put(("error", "%s: %s" % (type(e).__name__, e)))
        raise


def work(url, lib, start, end_at, cs_s, last_release, holders, out):
    make = make_factory(url, lib)
    lk = make(LOCK_NAME)
    waits, handoffs, count, cs_sum = [], [], 0, 0
    violations = 0
    start.wait()  # all ready: the main thread sets end_at
    start.wait()  # go
    while True:
        t0 = time.monotonic_ns()
        if t0 >= end_at.value:
            break
        lk.acquire()
        t1 = time.monotonic_ns()
        holders.value += 1  # only the holder writes it
        if holders.value != 1:
            violations += 1
        rel = last_release.value
        waits.append((t1 - t0) // 1000)
        if rel > t0:
            handoffs.append((t1 - rel) // 1000)
        time.sleep(cs_s)
        cs_sum += time.monotonic_ns() - t1
        count += 1
        holders.value -= 1
        last_release.value = time.monotonic_ns()
        lk.release()
    out.put((count, waits, handoffs, cs_sum, violations))


def window_mark(what):
    """See the module's docstring: the measured window for run.py."""
    if os.environ.get("HLBENCH_WINDOW"):
        print("#window " + what, flush=True)
        if not sys.stdin.readline():
            raise SystemExit("pybench: window: stdin closed")


def pct(v, p):
    if not v:
        return 0
    return v[int(p * (len(v) - 1) + 0.5)]


def contend(url, lib, seconds, workers, mode, cs_us, samples):
    if mode == "processes":
        ctx = mp.get_context("fork")
        start = ctx.Barrier(workers + 1)
        last_release = ctx.Value("q", 0, lock=False)
        holders = ctx.Value("i", 0, lock=False)
        end_at = ctx.Value("q", 2**62, lock=False)
        out = ctx.Queue()
        procs = [ctx.Process(target=worker,
                             args=(url, lib, start, end_at, cs_us / 1e6,
                                   last_release, holders, out))
                 for _ in range(workers)]
    else:
        class Box:
            def __init__(self, v):
                self.value = v
        import queue
        start = threading.Barrier(workers + 1)
        last_release, holders, end_at = Box(0), Box(0), Box(2**62)
        out = queue.Queue()
        procs = [threading.Thread(target=worker,
                                  args=(url, lib, start, end_at, cs_us / 1e6,
                                        last_release, holders, out))
                 for _ in range(workers)]
    for p in procs:
        p.start()
    start.wait(timeout=60)
    window_mark("start")
    t0 = time.monotonic_ns()
    end_at.value = t0 + int(seconds * 1e9)
    start.wait(timeout=60)
    results = [out.get(timeout=seconds + 60) for _ in procs]
    errors = [r[1] for r in results if r[0] == "error"]
    if errors:
        raise SystemExit("pybench: a worker failed: " + errors[0])
    for p in procs:
        p.join(timeout=60)
    el = (time.monotonic_ns() - t0) / 1e9
    window_mark("end")
    counts = [r[0] for r in results]
    waits = sorted(w for r in results for w in r[1])
    hand = sorted(h for r in results for h in r[2])
    total = sum(counts)
    if samples:
        with open(samples, "w") as f:
            f.write("\n".join(str(w) for w in waits) + "\n")
    return {"scenario": "contend", "lang": "python", "lib": lib, "mode": mode,
            "workers": workers, "cs_us": cs_us,
            "acq_per_s": round(total / el, 1),
            "cs_mean_us": round(sum(r[3] for r in results) / 1000 / max(total, 1), 1),
            "wait_p50_us": pct(waits, 0.5), "wait_p99_us": pct(waits, 0.99),
            "wait_max_us": waits[-1] if waits else 0,
            "handoff_p50_us": pct(hand, 0.5), "handoff_p99_us": pct(hand, 0.99),
            "fair_min": min(counts), "fair_max": max(counts),
            "violations": sum(r[4] for r in results),
            "acquisitions": total}


def acquire_within(lib, lk, wait_s):
    """One acquire with a wait of wait_s, as each library's documentation
    shows it; True if acquired."""
    if lib == "redispy":
        return lk.acquire(blocking=True, blocking_timeout=wait_s)
    if lib == "pyredislock":
        return lk.acquire(blocking=True, timeout=wait_s)
    return lk.acquire(timeout=wait_s)  # hilock


def random_holds(url, lib, seconds, max_hold_ms, wait_ms):
    """One worker of the random-holds scenario (see the docstring)."""
    import random
    lk = make_factory(url, lib)("bench:py:random")
    acq = timeouts = 0
    waits, holds = [], []
    window_mark("start")
    t_start = time.monotonic()
    end = t_start + seconds
    while True:
        t0 = time.monotonic()
        if t0 >= end:
            break
        got = acquire_within(lib, lk, wait_ms / 1000)
        waits.append(int((time.monotonic() - t0) * 1e6))
        if not got:
            timeouts += 1
            continue
        a = time.time_ns() // 1000
        time.sleep(random.uniform(0, max_hold_ms / 1000))
        acq += 1
        holds.append([a, time.time_ns() // 1000])
        lk.release()
    el = time.monotonic() - t_start
    window_mark("end")
    return {"scenario": "random", "lang": "python", "lib": lib,
            "mode": "processes", "workers": 1, "max_hold_ms": max_hold_ms,
            "wait_ms": wait_ms, "elapsed_s": round(el, 3), "violations": 0,
            "per_worker": [{"acq": acq, "timeouts": timeouts,
                            "waits_us": waits, "holds_us": holds}]}


def main(argv):
    url, lib, scenario = argv[1], argv[2], argv[3]
    if scenario == "uncontended":
        res = uncontended(url, lib, float(argv[4]))
    elif scenario == "random":
        res = random_holds(url, lib, float(argv[4]), int(argv[5]),
                           int(argv[6]) if len(argv) > 6 else 20000)
    elif scenario == "paired":
        res = paired(url, lib, float(argv[4]), argv[5])
    elif scenario == "contend":
        res = contend(url, lib, float(argv[4]), int(argv[5]), argv[6],
                      int(argv[7]), argv[8] if len(argv) > 8 else None)
    elif scenario == "grid":
        res = grid(url, lib, float(argv[4]), argv[5], argv[6], argv[7],
                   argv[8], argv[9:])
    else:
        raise SystemExit("unknown scenario " + scenario)
    print(json.dumps(res), flush=True)
    return 1 if res.get("violations") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
