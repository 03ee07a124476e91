"""Episode identities: where an episode's workload comes from, how a policy's own rng is seeded, and the hash that
names the actions it took.

An episode is either a *lab seed* (``random.Random(seed)``, public: the sample set and the lab's own numbers) or
*keyed* (``KeyedRandom(key, label)``, hidden: the key is a secret of at least 128 bits kept by the organisers).

The policy's ``rng`` is seeded from (bundle, scenario, episode) through SHA-256, never from the workload's seed or
key, so knowing it reveals nothing about future tasks, yet a rerun of the same bundle gets the same stream.

A lab seed's generator is a ``SeededRandom``: the standard stream, which also says what it was seeded with, for a
track whose reference draws its workload from another generator of the same seed (jobs-v1: numpy's RandomState).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from layersched.sim.keyed_random import MIN_KEY_BYTES, KeyedRandom

Split = Literal["public", "private"]


class SeededRandom(random.Random):
    """``random.Random`` that records the int it was last seeded with (``origin``; None for any other seed).

    It overrides neither ``random`` nor ``getrandbits``, so its stream is the standard one, bit for bit."""

    origin: int | None = None

    def seed(self, a: Any = None, version: int = 2) -> None:
        super().seed(a, version)
        self.origin = a if type(a) is int else None

    # random.Random pickles (and copies) as a fresh instance given its state: the seed goes along.
    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (), (self.getstate(), self.origin)

    def __setstate__(self, state: tuple[Any, int | None]) -> None:
        inner, self.origin = state
        self.setstate(inner)


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of a scenario: its id, its leaderboard split, and its workload source (seed xor key)."""

    id: str
    split: Split = "public"
    seed: int | None = None
    key: bytes | None = None

    def __post_init__(self) -> None:
        if (self.seed is None) == (self.key is None):
            raise ValueError(f"episode {self.id!r} needs exactly one of seed and key, got seed={self.seed!r}")
        if self.key is not None and len(self.key) < MIN_KEY_BYTES:
            raise ValueError(f"episode {self.id!r}: key must be at least {MIN_KEY_BYTES} bytes, got {len(self.key)}")
        if self.split not in ("public", "private"):
            raise ValueError(f"episode {self.id!r}: split must be 'public' or 'private', got {self.split!r}")

    @property
    def hidden(self) -> bool:
        return self.key is not None

    def workload_rng(self) -> random.Random:
        """A fresh generator positioned at the start of this episode's workload."""
        rng: random.Random = KeyedRandom(self.key, label=self.id) if self.key is not None else SeededRandom(self.seed)
        return rng

    def __repr__(self) -> str:  # never print a key
        source = "keyed" if self.key is not None else f"seed={self.seed}"
        return f"EpisodeSpec(id={self.id!r}, split={self.split!r}, {source})"


def policy_seed(bundle_sha256: str, scenario_hash: str, episode_id: str) -> int:
    """Seed of the policy's ``rng`` (and of Python's, numpy's and torch's globals in the sandbox): 63 bits."""
    digest = hashlib.sha256(f"layersched-policy-rng\0{bundle_sha256}\0{scenario_hash}\0{episode_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def trace_hash(actions: Sequence[int]) -> str:
    """SHA-256 of the action sequence; equal hashes mean every decision was the same (on every track: actions are
    integers)."""
    return hashlib.sha256(",".join(str(a) for a in actions).encode()).hexdigest()
