"""``python -m layersched.sim heft DAG.json [--json]``: HEFT's ranks, schedule and makespan for a static DAG.

The DAG's JSON is ``dag.py``'s; a DAG that cannot be read is one line on stderr naming the value, and exit 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from layersched.sim.tracks.workflows_v1.dag import StaticDag, load_dag
from layersched.sim.tracks.workflows_v1.errors import WorkflowError
from layersched.sim.tracks.workflows_v1.heft import HeftPlan, heft


def plan_json(dag: StaticDag, plan: HeftPlan) -> dict[str, Any]:
    """The plan as ``--json`` prints it: tasks named by their ids, the schedule in the order HEFT built it."""
    return {
        "rank_u": list(plan.ranks),
        "schedule": [
            {"task": dag.ids[s.task], "proc": s.proc, "start": s.start, "finish": s.finish} for s in plan.slots
        ],
        "makespan": plan.makespan,
    }


def plan_text(dag: StaticDag, plan: HeftPlan) -> str:
    width = max(4, *(len(t) for t in dag.ids))
    lines = [f"{'task':{width}s}  rank_u      proc  start     finish"]
    for s in plan.slots:
        lines.append(
            f"{dag.ids[s.task]:{width}s}  {plan.ranks[s.task]:10.3f}  {s.proc:4d}  {s.start:8.3f}  {s.finish:8.3f}"
        )
    lines.append(f"makespan {plan.makespan:.3f}")
    return "\n".join(lines)


def heft_main(path: Path, *, as_json: bool) -> int:
    """Print HEFT's plan of the DAG in ``path``; 0, or 2 with one line on stderr if the DAG is malformed."""
    try:
        dag = load_dag(path)
    except WorkflowError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    plan = heft(dag)
    print(json.dumps(plan_json(dag, plan), indent=1) if as_json else plan_text(dag, plan))
    return 0
