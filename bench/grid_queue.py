"""The queues (`bench/run.py --only grid-queue`): a blocking queue's
hand-off latency from offer to take and its throughput with 1 and 16
consumers, and a delayed queue's due-time accuracy, through hilock (C,
Python, Go) beside the floor (raw RPUSH + BLPOP through hiredis in C,
bench/queue.c), raw redis-py and go-redis, Redisson's RBlockingQueue and
RDelayedQueue, and the job queues GRID-USERS names: rq, arq, asynq.

The drivers: bench/queue.c (hlqueue: the floor and hilock C),
bench/py/queue_bench.py (redis-py, rq, arq, hilock Python),
bench/go/queue (go-redis, asynq, hilock Go; a module of its own),
bench/java QueueBench (Redisson). A hilock row whose kind is not in the
installed binding yet says "not built". The section goes at the end of
BENCHMARKS.md between its own markers.
"""
import os
import shutil
import subprocess
import sys
import time

QUEUE_BEGIN = "<!-- grid-queue:begin -->"
QUEUE_END = "<!-- grid-queue:end -->"
HERE = os.path.dirname(os.path.abspath(__file__))
# The Python peers, pinned, in a venv of their own (arq pins redis-py
# below 6, which the other benches' venv-bench must not get).
PY_PEERS = ["rq==2.12.0", "arq==0.28.0", "redis==5.3.1"]
GAP_MS = 1.0                 # the producer's pause before each offer
DELAYS_MS = (200, 1000)
SPACING_MS = 50              # between two delayed offers
CONSUMERS = (1, 16)

# (key, label, driver, lib, how the consumers run)
ROWS = [
    ("floor", "floor: raw hiredis RPUSH + BLPOP (C)", "c", "floor",
     "threads, a connection each"),
    ("hilock-c", "hilock C", "c", "hilock", "threads, a client each"),
    ("hilock-python", "hilock Python", "pyhl", "hilock",
     "processes, a client each"),
    ("hilock-go", "hilock Go", "go", "hilock", "goroutines, a client each"),
    ("redispy", "redis-py (raw RPUSH + BLPOP)", "py", "redispy",
     "processes, a connection each"),
    ("goredis", "go-redis (raw RPUSH + BLPOP)", "go", "goredis",
     "goroutines, a connection each"),
    ("redisson", "Redisson RBlockingQueue", "java", None,
     "threads of one JVM, one RedissonClient"),
    ("rq", "rq (job queue)", "py", "rq",
     "worker processes (rq's Worker: a work horse forked per job)"),
    ("arq", "arq (job queue)", "py", "arq",
     "one worker process, max_jobs = consumers; it polls every 0.5 s "
     "(poll_delay)"),
    ("asynq", "asynq (job queue)", "go", "asynq",
     "one server, Concurrency = consumers; an idle processor checks every "
     "1 s (TaskCheckInterval)"),
]
DELAYED_ROWS = [
    ("hilock-python", "hilock Python delayed_queue", "pyhl", "hilock",
     "offer(v, delay_seconds); the producer's process moves due elements "
     "(its consumer: a raw BLPOP of the destination)"),
    ("redisson", "Redisson RDelayedQueue", "java", None,
     "the JVM holding the RDelayedQueue moves due elements"),
    ("rq", "rq enqueue_in", "py", "rq",
     "a worker with its scheduler (rq worker --with-scheduler)"),
    ("arq", "arq _defer_by", "py", "arq",
     "a worker, max_jobs 10 and poll_delay 0.5 s (its defaults)"),
    ("asynq", "asynq ProcessIn", "go", "asynq",
     "the server's forwarder (DelayedTaskCheckInterval, 5 s by default)"),
]


def sizes(key, quick):
    """(latency hand-offs, {consumers: drain elements}) of a row."""
    if key == "rq":
        return (30, {1: 100, 16: 200}) if quick else (100, {1: 300, 16: 500})
    if key == "arq":
        # max_jobs=1: one job a poll (0.5 s)
        return (10, {1: 10, 16: 200}) if quick else (30, {1: 20, 16: 500})
    if key == "asynq":
        return (10, {1: 500, 16: 1000}) if quick else \
            (30, {1: 2000, 16: 5000})
    if key in ("floor", "hilock-c", "goredis", "hilock-go"):
        return (200, {1: 20000, 16: 20000}) if quick else \
            (1000, {1: 50000, 16: 50000})
    return (200, {1: 10000, 16: 10000}) if quick else \
        (1000, {1: 20000, 16: 20000})


class Drivers:
    def __init__(self, rp, pieces, build):
        self.rp, self.pieces, self.build = rp, pieces, build
        self.why = {}
        self.cache = {}

    def get(self, driver):
        if driver in self.why:
            raise self.rp.NotMeasured(self.why[driver])
        if driver not in self.cache:
            try:
                self.cache[driver] = getattr(self, "_" + driver)()
            except self.rp.NotMeasured as e:
                self.why[driver] = str(e)
                raise
        return self.cache[driver]

    def _c(self):
        p = os.path.join(self.build, "bench", "hlqueue")
        if not os.access(p, os.X_OK):
            raise self.rp.NotMeasured("%s is not built" % p)
        return [p]

    def _py(self):
        venv = os.path.join(self.build, "venv-bench-queue")
        py = os.path.join(venv, "bin", "python")
        if not os.path.exists(py):
            self.rp.sh([sys.executable, "-m", "venv", venv])
        probe = subprocess.run([py, "-c", "import rq, arq, redis"],
                               capture_output=True)
        if probe.returncode != 0:
            self.rp.sh([py, "-m", "pip", "install", "-q"] + PY_PEERS,
                       timeout=900)
        return [py, os.path.join(HERE, "py", "queue_bench.py")]

    def _pyhl(self):
        py = self.pieces.python_hilock()[0]
        return [py, os.path.join(HERE, "py", "queue_bench.py")]

    def _go(self):
        gobin = shutil.which("go")
        if not gobin:
            raise self.rp.NotMeasured("no go toolchain")
        out = os.path.join(self.build, "bench-go", "queue")
        env = dict(os.environ)
        env.update(GOTOOLCHAIN="local", CGO_ENABLED="1",
                   GOFLAGS="-buildvcs=false",
                   CGO_CFLAGS="-g -O2 -DHILOCK_GO_BUILD=" + self.build,
                   PKG_CONFIG_PATH=os.path.join(self.build, "pkgconfig"))
        tags = "hilock_system"
        if go_has_blocking_queue():
            tags += ",hilock_bq"
        self.rp.sh([gobin, "build", "-tags", tags, "-o", out, "."],
                   cwd=os.path.join(HERE, "go", "queue"), env=env,
                   timeout=900)
        return [out]

    def _java(self):
        return self.pieces.java()


def go_has_blocking_queue():
    d = os.path.join(os.path.dirname(HERE), "bindings", "go")
    try:
        for f in os.listdir(d):
            if f.endswith(".go") and "func (c *Client) BlockingQueue(" in \
                    open(os.path.join(d, f)).read():
                return True
    except OSError:
        pass
    return False


def command(drv, driver, lib, scen, url, name, args):
    a = [str(x) for x in args]
    base = drv.get(driver)
    if driver == "c":
        return base + [url, scen, lib, name] + a
    if driver in ("py", "pyhl"):
        return base + [url, lib, scen, name] + a
    if driver == "go":
        return base + [url, lib, scen, name] + a
    return base + [url, "queue-" + scen, name] + a


def median(runs, key, high):
    runs = sorted((r for r in runs if r), key=lambda r: r[key],
                  reverse=high)
    return runs[len(runs) // 2] if runs else None


def run(R, rp, pieces, build, url, quick, attempt):
    Q = R["grid_queue"] = {"started": time.time(),
                           "load_start": os.getloadavg(), "rows": {},
                           "delayed": {}, "quick": quick,
                           "reps": 1 if quick else 3}
    reps = Q["reps"]
    drv = Drivers(rp, pieces, build)
    for driver in ("c", "py", "pyhl", "go", "java"):
        try:
            drv.get(driver)
        except rp.NotMeasured as e:
            rp.log("not measured: grid-queue driver", driver, "-", e)

    def one(key, driver, lib, scen, name, args, timeout, mkey, high):
        def fn():
            runs = []
            for _ in range(reps):
                runs.append(rp.run_json(command(
                    drv, driver, lib, scen, url, name, args), timeout))
            return median(runs, mkey, high)
        try:
            return attempt("grid-queue/%s/%s" % (key, scen), fn)
        except rp.NotMeasured as e:  # a driver that could not be made
            R["notes"]["grid-queue/%s/%s" % (key, scen)] = str(e)
            return None

    for key, label, driver, lib, how in ROWS:
        n, drain = sizes(key, quick)
        name = "benchq%s" % key.replace("-", "")
        row = Q["rows"][key] = {}
        row["latency"] = one(key, driver, lib, "latency", name,
                             [n, GAP_MS], 60 + n * 3, "p50_us", False)
        for c in CONSUMERS:
            row["drain%d" % c] = one(key, driver, lib, "drain", name,
                                     [drain[c], c], 900, "elements_per_s",
                                     True)
        rp.log("grid-queue %s:" % key, row)
    n = 15 if quick else 40
    for key, label, driver, lib, how in DELAYED_ROWS:
        name = "benchdq%s" % key.replace("-", "")
        row = Q["delayed"][key] = {}
        for d in DELAYS_MS:
            row[str(d)] = one(key, driver, lib, "delayed", name,
                              [n, d, SPACING_MS],
                              120 + n * SPACING_MS / 1000.0, "p50_ms",
                              False)
        rp.log("grid-queue delayed %s:" % key, row)
    Q["load_end"] = os.getloadavg()
    Q["duration_s"] = round(time.time() - Q["started"])
    Q["notes"] = {k: v for k, v in R["notes"].items()
                  if k.startswith("grid-queue/")}


def _why(Q, key, scen):
    w = Q.get("notes", {}).get("grid-queue/%s/%s" % (key, scen), "")
    return "not built" if "not built" in w else "not measured"


def render(R, rp):
    o = [QUEUE_BEGIN]
    w = o.append
    Q = R.get("grid_queue")
    w("## (15) The queues: blocking queue hand-off and throughput, delayed "
      "queue due-time accuracy\n")
    if not Q:
        w("not measured\n")
        w(QUEUE_END)
        return o
    loads = [x[0] for x in (Q.get("load_start"), Q.get("load_end")) if x]
    if not loads or max(loads) > 2.0:
        # more runnable than the 2 cores: something else ran meanwhile
        how = ("**Taken on a loaded machine** (the 2-core VM shared with "
               "other builds and test runs while this was measured): the "
               "figures only show that the bench works and the order of "
               "magnitude of each client; do not read small differences. ")
    else:
        how = ("Taken with nothing else running (the 1-minute load average "
               "at most 2, the cores' number, at the start and at the "
               "end). ")
    w("%sMeasured by `%s` on %s UTC "
      "in %d s; load average (1, 5, 15 min) %s at the start, %s at the "
      "end; each figure %s.%s\n" % (how,
          ("make bench BENCH_ARGS=\"--only grid-queue%s\"" % (
              " --quick" if Q.get("quick") else ""))
          if Q.get("argv", "").endswith("--only grid-queue")
          else Q.get("argv", "?"), Q.get("date", "?"), Q.get("duration_s", 0),
          " / ".join("%.2f" % x for x in Q.get("load_start", [])) or "?",
          " / ".join("%.2f" % x for x in Q.get("load_end", [])) or "?",
          "from one run" if Q.get("reps", 1) == 1 else
          "the median of %d runs" % Q["reps"],
          (" Core: %s." % Q["core"]) if Q.get("core") else ""))
    w("Reproduce: `make bench BENCH_ARGS=\"--only grid-queue\"` (add "
      "`--quick` for shorter runs, as here when the command above says "
      "so). It replaces only this section (between its markers, at the "
      "end of the page). Drivers: bench/queue.c (the floor and hilock C), "
      "bench/py/queue_bench.py, bench/go/queue, bench/java QueueBench.java; "
      "a hilock row says \"not built\" while the installed binding has no "
      "blocking or delayed queue yet.\n")
    w("**Hand-off latency**: one producer, one consumer already waiting in "
      "take; the producer pauses %g ms, offers a value holding the "
      "wall-clock time, and waits until the consumer has it; the latency "
      "is the consumer's clock minus that time (both on this machine; for "
      "a job queue, when the job started in its worker). "
      "**Throughput**: blocking queues: the elements and a stop value per "
      "consumer are pushed first (pipelined RPUSH: the queue is a plain "
      "list), then the consumers take until their stop value, timed from "
      "their start to the last; job queues (rq, arq, asynq): the workers "
      "up and idle, then the jobs enqueued (each an INCR, or a counter in "
      "the process for asynq), timed from the first enqueue until the last "
      "job ran. The job queues run their tasks with their own defaults; "
      "their figures are what a user gets, not the cost of their Redis "
      "commands.\n" % GAP_MS)
    rows = Q.get("rows", {})
    fl = rows.get("floor") or {}

    def lat(r, k):
        if not r:
            return None
        return r.get(k)

    def fmt_us(x):
        if x is None:
            return None
        return "%s µs" % format(round(x), ",") if x < 10000 else \
            "%s ms" % format(round(x / 1000.0, 1), ",")

    def thr(r, c):
        x = (r or {}).get("drain%d" % c)
        if not x:
            return None
        f = (fl.get("drain%d" % c) or {}).get("elements_per_s")
        s = format(int(x["elements_per_s"]), ",")
        if f:
            k = x["elements_per_s"] / f
            s += " (%.2fx)" % k if k >= 0.1 else " (%.3fx)" % k
        return s

    w("| client | hand-off p50 | p99 | elements/s, 1 consumer (x floor) "
      "| 16 consumers (x floor) | how the consumers run |")
    w("|---|---:|---:|---:|---:|---|")
    for key, label, driver, lib, how in ROWS:
        r = rows.get(key)
        if r is None:
            continue
        miss = _why(Q, key, "latency") if not r.get("latency") else None
        cells = [fmt_us(lat(r.get("latency"), "p50_us")),
                 fmt_us(lat(r.get("latency"), "p99_us")),
                 thr(r, 1), thr(r, 16)]
        cells = [c if c is not None else
                 (miss or _why(Q, key, "drain")) for c in cells]
        ver = ((r.get("latency") or r.get("drain1") or {}).get("version"))
        if key == "redisson":
            ver = "4.3.1"
        w("| %s%s | %s | %s | %s | %s | %s |" % (
            label, " %s" % ver if ver and ver != "?" and key not in (
                "floor", "hilock-c", "hilock-python", "hilock-go") else "",
            cells[0], cells[1], cells[2], cells[3], how))
    w("")
    w("Elements a run: the floor, C and Go %s; Python and Redisson %s; "
      "rq %s; arq %s; asynq %s (1 / 16 consumers). Hand-offs a run: %s "
      "(rq %s, arq and asynq %s: their pickup takes up to a poll "
      "interval).\n" % (
          "/".join(format(x, ",") for x in sizes("floor", Q["quick"])[1]
                   .values()),
          "/".join(format(x, ",") for x in sizes("redispy", Q["quick"])[1]
                   .values()),
          "/".join(format(x, ",") for x in sizes("rq", Q["quick"])[1]
                   .values()),
          "/".join(format(x, ",") for x in sizes("arq", Q["quick"])[1]
                   .values()),
          "/".join(format(x, ",") for x in sizes("asynq", Q["quick"])[1]
                   .values()),
          sizes("floor", Q["quick"])[0], sizes("rq", Q["quick"])[0],
          sizes("arq", Q["quick"])[0]))
    w("**Delayed queue, due-time accuracy**: %s elements offered %d ms "
      "apart, each due a fixed delay later (its due time, wall clock, in "
      "the value); how late after that time each reaches its consumer "
      "(negative: early, counted in \"early\").\n" % (
          15 if Q["quick"] else 40, SPACING_MS))
    w("| client | delay | late p50 | late p99 | earliest | early | what "
      "moves due elements |")
    w("|---|---:|---:|---:|---:|---:|---|")
    for key, label, driver, lib, how in DELAYED_ROWS:
        r = Q.get("delayed", {}).get(key)
        if r is None:
            continue
        for d in DELAYS_MS:
            x = r.get(str(d))
            if not x:
                m = _why(Q, key, "delayed")
                w("| %s | %d ms | %s | %s | %s | %s | %s |" % (
                    label, d, m, m, m, m, how))
                continue
            w("| %s | %d ms | %.1f ms | %.1f ms | %.1f ms | %d of %d | %s |"
              % (label, d, x["p50_ms"], x["p99_ms"], x["min_ms"],
                 x["early"], x["n"], how))
    w("")
    notes = Q.get("notes") or {}
    if notes:
        w("Not measured here, and why:\n")
        seen = set()
        for k in sorted(notes):
            msg = notes[k].replace("failed: ", "")
            if (k.split("/")[1], msg) in seen:
                continue
            seen.add((k.split("/")[1], msg))
            w("- %s: %s" % (k.split("/")[1], msg))
        w("")
    w(QUEUE_END)
    return o


def splice(page, R, rp):
    """The page with this section replaced, or appended at the end."""
    block = "\n".join(render(R, rp)).rstrip("\n")
    if QUEUE_BEGIN in page and QUEUE_END in page:
        a = page.index(QUEUE_BEGIN)
        b = page.index(QUEUE_END) + len(QUEUE_END)
        return page[:a] + block + page[b:]
    return page.rstrip("\n") + "\n\n" + block + "\n"
