"""jobs-v1's views of a schedule (``TRACK.schedules``): DeepRM's occupancy image per resource over the whole
episode, each job's life (queued, reserved, running, held back while it fitted), the queue and backlog over time,
and the slowdown CDF against the reference baseline's (DeepRM's ``slow_down_cdf.py``); a summary, text and pixels.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from layersched.sim.tracks.drawing import Item, Lane, Line, Panel, Segment, TimeAxis, cdf, gantt, step_lines
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.schedule import JobRecord, JobsSchedule, replay_jobs
from layersched.sim.tracks.raster import buckets, rgb_gantt, shade
from layersched.sim.tracks.schedules import Figure


def describe(job: JobRecord) -> str:
    """A job's hover text: its size, its times and its slowdown."""
    demand = "/".join(str(d) for d in job.demand)
    if job.dropped:
        return f"job {job.id}: arrived at {job.arrival}, length {job.length}, demand {demand}: dropped (backlog full)"
    text = f"job {job.id}: arrived at {job.arrival}, length {job.length}, demand {demand}"
    if job.placed is not None and job.start is not None and job.finish is not None:
        text += f"; placed at {job.placed}, ran {job.start}-{job.finish}, slowdown {job.slowdown:.2f}"
    else:
        text += "; not placed yet"
    if job.held:
        text += f"; held back {len(job.held)} step{'s' * (len(job.held) != 1)} while it fitted (first at {job.held[0]})"
    return text


def occupancy_items(schedule: JobsSchedule) -> list[Item]:
    """Each placed job's units on each resource, as DeepRM's canvas allocates them: at placement, on every step of
    its run, the lowest free units of that step; a job's units may then differ from one step to the next (one item
    per stretch of steps on the same units, and per run of adjacent units)."""
    s = schedule.scenario
    placed = sorted(
        (
            job
            for job in schedule.jobs
            if job.start is not None and job.finish is not None and job.placement is not None
        ),
        key=lambda job: job.placement if job.placement is not None else -1,
    )
    end = int(schedule.end) + 1
    canvas = [[[False] * s.res_slot for _ in range(end)] for _ in range(s.num_res)]
    items: list[Item] = []
    for job in placed:
        assert job.start is not None and job.finish is not None
        title = describe(job)
        for r in range(s.num_res):
            pieces: list[tuple[int, tuple[tuple[int, int], ...]]] = []
            for t in range(job.start, job.finish):
                row = canvas[r][t]
                units = [u for u in range(s.res_slot) if not row[u]][: job.demand[r]]
                for u in units:
                    row[u] = True
                pieces.append((t, _runs(units)))
            t = 0
            while t < len(pieces):
                first, runs = pieces[t]
                last = t
                while last + 1 < len(pieces) and pieces[last + 1][1] == runs:
                    last += 1
                for low, count in runs:
                    segment = (Segment(float(first), float(pieces[last][0] + 1), "run"),)
                    items.append(
                        Item(r, title, segment, row=float(s.res_slot - low - count), height=count, group=job.id)
                    )
                t = last + 1
    return items


def _runs(units: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Sorted unit indices as (first, count) runs of adjacent ones."""
    runs: list[tuple[int, int]] = []
    for u in units:
        if runs and runs[-1][0] + runs[-1][1] == u:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((u, 1))
    return tuple(runs)


def job_items(schedule: JobsSchedule) -> list[Item]:
    """One item per job on its own lane (lane = the job's index in arrival order): queued from arrival to placement,
    reserved from placement to start, running to its finish, and the steps it was held back while it fitted."""
    items = []
    for lane, job in enumerate(schedule.jobs):
        segments: list[Segment] = []
        if job.placed is not None and job.start is not None and job.finish is not None:
            if job.placed > job.arrival:
                segments.append(Segment(job.arrival, job.placed, "q"))
            if job.start > job.placed:
                segments.append(Segment(job.placed, job.start, "res"))
            segments.append(Segment(job.start, job.finish, "run"))
        elif job.dropped:
            segments.append(Segment(job.arrival, job.arrival + 1, "drop"))
        else:
            segments.append(Segment(job.arrival, schedule.time, "q"))
        for first, count in _runs(job.held):
            segments.append(Segment(first, first + count, "hold"))
        items.append(Item(lane, describe(job), tuple(segments)))
    return items


def _resource_lanes(scenario: JobsScenario) -> list[Lane]:
    return [
        Lane(f"resource {r + 1}", rows=scenario.res_slot, title=f"{scenario.res_slot} units")
        for r in range(scenario.num_res)
    ]


class JobsViews:
    """``ScheduleViews`` of jobs-v1."""

    time_unit = "steps"

    def replay(self, scenario: JobsScenario, workload: random.Random, actions: Sequence[int]) -> JobsSchedule:
        return replay_jobs(scenario, workload, actions)

    def summary(self, record: JobsSchedule) -> list[tuple[str, str]]:
        done = [job for job in record.jobs if job.finish is not None]
        held = [job for job in record.jobs if job.held]
        waits = [job.start - job.arrival for job in done if job.start is not None]
        slowdowns = sorted(job.slowdown for job in done if job.slowdown is not None)
        queue = max(slots + backlog for _, slots, backlog in record.waiting())
        return [
            ("jobs finished / arrived", f"{len(done)} / {len(record.jobs)}"),
            ("jobs dropped (backlog full)", str(sum(job.dropped for job in record.jobs))),
            ("mean slowdown", f"{sum(slowdowns) / len(slowdowns):.3f}" if slowdowns else "-"),
            ("worst slowdown", f"{slowdowns[-1]:.2f}" if slowdowns else "-"),
            ("mean wait before start", f"{sum(waits) / len(waits):.2f} steps" if waits else "-"),
            ("jobs held back while they fitted", str(len(held))),
            ("job-steps held back while fitting", str(sum(len(job.held) for job in record.jobs))),
            ("longest queue (slots + backlog)", str(queue)),
            ("decisions", str(len(record.actions))),
            ("last finish", f"step {int(record.end)}"),
        ]

    def figures(
        self,
        record: JobsSchedule,
        reference: JobsSchedule | None = None,
        names: tuple[str, str] = ("policy", "reference"),
    ) -> list[Figure]:
        records = [(names[0], record)] + ([(names[1], reference)] if reference is not None else [])
        axis = TimeAxis(max(r.end for _, r in records), "steps")
        lanes = _resource_lanes(record.scenario)
        occupancy = gantt(
            "Occupancy per resource (DeepRM's image over the episode): each job in a colour of its own",
            [Panel(name, lanes, occupancy_items(r)) for name, r in records],
            axis,
        )
        jobs = gantt(
            "Each job's life, in arrival order: queued, reserved, running; red: held back while it fitted",
            [Panel(name, [Lane(f"job {j.id}") for j in r.jobs], job_items(r)) for name, r in records],
            axis,
            legend=("q", "res", "run", "hold", "drop"),
            row_px=4,
            gap_px=1,
            label_every=10,
        )
        lines: list[Line] = []
        for style, (name, r) in enumerate(records):
            points = r.waiting()
            lines.append(Line(f"{name}: waiting (slots + backlog)", [(t, a + b) for t, a, b in points], style))
        for style, (name, r) in enumerate(records):
            lines.append(Line(f"{name}: in the backlog", [(t, b) for t, _, b in r.waiting()], style + 2))
        queue = step_lines("Jobs waiting over time", lines, axis, "jobs")
        slowdown = cdf(
            "Slowdown CDF ((finish - arrival) / length), DeepRM's evaluation",
            [(name, [j.slowdown for j in r.jobs if j.slowdown is not None]) for name, r in records],
            "slowdown",
        )
        return [
            Figure("occupancy", "Occupancy", occupancy, "Units of each resource in use, step by step; hover a job."),
            Figure("jobs", "Jobs", jobs, "Long red stretches are jobs the policy kept waiting although they fitted."),
            Figure(
                "queue", "Queue", queue, "Jobs that arrived and were not placed yet; beyond the slots, the backlog."
            ),
            Figure("slowdown", "Slowdown CDF", slowdown, "Further left and higher is better."),
        ]

    def ansi(self, record: JobsSchedule, width: int = 80) -> str:
        s = record.scenario
        columns = max(10, width - 15)  # a 12-character label, " |" and "|"
        lines = [f"jobs-v1 at step {record.time}: {len(record.jobs)} jobs arrived, {len(record.actions)} decisions"]
        for r in range(s.num_res):
            used = buckets(
                [
                    (j.start, j.finish, j.demand[r] / s.res_slot)
                    for j in record.jobs
                    if j.start is not None and j.finish is not None
                ],
                record.end,
                columns,
            )
            lines.append(f"resource {r + 1:<3} |{shade(used)}|")
        waiting = record.waiting()
        queue = buckets(
            [
                (t, (waiting[k + 1][0] if k + 1 < len(waiting) else record.end), (a + b) / (s.num_nw + s.backlog_size))
                for k, (t, a, b) in enumerate(waiting)
            ],
            record.end,
            columns,
        )
        lines.append(f"{'waiting':<12} |{shade(queue)}|")
        lines.extend(f"{label}: {value}" for label, value in self.summary(record))
        return "\n".join(lines) + "\n"

    def rgb_array(self, record: JobsSchedule) -> Any:
        return rgb_gantt(Panel("", _resource_lanes(record.scenario), occupancy_items(record)), record.end)
