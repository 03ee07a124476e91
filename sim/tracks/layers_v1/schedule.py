"""The schedule of a layers-v1 episode: for each task, the node it went to, when its layers were all there (its own
downloads in the node's queue, after those queued before), when a container slot freed up, when it ran; how much of
its image the node held already; and each node's free storage over time. Built by replaying the accepted actions on
the trusted episode (``replay_layers``), or kept along a live one (``LayersRecorder``: the Gymnasium env's render).

A *cache hit* is a task whose node held (or had queued) every layer of its image when it was placed: it downloads
nothing. The lab's questions are about these: Dep piles tasks onto the node with the most layers, LeastLoaded has
every node download every image.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import EpisodeMetrics, check_action, episode_metrics
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.workload import Task, draw_nodes, draw_tasks
from layersched.sim.tracks.schedules import actions_left


@dataclass(frozen=True)
class Placement:
    """One placed task: its image, node and times (s), the MB of its image the node held when it came
    (``cached_mb``: layers there or queued), what it downloaded and when (``download``: its share of the node's
    queue, None when it downloaded nothing) and how many layers were evicted to make room."""

    index: int
    image: int
    arrival: float
    cycles: float
    node: int
    ready: float
    start: float
    finish: float
    image_mb: float
    cached_mb: float
    downloaded_mb: float
    download: tuple[float, float] | None
    evicted: int

    @property
    def hit(self) -> bool:
        return self.downloaded_mb == 0

    @property
    def completion(self) -> float:
        return self.finish - self.arrival


@dataclass(frozen=True)
class NodeRecord:
    bandwidth: float  # MB/s
    freq: float  # GHz
    storage: float  # MB (inf: the cloud's)
    slots: int
    cloud: bool


@dataclass(frozen=True)
class LayersSchedule:
    """A layers-v1 episode's schedule (``ScheduleRecord``)."""

    nodes: tuple[NodeRecord, ...]
    images: tuple[str, ...]  # the catalog's image names, by index
    actions: tuple[int, ...]
    tasks: tuple[Placement, ...]
    # Per node, (time, free share of its storage) wherever it changes (at placements: layers are reserved when they
    # are queued, evicted when room is made).
    storage: tuple[tuple[tuple[float, float], ...], ...]
    metrics: EpisodeMetrics | None

    @property
    def end(self) -> float:
        return max((t.finish for t in self.tasks), default=0.0)


class LayersRecorder:
    """Keeps what placing a task did, around each ``ClusterEnv.place``: ``place(task, node)`` places through it (or
    ``before`` and ``after`` around the caller's own placement); ``record()`` at any time."""

    def __init__(self, env: ClusterEnv) -> None:
        self.env = env
        self.actions: list[int] = []
        self.tasks: list[Placement] = []
        self.storage: list[list[tuple[float, float]]] = [[(0.0, 1.0)] for _ in env.nodes]
        self._pending: tuple[Task, int, tuple[str, ...], int, float] = (Task(0.0, 0, 0.0), 0, (), 0, 0.0)
        self._image_digests: dict[int, tuple[str, ...]] = {}

    def place(self, task: Task, n: int) -> None:
        """Place ``task`` on node ``n`` (``ClusterEnv.place``) and keep what it did."""
        self.before(task, n)
        self.env.place(task, n)
        self.after()

    def before(self, task: Task, n: int) -> None:
        """What node ``n`` held of ``task``'s image before ``task`` is placed on it (call ``after`` once the env
        placed it: a caller that places through ``ClusterEnv.step``, as the Gymnasium env does)."""
        layers = self.env.nodes[n].layers
        digests = self._digests(task.image)
        held = tuple(d for d in digests if d in layers)
        self._pending = (task, n, held, len(layers), self.env.nodes[n].download_free)

    def after(self) -> None:
        env = self.env
        task, n, held, count, queue = self._pending
        node = env.nodes[n]
        layers = node.layers
        digests = self._digests(task.image)
        added = [d for d in digests if d not in held and d in layers]
        finish = task.arrival + env.completion[-1]
        self.actions.append(n)
        self.tasks.append(
            Placement(
                index=len(self.tasks),
                image=task.image,
                arrival=task.arrival,
                cycles=task.cycles,
                node=n,
                ready=max([task.arrival, *(layers[d] for d in digests if d in layers)]),
                start=finish - task.cycles / node.freq,
                finish=finish,
                image_mb=env.image_mb[task.image],
                cached_mb=sum(env.size[d] for d in held),
                downloaded_mb=sum(env.size[d] for d in added),
                download=(max(task.arrival, queue), node.download_free) if added else None,
                evicted=count + len(added) - len(layers),
            )
        )
        if not node.is_cloud and (added or len(layers) != count):
            # The env keeps each node's stored MB in step with its layers (summed in the lab's order).
            self.storage[n].append((task.arrival, 1 - env._used[n] / node.storage))

    def _digests(self, image: int) -> tuple[str, ...]:
        """The image's layers, each once, in image order (an image may list a layer twice)."""
        known = self._image_digests.get(image)
        if known is None:
            layers = self.env.images[image]["layers"]
            known = self._image_digests[image] = tuple(dict.fromkeys(layer["digest"] for layer in layers))
        return known

    def record(self) -> LayersSchedule:
        env = self.env
        nodes = tuple(NodeRecord(n.bandwidth, n.freq, n.storage, len(n.slots), n.is_cloud) for n in env.nodes)
        done = len(self.tasks) == len(env.tasks) and bool(env.tasks)
        metrics = episode_metrics(env, self.actions, tuple(env.completion)) if done else None
        return LayersSchedule(
            nodes,
            tuple(str(image.get("name", i)) for i, image in enumerate(env.images)),
            tuple(self.actions),
            tuple(self.tasks),
            tuple(tuple(points) for points in self.storage),
            metrics,
        )


def replay_layers(scenario: Scenario, workload: random.Random, actions: Sequence[int]) -> LayersSchedule:
    """The schedule of the episode drawn from ``workload`` in which ``actions`` were accepted, played on the trusted
    episode with its own checks (``PolicyError`` when one is refused, or when actions are left after its end)."""
    # The trusted episode's draws and check (sandbox.LayersEpisode): its nodes, then its tasks, from ``workload``.
    env = ClusterEnv(scenario)
    env.start(draw_nodes(scenario, workload))
    env.tasks = draw_tasks(scenario, workload)
    recorder = LayersRecorder(env)
    for step, action in enumerate(actions):
        if step >= len(env.tasks):
            raise actions_left(step, actions)
        task = env.tasks[step]
        recorder.place(task, check_action(env, task, action, step))
        env.k += 1  # what env.step does besides placing
    return recorder.record()
