"""The collections' peers of the data grid's bench (bench/grid_coll.py,
`--only grid-coll`): raw redis-py sending the command a redis-py user
would, and pottery's RedisDict, RedisSet, RedisList and RedisDeque used as
their users use them. pybench.py merges peers(rp) into its GRID_PEERS:
(lib, "kind.op") -> make(url, name, args) -> a call of no arguments.

The measured object was filled by the driver before the process started
(bench/grid_coll.py PREFILL) with plain bytes; pottery keeps JSON, so its
makers fill their own object first, with the same number of elements.
"""

POLL_FILL = 300000  # as grid_coll.py's prefill of a queue: never empty


def _pottery_client(url):
    import redis
    return redis.Redis.from_url(url)


def _fill_json_list(r, name, n):
    """n JSON strings in the list name (pottery's format)."""
    r.delete(name)
    for i in range(0, n, 1000):
        r.rpush(name, *['"v%07d"' % j for j in range(i, min(n, i + 1000))])


def _pottery(url, name, a, what):
    import pottery
    r = _pottery_client(url)
    if what.startswith("map."):
        d = pottery.RedisDict(redis=r, key=name)
        r.delete(name)
        for i in range(100):
            d["k%03d" % i] = "v" * 16
        k = a[0].decode()
        if what == "map.get":
            return lambda: d[k]
        v = a[1].decode()

        def put():
            d[k] = v
        return put
    if what.startswith("set."):
        s = pottery.RedisSet(redis=r, key=name)
        r.delete(name)
        s.update("v%07d" % i for i in range(100))
        v = a[0].decode()
        if what == "set.add":
            return lambda: s.add(v)
        return lambda: v in s
    if what == "list.add":
        lst = pottery.RedisList(redis=r, key=name)
        v = a[0].decode()
        return lambda: lst.append(v)
    if what == "list.get":
        _fill_json_list(r, name, 1000)
        lst = pottery.RedisList(redis=r, key=name)
        i = a[0]
        return lambda: lst[i]
    if what == "queue.offer":
        q = pottery.RedisDeque(redis=r, key=name)
        v = a[0].decode()
        return lambda: q.append(v)
    _fill_json_list(r, name, POLL_FILL)
    q = pottery.RedisDeque(redis=r, key=name)
    return q.popleft if what == "queue.poll" else q.pop


def peers(rp):
    """rp(url): pybench's per-process redis-py client."""
    def pot(what):
        return lambda u, n, a: _pottery(u, n, a, what)
    out = {
        ("redispy", "map.get"): lambda u, n, a: (
            lambda r=rp(u): r.hget(n, a[0])),
        ("redispy", "map.fast_put"): lambda u, n, a: (
            lambda r=rp(u): r.hset(n, a[0], a[1])),
        ("redispy", "map.get_all"): lambda u, n, a: (
            lambda r=rp(u): r.hmget(n, a)),
        ("redispy", "set.add"): lambda u, n, a: (
            lambda r=rp(u): r.sadd(n, a[0])),
        ("redispy", "set.contains"): lambda u, n, a: (
            lambda r=rp(u): r.sismember(n, a[0])),
        ("redispy", "scored_sorted_set.add"): lambda u, n, a: (
            lambda r=rp(u), m={a[1]: a[0]}: r.zadd(n, m)),
        ("redispy", "scored_sorted_set.rank"): lambda u, n, a: (
            lambda r=rp(u): r.zrank(n, a[0])),
        ("redispy", "list.add"): lambda u, n, a: (
            lambda r=rp(u): r.rpush(n, a[0])),
        ("redispy", "list.get"): lambda u, n, a: (
            lambda r=rp(u): r.lindex(n, a[0])),
        ("redispy", "queue.offer"): lambda u, n, a: (
            lambda r=rp(u): r.rpush(n, a[0])),
        ("redispy", "queue.poll"): lambda u, n, a: (
            lambda r=rp(u): r.lpop(n)),
        ("redispy", "deque.poll_last"): lambda u, n, a: (
            lambda r=rp(u): r.rpop(n)),
    }
    for what in ("map.get", "map.put", "map.fast_put", "set.add",
                 "set.contains", "list.add", "list.get", "queue.offer",
                 "queue.poll", "deque.poll_last"):
        out[("pottery", what)] = pot(what)
    return out
