"""Seed 004's GCN policy for workflows-v1, in one file: clone HEFT, then improve the clone by policy gradient.

    python train.py --seed 0          # the default budget: README.md gives its time and what it scores
    python train.py --quick           # seconds: a smoke test of the whole pipeline

Phase 1 plays HEFT (the expert, and the reference every score is a ratio to) on workloads of seeds 2000+ of each
training scenario and trains the network of policy.py (``make_network``: two graph convolutions over the task
graph, plain torch) to pick HEFT's (candidate, VM) pair, by cross-entropy over the allowed choices; its agreement
with HEFT is measured on held-out decisions (seeds 2500+). Phase 2 is REINFORCE on the track's Gymnasium env
(``get_track("workflows-v1").make_gym_env``), from the clone's weights: each iteration draws ``--workloads``
workloads (seeds 1000+, one scenario after another), plays ``--per-workload`` sampled episodes of each, and weights
each decision's log-probability by its return minus a baseline: the mean return at the same decision index over
the episodes of the same workload (DeepRM's time-dependent baseline; an ended episode counts 0). The env's rewards
are minus the growth of the summed completion times / 1000 s, so an episode's return is minus its workflows' total
completion time / 1000. (Seed 004 trains by PPO; this is REINFORCE, the simpler estimator, with a small budget.)

The clone and every ``--val-every`` iterations are scored on validation workloads (seeds 3000+ of each scenario;
neither trained on nor in the public sample, whose seeds are 0-4) as the server scores: per scenario the ratio of
the mean completion time to HEFT's, then the geometric mean. The run keeps its best checkpoint. Writes
``train_seed{S}.csv`` (one row per iteration), ``flows_seed{S}.pt`` (this run's best checkpoint, whatever its
score) and, only if it beats policy.py's no-weights policy (start-now EFT) on validation and the ``weights.pt`` an
earlier run left, ``weights.pt``: the file policy.py loads (its ``WEIGHTS_FILE``). Needs torch and gymnasium
(``pip install "layersched[torch]" gymnasium``); the sandbox needs neither gymnasium nor this file.
"""

# mypy: disable-error-code="no-untyped-call"
# (torch's autograd methods, backward() and sample(), have no type annotations)

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:
    import torch
except ImportError:  # the CLI and the simulator do not need torch; training does
    raise SystemExit("this script needs torch (CPU is enough): pip install 'layersched[torch]'") from None
from policy import (
    FORMAT,
    N_NODE,
    N_PAIR,
    N_VM,
    WEIGHTS,
    Decision,
    best_choice,
    collate,
    decision,
    load_network,
    make_network,
    start_now_eft,
)

from layersched.sim.scoring import overall_score, scenario_ratio
from layersched.sim.tracks import get_track
from layersched.sim.tracks.workflows_v1.baselines import Heft
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario
from layersched.sim.tracks.workflows_v1.view import TaskView, WorkflowView
from layersched.sim.training import (
    KeepBest,
    parse_args,
    publish,
    reinforce_iterations,
    scaled_advantages,
    seed_everything,
    validation_seeds,
)

TRACK = get_track("workflows-v1")
# Workload seeds of each use, apart from each other, from validation's (3000+) and from the public sample's 0-4.
TRAIN_SEED, CLONE_SEED, HELD_OUT_SEED = 1000, 2000, 2500
# The public sample's three scenarios (sim/data/workflows_sample.toml), trained and validated on other seeds.
SCENARIOS = {
    "mixed": WorkflowScenario(),
    "etl-busy": WorkflowScenario(families=("etl",), arrival_rate=0.01),
    "ml-at-once": WorkflowScenario(families=("ml",), arrival_rate=0.0),
}
Policy = Callable[[WorkflowView, list[TaskView], random.Random], int]


@dataclass
class Args:
    seed: int = 0
    """seed of Python's, numpy's and torch's generators; names the output files"""
    scenarios: str = "mixed,etl-busy,ml-at-once"
    """training and validation scenarios, comma-separated, of: mixed, etl-busy, ml-at-once (the public sample's)"""
    hidden: int = 64
    """width of the network's layers"""
    clone_episodes: int = 6
    """HEFT episodes recorded per scenario for behaviour cloning (seeds 2000+)"""
    held_out_episodes: int = 1
    """HEFT episodes per scenario whose decisions measure the clone's agreement (seeds 2500+, never trained on)"""
    clone_epochs: int = 6
    """passes over the recorded decisions"""
    clone_lr: float = 2e-3
    """Adam learning rate of the cloning phase"""
    clone_batch: int = 64
    """decisions per cloning mini-batch"""
    iterations: int = 8
    """policy-gradient iterations after cloning"""
    workloads: int = 2
    """workloads per iteration"""
    per_workload: int = 4
    """sampled episodes per workload, over which the time-dependent baseline is the mean"""
    gamma: float = 1.0
    """discount factor of the returns (1: a return is minus the completion time still to come)"""
    lr: float = 2e-4
    """Adam learning rate of the policy-gradient phase (small: refine the clone, do not forget it)"""
    pg_batch: int = 512
    """decisions per backward pass of a policy-gradient step (memory only: one step per iteration)"""
    val_seeds: int = 3
    """validation workloads per scenario (seeds 3000..3000+N-1) on which checkpoints are scored against HEFT"""
    val_every: int = 4
    """iterations between two validations (the clone is validated first, and the last iteration too)"""
    out_dir: str = ""
    """where the CSV log and the weights go (empty: next to policy.py, whatever the working directory)"""
    torch_deterministic: bool = True
    """deterministic torch kernels, so a seed reproduces its run"""
    quick: bool = False
    """a budget of seconds (1 cloning episode of 2 small scenarios, 2 iterations of 1x2): a smoke test"""


QUICK = {
    "scenarios": "mixed,ml-at-once",
    "hidden": 16,
    "clone_episodes": 1,
    "held_out_episodes": 1,
    "clone_epochs": 2,
    "iterations": 2,
    "workloads": 1,
    "per_workload": 2,
    "val_seeds": 1,
    "val_every": 1,
}


def scenarios(args: Args) -> list[WorkflowScenario]:
    names = args.scenarios.split(",")
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenario {unknown[0]!r}; known: {', '.join(SCENARIOS)}")
    return [SCENARIOS[n] for n in names]


# -- phase 1: behaviour cloning --


def record_heft(scenario_list: Sequence[WorkflowScenario], first_seed: int, episodes: int) -> list[Decision]:
    """Every decision HEFT makes on the episodes ``first_seed..first_seed+episodes-1`` of each scenario, played as
    the sandbox plays them; each decision's ``target`` choice is HEFT's."""
    decisions: list[Decision] = []
    for scenario in scenario_list:
        for seed in range(first_seed, first_seed + episodes):
            heft = Heft()  # one per episode: it keeps its plan between decisions

            def recorder(view: WorkflowView, candidates: list[TaskView], rng: random.Random, heft: Heft = heft) -> int:
                d = decision(view)
                action = heft(view, candidates, rng)
                d.target = 0 if action < 0 else 1 + d.actions.index(action)
                decisions.append(d)
                return action

            TRACK.run_episode(scenario, recorder, random.Random(seed), random.Random(seed))
    return decisions


def targets(decisions: Sequence[Decision]) -> torch.Tensor:
    return torch.tensor([d.target for d in decisions])


def agreement(network: Any, decisions: Sequence[Decision], batch: int = 256) -> float:
    """The share of ``decisions`` on which the network's best allowed choice is HEFT's."""
    hits = 0
    with torch.no_grad():
        for i in range(0, len(decisions), batch):
            chunk = decisions[i : i + batch]
            hits += int((network(collate(list(chunk))).argmax(dim=1) == targets(chunk)).sum())
    return hits / len(decisions)


def behaviour_clone(network: Any, train: list[Decision], held_out: list[Decision], args: Args) -> float:
    """Train ``network`` to pick HEFT's choices; returns its agreement with HEFT on the held-out decisions."""
    opt = torch.optim.Adam(network.parameters(), lr=args.clone_lr)
    order_rng = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.clone_epochs):
        total = 0.0
        for batch in torch.randperm(len(train), generator=order_rng).split(args.clone_batch):
            chunk = [train[int(i)] for i in batch]
            loss = torch.nn.functional.cross_entropy(network(collate(chunk)), targets(chunk))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(chunk)
        print(
            f"cloning epoch {epoch:3d}  loss {total / len(train):.4f} on {len(train)} decisions; agrees with HEFT "
            f"on {agreement(network, held_out):.1%} of {len(held_out)} held-out ones"
        )
    return agreement(network, held_out)


# -- phase 2: REINFORCE with a time-dependent baseline --


@dataclass
class Episode:
    decisions: list[Decision]
    choices: list[int]
    rewards: list[float]


def sample_episode(gym_env: Any, network: Any, seed: int, gen: torch.Generator) -> Episode:
    """One episode of workload ``seed``, each choice drawn from the network's softmax over the allowed ones."""
    _, info = gym_env.reset(seed=seed)
    episode = Episode([], [], [])
    done = False
    while not done:
        d = decision(gym_env.view, info["action_mask"])
        with torch.no_grad():
            logits = network(collate([d]))[0]
        choice = int(torch.multinomial(torch.softmax(logits, dim=0), 1, generator=gen))
        episode.decisions.append(d)
        episode.choices.append(choice)
        action = d.action(choice)
        _, reward, done, truncated, info = gym_env.step(0 if action < 0 else 1 + action)
        if info["replaced"] or truncated:  # the mask never offers a refused action
            raise RuntimeError(f"the env refused action {action}")
        episode.rewards.append(float(reward))
    return episode


def policy_gradient_step(network: Any, opt: Any, batch: Sequence[tuple[Episode, np.ndarray]], chunk: int) -> None:
    """One step on -(log pi(a_t|s_t) x advantage), the advantages scaled to unit spread over the whole batch, the
    gradient accumulated over chunks of ``chunk`` decisions."""
    decisions = [d for e, _ in batch for d in e.decisions]
    choices = torch.tensor([c for e, _ in batch for c in e.choices])
    adv = scaled_advantages([a for _, a in batch])
    opt.zero_grad()
    for i in range(0, len(decisions), chunk):
        logits = network(collate(decisions[i : i + chunk]))
        logp = torch.log_softmax(logits, dim=1).gather(1, choices[i : i + chunk, None])[:, 0]
        loss = -(logp * adv[i : i + chunk]).sum() / len(decisions)
        loss.backward()
    opt.step()


# -- choosing and publishing the checkpoint --


def network_policy(network: Any) -> Policy:
    def play(view: WorkflowView, candidates: list[TaskView], rng: random.Random) -> int:
        d = decision(view)
        return int(d.action(best_choice(network, d)))

    return play


class HeftRatio:
    """A policy's validation score as the server scores: per scenario its mean completion time over HEFT's on the
    validation workloads, then the geometric mean (below 1.0 beats HEFT); ``fallback`` is policy.py's without
    weights (start-now EFT), which a network must beat."""

    def __init__(self, scenario_list: Sequence[WorkflowScenario], n_seeds: int) -> None:
        self.scenarios = scenario_list
        self.seeds = validation_seeds(n_seeds)
        self.heft = [self._completions(lambda: Heft(), s) for s in scenario_list]
        self.fallback = self.score_of(lambda: start_now_eft)
        print(f"validation: start-now EFT (policy.py without weights) scores {self.fallback:.4f} x HEFT")

    def _completions(self, make: Callable[[], Policy], scenario: WorkflowScenario) -> list[float]:
        runs = [TRACK.run_episode(scenario, make(), random.Random(s), random.Random(s)) for s in self.seeds]
        return [run.metrics.mean_completion for run in runs]

    def score_of(self, make: Callable[[], Policy]) -> float:
        mine = [self._completions(make, s) for s in self.scenarios]
        ratios = [scenario_ratio(m, ref) for m, ref in zip(mine, self.heft, strict=True)]
        return overall_score(ratios, [1.0] * len(ratios))

    def __call__(self, network: Any) -> float:
        return self.score_of(lambda: network_policy(network))


def save(state: dict[str, torch.Tensor], hidden: int, path: Path) -> None:
    torch.save({"format": FORMAT, "features": [N_NODE, N_VM, N_PAIR], "hidden": hidden, "state": state}, path)


def publish_best(best: KeepBest, fallback: float, hidden: int, out_dir: Path, seed: int) -> bool:
    """Save the run's best checkpoint as ``flows_seed{seed}.pt``, and as ``weights.pt`` only if it beats start-now
    EFT (policy.py without weights, which scores ``fallback``) and the ``weights.pt`` already there
    (``layersched.sim.training.publish``)."""
    return publish(
        best,
        run_file=out_dir / f"flows_seed{seed}.pt",
        target=out_dir / WEIGHTS.name,
        save=lambda state, path: save(state, hidden, path),
        load=load_network,
        loads=WEIGHTS,
        template="start-now EFT",
        template_score=fallback,
        validate_command="layersched validate . --evalset workflows-sample",
    )


def main(args: Args) -> None:
    out_dir = Path(args.out_dir) if args.out_dir else WEIGHTS.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    scenario_list = scenarios(args)
    started = time.time()
    print(f"phase 1: behaviour cloning of HEFT, {args.clone_episodes} episodes of each of {args.scenarios}")
    train = record_heft(scenario_list, CLONE_SEED, args.clone_episodes)
    held_out = record_heft(scenario_list, HELD_OUT_SEED, args.held_out_episodes)
    network = make_network(args.hidden)
    held_out_agreement = behaviour_clone(network, train, held_out, args)
    took = time.time() - started
    print(f"the clone agrees with HEFT on {held_out_agreement:.1%} of the held-out decisions ({took:.0f} s)")

    validation = HeftRatio(scenario_list, args.val_seeds)
    best = KeepBest(validation, reference="HEFT", unit="iteration", every=args.val_every)
    best.offer(network, -1)
    print(f"phase 2: REINFORCE for {args.iterations} iterations of {args.workloads} x {args.per_workload} episodes")
    gym_envs = [TRACK.make_gym_env(x) for x in scenario_list]
    opt = torch.optim.Adam(network.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(args.seed)
    reinforce_iterations(
        network,
        best,
        envs=gym_envs,
        sample=lambda env, seed: sample_episode(env, network, seed, gen),
        step=lambda batch: policy_gradient_step(network, opt, batch, args.pg_batch),
        iterations=args.iterations,
        workloads=args.workloads,
        per_workload=args.per_workload,
        first_seed=TRAIN_SEED,
        gamma=args.gamma,
        log=out_dir / f"train_seed{args.seed}.csv",
        started=started,
    )
    publish_best(best, validation.fallback, args.hidden, out_dir, args.seed)
    print(f"done in {time.time() - started:.0f} s")


if __name__ == "__main__":
    arguments = parse_args(Args, __doc__, quick=QUICK)
    seed_everything(arguments.seed, arguments.torch_deterministic)
    torch.set_num_threads(1)  # a network this small gains nothing from threads; the sandbox runs one thread too
    main(arguments)
