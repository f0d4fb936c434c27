"""The blocking deque's Python idiom: see :mod:`hilock._grid_blocking_queue`."""

from ._grid_blocking_queue import BlockingDeque

__all__ = ["BlockingDeque"]
