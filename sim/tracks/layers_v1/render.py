"""layers-v1's views of a schedule (``TRACK.schedules``): a Gantt chart per node (waiting for its layers, waiting for
a container slot, computing; cache hits marked), each node's download queue and free storage over time, and the
completion-time CDF against the reference baseline's (Greedy's); a summary, text and pixels.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from layersched.sim.tracks.drawing import Item, Lane, Mark, Panel, Segment, TimeAxis, cdf, gantt, lane_areas
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.schedule import LayersSchedule, Placement, replay_layers
from layersched.sim.tracks.raster import buckets, rgb_gantt, shade
from layersched.sim.tracks.schedules import Figure

MAX_GANTT_PX = 900  # the rows of a panel share at most this height (a node that piles up tasks gets thin rows)


def describe(task: Placement, schedule: LayersSchedule) -> str:
    """A task's hover text: its image, node and times, what it found cached and what it downloaded."""
    image = schedule.images[task.image] if task.image < len(schedule.images) else str(task.image)
    text = f"task {task.index} ({image}, {task.image_mb:.0f} MB) on node {task.node}: arrived {task.arrival:.1f} s, "
    if task.hit:
        text += "cache hit"
    else:
        text += f"{task.cached_mb:.0f} MB cached, downloaded {task.downloaded_mb:.0f} MB"
        if task.download is not None:
            text += f" in {task.download[0]:.1f}-{task.download[1]:.1f} s"
    if task.ready > task.arrival:
        text += f"; layers there at {task.ready:.1f} s"
    if task.start > task.ready:
        text += f"; waited for a slot until {task.start:.1f} s"
    return text + f"; ran {task.start:.1f}-{task.finish:.1f} s, completion {task.completion:.1f} s"


def _node_names(schedule: LayersSchedule) -> list[Lane]:
    return [
        Lane(
            "cloud" if n.cloud else f"node {i}",
            title=f"node {i}: {n.bandwidth:.1f} MB/s, {n.freq:.2f} GHz, "
            + ("unlimited storage" if n.cloud else f"{n.storage / 1024:.1f} GB")
            + f", {n.slots} slots",
        )
        for i, n in enumerate(schedule.nodes)
    ]


def _rows(schedule: LayersSchedule) -> tuple[list[int], list[int]]:
    """Per task its row on its node (first fit over its whole stay, arrival to finish), and per node its rows."""
    free: list[list[float]] = [[] for _ in schedule.nodes]
    rows = [0] * len(schedule.tasks)
    for task in sorted(schedule.tasks, key=lambda t: (t.arrival, t.index)):
        lane = free[task.node]
        row = next((k for k, until in enumerate(lane) if until <= task.arrival), len(lane))
        if row == len(lane):
            lane.append(task.finish)
        else:
            lane[row] = task.finish
        rows[task.index] = row
    return rows, [max(1, len(lane)) for lane in free]


def node_panel(name: str, schedule: LayersSchedule) -> Panel:
    """A lane per node, a row per task while it stays there: its wait for layers, for a slot, its computing."""
    rows, counts = _rows(schedule)
    lanes = [Lane(lane.name, rows=counts[i], title=lane.title) for i, lane in enumerate(_node_names(schedule))]
    items, marks = [], []
    for task in schedule.tasks:
        segments = []
        if task.ready > task.arrival:
            segments.append(Segment(task.arrival, task.ready, "dl"))
        if task.start > task.ready:
            segments.append(Segment(task.ready, task.start, "wait"))
        segments.append(Segment(task.start, task.finish, "run"))
        items.append(Item(task.node, describe(task, schedule), tuple(segments), row=float(rows[task.index])))
        if task.hit:
            marks.append(Mark(task.node, task.arrival, "", row=float(rows[task.index])))
    return Panel(name, lanes, items, marks)


def download_panel(name: str, schedule: LayersSchedule) -> Panel:
    """A lane per node, a bar per task's downloads in the node's queue (the queue is busy wherever bars are)."""
    items = [
        Item(
            task.node,
            f"task {task.index}'s layers on node {task.node}: {task.downloaded_mb:.0f} MB, "
            f"{task.download[0]:.1f}-{task.download[1]:.1f} s"
            + (
                f" (queued {task.download[0] - task.arrival:.1f} s behind earlier downloads)"
                if task.download[0] > task.arrival
                else ""
            ),
            (Segment(task.download[0], task.download[1], "dl"),),
        )
        for task in schedule.tasks
        if task.download is not None
    ]
    return Panel(name, _node_names(schedule), items)


class LayersViews:
    """``ScheduleViews`` of layers-v1."""

    time_unit = "s"

    def replay(self, scenario: Scenario, workload: random.Random, actions: Sequence[int]) -> LayersSchedule:
        return replay_layers(scenario, workload, actions)

    def summary(self, record: LayersSchedule) -> list[tuple[str, str]]:
        tasks = record.tasks
        n = len(tasks) or 1
        per_node = [0] * len(record.nodes)
        for task in tasks:
            per_node[task.node] += 1
        return [
            ("tasks placed", str(len(tasks))),
            ("mean completion", f"{sum(t.completion for t in tasks) / n:.2f} s"),
            ("cache hits (nothing to download)", f"{sum(t.hit for t in tasks)} of {len(tasks)}"),
            ("MB downloaded", f"{sum(t.downloaded_mb for t in tasks):,.0f}"),
            ("mean wait for layers", f"{sum(t.ready - t.arrival for t in tasks) / n:.2f} s"),
            ("mean wait for a slot", f"{sum(t.start - t.ready for t in tasks) / n:.2f} s"),
            ("mean compute", f"{sum(t.finish - t.start for t in tasks) / n:.2f} s"),
            ("tasks per node", ", ".join(str(c) for c in per_node)),
            ("layers evicted", str(sum(t.evicted for t in tasks))),
            ("last finish", f"{record.end:.1f} s"),
        ]

    def figures(
        self,
        record: LayersSchedule,
        reference: LayersSchedule | None = None,
        names: tuple[str, str] = ("policy", "reference"),
    ) -> list[Figure]:
        records = [(names[0], record)] + ([(names[1], reference)] if reference is not None else [])
        axis = TimeAxis(max(r.end for _, r in records), "s")
        panels = [node_panel(name, r) for name, r in records]
        rows = sum(lane.rows for panel in panels for lane in panel.lanes)
        nodes = gantt(
            "Tasks per node: waiting for their layers (orange), for a slot (grey), computing (blue); green: cache hit",
            panels,
            axis,
            legend=("dl", "wait", "run", "hit"),
            row_px=max(2, min(10, MAX_GANTT_PX // rows)),
            gap_px=3,
            min_lane_px=12,
        )
        downloads = gantt(
            "Each node's download queue: a bar per task's layers",
            [download_panel(name, r) for name, r in records],
            axis,
        )
        storage = lane_areas(
            "Free storage per node (share of its capacity; layers count from when they are queued)",
            [(name, [(lane.name, list(r.storage[i])) for i, lane in enumerate(_node_names(r))]) for name, r in records],
            axis,
        )
        completion = cdf(
            "Completion time CDF (finish - arrival)",
            [(name, [t.completion for t in r.tasks]) for name, r in records],
            "s",
        )
        return [
            Figure("nodes", "Tasks per node", nodes, "A tall lane is a node tasks pile onto; hover a task."),
            Figure("downloads", "Downloads", downloads, "Long bars: images fetched again and again."),
            Figure("storage", "Free storage", storage, "Storage near 0 means evictions: layers fetched again later."),
            Figure("completion", "Completion CDF", completion, "Further left and higher is better."),
        ]

    def ansi(self, record: LayersSchedule, width: int = 80) -> str:
        columns = max(10, width - 11)  # an 8-character label, " |" and "|"
        lines = [f"layers-v1 at {record.end:.1f} s: {len(record.tasks)} tasks placed"]
        for i, lane in enumerate(_node_names(record)):
            slots = record.nodes[i].slots
            busy = buckets([(t.start, t.finish, 1 / slots) for t in record.tasks if t.node == i], record.end, columns)
            lines.append(f"{lane.name:<8} |{shade(busy)}|")
        lines.extend(f"{label}: {value}" for label, value in self.summary(record))
        return "\n".join(lines) + "\n"

    def rgb_array(self, record: LayersSchedule) -> Any:
        return rgb_gantt(node_panel("", record), record.end)
