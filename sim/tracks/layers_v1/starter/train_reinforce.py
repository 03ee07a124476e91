"""REINFORCE for layer-aware container scheduling, as in the lab (step 3), in one file.

    python train_reinforce.py --seed 0                       # 300 episodes (README.md: its time and score)
    for s in 0 1 2; do python train_reinforce.py --seed $s; done && python plot_curves.py
    python train_reinforce.py --episodes 2 --tasks 50 --val-seeds 1 --eval-seeds 1     # a smoke test

The policy network (``make_scorer`` in policy.py, the lab's Scorer) scores every node from the six features of
``env.observe(task)``; a masked softmax over the scores gives the probability of each feasible node. Each episode
samples actions, computes discounted returns of the rewards (minus completion time / 100), normalises them and takes
one gradient step on -(log-probability x normalised return). Training workloads are seeds 1000 + episode; the
comparison at the end uses test seeds 0, 1, ... (never trained on), against the six baselines.

From scratch, policy gradient starts from random play, far worse than Greedy, and 300 episodes are not enough to
catch up: this is the lab's exercise, not the quickest way to a good score (that is imitation_rl.py). So the run
keeps its best checkpoint on validation workloads (seeds 3000+, neither trained nor tested on), scored against
Greedy, and only a checkpoint that beats Greedy there becomes ``weights_reinforce.pt``.

Writes ``train_seed{S}.csv`` (episode, mean completion time of that training episode), ``reinforce_seed{S}.pt``
(this run's best checkpoint on validation, whatever its score) and, if it beats Greedy on validation and the
``weights_reinforce.pt`` of an earlier run, ``weights_reinforce.pt``. policy.py loads the file named by its
``WEIGHTS_FILE`` (``weights_imitation.pt`` as shipped): set it to ``weights_reinforce.pt`` to submit these weights.
"""

# mypy: disable-error-code="no-untyped-call"
# (torch's autograd methods, backward() and sample(), have no type annotations)

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:
    import torch
except ImportError:  # the CLI and the simulator do not need torch; training does
    raise SystemExit("this script needs torch (CPU is enough): pip install 'layersched[torch]'") from None
from policy import WEIGHTS as POLICY_WEIGHTS
from policy import make_scorer

from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import run_lab_baseline
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.training import (
    KeepBest,
    discounted_returns,
    parse_args,
    publish,
    seed_everything,
    validation_seeds,
)


@dataclass
class Args:
    seed: int = 0
    """seed of Python's, numpy's and torch's generators; names the output files"""
    episodes: int = 300
    """training episodes (each is one workload of --tasks tasks)"""
    tasks: int = 500
    """tasks per episode (the lab: 500)"""
    nodes: int = 10
    """edge nodes in the cluster (the lab: 10)"""
    rate: float = 0.3
    """task arrival rate per second (the lab: 0.3; try 0.5 where long-term effects matter more)"""
    catalog: str = "lab"
    """image catalog: lab, official-2023-01, hub-top70-2023-07, or a JSON file"""
    gamma: float = 0.95
    """discount factor of the returns"""
    lr: float = 1e-3
    """Adam learning rate"""
    val_seeds: int = 3
    """validation workloads (seeds 3000..3000+N-1) on which checkpoints are scored against Greedy"""
    val_every: int = 25
    """episodes between two validations (and one at the end)"""
    eval_seeds: int = 5
    """test seeds 0..N-1 for the final comparison with the baselines (0 to skip it)"""
    out_dir: str = "."
    """where the CSV log and the weights go"""
    torch_deterministic: bool = True
    """deterministic torch kernels, so a seed reproduces its run"""


def make_env(args: Any) -> ClusterEnv:
    scenario = Scenario(
        catalog=load_catalog(args.catalog), n_nodes=args.nodes, n_tasks=args.tasks, arrival_rate=args.rate
    )
    return ClusterEnv(scenario)


def run_policy(env: ClusterEnv, scorer: Any, seed: int, sample: bool = True) -> tuple[list[torch.Tensor], list[float]]:
    """One episode. sample=True draws actions from the masked softmax (training), else takes the best (testing)."""
    task: Any = env.reset(seed)
    done = False
    logps: list[torch.Tensor] = []
    rewards: list[float] = []
    while not done:
        x = torch.from_numpy(env.observe(task))
        mask = torch.from_numpy(env.mask(task))
        logits = scorer(x).masked_fill(~mask, -1e9)  # infeasible nodes get probability 0
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample() if sample else logits.argmax()
        logps.append(dist.log_prob(action))
        task, reward, done = env.step(int(action))
        rewards.append(reward)
    return logps, rewards


def reinforce_loss(logps: list[torch.Tensor], rewards: list[float], gamma: float) -> torch.Tensor:
    """-(log pi(a_t|s_t) x normalised discounted return G_t), averaged over the episode."""
    ret = torch.from_numpy(discounted_returns(rewards, gamma)).float()
    adv = (ret - ret.mean()) / (ret.std() + 1e-8) if len(ret) > 1 else ret - ret.mean()
    return -(torch.stack(logps) * adv).mean()


def reinforce(env: ClusterEnv, scorer: Any, opt: Any, args: Any, best: KeepBest, writer: Any, started: float) -> None:
    """``args.episodes`` episodes of REINFORCE, one gradient step each, on the training workloads (seeds 1000+, never
    a test workload's 0..4): a CSV row per episode (its mean completion time), the network offered to ``best`` when
    it is due."""
    for ep in range(args.episodes):
        logps, rewards = run_policy(env, scorer, seed=1000 + ep)
        loss = reinforce_loss(logps, rewards, args.gamma)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean_completion = float(np.mean(env.completion))
        writer.writerow([ep, mean_completion])
        if ep % 20 == 0 or ep == args.episodes - 1:
            print(f"episode {ep:4d}  mean completion {mean_completion:7.1f} s  ({time.time() - started:.0f} s)")
        if best.due(ep, args.episodes):
            best.offer(scorer, ep)


def compare_with_baselines(env: ClusterEnv, scorer: Any, n_seeds: int, label: str) -> None:
    """Mean +- std of mean completion time on test seeds 0..n-1, for the baselines and the trained policy."""
    if n_seeds <= 0:
        return
    seeds = range(n_seeds)
    results = {name: [run_lab_baseline(env, fn, s) for s in seeds] for name, fn in BASELINES.items()}
    with torch.no_grad():
        results[label] = []
        for s in seeds:
            run_policy(env, scorer, s, sample=False)
            results[label].append(float(np.mean(env.completion)))
    print(f"\non test seeds 0-{n_seeds - 1}:")
    for name, res in results.items():
        print(f"{name:12s} {np.mean(res):7.1f} +- {np.std(res):5.1f} s")


def greedy_ratio(env: ClusterEnv, n_seeds: int) -> Callable[[Any], float]:
    """``scorer``'s validation score: its mean completion time over Greedy's on the validation workloads (the seeds
    of ``validation_seeds``, neither trained nor tested on); below 1.0 beats Greedy."""
    seeds = validation_seeds(n_seeds)
    greedy = float(np.mean([run_lab_baseline(env, BASELINES["Greedy"], s) for s in seeds]))

    def score(scorer: Any) -> float:
        means = []
        with torch.no_grad():
            for s in seeds:
                run_policy(env, scorer, s, sample=False)
                means.append(float(np.mean(env.completion)))
        return float(np.mean(means)) / greedy

    return score


def keep_best(env: ClusterEnv, args: Any) -> KeepBest:
    return KeepBest(greedy_ratio(env, args.val_seeds), reference="Greedy", unit="episode", every=args.val_every)


def publish_best(best: KeepBest, env: ClusterEnv, out_dir: Path, run_file: str, weights_file: str) -> bool:
    """Save the run's best checkpoint as ``run_file``, and as ``weights_file`` only if it beats Greedy and the
    ``weights_file`` already there (``layersched.sim.training.publish``)."""

    def load(path: Path) -> Any:
        if not path.exists():
            return None
        earlier = make_scorer(env.n_features)
        earlier.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        return earlier

    return publish(
        best,
        run_file=out_dir / run_file,
        target=out_dir / weights_file,
        save=lambda state, path: torch.save(state, path),
        load=load,
        loads=POLICY_WEIGHTS,
        template="Greedy",
    )


def main(args: Args) -> None:
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = make_env(args)
    scorer = make_scorer(env.n_features)
    opt = torch.optim.Adam(scorer.parameters(), lr=args.lr)
    best = keep_best(env, args)
    started = time.time()
    with open(out_dir / f"train_seed{args.seed}.csv", "w", newline="") as log:
        writer = csv.writer(log)
        writer.writerow(["episode", "mean_completion_s"])
        reinforce(env, scorer, opt, args, best, writer, started)
    scorer.load_state_dict(best.state)
    publish_best(best, env, out_dir, f"reinforce_seed{args.seed}.pt", "weights_reinforce.pt")
    compare_with_baselines(env, scorer, args.eval_seeds, "REINFORCE")
    print(f"done in {time.time() - started:.0f} s")


if __name__ == "__main__":
    args = parse_args(Args, __doc__)
    seed_everything(args.seed, args.torch_deterministic)
    torch.set_num_threads(1)  # a network this small gains nothing from threads; the sandbox runs one thread too
    main(args)
