"""The deque's Python idiom: see :mod:`hilock._grid_queue`."""

from ._grid_queue import Deque

__all__ = ["Deque"]
