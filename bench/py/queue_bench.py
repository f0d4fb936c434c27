"""The queues' Python drivers (bench/grid_queue.py, `--only grid-queue`).

    queue_bench.py URL LIB latency NAME N GAP_MS
    queue_bench.py URL LIB drain NAME M CONSUMERS
    queue_bench.py URL LIB delayed NAME N DELAY_MS SPACING_MS

LIB: redispy (raw RPUSH + BLPOP), hilock (client.blocking_queue and
client.delayed_queue; "not built" while the binding has no such kind), rq
and arq (job queues: an element is a job, its hand-off the start of the job
in a worker). Prints one JSON object (bench/queue.c's fields).

latency: one producer, one consumer waiting in take (a thread; for rq and
arq a worker process); the producer sleeps GAP_MS, offers a value holding
the wall-clock time in ns, and waits for the consumer to have it.
drain: blocking queues: M elements and a stop value per consumer pushed
first, then CONSUMERS processes take until their stop value; job queues:
the workers up and idle (rq: CONSUMERS worker processes, arq: one worker
with max_jobs=CONSUMERS), then M jobs enqueued, each an INCR; the time from
the first enqueue until the M-th job has run.
delayed: N elements offered SPACING_MS apart, each due DELAY_MS later; how
late after its due time each reaches its consumer (ms; negative: early).
"""
import asyncio
import json
import multiprocessing as mp
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import queue_jobs  # noqa: E402  (the rq and arq job functions)

WARM = 20


class NotBuilt(Exception):
    pass


def pct(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1) + 0.5)] if v else 0


def redis_conn(url):
    import redis
    return redis.Redis.from_url(url)


class MiniRedis:
    """A few raw commands over a socket, for the hilock rows (they run in
    the binding's venv, which has no redis-py): DEL, pipelined RPUSH, and
    BLPOP (the delayed queue's consumer: any client of its destination
    list would do, so the row measures the mover alone)."""

    def __init__(self, url):
        import socket
        import urllib.parse
        u = urllib.parse.urlparse(url)
        self.s = socket.create_connection((u.hostname, u.port or 6379))
        self.f = self.s.makefile("rb")
        db = (u.path or "/0").strip("/") or "0"
        if db != "0":
            self.pipeline([["SELECT", db]])

    def pipeline(self, cmds):
        out = []
        for c in cmds:
            a = [x if isinstance(x, bytes) else str(x).encode() for x in c]
            out.append(b"*%d\r\n" % len(a) + b"".join(
                b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
        self.s.sendall(b"".join(out))
        for _ in cmds:
            line = self.f.readline()
            if line[:1] == b"-":
                raise RuntimeError(line.decode().strip())
            if line[:1] == b"$" and int(line[1:]) >= 0:
                self.f.read(int(line[1:]) + 2)

    def blpop(self, name):
        """BLPOP name 0: the value."""
        self.s.sendall(b"*3\r\n$5\r\nBLPOP\r\n$%d\r\n%s\r\n$1\r\n0\r\n"
                       % (len(name), name.encode()))
        line = self.f.readline()
        if line[:2] != b"*2":
            raise RuntimeError("BLPOP: %r" % line)
        for _ in range(2):
            n = int(self.f.readline()[1:])
            v = self.f.read(n + 2)[:-2]
        return v

    def delete(self, name):
        self.pipeline([["DEL", name]])

    def rpush_many(self, name, values):
        for i in range(0, len(values), 1000):
            self.pipeline([["RPUSH", name, v] for v in values[i:i + 1000]])


# --------------------------------------------------------------------------
# hilock: every call of the binding in this one place (names of issue 22)
# --------------------------------------------------------------------------
def hilock_client(url, kind="blocking_queue"):
    import hilock
    c = hilock.Client(url)
    if not hasattr(c, kind):
        raise NotBuilt("this hilock Python binding has no client.%s "
                       "(the kind is not built)" % kind)
    return c


def hilock_queue(url, name):
    q = hilock_client(url).blocking_queue(name)
    return (lambda v: q.offer(v)), (lambda: q.take())


def hilock_delayed(url, dest):
    c = hilock_client(url, "delayed_queue")
    dq = c.delayed_queue(dest)
    return lambda v, delay_ms: dq.offer(v, delay_ms / 1000.0), c


# --------------------------------------------------------------------------
def endpoints(url, lib, name):
    """(offer(bytes), take() -> bytes) of one blocking queue."""
    if lib == "hilock":
        return hilock_queue(url, name)
    r = redis_conn(url)
    return (lambda v: r.rpush(name, v)), (lambda: r.blpop([name], 0)[1])


def latency_blocking(url, lib, name, n, gap):
    offer, _ = endpoints(url, lib, name)
    _, take = endpoints(url, lib, name)
    got = threading.Semaphore(0)
    lat = []

    def consumer():
        for _ in range(n + WARM):
            v = take()
            lat.append((time.time_ns() - int(v)) / 1e3)
            got.release()
    t = threading.Thread(target=consumer, daemon=True)
    t.start()
    for _ in range(n + WARM):
        time.sleep(gap)
        offer(str(time.time_ns()).encode())
        if not got.acquire(timeout=30):
            raise RuntimeError("the consumer took nothing in 30 s")
    t.join()
    return lat[WARM:]


def _drain_child(url, lib, name, bar, out):
    _, take = endpoints(url, lib, name)
    bar.wait()
    k = 0
    while take() != b"stop":
        k += 1
    out.put(k)


def drain_blocking(url, lib, name, m, c):
    r = MiniRedis(url)
    r.delete(name)
    r.rpush_many(name, [b"v%07d" % i for i in range(m)] + [b"stop"] * c)
    ctx = mp.get_context("fork")
    bar, out = ctx.Barrier(c + 1), ctx.Queue()
    ps = [ctx.Process(target=_drain_child, args=(url, lib, name, bar, out))
          for _ in range(c)]
    for x in ps:
        x.start()
    bar.wait(timeout=120)
    t0 = time.monotonic()
    for x in ps:
        x.join(300)
    secs = time.monotonic() - t0
    taken = sum(out.get(timeout=10) for _ in ps)
    if taken != m:
        raise RuntimeError("took %d of %d" % (taken, m))
    return {"elements": m, "consumers": c, "secs": round(secs, 3),
            "elements_per_s": round(m / secs)}


def delayed_hilock(url, name, n, delay_ms, spacing):
    offer, _c = hilock_delayed(url, name)
    r = MiniRedis(url)
    r.delete(name)
    take = lambda: r.blpop(name)  # noqa: E731  (the destination: a list)
    late = []

    def consumer():
        for _ in range(n):
            v = take()
            late.append((time.time_ns() - int(v)) / 1e6)
    t = threading.Thread(target=consumer, daemon=True)
    t.start()
    for _ in range(n):
        due = time.time_ns() + int(delay_ms * 1e6)
        offer(str(due).encode(), delay_ms)
        time.sleep(spacing)
    t.join(delay_ms / 1000.0 + 60)
    if t.is_alive():
        raise RuntimeError("%d of %d delayed elements arrived" % (
            len(late), n))
    return late


# --------------------------------------------------------------------------
# rq: worker processes (rq's default Worker: a work horse forked per job)
# --------------------------------------------------------------------------
def _rq_worker(url, name, sched):
    import rq
    w = rq.Worker([rq.Queue(name, connection=redis_conn(url))],
                  connection=redis_conn(url))
    w.work(with_scheduler=sched, logging_level="WARNING")


def rq_workers(url, name, c, sched=False):
    import rq
    r = redis_conn(url)
    ps = [mp.get_context("fork").Process(target=_rq_worker,
                                         args=(url, name, sched))
          for _ in range(c)]
    for x in ps:
        x.start()
    q = rq.Queue(name, connection=r)
    t_end = time.monotonic() + 60
    while rq.Worker.count(queue=q) < c:
        if time.monotonic() > t_end:
            raise RuntimeError("rq workers did not start")
        time.sleep(0.05)
    return q, ps


def stop_procs(ps):
    for x in ps:
        if x.is_alive():
            os.kill(x.pid, signal.SIGTERM)
    for x in ps:
        x.join(10)
        if x.is_alive():
            x.kill()
            x.join()


def rq_latency(url, name, n, gap):
    r = redis_conn(url)
    res = name + ":res"
    r.delete(res)
    q, ps = rq_workers(url, name, 1)
    lat = []
    try:
        for _ in range(n + WARM):
            time.sleep(gap)
            q.enqueue(queue_jobs.record, time.time_ns(), res, 0)
            v = r.blpop([res], 30)
            if not v:
                raise RuntimeError("no job ran in 30 s")
            lat.append(int(v[1]) / 1e3)
    finally:
        stop_procs(ps)
    return lat[WARM:]


def rq_drain(url, name, m, c):
    import rq
    r = redis_conn(url)
    key = name + ":done"
    r.delete(key)
    q, ps = rq_workers(url, name, c)
    try:
        t0 = time.monotonic()
        for i in range(0, m, 500):
            q.enqueue_many([rq.Queue.prepare_data(
                queue_jobs.tick, (key,), result_ttl=0)
                for _ in range(min(500, m - i))])
        wait_count(r, key, m, 600)
        secs = time.monotonic() - t0
    finally:
        stop_procs(ps)
    return {"elements": m, "consumers": c, "secs": round(secs, 3),
            "elements_per_s": round(m / secs)}


def rq_delayed(url, name, n, delay_ms, spacing):
    import datetime
    r = redis_conn(url)
    res = name + ":res"
    r.delete(res)
    q, ps = rq_workers(url, name, 1, sched=True)
    late = []
    try:
        for _ in range(n):
            due = time.time_ns() + int(delay_ms * 1e6)
            q.enqueue_in(datetime.timedelta(milliseconds=delay_ms),
                         queue_jobs.record, due, res, 1)
            time.sleep(spacing)
        for _ in range(n):
            v = r.blpop([res], delay_ms / 1000.0 + 60)
            if not v:
                raise RuntimeError("%d of %d delayed jobs ran" % (
                    len(late), n))
            late.append(int(v[1]) / 1e6)
    finally:
        stop_procs(ps)
    return late


def wait_count(r, key, m, limit):
    t_end = time.monotonic() + limit
    while int(r.get(key) or 0) < m:
        if time.monotonic() > t_end:
            raise RuntimeError("%s of %d jobs ran in %d s" % (
                r.get(key), m, limit))
        time.sleep(0.002)


# --------------------------------------------------------------------------
# arq: one worker process (asyncio, max_jobs concurrent jobs), its
# defaults otherwise (it polls its queue every poll_delay = 0.5 s)
# --------------------------------------------------------------------------
def _arq_settings(url):
    from arq.connections import RedisSettings
    return RedisSettings.from_dsn(url)


def _arq_worker(url, name, c):
    from arq.worker import Worker
    w = Worker(functions=[queue_jobs.arq_record, queue_jobs.arq_tick],
               redis_settings=_arq_settings(url), queue_name=name,
               max_jobs=c, handle_signals=True, keep_result=0)
    w.run()


def arq_run(url, name, c, body):
    from arq import create_pool
    r = redis_conn(url)
    p = mp.get_context("fork").Process(target=_arq_worker,
                                       args=(url, name, c))
    p.start()
    # the worker is up once its health-check key is there
    t_end = time.monotonic() + 60
    while not r.exists(name + ":health-check"):
        if time.monotonic() > t_end:
            stop_procs([p])
            raise RuntimeError("the arq worker did not start")
        time.sleep(0.05)

    async def main():
        pool = await create_pool(_arq_settings(url),
                                 default_queue_name=name)
        try:
            return await body(pool, r)
        finally:
            await pool.aclose()
    try:
        return asyncio.run(main())
    finally:
        stop_procs([p])


def arq_latency(url, name, n, gap):
    res = name + ":res"

    async def body(pool, r):
        lat = []
        for _ in range(n + WARM):
            await asyncio.sleep(gap)
            await pool.enqueue_job("arq_record", time.time_ns(), res, 0)
            v = await asyncio.to_thread(r.blpop, [res], 30)
            if not v:
                raise RuntimeError("no job ran in 30 s")
            lat.append(int(v[1]) / 1e3)
        return lat[WARM:]
    return arq_run(url, name, 1, body)


def arq_drain(url, name, m, c):
    key = name + ":done"

    async def body(pool, r):
        r.delete(key)
        t0 = time.monotonic()
        for i in range(0, m, 200):
            await asyncio.gather(*(pool.enqueue_job("arq_tick", key)
                                   for _ in range(min(200, m - i))))
        await asyncio.to_thread(wait_count, r, key, m, 600)
        secs = time.monotonic() - t0
        return {"elements": m, "consumers": c, "secs": round(secs, 3),
                "elements_per_s": round(m / secs)}
    return arq_run(url, name, c, body)


def arq_delayed(url, name, n, delay_ms, spacing):
    import datetime
    res = name + ":res"

    async def body(pool, r):
        for _ in range(n):
            due = time.time_ns() + int(delay_ms * 1e6)
            await pool.enqueue_job(
                "arq_record", due, res, 1,
                _defer_by=datetime.timedelta(milliseconds=delay_ms))
            await asyncio.sleep(spacing)
        late = []
        for _ in range(n):
            v = await asyncio.to_thread(r.blpop, [res],
                                        delay_ms / 1000.0 + 60)
            if not v:
                raise RuntimeError("%d of %d delayed jobs ran" % (
                    len(late), n))
            late.append(int(v[1]) / 1e6)
        return late
    # max_jobs at arq's default (10): with 1 the worker starts one job a
    # poll, and the elements due together would wait for each other
    return arq_run(url, name, 10, body)


# --------------------------------------------------------------------------
def version(lib):
    try:
        if lib in ("rq", "arq"):
            from importlib.metadata import version as v
            return v(lib)
        if lib == "redispy":
            import redis
            return redis.__version__
        if lib == "hilock":
            import hilock
            return getattr(hilock, "__version__", "?")
    except Exception:  # noqa: BLE001  (a version is only a label)
        pass
    return "?"


def main(argv):
    url, lib, scen, name = argv[1], argv[2], argv[3], argv[4]
    a = argv[5:]
    out = {"lib": lib, "version": version(lib)}
    try:
        if lib == "hilock":  # NotBuilt before anything starts
            hilock_client(url, "delayed_queue" if scen == "delayed"
                          else "blocking_queue")
        if scen == "latency":
            n, gap = int(a[0]), float(a[1]) / 1000.0
            fn = {"rq": rq_latency, "arq": arq_latency}.get(lib)
            lat = fn(url, name, n, gap) if fn else \
                latency_blocking(url, lib, name, n, gap)
            out.update(n=len(lat), p50_us=round(pct(lat, 0.5), 1),
                       p99_us=round(pct(lat, 0.99), 1),
                       mean_us=round(sum(lat) / len(lat), 1))
        elif scen == "drain":
            m, c = int(a[0]), int(a[1])
            fn = {"rq": rq_drain, "arq": arq_drain}.get(lib)
            out.update(fn(url, name, m, c) if fn else
                       drain_blocking(url, lib, name, m, c))
        elif scen == "delayed":
            n, d, sp = int(a[0]), float(a[1]), float(a[2]) / 1000.0
            fn = {"rq": rq_delayed, "arq": arq_delayed,
                  "hilock": delayed_hilock}[lib]
            late = fn(url, name, n, d, sp)
            out.update(n=len(late), p50_ms=round(pct(late, 0.5), 1),
                       p99_ms=round(pct(late, 0.99), 1),
                       min_ms=round(min(late), 1),
                       early=sum(1 for x in late if x < 0))
        else:
            raise SystemExit("unknown scenario " + scen)
    except NotBuilt as e:
        print("not built: %s" % e, file=sys.stderr)
        return 3
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
