"""hilock's sorted set add from Python, N times (bench/sorted_set/run.sh):
the same values in the same order as SortedSetAdds.java.

    python sorted_set_adds.py REDIS_URL N NAME
"""
import sys
import time

import hilock

url, n, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with hilock.Client(url) as c:
    s = c.sorted_set(name)
    s.delete()
    vals = ["v%010d" % (i * 2654435761 % 2147483647) for i in range(n)]
    t0 = time.perf_counter()
    added = sum(1 for v in vals if s.add(v))
    ms = (time.perf_counter() - t0) * 1000
    print("hilock-python adds=%d added=%d ms=%.0f size=%d" % (n, added, ms, len(s)))
