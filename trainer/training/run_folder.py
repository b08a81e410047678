"""A run is never destroyed: ``roll-agent train`` and ``sft`` refuse a folder that holds a run.

A run folder holds one run. Started again into it without ``--resume``, a run would write its
checkpoints over the old ones, append its steps to the old ``metrics.jsonl`` and add a second
TensorBoard event file beside the first. So the command refuses, in one line naming the run's
step and the three ways on: ``--resume`` (continue it), ``--output DIR`` (a new folder) and
``--overwrite`` (delete it and start over). Refusal, as Hugging Face Trainer's ``output_dir``
check does, rather than a numbered new folder: the commands a user already has (``eval`` and
``serve`` paths, ``--resume``) keep pointing at the run they mean.

The check belongs to the command line; ``Pipeline`` built directly (benchmarks, library callers)
does not make it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from trainer.config import Config, ConfigError
from trainer.training.checkpoint import checkpoint_step, latest_checkpoint

METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
CHECKPOINTS_DIR = "checkpoints"
SFT_DIR = "sft"
EVALUATIONS_FILE = "evaluations.jsonl"  # the run's greedy evaluations (trainer.evaluation.log)
# what a run writes into its folder (``--overwrite`` deletes these, and nothing else)
RUN_FILES = (
    CHECKPOINTS_DIR,
    SFT_DIR,
    METRICS_FILE,
    EVALUATIONS_FILE,
    "learning_curve.png",
    TENSORBOARD_DIR,
    "train.log",
    "wandb",
)


class RunFolderError(ConfigError):
    """The run folder holds a run the command would destroy (shown as a usage error)."""


@dataclass(frozen=True)
class HeldRun:
    """What run a folder holds, as :func:`held_run` finds it.

    Attributes:
        rl_step: the step of its newest complete RL checkpoint (``None``: none).
        warm_start_step: the step of its warm start's newest checkpoint (``None``: none).
        warm_start_finished: whether that warm start ran to its end.
        logged_step: the last step in its ``metrics.jsonl`` (``None``: no record).
    """

    rl_step: int | None = None
    warm_start_step: int | None = None
    warm_start_finished: bool = False
    logged_step: int | None = None

    def describe(self) -> str:
        """How far the run got, e.g. ``RL step 40; warm start finished at step 312``."""
        parts = []
        if self.rl_step is not None:
            parts.append(f"RL step {self.rl_step}")
        elif self.logged_step is not None:
            parts.append(f"last logged step {self.logged_step}, no RL checkpoint")
        if self.warm_start_step is not None:
            done = "finished" if self.warm_start_finished else "stopped"
            parts.append(f"warm start {done} at step {self.warm_start_step}")
        return "; ".join(parts) or "no step recorded yet"


def held_run(folder: Path) -> HeldRun | None:
    """The run ``folder`` holds, or ``None`` when it holds none.

    A folder holds a run when it has any of what a run writes: a non-empty ``checkpoints/``
    or ``sft/`` folder, a ``metrics.jsonl`` or ``evaluations.jsonl``, or a TensorBoard event
    file in ``tensorboard/``.
    A folder that does not exist, is empty, or holds only logs (``train.log``, ``eval.log``)
    holds none.

    Args:
        folder: the run folder (``train.output_dir``).

    Returns:
        What the run got to, or ``None``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return None
    checkpoints = folder / CHECKPOINTS_DIR
    warm_start = folder / SFT_DIR
    metrics = folder / METRICS_FILE
    holds = (
        _non_empty_dir(checkpoints)
        or _non_empty_dir(warm_start)
        or metrics.is_file()
        or (folder / EVALUATIONS_FILE).is_file()
        or any((folder / TENSORBOARD_DIR).glob("events.out.tfevents.*"))
    )
    if not holds:
        return None
    newest = latest_checkpoint(folder)
    warm_step, warm_finished = _warm_start(warm_start)
    return HeldRun(
        rl_step=None if newest is None else checkpoint_step(newest),
        warm_start_step=warm_step,
        warm_start_finished=warm_finished,
        logged_step=_last_logged_step(metrics),
    )


def check_run_folder(config: Config, *, resume: bool, overwrite: bool) -> None:
    """Enforces the rule before a command trains into ``config.train.output_dir``.

    Without ``resume`` or ``overwrite``, a folder that holds a run is refused; with
    ``overwrite``, the old run's files are deleted (the folder's other files are kept).

    Args:
        config: the run's config.
        resume: ``--resume``: continue the run the folder holds (or start one there).
        overwrite: ``--overwrite``: delete the run the folder holds and start over.

    Raises:
        RunFolderError: the folder holds a run and neither flag was given, or both were.
    """
    folder = Path(config.train.output_dir)
    if resume and overwrite:
        raise RunFolderError(
            "--resume and --overwrite contradict each other: --resume continues the run in "
            f"{folder}, --overwrite deletes it; give one"
        )
    run = held_run(folder)
    if run is None or resume:
        return
    if overwrite:
        delete_run(folder)
        return
    raise RunFolderError(
        f"{folder} already holds a run ({run.describe()}); continue it with --resume, start a "
        "new one with --output DIR, or delete it and start over with --overwrite"
    )


def delete_run(folder: Path) -> None:
    """Deletes what a run wrote into ``folder`` (:data:`RUN_FILES`), and nothing else."""
    for name in RUN_FILES:
        path = Path(folder) / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def _non_empty_dir(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def _warm_start(folder: Path) -> tuple[int | None, bool]:
    """The step of the warm start in ``folder`` (``<run>/sft``) and whether it finished."""
    newest = latest_checkpoint(folder)
    if newest is None:
        return None, False
    from trainer.training.sft import STATE_FILE  # the warm start's module loads torch

    try:
        state = json.loads((newest / STATE_FILE).read_text())
    except (OSError, ValueError):
        return checkpoint_step(newest), False
    # checkpoints written before warm starts could stop half-way were all finished ones
    return int(state.get("step", checkpoint_step(newest))), bool(state.get("finished", True))


def _last_logged_step(path: Path) -> int | None:
    """The ``step`` of the last readable record of a ``metrics.jsonl``."""
    if not path.is_file():
        return None
    step = None
    for line in path.read_text(errors="replace").splitlines():
        try:
            step = int(json.loads(line)["step"])
        except (ValueError, KeyError, TypeError):
            continue
    return step
