"""A run's greedy evaluations in one file, ``<run>/evaluations.jsonl``, and the learning curve
drawn from it.

Both phases write here: the starting policy's evaluation, those every
``train.eval_every_minutes`` in the warm start and in RL, and the final one. Each line is one
evaluation: its phase, step, the run's minutes when it began (over every session) and its
``eval/`` metrics. A resumed phase drops the lines after the step it resumes from, so the file
holds one run's history, as its checkpoints do.

Example:
    >>> import tempfile
    >>> from trainer.evaluation.log import EvaluationLog
    >>> log = EvaluationLog(tempfile.mkdtemp())
    >>> log.add("warm start", 0, 0.0, {"eval/success": 0.0}).success
    0.0
    >>> log.add("RL", 10, 12.5, {"eval/success": 0.5}).minutes
    12.5
    >>> [(p.phase, p.step, p.success) for p in log.points()]
    [('warm start', 0, 0.0), ('RL', 10, 0.5)]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["EvaluationLog", "EvaluationPoint", "plot_learning_curve", "sparkline"]

FILE = "evaluations.jsonl"
CURVE_FILE = "learning_curve.png"
_BLOCKS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class EvaluationPoint:
    """One greedy evaluation of a run.

    Attributes:
        phase: ``"warm start"`` or ``"RL"``.
        step: that phase's steps done when it ran.
        minutes: the run's minutes (every session) when it began.
        success: its success rate.
        episodes: how many episodes it played.
    """

    phase: str
    step: int
    minutes: float
    success: float
    episodes: int = 0


class EvaluationLog:
    """``<run>/evaluations.jsonl``: every evaluation of one run, in order.

    Args:
        run_dir: the run folder.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / FILE

    def add(
        self,
        phase: str,
        step: int,
        minutes: float,
        metrics: Mapping[str, float],
        episodes: int = 0,
    ) -> EvaluationPoint:
        """Appends one evaluation (``metrics`` with ``eval/success``) and returns it."""
        point = EvaluationPoint(phase, step, minutes, float(metrics["eval/success"]), episodes)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as file:
            line = {**point.__dict__, **{k: float(v) for k, v in metrics.items()}}
            file.write(json.dumps(line) + "\n")
        return point

    def points(self) -> list[EvaluationPoint]:
        """Every evaluation so far, in order."""
        if not self.path.exists():
            return []
        rows = [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
        return [
            EvaluationPoint(r["phase"], r["step"], r["minutes"], r["success"], r["episodes"])
            for r in rows
        ]

    def truncate(self, phase: str, after_step: int) -> None:
        """Drops ``phase``'s evaluations after ``after_step`` and every later phase's (a resumed
        phase plays them again). ``phase`` is ``"warm start"`` or ``"RL"``, in that order."""
        if not self.path.exists():
            return
        order = ["warm start", "RL"]
        kept = []
        for line in self.path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            later = order.index(row["phase"]) > order.index(phase)
            if later or (row["phase"] == phase and row["step"] > after_step):
                continue
            kept.append(line + "\n")
        self.path.write_text("".join(kept))


def sparkline(values: list[float], width: int = 24) -> str:
    """Success rates in ``[0, 1]`` as block characters, one an evaluation, the last ``width``.

    Each value picks one of the eight blocks, the nearest of ``0/7 .. 7/7``: 0.25 is 1.75/7,
    block 2.

    Example:
        >>> sparkline([0.0, 0.25, 1.0])
        '▁▃█'
    """
    return "".join(
        _BLOCKS[round(min(max(v, 0.0), 1.0) * (len(_BLOCKS) - 1))] for v in values[-width:]
    )


def plot_learning_curve(points: list[EvaluationPoint], path: Path, title: str) -> Path | None:
    """Draws greedy success against the run's minutes, a colour a phase, to a PNG at ``path``.

    Returns:
        ``path``, or ``None`` when there is nothing to draw or matplotlib is missing.
    """
    if not points:
        return None
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    colors = {"warm start": "tab:blue", "RL": "tab:red"}
    previous = None
    for phase, color in colors.items():
        mine = [p for p in points if p.phase == phase]
        if not mine:
            continue
        line = ([previous] if previous is not None else []) + mine  # joined to the phase before
        ax.plot(
            [p.minutes for p in line],
            [100 * p.success for p in line],
            "-o",
            color=color,
            markersize=4,
            label=phase,
        )
        previous = mine[-1]
    ax.set_xlabel("run minutes (evaluations included)")
    ax.set_ylabel("greedy success, %")
    ax.set_ylim(-2, 102)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
