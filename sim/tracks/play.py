"""One episode played in one process exactly as the sandbox plays it across two: the track's trusted simulator
checks each reply and keeps the score, the policy sees only the replica's view. The calls and their order are the
sandbox's (worker/sandbox/episode_process.py and the runner), so a policy sees here what it sees on the server."""

from __future__ import annotations

import random
from typing import Any

from layersched.sim.tracks.interface import Policy, Replica, TrustedSimulator


def play_episode(
    simulator: TrustedSimulator,
    replica: Replica,
    policy: Policy,
    workload: random.Random,
    policy_rng: random.Random,
    *,
    max_decisions: int | None = None,
) -> tuple[list[int], Any]:
    """Play an episode (its first ``max_decisions`` decisions, if given) and return the accepted actions and the
    track's metrics record (None when stopped early); ``PolicyError`` on an invalid action."""
    episode = simulator.episode(workload)
    replica.start(episode.start_message())
    payload = episode.first_decision()
    actions: list[int] = []
    announced: list[Any] = []
    while payload is not None:
        if max_decisions is not None and len(actions) == max_decisions:
            return actions, None
        step = len(actions)
        action = episode.check(replica.decide(policy, payload, step, policy_rng), step)
        if replica.in_range(action):  # always, once checked; the sandbox updates before it hears the verdict
            replica.accepted(action)
        actions.append(action)
        announced.clear()
        payload = announced[0] if episode.advance(action, announced.append) else None
    return actions, episode.metrics()
