"""DeepRM_Plus for jobs-v1, in one file: clone SJF by behaviour cloning, then improve the clone by policy gradient.

    python train.py --seed 0          # the default budget: README.md gives its time and what it scores
    python train.py --quick           # seconds: a smoke test of the whole pipeline

DeepRM_Plus (Guo et al., IEEE IoT Journal 2021) does not let policy gradient start from random play. Phase 1 plays
SJF (the expert: the reference every score is a ratio to) on workloads of seeds 2000+ and trains the network of
policy.py (``make_network``: DeepRM_Plus's CNN on DeepRM's image state ``env.observe()``) to pick SJF's action, by
cross-entropy over the allowed actions (``env.mask()``); its agreement with SJF is measured on held-out decisions
(seeds 2500+). Phase 2 is DeepRM's REINFORCE on the track's Gymnasium env, from the clone's weights: each
iteration draws ``--jobsets`` job sequences (seeds 1000+, one rate after another), plays ``--per-set`` sampled
episodes of each, and weights each decision's log-probability by its return minus DeepRM's time-dependent
baseline, the mean return at the same decision index over the episodes of the same sequence (an episode that has
ended counts as return 0 there, as DeepRM pads them). The rewards are DeepRM's (minus the sum of 1/len over the
jobs in the system, per time step), so with ``--gamma 1`` an episode's return is minus its jobs' total slowdown.

The clone and every ``--val-every`` iterations are scored on validation workloads (seeds 3000+, at each rate;
neither trained on nor in the public sample, whose seeds are 0-4) as the server scores: per rate the ratio of the
mean slowdown to SJF's, then the geometric mean. The run keeps its best checkpoint, so policy gradient never
leaves it worse than the clone. Writes ``train_seed{S}.csv`` (one row per iteration), ``jobs_seed{S}.pt`` (this
run's best checkpoint, whatever its score) and, only if it beats SJF on validation and the ``weights.pt`` an
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
from policy import WEIGHTS, best_allowed, load_network, make_network, sjf

from layersched.sim.episodes import SeededRandom
from layersched.sim.scoring import overall_score, scenario_ratio
from layersched.sim.tracks import get_track
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.jobs_v1.view import image_width
from layersched.sim.training import (
    KeepBest,
    parse_args,
    publish,
    reinforce_iterations,
    scaled_advantages,
    seed_everything,
    validation_seeds,
)

TRACK = get_track("jobs-v1")
# Workload seeds of each use, apart from each other, from validation's (3000+) and from the public sample's 0-4.
TRAIN_SEED, CLONE_SEED, HELD_OUT_SEED = 1000, 2000, 2500


@dataclass
class Args:
    seed: int = 0
    """seed of Python's, numpy's and torch's generators; names the output files"""
    rates: str = "0.3,0.5,0.7,1.0"
    """new_job_rate of the training and validation scenarios, comma-separated (the public sample: 0.3, 0.7, 1.0)"""
    clone_episodes: int = 20
    """SJF episodes recorded per rate for behaviour cloning (seeds 2000+)"""
    held_out_episodes: int = 3
    """SJF episodes per rate whose decisions measure the clone's agreement (seeds 2500+, never trained on)"""
    clone_epochs: int = 10
    """passes over the recorded decisions"""
    clone_lr: float = 1e-3
    """Adam learning rate of the cloning phase"""
    clone_batch: int = 128
    """decisions per cloning mini-batch"""
    iterations: int = 20
    """policy-gradient iterations after cloning"""
    jobsets: int = 4
    """job sequences per iteration (DeepRM: 10)"""
    per_set: int = 6
    """sampled episodes per job sequence, over which the time-dependent baseline is the mean (DeepRM: 20)"""
    gamma: float = 1.0
    """discount factor of the returns (DeepRM: 1, so a return is minus the total slowdown still to come)"""
    lr: float = 1e-4
    """Adam learning rate of the policy-gradient phase (small: refine the clone, do not forget it)"""
    val_seeds: int = 4
    """validation workloads per rate (seeds 3000..3000+N-1) on which checkpoints are scored against SJF"""
    val_every: int = 5
    """iterations between two validations (the clone is validated first, and the last iteration too)"""
    out_dir: str = ""
    """where the CSV log and the weights go (empty: next to policy.py, whatever the working directory)"""
    torch_deterministic: bool = True
    """deterministic torch kernels, so a seed reproduces its run"""
    quick: bool = False
    """a budget of seconds (2 cloning episodes at rates 0.3 and 0.7, 2 iterations of 2x2): a smoke test"""


QUICK = {
    "rates": "0.3,0.7",
    "clone_episodes": 2,
    "held_out_episodes": 1,
    "clone_epochs": 4,
    "iterations": 2,
    "jobsets": 2,
    "per_set": 2,
    "val_seeds": 1,
    "val_every": 1,
}


def scenarios(args: Args) -> list[JobsScenario]:
    return [JobsScenario(new_job_rate=float(rate)) for rate in args.rates.split(",")]


# -- phase 1: behaviour cloning --


Decisions = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # images (N, H, W), masks (N, A), actions (N,)


def record_sjf(scenario_list: Sequence[JobsScenario], first_seed: int, episodes: int) -> Decisions:
    """Every decision SJF makes on the episodes ``first_seed..first_seed+episodes-1`` of each scenario, played as
    the sandbox plays them (the policy sees the view the contract describes)."""
    images, masks, actions = [], [], []

    def recorder(env: Any, rng: random.Random) -> int | None:
        action: int | None = sjf(env, rng)
        images.append(env.observe())
        masks.append(env.mask())
        actions.append(len(env.slots) if action is None else action)
        return action

    for scenario in scenario_list:
        for seed in range(first_seed, first_seed + episodes):
            TRACK.run_episode(scenario, recorder, SeededRandom(seed), random.Random(seed))
    return torch.from_numpy(np.stack(images)), torch.tensor(masks), torch.tensor(actions)


def masked_logits(network: Any, images: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    logits: torch.Tensor = network(images).masked_fill(~masks, -1e9)  # refused actions get probability 0
    return logits


def agreement(network: Any, data: Decisions) -> float:
    """The share of ``data``'s decisions on which the network's best allowed action is SJF's."""
    images, masks, actions = data
    with torch.no_grad():
        return float((masked_logits(network, images, masks).argmax(dim=1) == actions).float().mean())


def behaviour_clone(network: Any, train: Decisions, held_out: Decisions, args: Args) -> float:
    """Train ``network`` to pick SJF's actions; returns its agreement with SJF on the held-out decisions."""
    images, masks, actions = train
    opt = torch.optim.Adam(network.parameters(), lr=args.clone_lr)
    order_rng = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.clone_epochs):
        total = 0.0
        for batch in torch.randperm(len(actions), generator=order_rng).split(args.clone_batch):
            logits = masked_logits(network, images[batch], masks[batch])
            loss = torch.nn.functional.cross_entropy(logits, actions[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(batch)
        print(
            f"cloning epoch {epoch:3d}  loss {total / len(actions):.4f} on {len(actions)} decisions; agrees with SJF "
            f"on {agreement(network, held_out):.1%} of {len(held_out[2])} held-out ones"
        )
    return agreement(network, held_out)


# -- phase 2: REINFORCE with DeepRM's time-dependent baseline --


@dataclass
class Episode:
    images: list[np.ndarray]
    masks: list[np.ndarray]
    actions: list[int]
    rewards: list[float]


def sample_episode(gym_env: Any, network: Any, seed: int, gen: torch.Generator) -> Episode:
    """One episode of the job sequence ``seed``, each action drawn from the network's softmax over allowed ones."""
    obs, info = gym_env.reset(seed=seed)
    episode = Episode([], [], [], [])
    done = False
    while not done:
        mask = info["action_mask"].astype(bool)
        with torch.no_grad():
            logits = masked_logits(network, torch.from_numpy(obs)[None], torch.from_numpy(mask)[None])[0]
        action = int(torch.multinomial(torch.softmax(logits, dim=0), 1, generator=gen))
        episode.images.append(obs)
        episode.masks.append(mask)
        episode.actions.append(action)
        obs, reward, terminated, truncated, info = gym_env.step(action)
        if truncated:  # only a refused action truncates, and the mask never offers one
            raise RuntimeError(f"the env refused action {action}: {info.get('invalid_action')}")
        episode.rewards.append(float(reward))
        done = terminated
    return episode


def policy_gradient_step(network: Any, opt: Any, batch: Sequence[tuple[Episode, np.ndarray]]) -> None:
    """One step on -(log pi(a_t|s_t) x advantage), the advantages scaled to unit spread over the whole batch."""
    images = torch.from_numpy(np.stack([im for e, _ in batch for im in e.images]))
    masks = torch.from_numpy(np.stack([m for e, _ in batch for m in e.masks]))
    actions = torch.tensor([a for e, _ in batch for a in e.actions])
    adv = scaled_advantages([a for _, a in batch])
    logp = torch.log_softmax(masked_logits(network, images, masks), dim=1).gather(1, actions[:, None])[:, 0]
    loss = -(logp * adv).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


# -- choosing and publishing the checkpoint --


def network_policy(network: Any) -> Callable[[Any, random.Random], int | None]:
    return lambda env, rng: best_allowed(network, env.observe(), env.mask())


def sjf_ratio(scenario_list: Sequence[JobsScenario], n_seeds: int) -> Callable[[Any], float]:
    """``network``'s validation score as the server scores: per rate its mean slowdown over SJF's on the validation
    workloads, then the geometric mean; below 1.0 beats SJF."""
    seeds = validation_seeds(n_seeds)

    def slowdowns(policy: Callable[[Any, random.Random], int | None], scenario: JobsScenario) -> list[float]:
        runs = [TRACK.run_episode(scenario, policy, SeededRandom(s), random.Random(s)) for s in seeds]
        return [run.metrics.mean_slowdown for run in runs]

    reference = [slowdowns(sjf, s) for s in scenario_list]

    def score(network: Any) -> float:
        mine = [slowdowns(network_policy(network), s) for s in scenario_list]
        ratios = [scenario_ratio(m, ref) for m, ref in zip(mine, reference, strict=True)]
        return overall_score(ratios, [1.0] * len(ratios))

    return score


def save(state: dict[str, torch.Tensor], shape: tuple[int, int, int], path: Path) -> None:
    torch.save({"shape": list(shape), "state": state}, path)


def publish_best(best: KeepBest, shape: tuple[int, int, int], out_dir: Path, seed: int) -> bool:
    """Save the run's best checkpoint as ``jobs_seed{seed}.pt``, and as ``weights.pt`` only if it beats SJF and the
    ``weights.pt`` already there (``layersched.sim.training.publish``; one of another shape is not compared)."""

    def load(path: Path) -> Any:
        earlier = load_network(path)
        return earlier[0] if earlier is not None and earlier[1] == shape else None

    return publish(
        best,
        run_file=out_dir / f"jobs_seed{seed}.pt",
        target=out_dir / WEIGHTS.name,
        save=lambda state, path: save(state, shape, path),
        load=load,
        loads=WEIGHTS,
        template="SJF",
        validate_command="layersched validate . --evalset jobs-sample",
    )


def main(args: Args) -> None:
    out_dir = Path(args.out_dir) if args.out_dir else WEIGHTS.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    scenario_list = scenarios(args)
    if len({(x.time_horizon, image_width(x), x.num_nw) for x in scenario_list}) > 1:
        raise SystemExit("the scenarios must share one cluster: one network reads one image shape")
    started = time.time()
    print(f"phase 1: behaviour cloning of SJF, {args.clone_episodes} episodes at each rate of {args.rates}")
    train = record_sjf(scenario_list, CLONE_SEED, args.clone_episodes)
    held_out = record_sjf(scenario_list, HELD_OUT_SEED, args.held_out_episodes)
    shape = (train[0].shape[1], train[0].shape[2], train[1].shape[1])
    network = make_network(*shape)
    held_out_agreement = behaviour_clone(network, train, held_out, args)
    voids = float((held_out[2] == shape[2] - 1).float().mean())
    print(
        f"the clone agrees with SJF on {held_out_agreement:.1%} of the held-out decisions "
        f"(SJF voids on {voids:.1%} of them: what always voiding would agree on)"
    )

    best = KeepBest(sjf_ratio(scenario_list, args.val_seeds), reference="SJF", unit="iteration", every=args.val_every)
    best.offer(network, -1)
    print(f"phase 2: REINFORCE for {args.iterations} iterations of {args.jobsets} x {args.per_set} episodes")
    gym_envs = [TRACK.make_gym_env(x) for x in scenario_list]
    opt = torch.optim.Adam(network.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(args.seed)
    reinforce_iterations(
        network,
        best,
        envs=gym_envs,
        sample=lambda env, seed: sample_episode(env, network, seed, gen),
        step=lambda batch: policy_gradient_step(network, opt, batch),
        iterations=args.iterations,
        workloads=args.jobsets,
        per_workload=args.per_set,
        first_seed=TRAIN_SEED,
        gamma=args.gamma,
        log=out_dir / f"train_seed{args.seed}.csv",
        started=started,
    )
    publish_best(best, shape, out_dir, args.seed)
    print(f"done in {time.time() - started:.0f} s")


if __name__ == "__main__":
    arguments = parse_args(Args, __doc__, quick=QUICK)
    seed_everything(arguments.seed, arguments.torch_deterministic)
    torch.set_num_threads(1)  # a network this small gains nothing from threads; the sandbox runs one thread too
    main(arguments)
