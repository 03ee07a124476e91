"""A jobs-v1 policy: DeepRM_Plus's network when ``weights.pt`` is next to this file, else shortest job first.

``policy(env, rng)`` returns the slot of the visible job to place now, or None to let time move on one step. See
the contract (``layersched.sim.tracks.get_track("jobs-v1").contract``) for everything ``env`` holds.

As shipped there are no weights, so this is SJF, the reference every score is a ratio to (it scores 1.0). ``python
train.py`` clones SJF, improves the clone by policy gradient, and writes ``weights.pt`` (the file named by
``WEIGHTS_FILE``) only when the result beats SJF on its validation workloads. With the weights, the network scores
the actions from DeepRM's image state (``env.observe()``) and the best allowed one (``env.mask()``) is played.
Weights trained for another image shape (another cluster size) are not used: SJF plays then.

The sandbox has the standard library, numpy, torch (CPU, one thread), ``layersched.sim`` and your own files, and
no network; read files relative to ``__file__``, as below. It imports this module afresh for every episode, in a
process of its own: what runs at import (``LOADED``, the weights' load) runs once per episode, not once per
evaluation, and nothing (module-level state, files, threads) carries over from one episode to the next.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

WEIGHTS_FILE = "weights.pt"  # the one place that says which weights this policy uses
WEIGHTS = Path(__file__).with_name(WEIGHTS_FILE)


def sjf(env: Any, rng: random.Random) -> int | None:
    """Shortest job first among the jobs that fit from now for their whole length; the lowest slot on a tie."""
    best, action = 0.0, None
    for i, job in enumerate(env.slots):
        if job is not None and env.fits_now(i) and 1 / job.length > best:
            best, action = 1 / job.length, i
    return action


def make_network(height: int, width: int, n_actions: int) -> Any:
    """DeepRM_Plus's CNN: two convolutions, each followed by 2x2 average pooling, then two fully connected layers.

    Input (batch, height, width) images, output (batch, n_actions) logits: slots 0..n_actions-2, then void.
    torch is imported here, not at the top, so the template runs without torch when there are no weights.
    """
    from torch import nn

    flat = 8 * (height // 4) * (width // 4)
    return nn.Sequential(
        nn.Unflatten(1, (1, height)),  # (batch, 1, height, width): one channel
        nn.Conv2d(1, 4, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Conv2d(4, 8, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(flat, 64),
        nn.ReLU(),
        nn.Linear(64, n_actions),
    )


def load_network(path: Path = WEIGHTS) -> tuple[Any, tuple[int, int, int]] | None:
    """The network saved in ``path`` and its (height, width, n_actions), or None when there is no such file."""
    if not path.exists():
        return None
    import torch

    # weights_only=True: a weights file is data, never code to run.
    saved = torch.load(path, map_location="cpu", weights_only=True)
    shape = (int(saved["shape"][0]), int(saved["shape"][1]), int(saved["shape"][2]))
    network = make_network(*shape)
    network.load_state_dict(saved["state"])
    network.eval()
    return network, shape


def best_allowed(network: Any, image: Any, mask: list[bool]) -> int | None:
    """The allowed action with the highest logit (the lowest on a tie), as a slot or None for void."""
    import torch

    with torch.no_grad():
        logits = network(torch.from_numpy(image).unsqueeze(0))[0]
    logits = logits.masked_fill(~torch.tensor(mask), float("-inf"))
    action = int(logits.argmax())
    return None if action == len(mask) - 1 else action


LOADED = load_network()  # at import: once per episode, since every episode imports this module afresh


def policy(env: Any, rng: random.Random) -> int | None:
    if LOADED is None:
        return sjf(env, rng)
    network, shape = LOADED
    image = env.observe()
    if image.shape != shape[:2] or len(env.slots) + 1 != shape[2]:
        return sjf(env, rng)  # trained on another cluster: its weights do not apply
    return best_allowed(network, image, env.mask())
