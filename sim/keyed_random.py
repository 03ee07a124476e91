"""A ``random.Random`` whose stream comes from a keyed cryptographic hash.

Python's Mersenne Twister can be reconstructed from about 624 consecutive outputs, and each task of an episode
reveals roughly three of them, so a policy that sees the tasks of a lab-seeded episode can predict the rest of it.
Hidden evaluation episodes therefore draw from SHAKE-256 in counter mode keyed by a secret of at least 128 bits:
without the key the stream is indistinguishable from random, and the same key always gives the same episode.

Because only ``random()`` and ``getrandbits()`` are overridden, every derived method (``uniform``, ``expovariate``,
``choices``, ``shuffle``, ``randrange``) keeps the exact algorithm of the standard library, so distributions match
the lab's generator.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

MIN_KEY_BYTES = 16
_BLOCK_BYTES = 512


class KeyedRandom(random.Random):
    """Deterministic random stream derived from ``key`` and a public ``label`` (for example an episode id)."""

    def __new__(cls, key: bytes, label: str = "") -> KeyedRandom:
        # Python 3.10's random.Random.__new__ refuses more than one argument, from subclasses too (3.11 lets them
        # through to __init__), so the key and label are not passed on; __init__ takes them.
        return super().__new__(cls)

    def __init__(self, key: bytes, label: str = "") -> None:
        if not isinstance(key, bytes) or len(key) < MIN_KEY_BYTES:
            raise ValueError(
                f"KeyedRandom needs a key of at least {MIN_KEY_BYTES} bytes (128 bits), got "
                f"{len(key) if isinstance(key, bytes) else type(key).__name__}"
            )
        self._key = key
        self._label = label.encode()
        self._counter = 0
        self._buffer = b""
        self._offset = 0
        super().__init__(0)

    def seed(self, a: Any = None, version: int = 2) -> None:
        # random.Random.__init__ calls seed(); reseeding rewinds the keyed stream, nothing else.
        self._counter = 0
        self._buffer = b""
        self._offset = 0

    def _take(self, n: int) -> bytes:
        while len(self._buffer) - self._offset < n:
            block = hashlib.shake_256(
                len(self._key).to_bytes(2, "big") + self._key + self._counter.to_bytes(8, "big") + self._label
            ).digest(_BLOCK_BYTES)
            self._buffer = self._buffer[self._offset :] + block
            self._offset = 0
            self._counter += 1
        out = self._buffer[self._offset : self._offset + n]
        self._offset += n
        return out

    def random(self) -> float:
        """A float in [0, 1) with 53 random bits, like the standard generator."""
        return (int.from_bytes(self._take(7), "big") >> 3) * (1.0 / 9007199254740992.0)

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError(f"number of bits must be non-negative, got {k}")
        if k == 0:
            return 0
        n_bytes = (k + 7) // 8
        return int.from_bytes(self._take(n_bytes), "big") >> (n_bytes * 8 - k)

    def getstate(self) -> Any:
        raise TypeError("KeyedRandom state is secret and cannot be exported")

    def setstate(self, state: Any) -> None:
        raise TypeError("KeyedRandom state cannot be imported")
