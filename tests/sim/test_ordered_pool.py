"""map_ordered: the results of a pool of processes in the order of the work, failures raised in the caller."""

from __future__ import annotations

import pytest

from layersched.sim.ordered_pool import map_ordered


def _scaled(factor: int, index: int) -> int:
    return factor * index


def _fail_on_three(context: None, index: int) -> int:
    if index == 3:
        raise RuntimeError(f"piece {index} failed")
    return index


@pytest.mark.parametrize("workers", [1, 2, 3], ids=lambda w: f"{w}-workers")
def test_results_come_in_the_order_of_the_work(workers: int) -> None:
    seen: list[tuple[int, int]] = []
    results = map_ordered(_scaled, 7, 10, workers=workers, progress=lambda done, total: seen.append((done, total)))
    assert results == [7 * i for i in range(10)]
    assert seen == [(done, 10) for done in range(1, 11)]


def test_no_work_is_an_empty_list() -> None:
    assert map_ordered(_scaled, 7, 0, workers=2) == []


@pytest.mark.parametrize("workers", [1, 2], ids=lambda w: f"{w}-workers")
def test_a_failing_piece_raises_in_the_caller(workers: int) -> None:
    with pytest.raises(RuntimeError, match="piece 3 failed"):
        map_ordered(_fail_on_three, None, 6, workers=workers)


@pytest.mark.parametrize(
    ("workers", "message"),
    [(0, "got 0"), (-2, "got -2"), (True, "got True"), (1.5, "got 1.5"), ("2", "got '2'")],
    ids=["zero", "negative", "bool", "float", "str"],
)
def test_bad_workers_are_refused_with_their_value(workers: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"workers must be an integer >= 1, {message}"):
        map_ordered(_scaled, 1, 3, workers=workers)  # type: ignore[arg-type]


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="count must be >= 0, got -1"):
        map_ordered(_scaled, 1, -1, workers=1)
