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

import argparse
import csv
import dataclasses
import inspect
import random
import re
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

TRACK = get_track("jobs-v1")
# Workload seeds of each use, apart from each other and from the public sample's 0-4.
TRAIN_SEED, CLONE_SEED, HELD_OUT_SEED, VALIDATION_SEED = 1000, 2000, 2500, 3000


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


def field_help(cls: type) -> dict[str, str]:
    """Each field's docstring, the string literal on the line after ``name: type = default``."""
    pattern = re.compile(r'^\s+(\w+): [^\n=]+= [^\n]+\n\s+"""(.+?)"""', re.MULTILINE)
    return dict(pattern.findall(inspect.getsource(cls)))


def parse_args(argv: Sequence[str] | None = None) -> Args:
    helps = field_help(Args)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default, help=helps[f.name])
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default, help=f"{helps[f.name]} ({f.default})")
    args = Args(**vars(parser.parse_args(argv)))
    return dataclasses.replace(args, **QUICK) if args.quick else args  # type: ignore[arg-type]


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


def returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
    out = np.zeros(len(rewards))
    g = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return out


def advantages(episodes: Sequence[Episode], gamma: float) -> list[np.ndarray]:
    """Each decision's return minus the mean return at its index over ``episodes`` (one job sequence's), where an
    episode that has already ended counts 0 (DeepRM's time-dependent baseline)."""
    rets = [returns(e.rewards, gamma) for e in episodes]
    padded = np.zeros((len(rets), max(len(r) for r in rets)))
    for i, r in enumerate(rets):
        padded[i, : len(r)] = r
    baseline = padded.mean(axis=0)
    return [r - baseline[: len(r)] for r in rets]


def policy_gradient_step(network: Any, opt: Any, batch: Sequence[tuple[Episode, np.ndarray]]) -> None:
    """One step on -(log pi(a_t|s_t) x advantage), the advantages scaled to unit spread over the whole batch."""
    images = torch.from_numpy(np.stack([im for e, _ in batch for im in e.images]))
    masks = torch.from_numpy(np.stack([m for e, _ in batch for m in e.masks]))
    actions = torch.tensor([a for e, _ in batch for a in e.actions])
    adv = torch.from_numpy(np.concatenate([a for _, a in batch])).float()
    adv = adv / (adv.std() + 1e-8)  # the baseline already centres them; this only sets the step's scale
    logp = torch.log_softmax(masked_logits(network, images, masks), dim=1).gather(1, actions[:, None])[:, 0]
    loss = -(logp * adv).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


# -- choosing and publishing the checkpoint --


def network_policy(network: Any) -> Callable[[Any, random.Random], int | None]:
    return lambda env, rng: best_allowed(network, env.observe(), env.mask())


class KeepBest:
    """The best checkpoint so far on the validation workloads, by its score against SJF (below 1.0 beats it)."""

    def __init__(self, scenario_list: Sequence[JobsScenario], n_seeds: int) -> None:
        if n_seeds < 1:
            raise SystemExit(f"--val-seeds must be at least 1 (got {n_seeds}): checkpoints are chosen on them")
        self.scenarios = scenario_list
        self.seeds = range(VALIDATION_SEED, VALIDATION_SEED + n_seeds)
        self.sjf = [self._slowdowns(sjf, s) for s in scenario_list]
        self.score = float("inf")
        self.iteration = -2
        self.state: dict[str, torch.Tensor] = {}

    def _slowdowns(self, policy: Callable[[Any, random.Random], int | None], scenario: JobsScenario) -> list[float]:
        runs = [TRACK.run_episode(scenario, policy, SeededRandom(s), random.Random(s)) for s in self.seeds]
        return [run.metrics.mean_slowdown for run in runs]

    def validate(self, network: Any) -> float:
        """``network``'s score on the validation workloads: per rate its mean slowdown over SJF's, geometric mean."""
        mine = [self._slowdowns(network_policy(network), s) for s in self.scenarios]
        ratios = [scenario_ratio(m, ref) for m, ref in zip(mine, self.sjf, strict=True)]
        return overall_score(ratios, [1.0] * len(ratios))

    def offer(self, network: Any, iteration: int) -> float:
        score = self.validate(network)
        best = score < self.score
        if best:
            self.score, self.iteration = score, iteration
            self.state = {k: v.detach().clone() for k, v in network.state_dict().items()}
        print(f"validation after iteration {iteration:4d}: {score:.4f} x SJF{'  (best so far)' if best else ''}")
        return score


def save(state: dict[str, torch.Tensor], shape: tuple[int, int, int], path: Path) -> None:
    torch.save({"shape": list(shape), "state": state}, path)


def publish(best: KeepBest, shape: tuple[int, int, int], out_dir: Path, seed: int) -> None:
    """Save the run's best checkpoint as ``jobs_seed{seed}.pt``, and as ``weights.pt`` only if it beats SJF and the
    ``weights.pt`` already there on the validation workloads: a worse run never becomes what policy.py loads."""
    run_file = out_dir / f"jobs_seed{seed}.pt"
    save(best.state, shape, run_file)
    print(f"saved {run_file}: this run's best checkpoint (iteration {best.iteration}, {best.score:.4f} x SJF)")
    target = out_dir / WEIGHTS.name
    if best.score >= 1.0:
        print(f"{target.name} not written: no checkpoint beat SJF on the validation workloads (best {best.score:.4f})")
        return
    earlier = load_network(target)
    if earlier is not None and earlier[1] == shape:
        was = best.validate(earlier[0])
        if was <= best.score:
            print(f"{target.name} kept: the earlier one scores {was:.4f} x SJF, this run {best.score:.4f}")
            return
    save(best.state, shape, target)
    print(f"saved {target} ({best.score:.4f} x SJF on validation)")
    if target.resolve() != WEIGHTS.resolve():
        print(f"policy.py loads {WEIGHTS}: copy {target.name} next to it to submit these weights")


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

    best = KeepBest(scenario_list, args.val_seeds)
    best.offer(network, -1)
    print(f"phase 2: REINFORCE for {args.iterations} iterations of {args.jobsets} x {args.per_set} episodes")
    gym_envs = [TRACK.make_gym_env(x) for x in scenario_list]
    opt = torch.optim.Adam(network.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(args.seed)
    with open(out_dir / f"train_seed{args.seed}.csv", "w", newline="") as log:
        writer = csv.writer(log)
        writer.writerow(["iteration", "mean_return", "validation_score"])
        for it in range(args.iterations):
            batch: list[tuple[Episode, np.ndarray]] = []
            for j in range(args.jobsets):
                k = it * args.jobsets + j
                gym_env = gym_envs[k % len(gym_envs)]
                episodes = [sample_episode(gym_env, network, TRAIN_SEED + k, gen) for _ in range(args.per_set)]
                batch.extend(zip(episodes, advantages(episodes, args.gamma), strict=True))
            policy_gradient_step(network, opt, batch)
            mean_return = float(np.mean([sum(e.rewards) for e, _ in batch]))
            score = ""
            if (it + 1) % args.val_every == 0 or it == args.iterations - 1:
                score = f"{best.offer(network, it):.4f}"
            writer.writerow([it, f"{mean_return:.3f}", score])
            print(f"iteration {it:4d}  mean return {mean_return:8.2f}  ({time.time() - started:.0f} s)")
    publish(best, shape, out_dir, args.seed)
    print(f"done in {time.time() - started:.0f} s")


def seed_everything(seed: int, deterministic: bool) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(deterministic)


if __name__ == "__main__":
    arguments = parse_args()
    seed_everything(arguments.seed, arguments.torch_deterministic)
    torch.set_num_threads(1)  # a network this small gains nothing from threads; the sandbox runs one thread too
    main(arguments)
