"""Many values out of the grid (a page of a scan, a get_all): the bytes
converted in one call (hl_value_gather) come out byte-exact, in order,
with NUL bytes, empty values and a nested array (a page) intact."""

from hilock._grid import _convert_array, _scan
from hilock._lowlevel import ffi, lib


def test_get_all_values(client, redis):
    m = client.map("py:values")
    redis.cmd("HSET", "py:values", "k1", "v1", b"k\x00b", "", "e", b"\x00\xff")
    got = m.get_all("k1", "nope", b"k\x00b", "e")
    assert got == {b"k1": b"v1", b"k\x00b": b"", b"e": b"\x00\xff"}
    assert m.get_all("nope") == {}
    # many bytes keys take the arguments' short path: NUL and empty keys too
    many = [b"m\x00%d" % i for i in range(10)] + [b""]
    redis.cmd("HSET", "py:values", *[x for k in many for x in (k, k + b"=")])
    assert m.get_all(*many, b"absent") == {k: k + b"=" for k in many}
    assert m.get_all(*many[:5], "k1", b"e") == dict(
        [(k, k + b"=") for k in many[:5]] + [(b"k1", b"v1"), (b"e", b"\x00\xff")]
    )


def test_scan_pages_every_entry_once(client, redis):
    m = client.map("py:values:big")
    n = 1500  # past the listpack: a hashtable, many pages
    args = []
    for i in range(n):
        args += [b"f%d" % i, b"v" * (i % 7) + b"\x00%d" % i]
    redis.cmd("HSET", "py:values:big", *args)
    seen = {}
    pages = 0

    def fetch(cursor):
        nonlocal pages
        pages += 1
        nxt, items = m.scan(cursor, 100)
        assert isinstance(nxt, bytes) and all(len(e) == 2 for e in items)
        return nxt, items

    for k, v in _scan(fetch):
        assert k not in seen
        seen[k] = v
    assert pages > 2
    assert seen == {b"f%d" % i: b"v" * (i % 7) + b"\x00%d" % i for i in range(n)}


def test_convert_array_mixed(client, redis):
    # a page is [cursor bytes, items array]: its bytes are cut from one
    # buffer and the array, not bytes, is converted on its own
    redis.cmd("HSET", "py:values:mix", "a", "", "b", b"\x00")
    m = client.map("py:values:mix")
    out = ffi.new("hl_value **")
    assert lib.hl_map_scan(out, m._h, b"0", 1, 10, ffi.NULL, 0) == lib.HL_OK
    try:
        page = _convert_array(out[0])
    finally:
        lib.hl_value_free(out[0])
    assert page[0] == b"0"
    assert sorted(zip(page[1][::2], page[1][1::2])) == [(b"a", b""), (b"b", b"\x00")]
    assert _convert_array(ffi.NULL) == []
