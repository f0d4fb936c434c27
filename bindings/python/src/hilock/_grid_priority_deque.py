"""The priority deque's Python idiom: see :mod:`hilock._grid_priority_queue`."""

from ._grid_priority_queue import PriorityDeque

__all__ = ["PriorityDeque"]
