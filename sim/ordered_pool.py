"""Independent pieces of work on a pool of processes, with the results in the order of the work.

``map_ordered(work, context, count, workers=...)`` is ``[work(context, i) for i in range(count)]``: the same list,
whatever the number of processes and whichever finishes first, so a result never depends on the pool. Processes
start from a fork server (a fresh, single-threaded interpreter that has imported the simulator once), not by
forking the caller: the caller may be a server with threads and open connections, which a plain fork copies.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

C = TypeVar("C")
R = TypeVar("R")

Progress = Callable[[int, int], None]  # progress(done, total), called in the caller's process after each piece

_work: Callable[[Any, int], Any] | None = None  # in a pool process: what _install was given
_context: Any = None


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system reports it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def map_ordered(
    work: Callable[[C, int], R], context: C, count: int, *, workers: int, progress: Progress | None = None
) -> list[R]:
    """``[work(context, i) for i in range(count)]`` on ``min(workers, count)`` processes (in-process for one).

    ``work`` must be a module-level function and ``context`` picklable: each process receives them once.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count!r}")
    if workers == 1 or count <= 1:
        results = []
        for i in range(count):
            results.append(work(context, i))
            if progress is not None:
                progress(i + 1, count)
        return results
    slots: list[R | None] = [None] * count
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([work.__module__])  # imported once in the server, not in every process
    with ProcessPoolExecutor(
        max_workers=min(workers, count), mp_context=ctx, initializer=_install, initargs=(work, context)
    ) as pool:
        futures = {pool.submit(_run, i): i for i in range(count)}
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                slots[futures[future]] = future.result()
                if progress is not None:
                    progress(done, count)
        except BaseException:
            for future in futures:  # a failure (or Ctrl-C) ends the run now, not after the rest of the work
                future.cancel()
            raise
    return slots  # type: ignore[return-value]  # every slot was filled


def _install(work: Callable[[Any, int], Any], context: Any) -> None:
    global _work, _context
    _work, _context = work, context


def _run(index: int) -> Any:
    assert _work is not None, "the pool's initializer did not run"
    return _work(_context, index)
