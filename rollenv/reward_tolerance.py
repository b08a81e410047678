"""``RewardTolerance``: how much a reply that ignores the task may earn (see ``check_reward``).

An env that needs a looser bound than the default sets ``TextEnv.reward_tolerance``.

Example:
    >>> from rollenv.reward_tolerance import RewardTolerance
    >>> RewardTolerance()
    RewardTolerance(max_share=0.05, max_success=0.0)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RewardTolerance"]


@dataclass(frozen=True)
class RewardTolerance:
    """How much a task-ignoring reply may earn before the reward counts as gameable.

    Attributes:
        max_share: the most a probe's mean return may be, as a share of the oracle's.
        max_success: the most a probe's success rate may be.
    """

    max_share: float = 0.05
    max_success: float = 0.0
