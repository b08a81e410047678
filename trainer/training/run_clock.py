"""A run's clock: the minutes it has taken over every session, against its whole-run budget.

``train.max_minutes`` is the budget of the whole run: the warm start, RL and every evaluation,
over every session (``--resume`` goes on counting from what the newest checkpoint recorded).
The warm start stops at ``sft.max_minutes`` (or at the budget, without it), RL when the budget
has passed; then the run evaluates, saves and ends.

Example:
    >>> from trainer.training.run_clock import RunClock
    >>> now = [0.0]
    >>> clock = RunClock(budget_s=3600.0, before_s=1200.0, clock=lambda: now[0])
    >>> now[0] = 90.0
    >>> clock.elapsed_s(), clock.left_s()
    (1290.0, 2310.0)
    >>> clock.over()
    False
"""

from __future__ import annotations

from collections.abc import Callable
from time import monotonic

__all__ = ["RunClock"]


class RunClock:
    """Seconds a run has taken: those its earlier sessions recorded, plus this session's.

    Args:
        budget_s: the whole run's budget (``None``: no time limit, steps alone end it).
        before_s: seconds the earlier sessions took (read from the newest checkpoint).
        clock: seconds, monotonic (a fake one in tests); read once now, as this session's start.
    """

    def __init__(
        self,
        budget_s: float | None = None,
        before_s: float = 0.0,
        *,
        clock: Callable[[], float] = monotonic,
    ) -> None:
        self.budget_s = budget_s
        self.before_s = before_s
        self.clock = clock
        self.started_at = clock()

    def elapsed_s(self) -> float:
        """Seconds the run has taken over every session."""
        return self.before_s + self.clock() - self.started_at

    def left_s(self) -> float | None:
        """Seconds left in the budget (never below 0); ``None`` without a budget."""
        if self.budget_s is None:
            return None
        return max(self.budget_s - self.elapsed_s(), 0.0)

    def over(self) -> bool:
        """True once the budget has passed."""
        return self.budget_s is not None and self.elapsed_s() >= self.budget_s
