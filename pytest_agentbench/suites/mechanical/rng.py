"""A pseudo-random stream that is the same on every platform and Python version.

`random.Random` only promises a stable stream for some seed types and may change
between releases; a suite whose fixture hashes are committed cannot depend on that.
SHAKE-256 in counter mode over a string seed gives a stream defined by this file alone.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

_DRAWS_PER_BLOCK = 128
_BLOCK = struct.Struct(f">{_DRAWS_PER_BLOCK}Q")


class HashRandom:
    """Deterministic 64-bit draws from SHAKE-256(seed, counter), 128 per block."""

    def __init__(self, seed: str) -> None:
        self._seed = seed.encode("utf-8")
        self._counter = 0
        self._pool: list[int] = []

    def _bits64(self) -> int:
        if not self._pool:
            block = self._seed + b"\x00" + str(self._counter).encode("ascii")
            digest = hashlib.shake_256(block).digest(_BLOCK.size)
            self._pool = list(reversed(_BLOCK.unpack(digest)))
            self._counter += 1
        return self._pool.pop()

    def below(self, n: int) -> int:
        """An integer in [0, n); the modulo bias (n / 2**64) is irrelevant here."""
        if n <= 0:
            raise ValueError(f"below() needs a positive bound, got {n}")
        return self._bits64() % n

    def randint(self, low: int, high: int) -> int:
        """An integer in [low, high], both ends included."""
        return low + self.below(high - low + 1)

    def choice(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """k distinct elements in draw order (partial Fisher-Yates)."""
        pool = list(items)
        if not 0 <= k <= len(pool):
            raise ValueError(f"cannot sample {k} of {len(pool)} items")
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]
