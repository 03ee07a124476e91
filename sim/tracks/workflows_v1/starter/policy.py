"""A workflows-v1 policy: a graph convolutional network when ``weights.pt`` is next to this file, else start-now EFT.

``policy(view, candidates, rng)`` returns ``WAIT`` (-1) or ``view.action(c, v)``: candidate c on VM v. See the
contract (``layersched.sim.tracks.get_track("workflows-v1").contract``) and docs/tracks/workflows-v1.md.

As shipped there are no weights, so this is ``start_now_eft``: a ready task starts now on the VM where it would
finish earliest. ``python train.py`` clones HEFT (the reference every score is a ratio to), improves the clone by
policy gradient, and writes ``weights.pt`` (the file named by ``WEIGHTS_FILE``) only when the result beats this
file's no-weights policy on its validation workloads. With the weights, ``GcnPolicy`` (seed 004's GCN, in plain
torch) reads the task graph of every arrived workflow, scores each allowed (candidate, VM) pair and WAIT, and the
best allowed one is played (the lowest on a tie). Weights saved for other features are not used: EFT plays then.

The sandbox has the standard library, numpy, torch (CPU, one thread), ``layersched.sim`` and your own files, and
no network; read files relative to ``__file__``, as below. It imports this module afresh for every episode, in a
process of its own: what runs at import (``LOADED``, the weights' load) runs once per episode, not once per
evaluation, and nothing (module-level state, files, threads) carries over from one episode to the next.
"""

from __future__ import annotations

import pickle
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zipfile import BadZipFile

import numpy as np
import numpy.typing as npt

from layersched.sim.tracks.workflows_v1.view import WAIT, TaskView, WorkflowView

WEIGHTS_FILE = "weights.pt"  # the one place that says which weights this policy uses
WEIGHTS = Path(__file__).with_name(WEIGHTS_FILE)
FORMAT = "workflows-v1-gcn/1"  # what train.py writes; another format is not loaded

STATUS = {"waiting": 0, "queued": 1, "running": 2, "done": 3}
N_NODE, N_VM, N_PAIR = 10, 7, 6  # features per task, per VM, per (candidate, VM) pair
SECONDS = 1000.0  # the time scale of the features


# -- the fallback: start-now earliest finish time --


def _data_ready(view: WorkflowView, task: TaskView, v: int) -> float:
    """When ``task``'s inputs could all be on VM ``v``, by the parents' finish times (expected ones if unfinished)."""
    tasks = view.workflows[task.workflow].tasks
    ready = view.time
    for p, data in task.parents:
        parent = tasks[p]
        vm = parent.vm if parent.vm is not None else v
        ready = max(ready, max(_expected_finish(view, parent), view.time) + view.comm(data, vm, v))
    return ready


def _expected_finish(view: WorkflowView, task: TaskView) -> float:
    if task.finish is not None:
        return task.finish
    mean = task.means[task.vm] if task.vm is not None else None
    start = task.start if task.start is not None else view.time
    return start + (mean or 0.0)


def _starts_now(view: WorkflowView, task: TaskView, v: int) -> bool:
    vm = view.vms[v]
    return (
        not vm.queue and view.can_run(task, v) and task.cores <= vm.free_cores and task.memory_gb <= vm.free_memory_gb
    )


def start_now_eft(view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
    """A ready task starts now where it would finish earliest (its inputs' transfer plus its mean there); else wait,
    or, when nothing runs or is queued, queue the first candidate on the first VM that can run it."""
    best: tuple[float, int] | None = None
    for c, task in enumerate(candidates):
        if task.ready is None:  # a parent has not finished: placing it now would only queue it
            continue
        for v in range(view.n_vms):
            if _starts_now(view, task, v):
                finish = _data_ready(view, task, v) + (task.means[v] or 0.0)
                if best is None or finish < best[0]:
                    best = (finish, view.action(c, v))
    if best is not None:
        return best[1]
    if any(vm.running or vm.queue for vm in view.vms):
        return WAIT
    task = candidates[0]
    return view.action(0, next(v for v in range(view.n_vms) if view.can_run(task, v)))


# -- what the network reads: one decision as arrays --


@dataclass
class Decision:
    """One decision's graph: ``nodes`` (tasks x N_NODE), ``edges`` (2 x E, parent then child, node indices),
    ``vms`` (VMs x N_VM), and per allowed (candidate, VM) pair its node, VM, features (N_PAIR) and track action.
    Choice 0 is WAIT (allowed or not: ``wait``), choice 1 + i is pair i."""

    nodes: npt.NDArray[np.float32]
    edges: npt.NDArray[np.int64]
    vms: npt.NDArray[np.float32]
    pair_node: npt.NDArray[np.int64]
    pair_vm: npt.NDArray[np.int64]
    pair: npt.NDArray[np.float32]
    actions: list[int]
    wait: bool
    target: int = -1  # the expert's choice, when train.py records one

    def action(self, choice: int) -> int:
        """The track's action for choice ``choice`` (0: WAIT)."""
        return WAIT if choice == 0 else self.actions[choice - 1]


def upward_ranks(view: WorkflowView, tasks: list[TaskView]) -> list[float]:
    """HEFT's upward ranks of one workflow's tasks (mean duration over the VMs that can run it, plus the longest
    path of mean transfers and durations to an exit), in seconds."""
    n = view.n_vms
    pairs = [(p, q) for p in range(n) for q in range(n) if p != q]
    startup = float(np.mean([view.startup[p][q] for p, q in pairs])) if pairs else 0.0
    inverse_rate = float(np.mean([1.0 / view.rate[p][q] for p, q in pairs])) if pairs else 0.0
    ranks: list[float | None] = [None] * len(tasks)
    for root in range(len(tasks)):  # iterative depth-first: children's ranks before their parents'
        stack = [root]
        while stack:
            i = stack[-1]
            if ranks[i] is not None:
                stack.pop()
                continue
            todo = [c for c, _ in tasks[i].children if ranks[c] is None]
            if todo:
                stack.extend(todo)
                continue
            allowed = [m for m in tasks[i].means if m is not None]
            tail = max((startup + d * inverse_rate + (ranks[c] or 0.0) for c, d in tasks[i].children), default=0.0)
            ranks[i] = sum(allowed) / len(allowed) + tail
            stack.pop()
    return [r or 0.0 for r in ranks]


def vm_backlog(view: WorkflowView, v: int) -> float:
    """Seconds of expected work still ahead of VM ``v``: its running tasks' remaining means and its queue's means,
    over its cores (a rough measure of how soon it can take more)."""
    vm = view.vms[v]
    work = 0.0
    for key in vm.running:
        task = view.task(key)
        work += task.cores * max(_expected_finish(view, task) - view.time, 0.0)
    for key in vm.queue:
        task = view.task(key)
        work += task.cores * (task.means[v] or 0.0)
    return work / vm.cores


def decision(view: WorkflowView, allowed: npt.NDArray[np.int8] | None = None) -> Decision:
    """The arrays of one decision. ``allowed`` (optional) is the Gymnasium env's action mask (0 waits, 1 + a is
    the track's action a): the pairs it refuses are left out."""
    index: dict[tuple[int, int], int] = {}
    nodes: list[list[float]] = []
    edges: list[tuple[int, int]] = []
    candidates = {t.key for t in view.candidates}
    for wf in view.workflows.values():
        ranks = upward_ranks(view, wf.tasks)
        for t in wf.tasks:
            index[t.key] = len(nodes)
            status = [0.0] * 4
            status[STATUS[t.status]] = 1.0
            allowed_means = [m for m in t.means if m is not None]
            nodes.append(
                [
                    *status,
                    t.cores / 32.0,
                    t.memory_gb / 128.0,
                    sum(allowed_means) / len(allowed_means) / SECONDS,
                    ranks[t.index] / SECONDS,
                    1.0 if t.key in candidates else 0.0,
                    1.0 if t.ready is not None and t.status == "waiting" else 0.0,
                ]
            )
        for t in wf.tasks:
            edges.extend((index[t.key], index[(wf.id, child)]) for child, _ in t.children)
    backlog = [vm_backlog(view, v) for v in range(view.n_vms)]
    vms = [
        [
            vm.free_cores / vm.cores,
            vm.free_memory_gb / vm.memory_gb,
            vm.speed / 1.5,
            vm.bandwidth_gbps / 40.0,
            len(vm.running) / 10.0,
            len(vm.queue) / 10.0,
            backlog[v] / SECONDS,
        ]
        for v, vm in enumerate(view.vms)
    ]
    pair_node, pair_vm, pair, actions = [], [], [], []
    for c, t in enumerate(view.candidates):
        for v in range(view.n_vms):
            a = view.action(c, v)
            if not view.can_run(t, v) or (allowed is not None and not (1 + a < len(allowed) and allowed[1 + a])):
                continue
            mean = t.means[v] or 0.0
            ready = _data_ready(view, t, v) - view.time
            parents_here = sum(view.task((t.workflow, p)).vm == v for p, _ in t.parents)
            pair_node.append(index[t.key])
            pair_vm.append(v)
            pair.append(
                [
                    mean / SECONDS,
                    ready / SECONDS,
                    max(ready, backlog[v]) / SECONDS + mean / SECONDS,  # a rough expected finish, from now
                    1.0 if _starts_now(view, t, v) else 0.0,
                    parents_here / max(len(t.parents), 1),
                    1.0 if t.ready is not None else 0.0,
                ]
            )
            actions.append(a)
    can_wait = any(vm.running or vm.queue for vm in view.vms)
    wait = bool(allowed[0]) if allowed is not None else can_wait
    return Decision(
        np.asarray(nodes, dtype=np.float32).reshape(-1, N_NODE),
        np.asarray(edges, dtype=np.int64).reshape(-1, 2).T.copy(),
        np.asarray(vms, dtype=np.float32).reshape(-1, N_VM),
        np.asarray(pair_node, dtype=np.int64),
        np.asarray(pair_vm, dtype=np.int64),
        np.asarray(pair, dtype=np.float32).reshape(-1, N_PAIR),
        actions,
        wait,
    )


# -- the network (plain torch: no torch-geometric) --


def make_network(hidden: int = 64) -> Any:
    """Seed 004's GCN policy in plain torch: two graph convolutions over the tasks (Kipf and Welling's
    D^-1/2 (A + I) D^-1/2 with A the undirected task graph), a VM encoder, and a head scoring each (candidate, VM)
    pair from the candidate's embedding, the VM's, the graph's mean embedding and the pair's features; WAIT is
    scored from the graph's and the VMs' mean embeddings. torch is imported here, so the template runs without
    torch when there are no weights."""
    import torch
    from torch import nn

    class GcnPolicy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = hidden
            self.embed = nn.Linear(N_NODE, hidden)
            self.conv1 = nn.Linear(hidden, hidden)
            self.conv2 = nn.Linear(hidden, hidden)
            self.vm = nn.Sequential(nn.Linear(N_VM, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
            self.pair = nn.Sequential(nn.Linear(3 * hidden + N_PAIR, hidden), nn.ReLU(), nn.Linear(hidden, 1))
            self.wait = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def forward(self, batch: dict[str, Any]) -> Any:
            """The logits (decisions x (1 + most pairs)) of a ``collate``d batch: column 0 WAIT, then the pairs;
            what a decision does not allow is -1e9."""
            n = batch["nodes"].shape[0]
            src, dst = batch["edges"]
            loops = torch.arange(n)
            src, dst = torch.cat([src, dst, loops]), torch.cat([dst, src, loops])
            degree = torch.zeros(n).index_add_(0, dst, torch.ones(len(dst)))
            norm = (degree[src] * degree[dst]).rsqrt()[:, None]

            def propagate(h: Any) -> Any:
                return torch.zeros_like(h).index_add_(0, dst, h[src] * norm)

            h = torch.relu(self.embed(batch["nodes"]))
            h = torch.relu(self.conv1(propagate(h)))
            h = torch.relu(self.conv2(propagate(h))) + h
            b = batch["n_decisions"]
            graph = torch.zeros(b, self.hidden).index_add_(0, batch["node_of"], h)
            graph = graph / batch["node_count"][:, None]
            u = self.vm(batch["vms"])
            vm_mean = torch.zeros(b, self.hidden).index_add_(0, batch["vm_of"], u) / batch["vm_count"][:, None]
            pair_of = batch["pair_of"]
            x = torch.cat([h[batch["pair_node"]], u[batch["pair_vm"]], graph[pair_of], batch["pair"]], dim=1)
            logits = torch.full((b, batch["width"]), -1e9)
            logits[pair_of, batch["pair_column"]] = self.pair(x)[:, 0]
            wait = self.wait(torch.cat([graph, vm_mean], dim=1))[:, 0]
            logits[:, 0] = torch.where(batch["wait"], wait, torch.full_like(wait, -1e9))
            return logits

    return GcnPolicy()


def collate(decisions: list[Decision]) -> dict[str, Any]:
    """Decisions as one disjoint graph (node, VM and pair indices offset), the batch ``GcnPolicy`` reads."""
    import torch

    nodes, edges, vms, pair_node, pair_vm, pair, node_of, vm_of, pair_of, pair_column = ([] for _ in range(10))
    node_base = vm_base = 0
    for i, d in enumerate(decisions):
        n, m, p = len(d.nodes), len(d.vms), len(d.actions)
        nodes.append(d.nodes)
        edges.append(d.edges + node_base)
        vms.append(d.vms)
        pair_node.append(d.pair_node + node_base)
        pair_vm.append(d.pair_vm + vm_base)
        pair.append(d.pair)
        node_of.append(np.full(n, i))
        vm_of.append(np.full(m, i))
        pair_of.append(np.full(p, i))
        pair_column.append(np.arange(1, p + 1))
        node_base, vm_base = node_base + n, vm_base + m
    return {
        "nodes": torch.from_numpy(np.concatenate(nodes)),
        "edges": torch.from_numpy(np.concatenate(edges, axis=1)),
        "vms": torch.from_numpy(np.concatenate(vms)),
        "pair_node": torch.from_numpy(np.concatenate(pair_node)),
        "pair_vm": torch.from_numpy(np.concatenate(pair_vm)),
        "pair": torch.from_numpy(np.concatenate(pair)),
        "node_of": torch.from_numpy(np.concatenate(node_of)),
        "vm_of": torch.from_numpy(np.concatenate(vm_of)),
        "pair_of": torch.from_numpy(np.concatenate(pair_of)),
        "pair_column": torch.from_numpy(np.concatenate(pair_column)),
        "node_count": torch.tensor([max(len(d.nodes), 1) for d in decisions], dtype=torch.float32),
        "vm_count": torch.tensor([len(d.vms) for d in decisions], dtype=torch.float32),
        "wait": torch.tensor([d.wait for d in decisions]),
        "n_decisions": len(decisions),
        "width": 1 + max(len(d.actions) for d in decisions),
    }


def best_choice(network: Any, d: Decision) -> int:
    """The allowed choice (0 WAIT, 1 + i pair i) of highest logit, the lowest on a tie."""
    import torch

    with torch.no_grad():
        return int(network(collate([d]))[0].argmax())


def load_network(path: Path = WEIGHTS) -> Any | None:
    """The network saved in ``path``, or None when there is no such file or it holds another format (a warning on
    stderr says why)."""
    if not path.exists():
        return None
    import torch

    torch.set_num_threads(1)  # as the sandbox runs; a network this small gains nothing from threads
    try:
        # weights_only=True: a weights file is data, never code to run.
        saved = torch.load(path, map_location="cpu", weights_only=True)
        if saved.get("format") != FORMAT or list(saved["features"]) != [N_NODE, N_VM, N_PAIR]:
            raise ValueError(f"format {saved.get('format')!r}, features {saved.get('features')!r}")
        network = make_network(int(saved["hidden"]))
        network.load_state_dict(saved["state"])
    except (
        OSError,
        RuntimeError,
        KeyError,
        ValueError,
        AttributeError,
        pickle.UnpicklingError,
        BadZipFile,
    ) as e:
        print(f"{path.name} not used ({type(e).__name__}: {e}); start-now EFT plays", file=sys.stderr)
        return None
    network.eval()
    return network


LOADED = load_network()  # at import: once per episode, since every episode imports this module afresh


def policy(view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
    if LOADED is None:
        return start_now_eft(view, candidates, rng)
    d = decision(view)
    if not d.actions:  # unreachable (every candidate can run somewhere); the fallback keeps the contract
        return start_now_eft(view, candidates, rng)
    return d.action(best_choice(LOADED, d))
