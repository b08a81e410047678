"""The run's data order: which env seeds each training step plays.

Training seeds derive from ``(train.seed, step)`` alone, so a resumed run, the warm start and
each Ray env manager agree on them without asking the pipeline.

Example:
    >>> from trainer.rollout.seeds import TRAIN_SEED_BASE, step_seeds
    >>> seeds = step_seeds(0, 1, groups=3)
    >>> seeds == step_seeds(0, 1, groups=3), all(s >= TRAIN_SEED_BASE for s in seeds)
    (True, True)
"""

from __future__ import annotations

import random

__all__ = ["TRAIN_SEED_BASE", "step_seeds"]

#: training seeds start here, evaluation seeds are 0, 1, 2, ...: the two never meet
TRAIN_SEED_BASE = 1_000_000


def step_seeds(seed: int, step: int, groups: int, resample: int = 0) -> list[int]:
    """The reset seeds of a training step's groups (the run's data order); ``resample`` > 0:
    the seeds of that round of dynamic sampling's extra groups (different prompts)."""
    rng = random.Random(f"{seed}-{step}" if resample == 0 else f"{seed}-{step}-{resample}")
    return [rng.randrange(TRAIN_SEED_BASE, 2**31) for _ in range(groups)]
