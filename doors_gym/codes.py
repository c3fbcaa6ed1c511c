"""The cell codes of the grid observation: what the rules write into a grid and the pictures colour.

``EMPTY = 0``, ``AGENT = 1``, ``WALL = 2``, ``GOAL = 3``; ``CELL_NAMES`` names them in that order.

A module of their own, below :mod:`doors_gym.core`, so that :mod:`doors_gym.pixels` (which core calls for
the ``rgb`` observation) names them without importing the rules. Core imports them back: ``core.AGENT``
and this module's ``AGENT`` are one object.
"""

EMPTY, AGENT, WALL, GOAL = 0, 1, 2, 3
"""Cell codes of the observation grid."""
NUM_CELL_TYPES = 4
CELL_NAMES = ("empty", "agent", "wall", "goal")
