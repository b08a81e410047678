"""``Latency``: adds a delay to every step, to benchmark rollouts against slow environments.

Real agent environments (a browser, a sandbox, a remote API) take tens of milliseconds to
seconds per step, with a long tail. This wrapper sleeps before each step returns: a fixed delay,
a uniform range, or a log-normal draw whose tail mimics a real service.

Example:
    >>> import rollenv
    >>> from rollenv.wrappers import Latency
    >>> env = Latency(rollenv.make("Sokoban-v0"), delay_s=(0.0, 0.002))
    >>> _ = env.reset(seed=0)
    >>> _ = env.step("<answer>Up</answer>")
    >>> 0.0 <= env.last_delay_s <= 0.002
    True
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

import gymnasium as gym


class Latency(gym.Wrapper[str, str, str, str]):
    """Sleeps ``delay_s`` seconds in every ``step`` (and ``reset_delay_s`` in every ``reset``).

    Args:
        env: the env to slow down.
        delay_s: a fixed delay, or ``(low, high)`` for a uniform draw per step.
        lognormal_sigma: if set, the fixed delay becomes the median of a log-normal draw with
            this sigma (a long tail: sigma 1.0 gives a p99 about 10x the median).
        reset_delay_s: a fixed delay for ``reset``.
        seed: seeds the delay draws (they are independent of the env's own randomness).
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        delay_s: float | tuple[float, float] = 0.0,
        *,
        lognormal_sigma: float | None = None,
        reset_delay_s: float = 0.0,
        seed: int | None = None,
    ):
        super().__init__(env)
        if isinstance(delay_s, tuple):
            low, high = delay_s
            if not 0 <= low <= high:
                raise ValueError(
                    f"Latency delay_s range must satisfy 0 <= low <= high, got {delay_s}"
                )
            if lognormal_sigma is not None:
                raise ValueError("Latency: give lognormal_sigma with a fixed delay_s, not a range")
        elif delay_s < 0:
            raise ValueError(f"Latency delay_s must be >= 0, got {delay_s}")
        if reset_delay_s < 0:
            raise ValueError(f"Latency reset_delay_s must be >= 0, got {reset_delay_s}")
        self.delay_s = delay_s
        self.lognormal_sigma = lognormal_sigma
        self.reset_delay_s = reset_delay_s
        self._rng = random.Random(seed)
        self.last_delay_s = 0.0

    def _draw(self) -> float:
        if isinstance(self.delay_s, tuple):
            return self._rng.uniform(*self.delay_s)
        if self.lognormal_sigma is not None and self.delay_s > 0:
            return self._rng.lognormvariate(math.log(self.delay_s), self.lognormal_sigma)
        return self.delay_s

    def reset(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        result = self.env.reset(**kwargs)
        if self.reset_delay_s:
            time.sleep(self.reset_delay_s)
        return result

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self.env.step(action)
        self.last_delay_s = self._draw()
        if self.last_delay_s:
            time.sleep(self.last_delay_s)
        return result
