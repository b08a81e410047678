"""``SplitMixRandom``: a ``random.Random`` that is cheap to seed, for a few draws per episode.

Seeding Python's own generator (MT19937) from an integer, and Gymnasium's ``np_random`` (a
numpy ``SeedSequence`` and ``PCG64``) even more, costs several times the whole step of a cheap
game adapted from another library (``benchmarks/gem_throughput.py``), where an episode needs
one number from its seed (the seed handed to that library). SplitMix64 (Steele, Lea and
Flood, 2014) is a 64-bit counter passed through a mixing function: seeding it is one
assignment, and a draw a few integer operations. ``random.Random`` is built to be subclassed
this way (override ``random``, ``getrandbits``, ``seed``, ``getstate``, ``setstate``), so
``randrange``, ``choice`` and ``shuffle`` work as usual on top. Its period is 2**64: enough
for the seeds of episodes, not a replacement for MT19937 in simulations
that draw millions of numbers.

Example:
    >>> first, second = SplitMixRandom(7), SplitMixRandom(7)
    >>> first.getrandbits(31) == second.getrandbits(31)
    True
    >>> 0 <= first.randrange(10) < 10, 0.0 <= first.random() < 1.0
    (True, True)
"""

from __future__ import annotations

import random
import secrets
from typing import Any

_MASK = (1 << 64) - 1
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15


class SplitMixRandom(random.Random):
    """SplitMix64 behind ``random.Random``'s interface.

    Args:
        seed: any integer (taken modulo 2**64); ``None`` seeds from the operating system.
    """

    _state: int

    def seed(self, a: Any = None, version: int = 2) -> None:
        """Restarts the stream from ``a`` (an int; ``None``: fresh entropy)."""
        if a is None:
            a = secrets.randbits(64)
        elif not isinstance(a, int):
            raise TypeError(f"SplitMixRandom takes an integer seed, got {type(a).__name__}")
        self._state = a & _MASK
        self.gauss_next = None

    def getrandbits(self, k: int) -> int:
        """``k`` random bits (0 < k <= 64 from one draw; more from several)."""
        if k <= 0:
            if k < 0:
                raise ValueError("number of bits must be non-negative")
            return 0
        if k > 64:
            high = self.getrandbits(k - 64)
            return (high << 64) | self.getrandbits(64)
        # mix64 of the next counter value (the constants are SplitMix64's)
        self._state = z = (self._state + _GOLDEN_GAMMA) & _MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return (z ^ (z >> 31)) >> (64 - k)

    def random(self) -> float:
        """A float in [0, 1) with 53 random bits."""
        return self.getrandbits(53) * (1.0 / (1 << 53))

    def getstate(self) -> tuple[int, float | None]:  # type: ignore[override]
        return self._state, self.gauss_next

    def setstate(self, state: tuple[int, float | None]) -> None:  # type: ignore[override]
        self._state, self.gauss_next = state
