"""What the harness imports itself before any episode, so that each episode's fresh import is the policy's alone.

torch (when the bundle's sources import it) takes about 2 s to import and a few milliseconds to warm up; the
built-in tracks' modules must be in ``sys.modules`` before a policy's bundle comes first on an episode process's
path. No code of the participant runs here: the bundle is searched as text.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import numpy as np

from layersched.sim.tracks import load_track_module
from layersched.sim.tracks.registry import BUILTIN_MODULES
from layersched.worker.sandbox.episode_process import configure_torch, seed_globals

# Site packages the harness imports itself, before any episode, when the bundle imports them: then each episode's
# fresh import of the policy finds them loaded (torch takes about 2 s to import; the policy module milliseconds).
PRELOADABLE = ("torch",)


def preload_site_modules(bundle: Path, modules: tuple[str, ...] = PRELOADABLE) -> list[str]:
    """Import the ``modules`` that the bundle's sources import and do not ship themselves; returns those imported.

    A text search, not an import: the bundle's code must not run here. A policy that imports torch in a way the
    search misses still works, its episodes only start slower. A module that cannot be imported here (torch in a
    process sandbox of a ``[server]``-only install) is left to the policy's own import: a kit that imports torch
    only when it has weights runs without it, and one that needs it fails as its own ``import_error``, in its
    episode, rather than the harness failing the whole evaluation.
    """
    wanted: set[str] = set()
    for path in sorted(bundle.rglob("*.py"))[:1000]:
        with contextlib.suppress(OSError):
            source = path.read_bytes()
            for name in modules:
                if re.search(rb"^[ \t]*(?:import|from)[ \t][^\n]*\b" + name.encode() + rb"\b", source, re.MULTILINE):
                    wanted.add(name)
    loaded = []
    for name in sorted(wanted):
        if (bundle / f"{name}.py").exists() or (bundle / name).exists():
            continue  # the bundle's own module of that name must win, as it would in-process
        try:
            __import__(name)
        except ImportError:
            continue
        loaded.append(name)
    configure_torch()
    if "torch" in loaded:
        _warm_torch()
    # numpy's first legacy seeding initialises lazily (about 8 ms); done once here, every episode's is microseconds.
    seed_globals(0)
    return loaded


def _warm_torch() -> None:
    """What a torch policy's import and first decision do the first time in a process (loading a state dict, a small
    network's forward pass) initialises lazily: about 3 ms of every episode's import, paid once here instead. Our own
    tensors only: no code of the participant runs."""
    import io

    import torch

    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    buffer = io.BytesIO()
    torch.save(net.state_dict(), buffer)
    for weights_only in (True, False):
        buffer.seek(0)
        net.load_state_dict(torch.load(buffer, weights_only=weights_only))
    net.eval()
    with torch.no_grad():
        net(torch.from_numpy(np.zeros((2, 4), dtype=np.float32))).squeeze(1).double().numpy()
        torch.rand(2, dtype=torch.float64).numpy()


def preload_tracks() -> None:
    """Import the built-in tracks' modules, before any episode process exists: every episode process then finds
    them in ``sys.modules``, never on a path that its policy's bundle comes first on."""
    for module in BUILTIN_MODULES.values():
        load_track_module(module)
