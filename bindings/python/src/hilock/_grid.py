"""The data grid's Python idiom: the object every kind is (delete, exists,
expire, clear_expire, ttl), values in and out, and the generic call. The
kinds themselves (:mod:`hilock._grid_gen`) are generated from the specs in
``core/grid/``; see ``docs/grid.md``.

Values go in as ``bytes`` (or ``str``, encoded as UTF-8) and come out as
``bytes`` (or ``None`` when absent), so a Java service shares them with a
byte-exact codec (``StringCodec``, ``ByteArrayCodec``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from . import _errors as E
from ._lowlevel import NULL, check, ffi, lib, ms

if TYPE_CHECKING:
    from ._client import Client

Value = Union[bytes, bytearray, memoryview, str]

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _bytes(v: Any, what: str) -> bytes:
    if type(v) is bytes:  # the common case first: no conversion
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    raise TypeError("%s must be bytes or str, not %s" % (what, type(v).__name__))


def _bytes_int_args(b: bytes, n: int) -> Tuple[Any, Any]:
    """The arguments (bytes b, integer n) of an hl_object call: the hl_arg
    array, and the buffer it points into (kept alive until the call has
    returned)."""
    keep = ffi.from_buffer(b)
    args = ffi.new("hl_arg[2]")
    args[0].type = lib.HL_ARG_BYTES
    args[0].bytes = keep
    args[0].len = len(b)
    args[1].type = lib.HL_ARG_INT
    args[1].i = n
    return args, keep


def _i64(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, not %s" % (what, type(v).__name__))
    if not _I64_MIN <= v <= _I64_MAX:
        raise E.InvalidArgumentError("%s is out of the 64-bit range: %d" % (what, v))
    return v


def _f64(v: Any, what: str, inf: bool = False) -> float:
    """v as a float: finite, or (inf, a score range's end) not NaN."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("%s must be a number, not %s" % (what, type(v).__name__))
    f = float(v)
    if math.isnan(f) or (math.isinf(f) and not inf):
        raise E.InvalidArgumentError("%s must be a %snumber, not %r" % (what, "" if inf else "finite ", v))
    return f


def _scored(entries: Any, what: str) -> List[Any]:
    """A dict of member: score, or (member, score) pairs, as the call's
    alternating scores and members (ZADD's order)."""
    if hasattr(entries, "items"):
        entries = entries.items()
    out: List[Any] = []
    for e in entries:
        try:
            member, score = e
        except (TypeError, ValueError):
            raise TypeError("%s: each entry is (member, score), not %r" % (what, e)) from None
        out.append(_f64(score, what + " score"))
        out.append(_bytes(member, what + " member"))
    return out


def _ms(v: Any, what: str) -> int:
    return ms(v, what, allow_zero=False)


def _out(ctype: str) -> Any:
    return ffi.new(ctype)


def _convert(v: Any) -> Any:
    t = lib.hl_value_type(v)
    if t == lib.HL_VALUE_INT:
        return int(lib.hl_value_int(v))
    if t == lib.HL_VALUE_DOUBLE:
        return float(lib.hl_value_double(v))
    if t == lib.HL_VALUE_BYTES:
        n = ffi.new("size_t *")
        p = lib.hl_value_bytes(v, n)
        return ffi.buffer(p, n[0])[:]
    if t == lib.HL_VALUE_ARRAY:
        return _convert_array(v)
    return None


_NOT_BYTES = int(ffi.cast("size_t", -1))
_new_raw = ffi.new_allocator(should_clear_after_alloc=False)


def _convert_array(v: Any) -> List[Any]:
    """An array's elements: its bytes gathered by the library (the total
    asked of hl_value_gather, then hlpy_gather_ends copies them and sums
    their lengths into ends) and cut here, so a page of 1000 entries costs
    two calls into C instead of several per element; the others (nil,
    numbers, nested arrays) one by one."""
    n = lib.hl_value_len(v)
    if not n:
        return []
    lens = _new_raw("size_t[]", n)
    total = lib.hl_value_gather(v, lens, ffi.NULL, 0)
    buf = _new_raw("char[]", total or 1)
    if lib.hlpy_gather_ends(v, lens, buf, total):  # all bytes: cut at the ends
        ends = ffi.unpack(lens, n)
        data = ffi.buffer(buf, total)[:]
        return [data[a:b] for a, b in zip([0] + ends, ends)]
    data = ffi.buffer(buf, total)[:]
    ls = ffi.unpack(lens, n)
    out: List[Any] = []
    add = out.append
    o = 0
    for i, ln in enumerate(ls):
        if ln == _NOT_BYTES:
            add(_convert(lib.hl_value_at(v, i)))
        else:
            add(data[o : o + ln])
            o += ln
    return out


def _take(v: Any) -> Any:
    """The Python form of an owned hl_value (freed here)."""
    try:
        return _convert(v)
    finally:
        lib.hl_value_free(v)


def _pairs(items: List[Any]) -> List[Tuple[Any, Any]]:
    """Alternating keys and values (or members and scores) as pairs."""
    it = iter(items)
    return list(zip(it, it))


def _as_map(items: List[Any]) -> Dict[Any, Any]:
    """Alternating keys and values as a dict (nil values left out)."""
    it = iter(items)
    d = dict(zip(it, it))
    if None in d.values():  # rare: a loop only then
        d = {k: v for k, v in d.items() if v is not None}
    return d


def _page(page: List[Any], conv: Any) -> Tuple[bytes, Any]:
    """A cursor's page: (the next cursor, its items); b"0" after the last."""
    cursor, items = page
    return cursor, conv(items) if conv else items


def _scan(fetch: Callable[[bytes], Tuple[bytes, List[Any]]]) -> Iterator[Any]:
    """Every item of a cursor, page by page: ``fetch(cursor)`` gives the
    next cursor and a page; memory stays one page whatever the size. As
    Redis's SCAN family: an item there for the whole iteration is seen
    (once for sets and maps, possibly twice if the key grows meanwhile)."""
    cursor = b"0"
    while True:
        cursor, items = fetch(cursor)
        yield from items
        if cursor == b"0":
            return


# The typed calls' one-call results (hilock_build.py's hlpy_g_ helpers):
# bytes are held for the calling thread until its next helper call, so
# they are copied out (_unpack(_held(n), n)) with no call to free them;
# _held(n) is NULL (and _unpack raises) if they are not those n bytes.
_unpack = ffi.unpack
_held = lib.hlpy_held_bytes


def _status() -> None:
    """Raise for the status of this thread's last helper call, if any (an
    i64 of INT64_MIN or a NaN may be genuine)."""
    check(lib.hlpy_grid_status())


def _held_result(n: int) -> Any:
    """A bytes helper's result other than a small value: n >= 0 a big one
    (copied out and freed now), -1 nil, -2 an error, -3 another value."""
    if n >= 0:
        try:
            return _unpack(_held(n), n)
        finally:
            lib.hlpy_held_drop()
    if n == -1:
        return None
    if n == -2:
        _status()
        raise E.HilockError("a grid call failed with no status")  # not reached
    try:
        return _convert(lib.hlpy_held_value())
    finally:
        lib.hlpy_held_drop()


_A_BYTES, _A_INT, _A_DOUBLE, _A_NONE = lib.HL_ARG_BYTES, lib.HL_ARG_INT, lib.HL_ARG_DOUBLE, lib.HL_ARG_NONE
_BYTES_TYPE = bytes([_A_BYTES])


def _packed_bytes(h: Any, op: int, items: Any) -> Optional[int]:
    """hlpy_call of values that are all bytes-like, packed without a loop
    here (a batch of 100 makes four cdata, not 200); None when one is not
    (a str, a number): then the caller converts them one by one."""
    n = len(items)
    try:
        blob = b"".join(items)
    except TypeError:
        return None
    lens = list(map(len, items))
    if sum(lens) != len(blob):  # a memoryview's len may count items
        return None
    return lib.hlpy_call(h, op, n, _BYTES_TYPE * n, NULL, NULL, blob, ffi.new("size_t[]", lens))


def _packed_many(h: Any, op: int, items: Any, what: str) -> int:
    """_packed_call of one list of bytes or str values (what names it in
    an error)."""
    if items:
        r = _packed_bytes(h, op, items)
        if r is not None:
            return r
    return _packed_call(h, op, [_bytes(x, what) for x in items])


def _packed_call(h: Any, op: int, args: Any) -> int:
    """hl_object_call through hlpy_call: the arguments packed in a few
    arrays (a batch of 100 values makes four cdata, not 200), the result
    as a bytes helper's (_unpack(_held(r), r) or _held_result(r))."""
    n = len(args)
    if n > 1:  # a batch of values
        r = _packed_bytes(h, op, args)
        if r is not None:
            return r
    types = bytearray(n)
    ints = dbls = None
    parts, lens = [], [0] * n  # lens by position, as ints and dbls
    for i, v in enumerate(args):
        t = type(v)
        if t is bytes:
            types[i] = _A_BYTES
            parts.append(v)
            lens[i] = len(v)
        elif v is None:
            types[i] = _A_NONE
        elif isinstance(v, int):  # a bool too, as 0 or 1
            types[i] = _A_INT
            if ints is None:
                ints = [0] * n
            ints[i] = int(v) if t is bool else int(_i64(v, "argument"))
        elif isinstance(v, float):
            types[i] = _A_DOUBLE
            if dbls is None:
                dbls = [0.0] * n
            dbls[i] = float(v)
        else:
            b = _bytes(v, "argument")
            types[i] = _A_BYTES
            parts.append(b)
            lens[i] = len(b)
    return lib.hlpy_call(h, op, n, bytes(types),
                         NULL if ints is None else ffi.new("int64_t[]", ints),
                         NULL if dbls is None else ffi.new("double[]", dbls),
                         b"".join(parts),
                         NULL if not parts else ffi.new("size_t[]", lens))


class GridObject:
    """What every grid object has: its client and name, and ``delete``,
    ``exists``, ``expire``, ``clear_expire``, ``ttl``. Cheap to make: no
    round trip."""

    _kind = 0

    def __init__(self, client: "Client", name: Value) -> None:
        from ._client import Client, _encode_name

        if not isinstance(client, Client):
            raise TypeError("client must be a hilock.Client")
        self._client = client
        self._name = name
        bname = _encode_name(name)
        out = ffi.new("hl_object **")
        check(lib.hl_object_new(out, client._ptr, self._kind, bname, len(bname)))
        self._h = ffi.gc(out[0], lib.hl_object_free)

    @property
    def name(self) -> Value:
        """The name as given (the Redis key)."""
        return self._name

    @property
    def client(self) -> "Client":
        """The client this object belongs to."""
        return self._client

    def delete(self) -> bool:
        """Delete the object (every key of it): True if it existed."""
        out = ffi.new("int *")
        check(lib.hl_object_delete(out, self._h))
        return bool(out[0])

    def exists(self) -> bool:
        """True if the object's key exists."""
        out = ffi.new("int *")
        check(lib.hl_object_exists(out, self._h))
        return bool(out[0])

    def expire(self, seconds: float) -> bool:
        """Let the object expire in ``seconds``: True if it exists."""
        out = ffi.new("int *")
        check(lib.hl_object_expire(out, self._h, _ms(seconds, "seconds")))
        return bool(out[0])

    def clear_expire(self) -> bool:
        """Remove the object's expiry: True if it had one."""
        out = ffi.new("int *")
        check(lib.hl_object_clear_expire(out, self._h))
        return bool(out[0])

    def ttl(self) -> Optional[float]:
        """Seconds until the object expires: ``math.inf`` when it has no
        expiry, ``None`` when it does not exist (as a lock's ``ttl()``)."""
        out = ffi.new("int64_t *")
        check(lib.hl_object_ttl(out, self._h))
        if out[0] == -2:
            return None
        if out[0] == -1:
            return math.inf
        return out[0] / 1000.0

    def _call(self, op: int, *args: Any) -> Any:
        """The generic call: operation ``op`` (``HL_OP_*``) with ``args``
        (bytes/str, int, float, None for an optional one left out)."""
        r = _packed_call(self._h, op, args)
        return _unpack(_held(r), r) if 0 <= r <= 65536 else _held_result(r)

    def _call_many(self, op: int, items: Any, what: str) -> Any:
        """_call with one list of bytes or str values (what: its name)."""
        r = _packed_many(self._h, op, items, what)
        return _unpack(_held(r), r) if 0 <= r <= 65536 else _held_result(r)

    def __repr__(self) -> str:
        return "<hilock.%s %r>" % (type(self).__name__, self._name)
