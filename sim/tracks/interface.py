"""What a track is: everything problem-specific that the shared machinery (episodes, evaluation sets, sandbox,
scoring, leaderboard) needs from one scheduling problem.

A track is an object with the attributes of ``Track``. Its episodes run two ways:

* in-process (baselines, ``layersched validate``, tests): ``Track.run_episode`` with the policy called directly;
* sandboxed: the worker holds the authoritative ``TrustedEpisode``, the sandbox's episode process a ``Replica``.
  Per decision the trusted side sends one *decision payload* (a JSON array of numbers, or any JSON value), the
  replica turns it into the policy's arguments, and the policy's reply is one integer action that the trusted side
  checks. The replica learns only what the trusted side sends (``start_message`` and the payloads), never the
  workload's seed, key or future.

Actions are integers on every track (a track that needs more, such as a (task, machine) pair, numbers its choices).
Scores are per-scenario ratios of the primary metric to the reference baseline's on the same episodes
(``layersched.sim.scoring``), so the primary metric must be positive and lower must be better.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from layersched.sim.episodes import EpisodeSpec

# policy(view, decision, rng) -> action: the arguments are the track's (the lab's: the env view and a Task).
Policy = Callable[..., Any]


@dataclass(frozen=True)
class MetricSpec:
    """One per-episode metric a track reports: its key in ``EpisodeRun.metrics``, a label and a unit."""

    name: str
    label: str
    unit: str = ""


class EpisodeRun(Protocol):
    """An episode played to its end: the accepted actions and the track's metrics record."""

    @property
    def actions(self) -> tuple[int, ...]: ...

    @property
    def metrics(self) -> Any: ...


class TrustedEpisode(Protocol):
    """The authoritative simulator of one episode, driven one decision at a time by the worker."""

    def start_message(self) -> dict[str, Any]:
        """What the replica needs before the first decision (JSON; for the lab track, the episode's nodes)."""
        ...

    def first_decision(self) -> Any:
        """Decision 0's payload (JSON-able), or None if the episode needs no decision."""
        ...

    def check(self, value: object, step: int) -> int:
        """The policy's reply as a valid action for this decision; raises ``PolicyError`` naming step and value."""
        ...

    def advance(self, action: int, announce: Callable[[Any], None]) -> bool:
        """Apply a checked action. ``announce(payload)`` is called with the next decision's payload as soon as it
        is known (before the simulator's step where the track allows, so the sandbox decides while it runs);
        returns whether a next decision exists (and was announced)."""
        ...

    def metrics(self) -> Any:
        """The finished episode's metrics record: a frozen dataclass with a float field per ``Track.metric_specs``
        name (generic code reads ``getattr(record, spec.name)``)."""
        ...


class TrustedSimulator(Protocol):
    """The authoritative simulator of one scenario (built once, reused for each of its episodes)."""

    def episode(self, workload: random.Random) -> TrustedEpisode:
        """A new episode whose workload comes from ``workload`` (drawn lazily: by ``first_decision`` at the
        latest, so the worker can draw it while the sandbox starts the episode's process)."""
        ...


class Replica(Protocol):
    """The sandbox side of one scenario: the policy's view, kept equal to the authoritative state per decision."""

    def start(self, message: dict[str, Any]) -> None:
        """Begin an episode from ``TrustedEpisode.start_message()``."""
        ...

    def decide(self, policy: Policy, payload: Any, step: int, rng: random.Random) -> object:
        """Call the policy for one decision and return what it returned (unchecked)."""
        ...

    def accepted(self, action: int) -> None:
        """Bring the replica up to date after ``action`` was sent (called for in-range actions only)."""
        ...

    def in_range(self, action: int) -> bool:
        """Whether ``action`` could be valid at all (a cheap bound; the trusted side does the real check)."""
        ...


class ScenarioEntry(Protocol):
    """One scenario of an evaluation set, as a track's schema gets it back (``layersched.sim.evalset.EvalScenario``)."""

    @property
    def name(self) -> str: ...

    @property
    def scenario(self) -> Any:
        """The track's scenario value, as ``ScenarioSchema.parse_scenario`` returned it."""
        ...

    @property
    def source(self) -> Any:
        """What ``parse_scenario`` returned beside the scenario (None for a scenario built in code)."""
        ...

    @property
    def episodes(self) -> tuple[EpisodeSpec, ...]: ...


class ScenarioSchema(Protocol):
    """How a track's scenarios are written in an evaluation-set file, read back and committed to.

    The shared code (``layersched.sim.evalset``) reads a file's ``format``, ``version``, ``name``, ``description``,
    ``track`` and, of each ``[[scenario]]`` table, ``name``, ``weight`` and ``episodes``; the rest of each table, and
    the top-level tables named in ``evalset_tables``, are the track's. The set's commitment hashes the shared part
    with what ``scenario_canonical`` and ``tables_canonical`` return. ``layersched.sim.tracks.simple_schema`` has
    all of it for a scenario that is a few integers.
    """

    # The keys of a [[scenario]] table the track reads (never name, weight or episodes).
    scenario_keys: frozenset[str]
    # The top-level tables of a file the track reads (the lab's: "catalogs"), shared by its scenarios.
    evalset_tables: frozenset[str]

    def read_tables(self, tables: Mapping[str, Any], *, base_dir: Path) -> Any:
        """Read the file's ``evalset_tables`` (those present) once: what each ``parse_scenario`` of the file gets as
        ``context``. Paths in them are relative to ``base_dir``, the file's folder."""
        ...

    def parse_scenario(self, table: Mapping[str, Any], where: str, context: Any) -> tuple[Any, Any]:
        """A [[scenario]] table's ``scenario_keys`` (those present) as ``(scenario, source)``: ``scenario`` is what the
        track runs and hashes, ``source`` anything it wants back for the canonical form and the dump (opaque to the
        shared code). Raises ``EvalSetError`` whose message starts with ``where`` (``scenario 'lab-300'``)."""
        ...

    def check_scenarios(self, scenarios: Sequence[ScenarioEntry]) -> None:
        """Raise ``EvalSetError`` naming the scenario if the set's scenarios cannot be played or committed to as they
        are (the lab's: an episode whose nodes hold no copy of some image; one catalog name for two catalogs)."""
        ...

    def secret_keys(self, scenario: ScenarioEntry) -> Iterable[tuple[bytes, str]]:
        """The secret keys the scenario's own part depends on (the episodes' are the shared code's), each with what
        it keys (``catalog 'hidden-a'``): the set is hidden if any, and no key may serve two purposes."""
        ...

    def scenario_canonical(self, scenario: ScenarioEntry, *, public: bool) -> dict[str, Any]:
        """The scenario's own part of the canonical form (JSON; keys other than name, weight and episodes); without
        secret keys when ``public``. Equal for a scenario and for the one its dump reads back as."""
        ...

    def tables_canonical(self, scenarios: Sequence[ScenarioEntry], *, public: bool) -> dict[str, Any]:
        """The track's top-level part of the canonical form (the lab's: ``{"catalogs": ...}``; may be empty)."""
        ...

    def dump_scenario(self, scenario: ScenarioEntry) -> dict[str, Any]:
        """The scenario's ``scenario_keys`` as TOML values (in the order to write them) that read back the same."""
        ...

    def dump_tables(
        self, scenarios: Sequence[ScenarioEntry], *, relocate: Callable[[str], str]
    ) -> dict[str, dict[str, dict[str, Any]]]:
        """The top-level tables to write, as ``{table: {name: {key: TOML value}}}`` (``[table.name]`` sections).
        ``relocate`` maps a path as the set names it to the one to write (the file is saved in another folder)."""
        ...


class Track(ScenarioSchema, Protocol):
    """One scheduling problem, behind one versioned id (``layers-v1``); see ``layersched.sim.tracks.registry``."""

    id: str
    title: str
    # The contract a student's policy follows: its signature, what it returns, what it may do with its view.
    contract: str
    # What ``policy`` is called with, as the contract names the arguments: ``"(env, task, rng)"`` for layers-v1.
    policy_arguments: str
    # What a reply must be, as messages about a reply of the wrong type say it: "an int node index" for layers-v1.
    action_description: str
    # Baselines by name, in the order boards list them; one of them is the reference scores are normalised to.
    baseline_names: tuple[str, ...]
    reference_baseline: str
    metric_specs: tuple[MetricSpec, ...]
    # The metric scores are ratios of (lower is better, always positive).
    primary_metric: str
    # The identity of the code that decides the track's episodes and metrics: cached baseline runs made by other
    # rules are recomputed (``layersched.sim.version.package_rules_hash`` of the track's package, every track's).
    rules_hash: str
    # Where the starter kit's files are, as (package, folder) for importlib.resources: ``layersched init --track
    # ID`` copies them. Named, not imported, so a track never imports the student's package.
    starter: tuple[str, str]

    def baseline(self, name: str) -> Policy:
        """The baseline policy ``name`` (one of ``baseline_names``); ``KeyError`` names the known ones."""
        ...

    def decisions(self, scenario: Any) -> int | None:
        """How many decisions an episode of ``scenario`` has, if that is known before it runs (progress lines)."""
        ...

    def scenario_hash(self, scenario: Any) -> str:
        """The scenario's content hash (what seeds the policy's rng and keys the baseline cache)."""
        ...

    def scenario_to_wire(self, scenario: Any) -> dict[str, Any]:
        """The scenario as JSON, for the sandbox (never a workload's seed or key)."""
        ...

    def scenario_from_wire(self, message: Mapping[str, Any]) -> Any:
        """The inverse of ``scenario_to_wire``; ``scenario_hash`` of the result equals the original's."""
        ...

    def simulator(self, scenario: Any) -> TrustedSimulator:
        """The authoritative simulator of ``scenario``."""
        ...

    def replica(self, scenario: Any) -> Replica:
        """The sandbox side of ``scenario`` (one per scenario; ``Replica.start`` begins each episode)."""
        ...

    def run_episode(
        self, scenario: Any, policy: Policy, workload: random.Random, policy_rng: random.Random
    ) -> EpisodeRun:
        """Play one episode in-process; an invalid action raises ``PolicyError``."""
        ...

    def run_policies(
        self, scenario: Any, policies: Sequence[tuple[Policy, random.Random]], workload: random.Random
    ) -> Sequence[EpisodeRun]:
        """Play each ``(policy, policy_rng)`` on the same episode, drawn from ``workload`` once (the baselines'
        rows: what ``run_episode`` would give each with a fresh ``workload`` of the same seed or key)."""
        ...

    def check_policy(self, policy: Policy, scenario: Any) -> None:
        """Call ``policy`` on a few decisions and raise ``PolicyError`` if it breaks the contract."""
        ...

    def make_gym_env(self, scenario: Any | None = None) -> Any:
        """The track's Gymnasium environment (gymnasium is an optional dependency)."""
        ...
