"""Scoring on hand-computed examples: ratios, geometric means, the paired bootstrap, the Ladder and ranking."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pytest

from layersched.sim.scoring import (
    LadderDecision,
    RankEntry,
    ScenarioEpisodes,
    bootstrap_interval,
    difference_noise,
    ladder,
    overall_score,
    pair_episodes,
    prob_better,
    rank,
    scenario_ratio,
    score,
)


@pytest.mark.parametrize(
    ("policy", "greedy", "expected"),
    [
        ([60.0, 60.0], [60.0, 60.0], 1.0),
        ([30.0, 30.0], [60.0, 60.0], 0.5),
        ([50.0, 70.0], [60.0, 60.0], 1.0),
        # Ratio of means 110/70, not the mean of ratios (0.5 + 2.0) / 2 = 1.25.
        ([10.0, 100.0], [20.0, 50.0], 11 / 7),
        ([45.0], [50.0], 0.9),
    ],
    ids=["equal", "twice-as-fast", "errors-cancel", "ratio-of-means", "one-episode"],
)
def test_scenario_ratio(policy: list[float], greedy: list[float], expected: float) -> None:
    assert scenario_ratio(policy, greedy) == pytest.approx(expected, rel=1e-12)


def test_ratio_of_means_is_symmetric() -> None:
    a, b = [10.0, 100.0, 35.0], [20.0, 50.0, 70.0]
    assert scenario_ratio(a, b) * scenario_ratio(b, a) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize(
    ("ratios", "weights", "expected"),
    [
        ([0.5, 2.0], [1.0, 1.0], 1.0),
        ([0.5, 2.0], [3.0, 1.0], 2**-0.5),  # exp((3 ln 0.5 + ln 2) / 4) = 2^(-1/2)
        ([0.8], [5.0], 0.8),
        ([0.9, 0.9, 0.9], [1.0, 2.0, 3.0], 0.9),
        ([1.0, 4.0], [1.0, 1.0], 2.0),  # sqrt(1 * 4)
    ],
    ids=["reciprocal-cancel", "weighted", "single", "constant", "sqrt"],
)
def test_overall_score(ratios: list[float], weights: list[float], expected: float) -> None:
    assert overall_score(ratios, weights) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("ratios", "weights", "message"),
    [
        ([1.0], [1.0, 2.0], "need one weight per ratio, got 1 ratios and 2 weights"),
        ([], [], "need one weight per ratio, got 0 ratios and 0 weights"),
        ([0.0, 1.0], [1.0, 1.0], "ratios must be positive and finite, got [0.0, 1.0]"),
        ([math.inf], [1.0], "ratios must be positive and finite, got [inf]"),
        ([1.0], [-1.0], "weights must be positive and finite, got [-1.0]"),
    ],
    ids=["length-mismatch", "empty", "zero-ratio", "infinite-ratio", "negative-weight"],
)
def test_overall_score_errors(ratios: list[float], weights: list[float], message: str) -> None:
    with pytest.raises(ValueError) as exc:
        overall_score(ratios, weights)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"policy": (1.0,), "reference": (1.0, 2.0)},
            "scenario 's': 1 policy episodes but 2 reference episodes",
        ),
        ({"policy": (), "reference": ()}, "scenario 's': no episodes"),
        (
            {"policy": (math.nan,), "reference": (1.0,)},
            "scenario 's': policy values must be positive and finite, got nan",
        ),
        (
            {"policy": (1.0,), "reference": (0.0,)},
            "scenario 's': reference values must be positive and finite, got 0.0",
        ),
    ],
    ids=["length-mismatch", "empty", "nan", "zero-greedy"],
)
def test_scenario_episodes_errors(kwargs: dict[str, tuple[float, ...]], message: str) -> None:
    with pytest.raises(ValueError) as exc:
        ScenarioEpisodes("s", 1.0, **kwargs)
    assert str(exc.value) == message


def test_score_combines_ratios() -> None:
    result = score(
        [
            ScenarioEpisodes("a", 1.0, (30.0, 30.0), (60.0, 60.0)),
            ScenarioEpisodes("b", 1.0, (120.0,), (60.0,)),
        ]
    )
    assert result.ratios == {"a": 0.5, "b": 2.0}
    assert result.overall == pytest.approx(1.0, rel=1e-12)


def test_pair_episodes_aligns_by_episode_id() -> None:
    greedy = {("a", "e1"): 60.0, ("a", "e0"): 50.0, ("b", "e0"): 10.0}
    policy = {("a", "e0"): 40.0, ("a", "e1"): 70.0, ("b", "e0"): 5.0}
    pairs = pair_episodes({"a": 2.0, "b": 1.0}, policy, greedy)
    assert pairs == [
        ScenarioEpisodes("a", 2.0, (40.0, 70.0), (50.0, 60.0)),
        ScenarioEpisodes("b", 1.0, (5.0,), (10.0,)),
    ]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({("a", "e0"): 1.0}, "policy has no result for episode ('a', 'e1')"),
        (
            {("a", "e0"): 1.0, ("a", "e1"): 1.0, ("a", "x"): 1.0},
            "policy has episode ('a', 'x'), which the reference does not have",
        ),
    ],
    ids=["missing", "extra"],
)
def test_pair_episodes_errors(policy: dict[tuple[str, str], float], message: str) -> None:
    with pytest.raises(ValueError) as exc:
        pair_episodes({"a": 1.0}, policy, {("a", "e0"): 1.0, ("a", "e1"): 1.0})
    assert str(exc.value) == message


# ------------------------------------------------------------------------------------------------ bootstrap

# One scenario, two episodes: a resample of two episodes has policy mean 1, 2 or 3 (probabilities 1/4, 1/2,
# 1/4) while Greedy's mean is always 2, so the resampled score is 0.5, 1.0 or 1.5.
TWO_EPISODES = [ScenarioEpisodes("s", 1.0, (1.0, 3.0), (2.0, 2.0))]
GREEDY_ITSELF = [ScenarioEpisodes("s", 1.0, (2.0, 2.0), (2.0, 2.0))]


def test_bootstrap_interval_hand_computed() -> None:
    assert bootstrap_interval(TWO_EPISODES) == (0.5, 1.5)
    # An 40% interval excludes the tails (probability 1/4 each), leaving only the middle value.
    assert bootstrap_interval(TWO_EPISODES, level=0.4) == (1.0, 1.0)


def test_bootstrap_is_reproducible_and_seeded() -> None:
    scenarios = [
        ScenarioEpisodes("a", 1.0, (50.0, 61.0, 70.0, 44.0, 58.0), (52.0, 60.0, 71.0, 50.0, 55.0)),
        ScenarioEpisodes("b", 2.0, (120.0, 90.0, 100.0), (110.0, 95.0, 99.0)),
    ]
    first = bootstrap_interval(scenarios)
    assert bootstrap_interval(scenarios) == first
    assert bootstrap_interval(scenarios, seed=1) != first
    low, high = first
    assert low < score(scenarios).overall < high


def test_bootstrap_of_a_constant_ratio_has_no_width() -> None:
    scenarios = [ScenarioEpisodes("a", 1.0, (45.0, 54.0, 63.0), (50.0, 60.0, 70.0))]
    low, high = bootstrap_interval(scenarios)
    assert low == pytest.approx(0.9, rel=1e-12)
    assert high == pytest.approx(0.9, rel=1e-12)


def test_prob_better_hand_computed() -> None:
    # P(score < 1) = 1/4 and P(score == 1) = 1/2, so P(better) = 1/4 + 1/2 / 2 = 1/2 (up to resampling noise).
    assert prob_better(TWO_EPISODES, GREEDY_ITSELF) == pytest.approx(0.5, abs=0.03)
    assert prob_better(GREEDY_ITSELF, GREEDY_ITSELF) == 0.5


def test_prob_better_is_complementary_and_sure_of_a_uniform_lead() -> None:
    greedy = (50.0, 60.0, 70.0, 80.0)
    a = [ScenarioEpisodes("s", 1.0, (45.0, 59.0, 66.0, 79.0), greedy)]
    b = [ScenarioEpisodes("s", 1.0, (50.0, 61.0, 70.0, 80.0), greedy)]
    assert prob_better(a, b) == 1.0
    assert prob_better(b, a) == 0.0
    c = [ScenarioEpisodes("s", 1.0, (40.0, 65.0, 69.0, 85.0), greedy)]
    assert prob_better(a, c) + prob_better(c, a) == pytest.approx(1.0, abs=1e-12)


def test_prob_better_rejects_different_episodes() -> None:
    a = [ScenarioEpisodes("s", 1.0, (1.0,), (2.0,))]
    b = [ScenarioEpisodes("s", 1.0, (1.0,), (3.0,))]
    with pytest.raises(ValueError) as exc:
        prob_better(a, b)
    assert str(exc.value) == "submissions must be scored on the same scenarios and the same reference episodes"


def test_difference_noise() -> None:
    assert difference_noise(TWO_EPISODES, TWO_EPISODES) == 0.0
    # The score difference is -0.5, 0 or 0.5 with probabilities 1/4, 1/2, 1/4: standard deviation sqrt(1/8).
    assert difference_noise(TWO_EPISODES, GREEDY_ITSELF) == pytest.approx(math.sqrt(1 / 8), abs=0.02)


# ------------------------------------------------------------------------------------------------ leaderboard


@pytest.mark.parametrize(
    ("best", "new", "step", "resolution", "expected"),
    [
        (None, 0.97, 0.01, None, LadderDecision(True, 0.97)),
        (0.97, 0.95, 0.01, None, LadderDecision(True, 0.95)),
        (0.97, 0.96, 0.01, None, LadderDecision(False, 0.97)),  # exactly one step better: not enough
        (0.97, 0.965, 0.01, None, LadderDecision(False, 0.97)),
        (0.97, 1.2, 0.01, None, LadderDecision(False, 0.97)),
        (0.97, 0.9512, 0.01, 0.01, LadderDecision(True, 0.95)),
        (None, 0.9551, 0.0, 0.01, LadderDecision(True, 0.96)),
        (0.96, 0.9551, 0.0, 0.01, LadderDecision(True, 0.9551)),  # rounding up to 0.96 would hide the gain
    ],
    ids=["first", "improves", "one-step", "within-noise", "worse", "rounded", "rounded-up", "rounding-guard"],
)
def test_ladder(
    best: float | None, new: float, step: float, resolution: float | None, expected: LadderDecision
) -> None:
    decision = ladder(best, new, step, resolution=resolution)
    assert decision.show == expected.show
    assert decision.shown_score == pytest.approx(expected.shown_score, abs=1e-12)


def test_ladder_shown_scores_only_decrease() -> None:
    shown: float | None = None
    history = []
    for new in [1.0, 0.99, 0.995, 0.97, 0.975, 0.969, 0.94]:
        decision = ladder(shown, new, 0.005, resolution=0.01)
        shown = decision.shown_score
        history.append(shown)
    assert history == sorted(history, reverse=True)
    assert history[-1] == pytest.approx(0.94)


@pytest.mark.parametrize(
    ("best", "new", "step", "message"),
    [
        (1.0, 0.9, -0.1, "step must be a non-negative number, got -0.1"),
        (1.0, math.nan, 0.1, "new_score must be finite, got nan"),
    ],
    ids=["negative-step", "nan-score"],
)
def test_ladder_errors(best: float, new: float, step: float, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        ladder(best, new, step)
    assert str(exc.value) == message


T0 = datetime(2026, 3, 1, 12, 0, 0)


def test_rank_orders_by_score_then_submission_time() -> None:
    entries = [
        RankEntry("late-tie", 0.95, T0 + timedelta(hours=2)),
        RankEntry("best", 0.90, T0 + timedelta(hours=3)),
        RankEntry("early-tie", 0.95, T0 + timedelta(hours=1)),
        RankEntry("worst", 1.10, T0),
    ]
    assert [(r.rank, r.entry.id) for r in rank(entries)] == [
        (1, "best"),
        (2, "early-tie"),
        (3, "late-tie"),
        (4, "worst"),
    ]


def test_rank_ties_after_rounding() -> None:
    entries = [RankEntry("later", 0.95001, T0 + timedelta(minutes=5)), RankEntry("earlier", 0.95004, T0)]
    assert [r.entry.id for r in rank(entries)] == ["later", "earlier"]
    assert [r.entry.id for r in rank(entries, decimals=4)] == ["earlier", "later"]


def test_rank_rejects_nan() -> None:
    with pytest.raises(ValueError) as exc:
        rank([RankEntry("x", math.nan, T0)])
    assert str(exc.value) == "entry 'x': score must be finite, got nan"
