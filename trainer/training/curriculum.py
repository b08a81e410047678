"""A curriculum that makes the training envs harder as the policy masters them.

One integer of ``env.kwargs`` (the difficulty knob, e.g. SimpleSokoban's
``max_solution_length``) starts where the config sets it and goes up by ``increment`` each time
the sampled success of the last ``window`` training steps, averaged, reaches ``raise_at``, until
it reaches ``stop``. After a raise the average starts again from the new level's steps, so one
good stretch raises the level once. Evaluation envs are made from ``env.eval_kwargs`` and never
change.

It decides from the rollouts' own success (no oracle) and is plain state, saved with each
checkpoint, so a resumed run goes on at the level it had reached.

Example:
    >>> from trainer.config import CurriculumConfig
    >>> curriculum = Curriculum(
    ...     CurriculumConfig(kwarg="max_solution_length", stop=7, raise_at=0.5, window=2), start=5
    ... )
    >>> [curriculum.observe(s) for s in (0.25, 0.5, 0.75, 0.5, 0.5, 0.9)]
    [None, None, 6, None, 7, None]
    >>> curriculum.value
    7
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainer.config import CurriculumConfig


class Curriculum:
    """The current level of one env kwarg, raised from the training steps' success.

    Args:
        config: ``env.curriculum``: which kwarg, its last value, the step, the success that
            raises it and over how many steps.
        start: the kwarg's value in ``env.kwargs``.
    """

    def __init__(self, config: CurriculumConfig, start: int):
        self.config = config
        self.value = start
        self._recent: deque[float] = deque(maxlen=config.window)

    @property
    def kwarg(self) -> str:
        return self.config.kwarg

    def observe(self, success: float) -> int | None:
        """Takes one training step's sampled success; returns the new value when it raises
        the level (``None`` otherwise)."""
        if self.value >= self.config.stop:
            return None
        self._recent.append(success)
        full = len(self._recent) == self.config.window
        if not full or sum(self._recent) / len(self._recent) < self.config.raise_at:
            return None
        self.value = min(self.value + self.config.increment, self.config.stop)
        self._recent.clear()
        return self.value

    def state_dict(self) -> dict[str, Any]:
        return {"value": self.value, "recent": list(self._recent)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.value = int(state["value"])
        self._recent = deque(state["recent"], maxlen=self.config.window)
