"""A first workflows-v1 policy: start a ready task now where it would finish earliest (Min-Min's rule, simplified).

policy(view, candidates, rng) -> int is called once per decision; return WAIT (-1) or view.action(candidate, vm).
The view is yours to change; the next one is built afresh. The contract is
``layersched.sim.tracks.get_track("workflows-v1").contract``; docs/tracks/workflows-v1.md has every rule.
"""

import random

from layersched.sim.tracks.workflows_v1.view import WAIT, TaskView, WorkflowView


def policy(view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
    best: tuple[float, int] | None = None
    for c, task in enumerate(candidates):
        if task.ready is None:  # a parent has not finished: placing it now would only queue it
            continue
        for v, vm in enumerate(view.vms):
            if vm.queue or not view.can_run(task, v):
                continue
            if task.cores > vm.free_cores or task.memory_gb > vm.free_memory_gb:
                continue
            tasks = view.workflows[task.workflow].tasks
            # Every parent has finished, so it has a VM; its data leave it now.
            transfer = max((view.comm(data, tasks[p].vm or 0, v) for p, data in task.parents), default=0.0)
            finish = transfer + (task.means[v] or 0.0)
            if best is None or finish < best[0]:
                best = (finish, view.action(c, v))
    if best is not None:
        return best[1]
    if any(vm.running or vm.queue for vm in view.vms):
        return WAIT
    # Nothing runs and nothing can start now: queue the first candidate where it may run.
    task = candidates[0]
    return view.action(0, next(v for v in range(view.n_vms) if view.can_run(task, v)))
