"""Metrics of a run: JSONL and TensorBoard in the run folder; W&B or SwanLab when asked for."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rollenv.extras import MissingExtraError


class MetricsLogger:
    """Writes one record per step to every configured sink.

    Args:
        run_dir: the run folder (``metrics.jsonl`` and ``tensorboard/`` go there).
        loggers: any of ``tensorboard``, ``jsonl``, ``wandb``, ``swanlab``.
        config: the run's config, recorded by W&B / SwanLab.
        resume_after: a resumed run goes on after this step: the JSONL records and TensorBoard
            events of later steps (written after that checkpoint) are dropped, so the run's
            files hold each step once.
    """

    def __init__(
        self,
        run_dir: Path,
        loggers: list[str],
        config: dict[str, Any] | None = None,
        resume_after: int | None = None,
    ):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if resume_after is not None:
            self.truncate_after(resume_after)
        self._jsonl = None
        if "jsonl" in loggers:  # kept open for the run, closed by close()
            self._jsonl = open(self.run_dir / "metrics.jsonl", "a")  # noqa: SIM115
        self._tensorboard = None
        self._wandb = None
        self._swanlab = None
        if "tensorboard" in loggers:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise MissingExtraError(
                    "TensorBoard logging needs tensorboard: pip install tensorboard"
                ) from None
            self._tensorboard = SummaryWriter(
                str(self.run_dir / "tensorboard"),
                purge_step=None if resume_after is None else resume_after + 1,
            )
        if "wandb" in loggers:
            try:
                import wandb
            except ImportError:
                raise MissingExtraError("train.loggers has wandb: pip install wandb") from None
            self._wandb = wandb.init(project="rollenv", dir=str(self.run_dir), config=config)
        if "swanlab" in loggers:
            try:
                import swanlab
            except ImportError:
                raise MissingExtraError("train.loggers has swanlab: pip install swanlab") from None
            self._swanlab = swanlab.init(project="rollenv", config=config)

    def truncate_after(self, step: int) -> None:
        """Drops the JSONL records of steps after ``step`` (a resumed run redoes them)."""
        path = self.run_dir / "metrics.jsonl"
        if path.exists():
            lines = [line for line in path.read_text().splitlines() if line.strip()]
            kept = [line for line in lines if json.loads(line)["step"] <= step]
            # the open handle appends (O_APPEND), so it writes after what is kept
            path.write_text("".join(line + "\n" for line in kept))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        clean = {
            k: float(v) for k, v in metrics.items() if v is not None and math.isfinite(float(v))
        }
        if self._jsonl is not None:
            self._jsonl.write(json.dumps({"step": step, **clean}) + "\n")
            self._jsonl.flush()
        if self._tensorboard is not None:
            for name, value in clean.items():
                self._tensorboard.add_scalar(name, value, step)
            self._tensorboard.flush()
        if self._wandb is not None:
            self._wandb.log(clean, step=step)
        if self._swanlab is not None:
            self._swanlab.log(clean, step=step)

    def close(self) -> None:
        if self._jsonl is not None:
            self._jsonl.close()
        if self._tensorboard is not None:
            self._tensorboard.close()
        if self._wandb is not None:
            self._wandb.finish()
