"""Imitation, then reinforcement: clone Greedy by behaviour cloning, then fine-tune with REINFORCE.

The idea of DeepRM_Plus (Guo et al., IEEE IoT Journal 2021) and the lab's extension 4: do not let policy gradient
start from random play. Phase 1 records Greedy's choices (the expert: the strongest baseline) on workloads of seeds
2000+, and trains the same network as train_reinforce.py to pick the expert's node (cross-entropy over the masked
softmax). Phase 2 continues with REINFORCE from those weights, on seeds 1000+ as train_reinforce.py does, with a
smaller learning rate so that the expert's knowledge is refined rather than forgotten.

    python imitation_rl.py --seed 0                           # README.md: its time and score
    python imitation_rl.py --episodes 2 --tasks 50 --bc-episodes 2 --bc-epochs 1 --val-seeds 1 --eval-seeds 1

The clone and every --val-every policy-gradient episodes are scored on validation workloads (seeds 3000+, neither
trained nor tested on) against Greedy; the run ends with its best checkpoint, so fine-tuning never leaves it worse
than the clone, and only a checkpoint that beats Greedy there becomes ``weights_imitation.pt``.

Writes ``imitation_seed{S}.csv`` (same columns as train_seed{S}.csv; episode -1 is the cloned policy before any
policy-gradient step), ``imitation_seed{S}.pt`` (this run's best checkpoint on validation, whatever its score) and,
if it beats Greedy on validation and the ``weights_imitation.pt`` of an earlier run, ``weights_imitation.pt``:
the file policy.py loads as shipped (its ``WEIGHTS_FILE``).
"""

# mypy: disable-error-code="no-untyped-call"
# (torch's autograd methods, backward() and sample(), have no type annotations)

from __future__ import annotations

import csv
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:
    import torch
except ImportError:  # the CLI and the simulator do not need torch; training does
    raise SystemExit("this script needs torch (CPU is enough): pip install 'layersched[torch]'") from None
from policy import make_scorer
from train_reinforce import compare_with_baselines, keep_best, make_env, publish_best, reinforce, run_policy

from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.training import parse_args, seed_everything


@dataclass
class Args:
    seed: int = 0
    """seed of Python's, numpy's and torch's generators; names the output files"""
    bc_episodes: int = 20
    """expert episodes recorded for behaviour cloning (workload seeds 2000+)"""
    bc_epochs: int = 10
    """passes over the recorded decisions"""
    bc_lr: float = 1e-3
    """Adam learning rate of the cloning phase"""
    bc_batch: int = 256
    """decisions per cloning mini-batch"""
    expert: str = "Greedy"
    """the baseline to imitate: Random, LeastLoaded, Kube, Dep, LRS or Greedy"""
    episodes: int = 100
    """policy-gradient episodes after cloning"""
    tasks: int = 500
    """tasks per episode (the lab: 500)"""
    nodes: int = 10
    """edge nodes in the cluster (the lab: 10)"""
    rate: float = 0.3
    """task arrival rate per second"""
    catalog: str = "lab"
    """image catalog: lab, official-2023-01, hub-top70-2023-07, or a JSON file"""
    gamma: float = 0.95
    """discount factor of the returns"""
    lr: float = 3e-4
    """Adam learning rate of the policy-gradient phase (smaller than from scratch: refine, do not forget)"""
    val_seeds: int = 3
    """validation workloads (seeds 3000..3000+N-1) on which checkpoints are scored against Greedy"""
    val_every: int = 25
    """policy-gradient episodes between two validations (the clone is validated first, and the end too)"""
    eval_seeds: int = 5
    """test seeds 0..N-1 for the final comparison with the baselines (0 to skip it)"""
    out_dir: str = "."
    """where the CSV log and the weights go"""
    torch_deterministic: bool = True
    """deterministic torch kernels, so a seed reproduces its run"""


def record_expert(env: ClusterEnv, expert: Any, episodes: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(features, masks, actions) of every decision the expert makes on workloads 2000, 2001, ..."""
    xs, masks, actions = [], [], []
    for ep in range(episodes):
        task: Any = env.reset(2000 + ep)
        rng = random.Random(2000 + ep)
        done = False
        while not done:
            xs.append(env.observe(task))
            masks.append(env.mask(task))
            action = expert(env, task, rng)
            actions.append(action)
            task, _, done = env.step(action)
    return torch.from_numpy(np.stack(xs)), torch.from_numpy(np.stack(masks)), torch.tensor(actions)


def behaviour_clone(scorer: Any, data: tuple[torch.Tensor, torch.Tensor, torch.Tensor], args: Args) -> None:
    xs, masks, actions = data
    opt = torch.optim.Adam(scorer.parameters(), lr=args.bc_lr)
    gen = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.bc_epochs):
        order = torch.randperm(len(actions), generator=gen)
        total, correct = 0.0, 0
        for start in range(0, len(order), args.bc_batch):
            idx = order[start : start + args.bc_batch]
            logits = scorer(xs[idx]).masked_fill(~masks[idx], -1e9)  # (batch, n_nodes)
            loss = torch.nn.functional.cross_entropy(logits, actions[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            correct += int((logits.argmax(dim=1) == actions[idx]).sum())
        print(
            f"cloning epoch {epoch:3d}  loss {total / len(order):.4f}  agrees with {args.expert} on "
            f"{correct / len(order):.1%} of {len(order)} decisions"
        )


def main(args: Args) -> None:
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = make_env(args)
    scorer = make_scorer(env.n_features)
    best = keep_best(env, args)
    started = time.time()
    print(f"phase 1: behaviour cloning of {args.expert} on {args.bc_episodes} episodes")
    behaviour_clone(scorer, record_expert(env, BASELINES[args.expert], args.bc_episodes), args)

    best.offer(scorer, -1)
    print(f"phase 2: REINFORCE for {args.episodes} episodes, starting from the clone")
    opt = torch.optim.Adam(scorer.parameters(), lr=args.lr)
    with open(out_dir / f"imitation_seed{args.seed}.csv", "w", newline="") as log:
        writer = csv.writer(log)
        writer.writerow(["episode", "mean_completion_s"])
        with torch.no_grad():
            run_policy(env, scorer, seed=1000, sample=True)
        writer.writerow([-1, float(np.mean(env.completion))])
        reinforce(env, scorer, opt, args, best, writer, started)
    scorer.load_state_dict(best.state)
    publish_best(best, env, out_dir, f"imitation_seed{args.seed}.pt", "weights_imitation.pt")
    compare_with_baselines(env, scorer, args.eval_seeds, "Imitation+PG")
    print(f"done in {time.time() - started:.0f} s")


if __name__ == "__main__":
    args = parse_args(Args, __doc__)
    seed_everything(args.seed, args.torch_deterministic)
    torch.set_num_threads(1)  # a network this small gains nothing from threads; the sandbox runs one thread too
    main(args)
