"""What the starter kits' training scripts share, for every track: the command line, seeding, REINFORCE's returns and
DeepRM's time-dependent baseline, and the rule that a run writes the weights ``policy.py`` loads only when they beat
the template.

A kit's script (``sim/tracks/<track>/starter/train*.py``, copied out by ``layersched init``) imports this module from
the installed package and keeps what is its own: its ``Args``, its network, how it plays an episode and what a
decision records. The only module of ``layersched.sim`` that needs torch (``pip install "layersched[torch]"``, which
the sandbox image has too, so a kit that travels in a bundle passes ``layersched validate``'s import check); nothing
of layersched imports it, and it knows no track.
"""

# mypy: disable-error-code="no-untyped-call"
# (torch's random and autograd functions have no type annotations)

from __future__ import annotations

import argparse
import ast
import csv
import dataclasses
import inspect
import itertools
import math
import random
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
import torch

A = TypeVar("A")
Floats = npt.NDArray[np.float64]
# Workload seeds of validation episodes, apart from those the kits train (1000+), clone (2000+) and test on (0+).
VALIDATION_SEED = 3000


# -- the command line --


def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring: the string literal on the line after ``name: type = default`` (cleanrl's style)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(body, ast.ClassDef)
    return {
        prev.target.id: str(node.value.value)
        for prev, node in itertools.pairwise(body.body)
        if isinstance(prev, ast.AnnAssign)
        and isinstance(prev.target, ast.Name)
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
    }


def parse_args(
    cls: type[A],
    description: str | None,
    argv: Sequence[str] | None = None,
    *,
    quick: Mapping[str, Any] | None = None,
) -> A:
    """An ``Args`` dataclass from the command line: one ``--option`` per field, its docstring as help; a bool field
    is ``--name/--no-name``. With ``quick``, a ``quick`` field set on the command line replaces those values (a
    budget of seconds: the kit's smoke test)."""
    docs = field_docs(cls)
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        option = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            parser.add_argument(option, action=argparse.BooleanOptionalAction, default=f.default, help=docs.get(f.name))
        else:
            parser.add_argument(
                option, type=type(f.default), default=f.default, help=f"{docs.get(f.name)} (default {f.default})"
            )
    args = cls(**vars(parser.parse_args(argv)))
    if quick is not None and getattr(args, "quick", False):
        args = dataclasses.replace(args, **quick)  # type: ignore[type-var]
    return args


def seed_everything(seed: int, deterministic: bool) -> None:
    """Seed Python's, numpy's and torch's generators, and ask torch for deterministic kernels (the script's
    ``__main__`` calls it: a library never touches global generators)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(deterministic)


def validation_seeds(n_seeds: int) -> range:
    """The workload seeds checkpoints are chosen on (``--val-seeds``): ``VALIDATION_SEED`` and after."""
    if n_seeds < 1:
        raise SystemExit(f"--val-seeds must be at least 1 (got {n_seeds}): checkpoints are chosen on them")
    return range(VALIDATION_SEED, VALIDATION_SEED + n_seeds)


# -- REINFORCE --


def discounted_returns(rewards: Sequence[float], gamma: float) -> Floats:
    """``G_t = r_t + gamma G_{t+1}`` for every step of one episode (added from the last step back, in doubles)."""
    out = np.zeros(len(rewards))
    g = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return out


def time_dependent_advantages(episodes: Sequence[Sequence[float]], gamma: float) -> list[Floats]:
    """For the rewards of several episodes of one workload: each step's return minus the mean return at the same
    step over those episodes, where an episode that has already ended counts 0 (DeepRM's baseline)."""
    rets = [discounted_returns(rewards, gamma) for rewards in episodes]
    padded = np.zeros((len(rets), max(len(r) for r in rets)))
    for i, r in enumerate(rets):
        padded[i, : len(r)] = r
    baseline = padded.mean(axis=0)
    return [r - baseline[: len(r)] for r in rets]


class Sampled(Protocol):
    """What a kit's sampled episode holds for REINFORCE: at least its rewards, in order."""

    rewards: list[float]


E = TypeVar("E", bound=Sampled)


def reinforce_iterations(
    network: Any,
    best: KeepBest,
    *,
    envs: Sequence[Any],
    sample: Callable[[Any, int], E],
    step: Callable[[list[tuple[E, Floats]]], None],
    iterations: int,
    workloads: int,
    per_workload: int,
    first_seed: int,
    gamma: float,
    log: Path,
    started: float,
) -> None:
    """DeepRM's REINFORCE. Each iteration takes ``workloads`` workloads (seeds ``first_seed + k``, k counting on
    from iteration to iteration, on ``envs`` in turn), samples ``per_workload`` episodes of each (``sample(env,
    seed)``), weights each decision by its return minus the time-dependent baseline of its workload's episodes, and
    has ``step(batch)`` take one gradient step on the (episode, advantages) pairs. ``best`` is offered the network
    when it is due; ``log`` gets one CSV row per iteration (its mean return, and the validation score when due)."""
    with open(log, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["iteration", "mean_return", "validation_score"])
        for it in range(iterations):
            batch: list[tuple[E, Floats]] = []
            for j in range(workloads):
                k = it * workloads + j
                env = envs[k % len(envs)]
                episodes = [sample(env, first_seed + k) for _ in range(per_workload)]
                advantages = time_dependent_advantages([e.rewards for e in episodes], gamma)
                batch.extend(zip(episodes, advantages, strict=True))
            step(batch)
            mean_return = float(np.mean([sum(e.rewards) for e, _ in batch]))
            score = f"{best.offer(network, it):.4f}" if best.due(it, iterations) else ""
            writer.writerow([it, f"{mean_return:.3f}", score])
            print(f"iteration {it:4d}  mean return {mean_return:8.2f}  ({time.time() - started:.0f} s)")


def scaled_advantages(advantages: Sequence[Floats]) -> torch.Tensor:
    """A batch's advantages as one float32 tensor of unit spread (the baseline already centres them; this only sets
    the step's scale)."""
    adv = torch.from_numpy(np.concatenate(advantages)).float()
    return adv / (adv.std() + 1e-8)


# -- choosing and publishing the checkpoint --


class KeepBest:
    """The best checkpoint so far on the validation workloads, by its score: the ratio of its primary metric to the
    track's reference baseline's (below 1.0 beats it), as ``validate(network)`` computes it.

    Policy gradient is noisy: the last weights are often worse than earlier ones, so a run ends with the best
    checkpoint it has seen rather than its last one (what a Kaggle notebook does with early stopping).
    """

    def __init__(self, validate: Callable[[Any], float], *, reference: str, unit: str, every: int) -> None:
        if every < 1:
            raise SystemExit(f"--val-every must be at least 1 (got {every})")
        self.validate = validate
        self.reference = reference  # the baseline scores are ratios to
        self.unit = unit  # what a training step is called: "episode", "iteration"
        self.every = every
        self.score = math.inf
        self.step: int | None = None
        self.state: dict[str, torch.Tensor] = {}

    def due(self, step: int, steps: int) -> bool:
        """Whether training step ``step`` (of ``steps``) is validated: every ``every`` steps, and the last one."""
        return (step + 1) % self.every == 0 or step == steps - 1

    def offer(self, network: Any, step: int) -> float:
        """Score the current weights; keep a copy if they are the best so far. Returns the score."""
        score = self.validate(network)
        best = score < self.score
        if best:
            self.score, self.step = score, step
            self.state = {k: v.detach().clone() for k, v in network.state_dict().items()}
        print(
            f"validation after {self.unit} {step:4d}: {score:.4f} x {self.reference}{'  (best so far)' if best else ''}"
        )
        return score


def publish(
    best: KeepBest,
    *,
    run_file: Path,
    target: Path,
    save: Callable[[dict[str, torch.Tensor], Path], None],
    load: Callable[[Path], Any],
    loads: Path,
    template: str,
    template_score: float = 1.0,
    validate_command: str = "layersched validate .",
) -> bool:
    """Save the run's best checkpoint as ``run_file``, and as ``target`` only if it beats the template (the kit's
    ``policy.py`` without weights, which scores ``template_score``) and the file an earlier run left there, on the
    same validation workloads: a worse run never becomes what ``policy.py`` loads. True when ``target`` was written.

    ``save(state, path)`` writes a checkpoint; ``load(path)`` returns the network in ``path``, or None when there is
    none (or one this run cannot be compared with); ``loads`` is the file ``policy.py`` loads.
    """
    save(best.state, run_file)
    print(
        f"saved {run_file}: this run's best checkpoint ({best.unit} {best.step}, {best.score:.4f} x {best.reference})"
    )
    if best.score >= template_score:
        against = "" if template_score == 1.0 else f" x {best.reference}, {template} {template_score:.4f}"
        print(
            f"{target.name} not written: no checkpoint beat {template} on the validation workloads "
            f"(best {best.score:.4f}{against}), and the template without weights is {template}"
        )
        return False
    earlier = load(target)
    if earlier is not None:
        was = best.validate(earlier)
        if was <= best.score:
            print(f"{target.name} kept: the earlier one scores {was:.4f} x {best.reference}, this run {best.score:.4f}")
            return False
        print(f"{target.name} replaced: the earlier one scored {was:.4f} x {best.reference}, this run {best.score:.4f}")
    save(best.state, target)
    print(f"saved {target} ({best.score:.4f} x {best.reference} on validation)")
    if target.resolve() == loads.resolve():
        print(f"policy.py loads it: `{validate_command}` scores it on the public sample")
    elif target.name == loads.name:
        print(f"policy.py loads {loads}: copy {target.name} next to it to submit these weights")
    else:
        print(f'policy.py loads {loads}, not this file: set WEIGHTS_FILE = "{target.name}" in policy.py')
    return True
