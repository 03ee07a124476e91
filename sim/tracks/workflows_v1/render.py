"""workflows-v1's views of a schedule (``TRACK.schedules``): a Gantt chart per VM coloured by workflow (tasks that
overlap on a VM's cores stacked in rows), each VM's busy cores over time, each workflow's completion against the
reference baseline's (HEFT's), a summary, text and pixels.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from layersched.sim.tracks.drawing import Item, Lane, Panel, Segment, TimeAxis, gantt, lane_areas, paired_dots
from layersched.sim.tracks.raster import rgb_gantt, shade
from layersched.sim.tracks.schedules import Figure
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.sim.tracks.workflows_v1.schedule import TaskRecord, WorkflowsSchedule, replay_workflows


def describe(task: TaskRecord, schedule: WorkflowsSchedule) -> str:
    """A task's hover text: where it ran, its times and what it waited for."""
    wf = schedule.workflows[task.workflow]
    text = f"workflow {wf.id} ({wf.family}) task {task.index}: {task.cores} cores, {task.memory_gb:g} GB"
    if task.vm is None or task.placed is None:
        return text + "; not placed"
    text += f"; placed on VM {task.vm} at {task.placed:.1f} s"
    if task.inputs is not None and task.inputs > task.placed:
        text += f", its inputs there {task.inputs - task.placed:.1f} s later"
    if task.start is not None:
        ready = task.inputs if task.inputs is not None else task.placed
        if task.start > ready:
            text += f", waited {task.start - ready:.1f} s for cores or memory"
        end = f"{task.finish:.1f}" if task.finish is not None else "..."
        text += f"; ran {task.start:.1f}-{end} s"
    return text


def _vm_names(schedule: WorkflowsSchedule) -> list[Lane]:
    c = schedule.cluster
    return [
        Lane(
            f"VM {v} {c.types[v]}",
            title=f"VM {v}: {c.types[v]}, {c.cores[v]:g} cores, {c.memory[v]:g} GB, speed {c.speed[v]:g}",
        )
        for v in range(schedule.n_vms)
    ]


def vm_panel(name: str, schedule: WorkflowsSchedule) -> Panel:
    """The Gantt panel of ``schedule``: a lane per VM, its tasks stacked first-fit in rows where they overlap."""
    rows_of: list[list[float]] = [[] for _ in range(schedule.n_vms)]  # per VM, per row: when it is free again
    items: list[Item] = []
    started = sorted(
        (t for t in schedule.tasks if t.vm is not None and t.start is not None),
        key=lambda t: (t.start, t.workflow, t.index),
    )
    for task in started:
        assert task.vm is not None and task.start is not None
        finish = task.finish if task.finish is not None else schedule.time
        rows = rows_of[task.vm]
        row = next((k for k, free in enumerate(rows) if free <= task.start), len(rows))
        if row == len(rows):
            rows.append(finish)
        else:
            rows[row] = finish
        segment = (Segment(task.start, finish, "run"),)
        items.append(Item(task.vm, describe(task, schedule), segment, row=float(row), group=task.workflow))
    lanes = [
        Lane(lane.name, rows=max(1, len(rows_of[v])), title=lane.title) for v, lane in enumerate(_vm_names(schedule))
    ]
    return Panel(name, lanes, items)


class WorkflowsViews:
    """``ScheduleViews`` of workflows-v1."""

    time_unit = "s"

    def replay(self, scenario: WorkflowScenario, workload: random.Random, actions: Sequence[int]) -> WorkflowsSchedule:
        return replay_workflows(scenario, workload, actions)

    def summary(self, record: WorkflowsSchedule) -> list[tuple[str, str]]:
        done = [wf.completion for wf in record.workflows if wf.completion is not None]
        placed = [t for t in record.tasks if t.placed is not None and t.start is not None]
        data = [t.inputs - t.placed for t in placed if t.inputs is not None and t.placed is not None]
        cores = [
            t.start - max(t.placed, t.inputs or 0.0) for t in placed if t.start is not None and t.placed is not None
        ]
        work: dict[str, float] = {}
        for t in record.tasks:
            if t.vm is not None and t.start is not None and t.finish is not None:
                kind = record.cluster.types[t.vm]
                work[kind] = work.get(kind, 0.0) + (t.finish - t.start) * t.cores
        total = sum(work.values()) or 1.0
        busy = [
            sum(v * (t2 - t1) for (t1, v), (t2, _) in zip(points, [*points[1:], (record.end, 0.0)], strict=True))
            / record.end
            if record.end > 0
            else 0.0
            for points in (record.busy(v) for v in range(record.n_vms))
        ]
        return [
            ("workflows completed / arrived", f"{len(done)} / {len(record.workflows)}"),
            ("mean workflow completion", f"{sum(done) / len(done):.1f} s" if done else "-"),
            ("slowest workflow", f"{max(done):.1f} s" if done else "-"),
            ("tasks run / arrived", f"{sum(t.finish is not None for t in record.tasks)} / {len(record.tasks)}"),
            ("mean wait for inputs after placement", f"{sum(data) / len(data):.1f} s" if data else "-"),
            ("mean wait for cores or memory", f"{sum(cores) / len(cores):.1f} s" if cores else "-"),
            ("core-seconds by VM type", ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(work.items()))),
            ("cores busy per VM (time-averaged)", ", ".join(f"{b:.0%}" for b in busy)),
            ("waits (WAIT actions)", str(sum(a == -1 for a in record.actions))),
            ("last finish", f"{record.end:.1f} s"),
        ]

    def figures(
        self,
        record: WorkflowsSchedule,
        reference: WorkflowsSchedule | None = None,
        names: tuple[str, str] = ("policy", "reference"),
    ) -> list[Figure]:
        records = [(names[0], record)] + ([(names[1], reference)] if reference is not None else [])
        axis = TimeAxis(max(r.end for _, r in records), "s")
        vms = gantt(
            "Tasks per VM, coloured by workflow (overlapping tasks share the VM's cores)",
            [vm_panel(name, r) for name, r in records],
            axis,
        )
        busy = lane_areas(
            "Share of each VM's cores busy over time",
            [(name, [(lane.name, r.busy(v)) for v, lane in enumerate(_vm_names(r))]) for name, r in records],
            axis,
        )
        figures = [
            Figure("vms", "Tasks per VM", vms, "Hover a task: its workflow, its times, what it waited for."),
            Figure("busy", "VM utilisation", busy, "Idle stretches while workflows wait are lost time."),
        ]
        labels = [f"w{wf.id}" for wf in record.workflows]
        series = [(name, [wf.completion or 0.0 for wf in r.workflows]) for name, r in records]
        tips = []
        for k, wf in enumerate(record.workflows):
            values = ", ".join(f"{name} {vs[k]:.1f} s" for name, vs in series if k < len(vs))
            ratio = ""
            if reference is not None and k < len(series[1][1]) and series[1][1][k] > 0:
                ratio = f" ({series[0][1][k] / series[1][1][k]:.2f}x)"
            tips.append(
                f"workflow {wf.id} ({wf.family}, {wf.tasks} tasks, arrived {wf.arrival:.1f} s): {values}{ratio}"
            )
        completion = paired_dots("Completion time per workflow (finish - arrival)", labels, series, "s", tips)
        figures.append(Figure("completion", "Per workflow", completion, "Dots above the reference's lose to it."))
        return figures

    def ansi(self, record: WorkflowsSchedule, width: int = 80) -> str:
        columns = max(10, width - 17)  # a 14-character label, " |" and "|"
        lines = [f"workflows-v1 at {record.time:.1f} s: {len(record.workflows)} workflows arrived"]
        for v, lane in enumerate(_vm_names(record)):
            points = record.busy(v)
            values = []
            for b in range(columns):
                t = (b + 0.5) * record.end / columns
                values.append(next((level for at, level in reversed(points) if at <= t), 0.0))
            lines.append(f"{lane.name:<14} |{shade(values)}|")
        lines.extend(f"{label}: {value}" for label, value in self.summary(record))
        return "\n".join(lines) + "\n"

    def rgb_array(self, record: WorkflowsSchedule) -> Any:
        return rgb_gantt(vm_panel("", record), record.end)
