"""The bounded blocking queue's Python idiom: see :mod:`hilock._grid_blocking_queue`."""

from ._grid_blocking_queue import BoundedBlockingQueue

__all__ = ["BoundedBlockingQueue"]
