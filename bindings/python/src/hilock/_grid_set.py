"""The set's Python idiom (Redisson ``RSet``): a
:class:`collections.abc.MutableSet` of ``bytes`` over the generated calls.
Iteration goes by SSCAN pages (memory stays one page whatever the size).
"""

from __future__ import annotations

from collections.abc import MutableSet
from typing import Any, Iterator

from ._grid import _scan
from ._grid_gen import SetBase

__all__ = ["Set"]


class Set(SetBase, MutableSet):  # type: ignore[misc]
    """A set of byte members under one key, shared with Redisson's ``RSet``
    (``StringCodec`` or ``ByteArrayCodec`` on the Java side). Members go in
    as ``bytes`` or ``str`` (UTF-8) and come out as ``bytes``.

    A ``MutableSet``: ``v in s``, ``len(s)``, iteration (SSCAN pages of
    ``page_size``), ``s.add(v)``, ``s.discard(v)``, ``s.pop()``,
    ``s.clear()`` and the mixin operators (``s | other`` and the like give
    a Python ``set``; ``s |= other`` adds in one round trip per item).

    Unlike ``set.add`` and ``set.remove``, :meth:`add` answers whether the
    member was new, and :meth:`remove` answers whether it was there (True
    or False) instead of raising ``KeyError`` (Redisson's ``remove``);
    :meth:`discard` is the quiet form.
    """

    #: the COUNT hint of the SSCAN pages that iteration reads
    page_size = 1000

    def __contains__(self, value: Any) -> bool:
        if not isinstance(value, (bytes, bytearray, memoryview, str)):
            return False
        return self.contains(value)

    def __len__(self) -> int:
        return self.size()

    def __iter__(self) -> Iterator[bytes]:
        return _scan(lambda cursor: self.scan(cursor, self.page_size))

    def discard(self, value: Any) -> None:
        """Remove value if it is a member (nothing if not)."""
        self.remove(value)

    def pop(self) -> bytes:
        """Take a random member out (SPOP); ``KeyError`` when empty. A lost
        reply answers what was taken (never lost, never taken twice)."""
        v = self.remove_random()
        if v is None:
            raise KeyError("pop from an empty set")
        return v

    def clear(self) -> None:
        """Remove every member (delete the key)."""
        self.delete()

    def update(self, *others: Any) -> None:
        """Add every member of the iterables, one round trip each."""
        for o in others:
            items = list(o)
            if items:
                self.add_all(*items)

    def __ior__(self, other: Any) -> "Set":  # type: ignore[override]
        self.update(other)
        return self

    def __isub__(self, other: Any) -> "Set":  # type: ignore[override]
        if other is self:
            self.clear()
            return self
        items = list(other)
        if items:
            self.remove_all(*items)
        return self

    @classmethod
    def _from_iterable(cls, it: Any) -> set:  # type: ignore[override]
        # the mixin operators (s | other, s & other...) make a Python set
        return set(it)
