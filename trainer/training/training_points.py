"""``TrainingPointRecorder``: a run's evaluation points, written to the leaderboard's store.

``roll-agent train`` records each evaluation (``train.eval_every``) with the run's id, the name
of its folder, so the leaderboard draws the run's learning curve; an eval of one of its
checkpoints (``runs/sokoban/checkpoints/step-200/model``) appears on the board as
``sokoban@step-200``. A store that cannot be written is reported once and training goes on.

Example:
    >>> from trainer.training.training_points import run_id_of
    >>> run_id_of("runs/sokoban")
    'sokoban'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from leaderboard.records import TrainingPoint
from trainer.config import Config

__all__ = ["TrainingPointRecorder", "run_id_of"]


def run_id_of(run_dir: str | Path) -> str:
    """A run's id on the leaderboard: its folder's name."""
    return Path(run_dir).resolve().name


class TrainingPointRecorder:
    """Writes a run's evaluations into the results store, opened at the first one.

    Args:
        db: the store (``None``: the default file).
        run_dir: the run's folder (its name is the run id).
        config: the run's config (its model and env are recorded).
        say: where the one warning goes if the store cannot be written.
    """

    def __init__(
        self, db: str | None, run_dir: str | Path, config: Config, say: Callable[[str], None]
    ):
        self.db = db
        self.run_id = run_id_of(run_dir)
        self.model = config.model.name
        self.env_id = config.env.id
        self.say = say
        self._store: Any = None
        self._failed = False

    def record(self, step: int, metrics: Mapping[str, float]) -> None:
        """Stores the evaluation of ``step`` (``eval/success`` etc., stored without the prefix)."""
        if self._failed:
            return
        try:
            from leaderboard.store import ResultStore, StoreError
        except ImportError as error:
            self._give_up(f"the [leaderboard] extra is not installed ({error})")
            return
        try:
            if self._store is None:
                self._store = ResultStore(self.db)
            values = {key.removeprefix("eval/"): float(value) for key, value in metrics.items()}
            point = TrainingPoint(self.run_id, self.model, self.env_id, step, values, time.time())
            self._store.add_training_point(point)
        except StoreError as error:
            self._give_up(str(error))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def _give_up(self, reason: str) -> None:
        self._failed = True
        self.say(f"Not recording evaluations on the leaderboard: {reason}")
