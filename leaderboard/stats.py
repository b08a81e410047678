"""The numbers the board shows: a success rate with its Wilson 95% interval.

The Wilson score interval (Wilson, 1927) stays inside [0, 1] and is sensible at 0 and n
successes, where the normal approximation collapses to a width of zero:

    centre = (p + z²/2n) / (1 + z²/n)
    half   = z / (1 + z²/n) * sqrt(p(1-p)/n + z²/4n²)

Example:
    >>> low, high = wilson_interval(0, 10)
    >>> round(low, 3), round(high, 3)
    (0.0, 0.278)
"""

from __future__ import annotations

import math

__all__ = ["Z_95", "episodes_for_half_width", "wilson_interval"]

#: the normal quantile of a two-sided 95% interval
Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n`` (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..{n}, got {successes}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # at 0 or n successes one end is exact; rounding would put it a hair off the rate
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def episodes_for_half_width(half_width: float, z: float = Z_95) -> int:
    """Episodes that bound the interval's half width by ``half_width`` at any success rate
    (the worst case is p = 0.5: ``n >= z² / (4 h²)``).

    Example:
        >>> episodes_for_half_width(0.05)
        385
    """
    return math.ceil(z * z / (4 * half_width * half_width))
