"""``left_sum``: the float sum of the scoring paths, the same on every Python (3.12's ``sum()`` compensates)."""

from __future__ import annotations

from layersched.sim.float_sum import left_sum


def test_it_adds_left_to_right_rounding_each_addition() -> None:
    # A compensated sum (Python 3.12's sum(), math.fsum) gives 1.0 here; one rounding per addition loses the 1.0.
    assert left_sum([1e16, 1.0, -1e16]) == 0.0
    assert left_sum([0.1, 0.2, 0.3]) == (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)


def test_it_starts_from_start_and_takes_any_iterable() -> None:
    assert left_sum(iter([0.5, 0.25]), 1.0) == 1.75
    assert left_sum([]) == 0.0 and left_sum((), -2.0) == -2.0
