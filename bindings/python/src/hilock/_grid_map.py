"""The map's Python idiom (Redisson ``RMap``): a
:class:`collections.abc.MutableMapping` over one Redis hash, plus
Redisson's operations (``put``, ``put_if_absent``, ``fast_put``,
``remove``, ``put_all``, ``get_all``, ...: :class:`hilock._grid_gen.MapBase`).

Keys and values go in as ``bytes`` or ``str`` (UTF-8) and come out as
``bytes``. Iteration (``for k in m``, ``keys()``, ``values()``,
``items()``) goes by HSCAN pages, never one reply with the whole map:
memory stays one page whatever the size. As with Redis's SCAN, an entry
present for the whole iteration is seen (once, unless the map grows
meanwhile); others may or may not be.
"""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, Mapping, MutableMapping, ValuesView
from typing import Any, Iterable, Iterator, Optional, Tuple

from ._grid import Value, _bytes, _scan
from ._grid_gen import MapBase
from ._lowlevel import lib

__all__ = ["Map"]

# HSCAN's COUNT for iteration: pages of about this many entries.
_PAGE = 1000

_MISSING = object()


class _Keys(KeysView):  # type: ignore[type-arg]
    def __iter__(self) -> Iterator[bytes]:
        return iter(self._mapping)


class _Values(ValuesView):  # type: ignore[type-arg]
    def __iter__(self) -> Iterator[bytes]:
        for _, v in self._mapping._entries():
            yield v


class _Items(ItemsView):  # type: ignore[type-arg]
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]:
        return self._mapping._entries()


class Map(MapBase, MutableMapping):  # type: ignore[type-arg]
    """A Redis hash shared with Redisson's ``RMap`` (Java side:
    ``redisson.getMap(name, StringCodec.INSTANCE)`` or ``ByteArrayCodec``).

    ``m[k]`` (``KeyError`` when absent), ``m[k] = v`` (HSET; sent again
    after a lost reply, so it never raises ``OutcomeUnknown``), ``del m[k]``
    (``KeyError`` when absent; a lost reply is resent with a request marker,
    so it is never in doubt), ``len(m)``, ``k in m``, iteration by HSCAN
    pages. ``clear()`` deletes the hash in one command; ``update()`` writes
    in one round trip (``put_all``).
    """

    def __getitem__(self, key: Value) -> bytes:
        v = MapBase.get(self, key)
        if v is None:
            raise KeyError(key)
        return v

    def __setitem__(self, key: Value, value: Value) -> None:
        self.set(key, value)

    def __delitem__(self, key: Value) -> None:
        if self.remove(key) is None:
            raise KeyError(key)

    def __len__(self) -> int:
        return self.size()

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (bytes, bytearray, memoryview, str)):
            return False
        return self.contains_key(key)

    def __iter__(self) -> Iterator[bytes]:
        for k, _ in self._entries():
            yield k

    def _entries(self, pattern: Optional[Value] = None, count: int = _PAGE) -> Iterator[Tuple[bytes, bytes]]:
        return _scan(lambda cursor: self.scan(cursor, count, pattern))

    def scan_iter(self, pattern: Optional[Value] = None, count: int = _PAGE) -> Iterator[Tuple[bytes, bytes]]:
        """Every ``(key, value)``, page by page (HSCAN with ``count``); with
        ``pattern`` (Redis's glob, e.g. ``"user:*"``), only the keys that
        match it."""
        return self._entries(pattern, count)

    def keys(self) -> KeysView:  # type: ignore[type-arg,override]
        """A view of the keys: iterating it goes by HSCAN pages."""
        return _Keys(self)

    def values(self) -> ValuesView:  # type: ignore[type-arg,override]
        """A view of the values: iterating it goes by HSCAN pages."""
        return _Values(self)

    def items(self) -> ItemsView:  # type: ignore[type-arg,override]
        """A view of the ``(key, value)`` entries: iterating it goes by
        HSCAN pages (one round trip per page, not per entry)."""
        return _Items(self)

    def get(self, key: Value, default: Any = None) -> Any:  # type: ignore[override]
        """The value of key (HGET), ``default`` when absent."""
        v = MapBase.get(self, key)
        return default if v is None else v

    def pop(self, key: Value, default: Any = _MISSING) -> Any:  # type: ignore[override]
        """Remove key and answer its value in one round trip (the marked
        remove); ``default`` when absent, else ``KeyError``."""
        v = self.remove(key)
        if v is None:
            if default is _MISSING:
                raise KeyError(key)
            return default
        return v

    def popitem(self) -> Tuple[bytes, bytes]:
        """Remove some entry and answer it (the marked remove of a key the
        first HSCAN page shows; another is tried if a racing client took
        it first). ``KeyError`` when the map is empty."""
        for k, _ in self._entries(count=10):
            v = self.remove(k)
            if v is not None:
                return k, v
        raise KeyError("popitem(): the map is empty")

    def setdefault(self, key: Value, default: Optional[Value] = None) -> bytes:  # type: ignore[override]
        """The value of key; when absent, ``default`` set there at once
        (``put_if_absent``: one round trip, one winner among racing
        clients) and answered as bytes. Raises OutcomeUnknown when that
        reply is lost after it may have run."""
        if default is None:
            v = MapBase.get(self, key)
            if v is None:
                raise TypeError("a map's values are bytes or str: setdefault needs a default")
            return v
        v = self.put_if_absent(key, default)
        return _bytes(default, "default") if v is None else v

    def clear(self) -> None:
        """Delete the hash (one command)."""
        self.delete()

    def update(self, other: Any = (), /, **kwds: Value) -> None:  # type: ignore[override]
        """Write the entries of ``other`` (a mapping or ``(key, value)``
        pairs) and ``kwds`` in one round trip (``put_all``)."""
        flat = _flatten(other)
        for k, v in kwds.items():
            flat += [_bytes(k, "key"), _bytes(v, "value")]
        if flat:
            self._put_all(flat)

    def put_all(self, *entries: Any) -> None:
        """Set many entries in one round trip (HMSET): a mapping, an
        iterable of ``(key, value)`` pairs, or keys and values alternating
        as arguments (an odd count is refused). Sent again after a lost
        reply (writing twice leaves the same)."""
        if len(entries) == 1 and not isinstance(entries[0], (bytes, bytearray, memoryview, str)):
            flat = _flatten(entries[0])
        else:
            flat = [_bytes(x, "pairs") for x in entries]
        self._put_all(flat)

    def _put_all(self, flat: list) -> None:  # type: ignore[type-arg]
        self._call(lib.HL_OP_MAP_PUT_ALL, *flat)

    def get_all(self, *keys: Any) -> dict:  # type: ignore[type-arg,override]
        """The entries of the keys present, in one round trip (HMGET): the
        keys as arguments or one iterable of them."""
        if len(keys) == 1 and not isinstance(keys[0], (bytes, bytearray, memoryview, str)):
            keys = tuple(keys[0])
        return MapBase.get_all(self, *keys)

    def __eq__(self, other: object) -> bool:
        """Maps are equal when they are the same hash (same client and
        name); compare contents with ``dict(a.items()) == dict(b.items())``."""
        if isinstance(other, Map):
            return other._client is self._client and _bytes(other._name, "name") == _bytes(self._name, "name")
        return NotImplemented

    def __hash__(self) -> int:
        return hash((id(self._client), _bytes(self._name, "name")))

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r


def _flatten(other: Any) -> list:  # type: ignore[type-arg]
    """A mapping or (key, value) pairs as keys and values alternating."""
    items: Iterable[Any] = other.items() if isinstance(other, Mapping) else other
    flat = []
    for kv in items:
        try:
            k, v = kv
        except (TypeError, ValueError):
            raise TypeError("put_all takes a mapping or (key, value) pairs, not %r" % (kv,)) from None
        flat.append(_bytes(k, "key"))
        flat.append(_bytes(v, "value"))
    return flat
