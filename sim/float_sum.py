"""Float sums that give the same float on every Python: left to right, each addition rounded.

Python 3.12's ``sum()`` of floats compensates its rounding errors (Neumaier's algorithm), so it can return another
float than Python 3.10 and 3.11 for the same values. A score must not depend on the Python a worker runs, and a
reward the reference computes by repeated ``+=`` must be that float, so these paths add left to right, as ``sum()``
did before 3.12 (the figures pinned in the tests were computed so).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable


def left_sum(values: Iterable[float], start: float = 0.0) -> float:
    """``start + v0 + v1 + ...``, each addition rounded, in order."""
    total: float = functools.reduce(operator.add, values, start)
    return total
