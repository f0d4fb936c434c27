"""grid_iter.py: the data grid at scale in Python (bench/grid_iterate.py).

    python grid_iter.py URL base  hilock|redispy[-hiredis]
    python grid_iter.py URL iter  LIB NAME COUNT|-
    python grid_iter.py URL bulk  LIB NAME N SECONDS

LIB: hilock (the Map's generated scan through hilock._grid._scan; get_all
and get), redispy (redis-py, its pure-Python parser: hscan_iter, hgetall,
hmget, hget) or redispy-hiredis (the same with the hiredis parser). COUNT
"-" leaves the COUNT out (redis-py's hscan_iter default: the server's 10),
"all" reads the whole map in one HGETALL reply (redis-py).
One JSON line; RSS from /proc/self/status (VmHWM) after connecting and at
the end.
"""

import json
import sys
import time


def status_kb(field="VmHWM"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def connect(url, lib):
    if lib == "hilock":
        import hilock
        return hilock.Client(url)
    import redis
    from redis._parsers import _HiredisParser, _RESP2Parser
    parser = _HiredisParser if lib == "redispy-hiredis" else _RESP2Parser
    r = redis.Redis.from_url(url, parser_class=parser)
    r.ping()
    return r


def main():
    url, mode, lib = sys.argv[1], sys.argv[2], sys.argv[3]
    c = connect(url, lib)
    out = {"mode": mode, "lang": "python", "lib": lib}
    if mode == "base":
        if lib == "hilock":
            c.map("base").size()
        out.update(rss_base_kb=status_kb(), rss_peak_kb=status_kb())
    elif mode == "iter":
        name, count = sys.argv[4], sys.argv[5]
        count = None if count == "-" else 0 if count == "all" else int(count)
        base = status_kb()
        n = nbytes = 0
        t0, c0 = time.perf_counter(), time.process_time()
        if lib == "hilock":
            from hilock._grid import _scan
            m = c.map(name)
            cnt = count or 100
            for k, v in _scan(lambda cur: m.scan(cur, cnt)):
                n += 1
                nbytes += len(k) + len(v)
        elif count == 0:  # HGETALL: the whole map in one reply
            for k, v in c.hgetall(name).items():
                n += 1
                nbytes += len(k) + len(v)
        else:
            for k, v in c.hscan_iter(name, count=count):
                n += 1
                nbytes += len(k) + len(v)
        secs = time.perf_counter() - t0
        out["cpu_s"] = round(time.process_time() - c0, 4)
        out.update(count=count or 0, entries=n, bytes=nbytes,
                   secs=round(secs, 4), entries_per_s=round(n / secs),
                   rss_base_kb=base, rss_peak_kb=status_kb())
    elif mode == "bulk":
        name, n, secs = sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
        keys = [b"field:%d" % ((i * 97) % 1000000) for i in range(n)]
        if lib == "hilock":
            m = c.map(name)

            def batch():
                if len(m.get_all(*keys)) != n:
                    raise SystemExit("get_all: missing entries")

            def singles():
                for k in keys:
                    m.get(k)
        else:
            def batch():
                c.hmget(name, keys)

            def singles():
                for k in keys:
                    c.hget(name, k)

        def timed(fn):
            k, t0 = 0, time.perf_counter()
            while True:
                fn()
                k += 1
                el = time.perf_counter() - t0
                if el >= secs and k >= 3:
                    return el / k
        out.update(n=n, batch_us=round(timed(batch) * 1e6, 2),
                   singles_us=round(timed(singles) * 1e6, 2))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
