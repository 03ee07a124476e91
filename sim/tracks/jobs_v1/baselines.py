"""The jobs-v1 baselines, after the reference's ``other_agents.py``: ``policy(env, rng) -> slot or None``.

SJF, Packer and Tetris* look only at jobs that fit from the current step for their whole length, score each and
take the highest, the lowest slot on a tie (a strictly greater score replaces the best, scanning from slot 0, as
the reference); with none, void. Their scores are the reference's: SJF ``1 / len``, Packer the alignment
``free[0] . demand``, Tetris* ``knob * alignment + (1 - knob) * (1 / len)`` (``get_packer_sjf_action``) with
``TETRIS_KNOB``. (The reference's own evaluation calls Packer "Tetris"; Tetris* here is the combined score.)

Random picks uniformly among the allowed actions (``env.mask()``: a slot whose job can be placed at some offset,
and void when void is allowed) with the policy's ``rng``; the reference's picks any of ``num_nw + 1`` actions,
empty slots and jobs that do not fit too (which are voids there).
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable

from layersched.sim.tracks.jobs_v1.view import JobsView, VisibleJob, fits_from_now

# Tetris*'s knob (1 is Packer, 0 is SJF). The alignment reaches ~res_slot * (max_job_size + minor demand) (120 at
# the defaults) and 1/len at most 1, so a knob that lets both count is small: with 0.001 the length decides between
# short jobs (1/2 - 1/3 > 0.12) and the alignment between long ones. It gave the lowest mean slowdown of
# {0.5, 0.1, 0.05, 0.01, 0.003, 0.001, 0.0003, 0.0001} over seeds 0-9 at rates 0.3, 0.5 and 0.7 (the means of the
# three: 6.19, 5.96, 5.06, 3.13, 3.08, 3.00, 3.01, 3.01; SJF's 3.15).
TETRIS_KNOB = 0.001

Score = Callable[[JobsView, VisibleJob], float]


def best_fitting(env: JobsView, score: Score) -> int | None:
    """The slot whose job fits now with the highest positive ``score`` (the lowest slot on a tie), else None."""
    best, action = 0.0, None
    for i, job in enumerate(env.slots):
        if job is not None and env.fits_now(i):
            value = score(env, job)
            if value > best:
                best, action = value, i
    return action


def sjf_score(env: JobsView, job: VisibleJob) -> float:
    return 1 / float(job.length)


def alignment(env: JobsView, job: VisibleJob) -> float:
    # An integer dot product, so exactly numpy's np.dot(env.free[0], job.demand), without numpy.
    return float(sum(map(operator.mul, env.free_row(0), job.demand)))


def tetris_score(env: JobsView, job: VisibleJob) -> float:
    return TETRIS_KNOB * alignment(env, job) + (1 - TETRIS_KNOB) * sjf_score(env, job)


def sjf(env: JobsView, rng: random.Random) -> int | None:
    """Shortest job first."""
    # best_fitting(env, sjf_score), asking fits_now only of a job shorter than the best so far: 1/len falls strictly
    # with len, so that is the highest score, and a later slot of the same length never replaces it. (fits_now's
    # test on free_units read once: most decisions end in a void after asking it of every job.)
    units, r = env.free_units(), env.scenario.num_res
    # A job that fits now has demand <= free at step 0 resource by resource, and so demand <= free[0] as tuples
    # (lexicographically): one C comparison, which most of the jobs that do not fit already fail.
    now = tuple(units[:r])
    best, action = None, None
    for i, job in enumerate(env.slots):
        if job is None:
            continue
        length = job.length
        if best is not None and length >= best:
            continue
        if now >= job.demand and fits_from_now(units, r, job):
            best, action = length, i
    return action


def packer(env: JobsView, rng: random.Random) -> int | None:
    """The job best aligned with the free resources."""
    return best_fitting(env, alignment)


def tetris(env: JobsView, rng: random.Random) -> int | None:
    """Packer and SJF combined with ``TETRIS_KNOB``."""
    return best_fitting(env, tetris_score)


def random_allowed(env: JobsView, rng: random.Random) -> int | None:
    """A uniformly random allowed action."""
    mask = env.mask()
    choices: list[int | None] = [i for i, ok in enumerate(mask[:-1]) if ok]
    if mask[-1]:
        choices.append(None)
    return rng.choice(choices)


BASELINES: dict[str, Callable[[JobsView, random.Random], int | None]] = {
    "SJF": sjf,
    "Packer": packer,
    "Tetris*": tetris,
    "Random": random_allowed,
}
