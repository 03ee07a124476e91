"""The two sides of a sandboxed jobs-v1 episode: the worker's authoritative ``JobsEnv`` and the sandbox's replica.

The start message is empty (the scenario travels in the scenario frame). Each decision's payload is the present
state (``JobsEnv.payload``); the replica builds a fresh ``JobsView`` from it per decision, so the view is always the
truth whatever the policy did to an earlier one. A decision is asked only when the policy has a choice (some
visible job can be placed); the steps in between, where every action is void, pass without a decision.

A reply is a slot index ``0..num_nw-1``, or ``None`` or ``num_nw`` for void (an empty slot or a job that fits at no
offset is a void too, as in the reference). The replica sends ``None`` as ``num_nw`` (the wire carries integers).
A void is refused when void is not allowed (``JobsEnv.void_allowed``).
"""

from __future__ import annotations

import dataclasses
import operator
import random
from collections.abc import Callable
from typing import Any

from layersched.sim.errors import PolicyError
from layersched.sim.tracks.interface import Policy
from layersched.sim.tracks.jobs_v1.env import JobsEnv
from layersched.sim.tracks.jobs_v1.metrics import JobsMetrics, episode_metrics
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.view import JobsView, VisibleJob
from layersched.sim.tracks.jobs_v1.workload import Job, JobDraw, workload_state


def check_reply(env: JobsEnv, value: object, step: int) -> int:
    """The policy's reply as an action (``num_nw`` for void); ``PolicyError`` names step and value."""
    void = env.scenario.num_nw
    if value is None:
        action = void
    elif type(value) is int:  # the common reply, taken as it is (bool is a subclass, not int itself)
        action = value
    elif isinstance(value, bool) or not hasattr(value, "__index__"):
        raise PolicyError(
            f"step {step}: policy returned {value!r:.80} of type {type(value).__name__}, expected a slot index "
            f"0..{void - 1} or None for void",
            step=step,
            value=value,
        )
    else:
        # As the wire encodes it (operator.index): an int subclass is its int value, whatever its __index__ says,
        # and an __index__ that returns no int is refused, so that a run in-process is the sandboxed run.
        try:
            action = operator.index(value)
        except TypeError as exc:
            raise PolicyError(
                f"step {step}: policy returned {value!r:.80} of type {type(value).__name__}, whose __index__ fails: "
                f"{exc}",
                step=step,
                value=value,
            ) from None
    if not 0 <= action <= void:
        raise PolicyError(
            f"step {step}: policy returned slot {action}, outside 0..{void - 1} (None or {void} for void)",
            step=step,
            value=value,
        )
    if not env.void_allowed() and (action == void or not env.placeable(action)):
        what = "void" if action == void else f"slot {action} (empty or fits nowhere, so a void)"
        raise PolicyError(
            f"step {step}: policy returned {what} at time {env.time}, with no arrival ahead and nothing running: "
            "a void would wait for nothing; place a job",
            step=step,
            value=value,
        )
    return action


class JobsEpisode:
    """One authoritative episode; ``first_decision`` starts its draw (``draw``: a ``JobDraw``, which the env asks for
    each step's arrival when time reaches the step, or the jobs themselves), so that the work before a decision
    never depends on the episode's future: the driver prepares step 0 before the episode's process is told, but a
    spare process waits meanwhile, and could time it."""

    def __init__(self, scenario: JobsScenario, draw: Callable[[], JobDraw | list[Job]]) -> None:
        self.scenario = scenario
        self._draw = draw
        self.env: JobsEnv | None = None

    def start_message(self) -> dict[str, Any]:
        return {}

    def first_decision(self) -> tuple[int, ...] | None:
        env = self.env = JobsEnv(self.scenario, self._draw())
        return env.payload() if env.settle() else None

    def check(self, value: object, step: int) -> int:
        assert self.env is not None
        return check_reply(self.env, value, step)

    def advance(self, action: int, announce: Callable[[Any], None]) -> bool:
        env = self.env
        assert env is not None
        env.act(action)
        if not env.settle():
            return False
        announce(env.payload())
        return True

    def metrics(self) -> JobsMetrics:
        assert self.env is not None
        return episode_metrics(self.env)


class JobsSimulator:
    def __init__(self, scenario: JobsScenario) -> None:
        self.scenario = scenario

    def episode(self, workload: random.Random) -> JobsEpisode:
        return JobsEpisode(self.scenario, lambda: JobDraw(self.scenario, workload_state(workload)))


class DrawnSimulator:
    """A simulator whose every episode is the jobs ``jobs`` (drawn once for several policies)."""

    def __init__(self, scenario: JobsScenario, jobs: list[Job]) -> None:
        self.scenario = scenario
        self.jobs = jobs

    def episode(self, workload: random.Random) -> JobsEpisode:
        return JobsEpisode(self.scenario, lambda: list(self.jobs))


class JobsReplica:
    """The sandbox side: a fresh view per decision, built from the payload alone (its ``VisibleJob`` tuples shared
    while a job waits: immutable, so a write to a view changes no other; a policy that digs this cache out of its
    process can make only its own views lie to itself, since the trusted side checks every reply)."""

    def __init__(self, scenario: JobsScenario) -> None:
        self.scenario = scenario  # the replica's own, never handed to a policy
        self._seen: dict[tuple[int, ...], VisibleJob] = {}  # the episode's visible jobs so far (JobsView's seen)
        # The views' scenario: one copy, shared by the views while it is intact (a copy per decision cost 8% of a
        # decision: issue 19's benchmark), and its fields, to check it after each decision.
        self._view_scenario = dataclasses.replace(scenario)
        self._fields = operator.attrgetter(*(field.name for field in dataclasses.fields(scenario)))
        self._values = self._fields(scenario)

    def start(self, message: dict[str, Any]) -> None:
        self._seen = {}
        self._view_scenario = dataclasses.replace(self.scenario)

    def decide(self, policy: Policy, payload: Any, step: int, rng: random.Random) -> object:
        # A policy that forced a write into its views' scenario (it is frozen) changes nothing that this view is
        # built from, whenever it wrote (during its decision, in its reply's __index__, from a thread between two
        # decisions): a changed class or field gets a new copy. (Fields compared by ==, which takes the very same
        # object as equal at once: a value that lies about its equality misleads only the policy that put it there.)
        if not self._intact(self._view_scenario):
            self._view_scenario = dataclasses.replace(self.scenario)
        reply = policy(JobsView(self._view_scenario, payload, self._seen), rng)
        # None is void: sent as the void's integer, since the wire carries integer actions only.
        return self.scenario.void if reply is None else reply

    def _intact(self, shared: JobsScenario) -> bool:
        try:
            return type(shared) is type(self.scenario) and self._fields(shared) == self._values
        except Exception:  # a field deleted, or a value whose comparison raises: not intact
            return False

    def in_range(self, action: int) -> bool:
        return 0 <= action <= self.scenario.num_nw

    def accepted(self, action: int) -> None:
        return None
