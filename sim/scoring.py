"""Scoring: from per-episode values of a track's primary metric to one comparable number, with its uncertainty.

Everything here is a pure function of numbers (numpy only), so the worker, the server and the SDK compute exactly
the same scores. The pieces, in the order a score is built:

1. Per episode, the track's primary metric (positive, lower is better; layers-v1: the mean completion time over
   the episode's tasks, in seconds).
2. Per scenario, ``scenario_ratio``: the submission's mean over the scenario's episodes divided by the track's
   reference baseline's mean over the very same episodes (layers-v1: Greedy's). 1.0 is the reference's level; 0.95
   means 5% better than it on average.
3. Overall, ``overall_score``: the weighted geometric mean of the scenario ratios. Lower is better.
4. Uncertainty, ``bootstrap_interval`` and ``prob_better``: a paired bootstrap over episodes with a fixed seed.
5. Leaderboard: ``ladder`` (show a public score only when it is a real improvement) and ``rank``.

Why a ratio of means, not a mean of ratios: the ratio of means is what the lab reports (mean over test seeds,
compared with Greedy's mean), it is symmetric (the ratio of A to B is exactly 1 / the ratio of B to A, which a
mean of per-episode ratios is not), and it does not let a few easy episodes where the reference is very good dominate
the scenario. Episodes of one scenario share the same scale, so weighting them by their length is natural.

Why a geometric mean across scenarios: scenarios differ in scale (5 or 20 nodes, different loads), and a 10%
improvement should count the same wherever it happens; the geometric mean of ratios does exactly that and is
independent of which policy is the reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

BOOTSTRAP_SEED = 20230126
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class ScenarioEpisodes:
    """One scenario's per-episode primary metric: the submission's and the reference baseline's, episode by episode.

    ``policy[i]`` and ``reference[i]`` must come from the same episode; that pairing is what makes the comparison
    and the bootstrap fair.
    """

    name: str
    weight: float
    policy: tuple[float, ...]
    reference: tuple[float, ...]

    def __post_init__(self) -> None:
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise ValueError(f"scenario {self.name!r}: weight must be positive and finite, got {self.weight!r}")
        if len(self.policy) != len(self.reference):
            raise ValueError(
                f"scenario {self.name!r}: {len(self.policy)} policy episodes but {len(self.reference)} "
                "reference episodes"
            )
        if not self.policy:
            raise ValueError(f"scenario {self.name!r}: no episodes")
        for label, values in (("policy", self.policy), ("reference", self.reference)):
            for value in values:
                if not (math.isfinite(value) and value > 0):
                    raise ValueError(
                        f"scenario {self.name!r}: {label} values must be positive and finite, got {value!r}"
                    )


@dataclass(frozen=True)
class Score:
    """An overall score (lower is better, 1.0 = the reference baseline) with its per-scenario ratios."""

    overall: float
    ratios: dict[str, float]


def scenario_ratio(policy: Sequence[float], reference: Sequence[float]) -> float:
    """Mean of the submission's per-episode means over the mean of the reference baseline's, on the same episodes.

    >>> scenario_ratio([50.0, 70.0], [60.0, 60.0])
    1.0
    """
    if len(policy) != len(reference) or not policy:
        raise ValueError(f"need the same non-zero number of episodes, got {len(policy)} and {len(reference)}")
    return float(np.mean(policy) / np.mean(reference))


def overall_score(ratios: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted geometric mean ``exp(sum w_i log r_i / sum w_i)`` of the scenario ratios.

    >>> round(overall_score([0.5, 2.0], [1.0, 1.0]), 12)
    1.0
    """
    r = np.asarray(ratios, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if r.shape != w.shape or r.size == 0:
        raise ValueError(f"need one weight per ratio, got {r.size} ratios and {w.size} weights")
    if not (np.all(r > 0) and np.all(np.isfinite(r))):
        raise ValueError(f"ratios must be positive and finite, got {r.tolist()}")
    if not (np.all(w > 0) and np.all(np.isfinite(w))):
        raise ValueError(f"weights must be positive and finite, got {w.tolist()}")
    return float(np.exp(np.sum(w * np.log(r)) / np.sum(w)))


def score(scenarios: Sequence[ScenarioEpisodes]) -> Score:
    """Per-scenario ratios to the reference baseline and their weighted geometric mean."""
    ratios = {sc.name: scenario_ratio(sc.policy, sc.reference) for sc in scenarios}
    return Score(overall_score(list(ratios.values()), [sc.weight for sc in scenarios]), ratios)


def pair_episodes(
    weights: Mapping[str, float],
    policy: Mapping[tuple[str, str], float],
    reference: Mapping[tuple[str, str], float],
) -> list[ScenarioEpisodes]:
    """Group per-episode values keyed by (scenario, episode id) into ``ScenarioEpisodes``, paired with the
    reference baseline's.

    Every episode the reference has (within the scenarios of ``weights``) must be in ``policy``, and nothing else: a
    missing episode raises ``ValueError`` naming it rather than silently scoring on fewer episodes.
    """
    extra = sorted(set(policy) - set(reference))
    if extra:
        raise ValueError(f"policy has episode {extra[0]!r}, which the reference does not have")
    out = []
    for name, weight in weights.items():
        keys = sorted(k for k in reference if k[0] == name)
        missing = [k for k in keys if k not in policy]
        if missing:
            raise ValueError(f"policy has no result for episode {missing[0]!r}")
        if keys:
            mine, theirs = tuple(policy[k] for k in keys), tuple(reference[k] for k in keys)
            out.append(ScenarioEpisodes(name, weight, mine, theirs))
    if not out:
        raise ValueError(f"no episodes of scenarios {sorted(weights)} in the results")
    return out


# ------------------------------------------------------------------------------------------------ uncertainty


def _resampled_scores(
    submissions: Sequence[Sequence[ScenarioEpisodes]], n_resamples: int, seed: int
) -> npt.NDArray[np.float64]:
    """Overall scores of each submission on ``n_resamples`` bootstrap resamples: shape (submissions, resamples).

    Episodes are resampled with replacement *within* each scenario, and the same indices are used for every
    submission and for the reference (a paired bootstrap): the episode-to-episode variation shared by all policies,
    which is most of it, cancels out.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    first = submissions[0]
    for other in submissions[1:]:
        if [(s.name, s.weight, s.reference) for s in other] != [(s.name, s.weight, s.reference) for s in first]:
            raise ValueError("submissions must be scored on the same scenarios and the same reference episodes")
    rng = np.random.default_rng(seed)
    weights = np.array([s.weight for s in first])
    log_ratios = np.empty((len(submissions), n_resamples, len(first)))
    for j, sc in enumerate(first):
        n = len(sc.reference)
        idx = rng.integers(0, n, size=(n_resamples, n))
        reference_mean = np.asarray(sc.reference)[idx].mean(axis=1)
        for i, sub in enumerate(submissions):
            log_ratios[i, :, j] = np.log(np.asarray(sub[j].policy)[idx].mean(axis=1) / reference_mean)
    result: npt.NDArray[np.float64] = np.exp(log_ratios @ weights / weights.sum())
    return result


def bootstrap_interval(
    scenarios: Sequence[ScenarioEpisodes],
    *,
    level: float = 0.95,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile interval of the overall score over a paired bootstrap of episodes (reproducible: fixed seed).

    Read it as "with another draw of episodes like these, the score would likely fall in here". With few episodes
    per scenario the interval is optimistic: the bootstrap cannot see variation that the episodes do not show.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    scores = _resampled_scores([scenarios], n_resamples, seed)[0]
    low, high = np.quantile(scores, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def prob_better(
    a: Sequence[ScenarioEpisodes],
    b: Sequence[ScenarioEpisodes],
    *,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> float:
    """Share of paired bootstrap resamples in which ``a`` scores strictly lower (better) than ``b``; ties count half.

    Both submissions must have been run on the same episodes. 0.5 means "no evidence either way"; above 0.95, the
    lead of ``a`` is unlikely to be luck of the episode draw. ``prob_better(a, b) + prob_better(b, a) == 1``.
    """
    scores = _resampled_scores([a, b], n_resamples, seed)
    wins = np.mean(scores[0] < scores[1])
    ties = np.mean(scores[0] == scores[1])
    return float(wins + ties / 2)


def difference_noise(
    a: Sequence[ScenarioEpisodes],
    b: Sequence[ScenarioEpisodes],
    *,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> float:
    """Standard deviation of ``score(a) - score(b)`` over the paired bootstrap: the noise in a difference."""
    scores = _resampled_scores([a, b], n_resamples, seed)
    return float(np.std(scores[0] - scores[1]))


# ------------------------------------------------------------------------------------------------ leaderboard


@dataclass(frozen=True)
class LadderDecision:
    """Whether to reveal the new public score, and the public score the participant now sees."""

    show: bool
    shown_score: float


def ladder(
    best_shown: float | None, new_score: float, step: float, *, resolution: float | None = None
) -> LadderDecision:
    """The Ladder (Blum and Hardt, 2015): reveal a public score only when it beats the best shown by ``step``.

    The public split is small, so a participant who submits many variants and keeps the luckiest can climb the
    public leaderboard without improving: the public score slowly leaks the public episodes. The Ladder shows a
    new score only if it is lower than the participant's best shown score by more than ``step`` (set it to the
    noise, for example ``difference_noise`` between the new submission and the best one, or a fixed 0.01);
    otherwise the participant keeps seeing their previous best. With ``resolution``, a revealed score is rounded
    to a multiple of it, as in the original algorithm, which leaks even less. The private split, never shown
    during the challenge, decides the final ranking either way.
    """
    if not (math.isfinite(step) and step >= 0):
        raise ValueError(f"step must be a non-negative number, got {step!r}")
    if not math.isfinite(new_score):
        raise ValueError(f"new_score must be finite, got {new_score!r}")
    if best_shown is not None and new_score >= best_shown - step:
        return LadderDecision(False, best_shown)
    shown = new_score
    if resolution is not None:
        if not resolution > 0:
            raise ValueError(f"resolution must be positive, got {resolution!r}")
        shown = round(round(new_score / resolution) * resolution, 12)  # 0.95, not 0.9500000000000001
        if best_shown is not None and shown >= best_shown:  # rounding must never hide a real improvement
            shown = new_score
    return LadderDecision(True, shown)


@dataclass(frozen=True)
class RankEntry:
    """A leaderboard candidate: its id (a submission or a team), its score, and when it was submitted."""

    id: str
    score: float
    submitted_at: datetime


@dataclass(frozen=True)
class Ranked:
    rank: int
    entry: RankEntry


def rank(entries: Sequence[RankEntry], *, decimals: int | None = None) -> list[Ranked]:
    """Lower score first; equal scores (after rounding to ``decimals``, if given) go to the earlier submission.

    Ranks are strict (1, 2, 3, ...): the earlier of two equal scores is ranked above the later one, so
    resubmitting a copy of the leader's policy never ties with it.
    """
    for e in entries:
        if not math.isfinite(e.score):
            raise ValueError(f"entry {e.id!r}: score must be finite, got {e.score!r}")

    def key(e: RankEntry) -> tuple[float, datetime, str]:
        return (e.score if decimals is None else round(e.score, decimals)), e.submitted_at, e.id

    return [Ranked(i + 1, e) for i, e in enumerate(sorted(entries, key=key))]
