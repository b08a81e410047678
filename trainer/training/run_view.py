"""What a training run shows while it works, and the summary it ends with.

A run has phases (the supervised ``warm start``, then ``RL``), each a number of steps. The
pipeline tells a ``RunView`` where it is (``begin``, ``step``, ``evaluation``, ``message``) and
the view shows, for the phase and the whole run, step k of N, the time elapsed and the time left
(ETA), with the last loss, success, valid-action rate, return and evaluation:

* ``LiveRunView`` redraws one rich panel in place, on a terminal;
* ``PlainRunView`` prints one line a step, for log files and CI, where a redrawn panel or a
  progress bar would be noise.

``make_run_view`` picks the first on a terminal with rich installed, the second otherwise. The ETA
of a phase is its time per step this session times the steps left, capped by its time limit
(``sft.max_minutes``, or RL's share of ``train.max_minutes``); before its first step, a phase
with a time limit shows the time it has left. A phase that its time limit will end before its
steps run out says so (``step 40 · 12m of 45m``) instead of counting steps it will never reach.
With a whole-run budget (``train.max_minutes``, a :class:`~trainer.training.run_clock.RunClock`),
the run's ETA is the budget's time left from the start; without one it adds the phases' ETAs once
every pace is known. Each evaluation (:meth:`RunView.evaluated`) adds to the success trend.

Example:
    >>> from trainer.training.run_view import Phase, PlainRunView
    >>> view = PlainRunView([Phase("RL", total=2)], write=print, clock=iter(range(100)).__next__)
    >>> view.begin("RL")
    >>> view.step(1, {"rollout/success": 0.5, "rollout/return": 0.1,
    ...               "rollout/valid_action_rate": 1.0, "loss": 0.25})
    step 1/2  success 0.50  return 0.10  valid 1.00  loss 0.2500  elapsed 1s  eta 1s
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainer.training.run_clock import RunClock

__all__ = [
    "LiveRunView",
    "Phase",
    "PlainRunView",
    "RunSummary",
    "RunView",
    "format_duration",
    "make_run_view",
]


def format_duration(seconds: float | None) -> str:
    """``75`` -> ``1m15s``; ``None`` (not known yet) -> ``?``."""
    if seconds is None:
        return "?"
    seconds = max(int(round(seconds)), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{seconds}s"


@dataclass
class Phase:
    """One phase of a run and how far it is.

    Attributes:
        name: ``"warm start"`` or ``"RL"``.
        total: its steps.
        done: steps done, including those of earlier sessions (before ``--resume``).
        time_limit_s: it stops after this many seconds even with steps left (``None``: none).
        elapsed_before_s: seconds it ran in earlier sessions.
    """

    name: str
    total: int
    done: int = 0
    time_limit_s: float | None = None
    elapsed_before_s: float = 0.0
    started_at: float | None = field(default=None, repr=False)
    done_at_start: int = field(default=0, repr=False)
    finished: bool = False

    def elapsed_s(self, now: float) -> float:
        """Seconds it has run over every session."""
        session = 0.0 if self.started_at is None else now - self.started_at
        return self.elapsed_before_s + session

    def eta_s(self, now: float) -> float | None:
        """Seconds left: the pace of this session's steps times the steps left, capped by the time
        limit; before its first step of this session, the time limit's time left (``None``
        without one)."""
        if self.finished or self.done >= self.total:
            return 0.0
        by_steps = self._eta_by_steps_s(now)
        left = self.time_left_s(now)
        if by_steps is None or left is None:
            return left if by_steps is None else by_steps
        return min(by_steps, left)

    def time_left_s(self, now: float) -> float | None:
        """Seconds before its time limit (never below 0); ``None`` without one."""
        if self.time_limit_s is None:
            return None
        return max(self.time_limit_s - self.elapsed_s(now), 0.0)

    def time_capped(self, now: float) -> bool:
        """True when its time limit, not its steps, will end it (as far as its pace tells)."""
        left = self.time_left_s(now)
        if left is None:
            return False
        by_steps = self._eta_by_steps_s(now)
        return by_steps is None or by_steps >= left

    def _eta_by_steps_s(self, now: float) -> float | None:
        stepped = self.done - self.done_at_start
        if self.started_at is None or stepped <= 0:
            return None
        return (now - self.started_at) / stepped * (self.total - self.done)

    def progress_text(self, now: float) -> str:
        """``step 40/200``, or ``step 40`` for a phase its time limit ends."""
        ended_by_time = self.finished and self.done < self.total
        if ended_by_time or (self.time_capped(now) and not self.finished):
            return f"step {self.done}"
        return f"step {self.done}/{self.total}"

    def elapsed_text(self, now: float) -> str:
        """``elapsed 3m10s``, or ``elapsed 3m10s of 15m`` for a phase its time limit ends."""
        text = f"elapsed {format_duration(self.elapsed_s(now))}"
        if self.time_capped(now) and self.time_limit_s is not None:
            text += f" of {format_duration(self.time_limit_s)}"
        return text


@dataclass(frozen=True)
class RunSummary:
    """What a run ends with: its evaluations, where its checkpoint is, and what to run next.

    Attributes:
        stopped_early: True when Ctrl-C stopped it before the end.
        step: the last step done, of ``phase``.
        best_eval: ``(step, success)`` of the best evaluation, if any.
        final_eval: ``(step, success)`` of the last evaluation, if any.
        checkpoint: the newest complete checkpoint folder.
        commands: ``(what, command)`` pairs: evaluate, serve, resume.
        phase: the phase it ended in.
        start_success: the starting policy's evaluation (``train.eval_before``), if any.
        curve: the learning curve's PNG, if one was drawn.
    """

    stopped_early: bool
    step: int
    best_eval: tuple[int, float] | None
    final_eval: tuple[int, float] | None
    checkpoint: Path | None
    commands: tuple[tuple[str, str], ...] = ()
    phase: str = "RL"
    start_success: float | None = None
    curve: Path | None = None

    def lines(self) -> list[str]:
        """The summary as plain lines."""
        where = "" if self.phase == "RL" else f" in the {self.phase}"
        step = f"step {self.step}" if self.phase == "RL" else f"{self.phase} step {self.step}"
        head = f"Stopped{where} at step {self.step}" if self.stopped_early else f"Done: {step}"
        lines = [head]
        for label, evaluation in (("best", self.best_eval), ("final", self.final_eval)):
            if evaluation is not None:
                start = (
                    f" (the starting policy: {self.start_success:.3f})"
                    if label == "final" and self.start_success is not None
                    else ""
                )
                lines.append(
                    f"  {label} evaluation: success {evaluation[1]:.3f} at step {evaluation[0]}"
                    + start
                )
        if self.best_eval is None:
            lines.append("  no evaluation yet (train.eval_every, train.eval_every_minutes)")
        if self.curve is not None:
            lines.append(f"  learning curve: {self.curve}")
        if self.checkpoint is not None:
            lines.append(f"  checkpoint: {self.checkpoint}")
        lines += [f"  {what}: {command}" for what, command in self.commands]
        return lines


def _figures(phase: str, metrics: Mapping[str, float], skipped: str | None) -> list[str]:
    """The step's figures as ``name value`` texts, in a fixed order."""
    if phase != "RL":
        loss = metrics.get("sft/loss")
        return [] if loss is None else [f"loss {loss:.4f}"]
    parts = [
        f"{label} {metrics[key]:.2f}"
        for label, key in (
            ("success", "rollout/success"),
            ("return", "rollout/return"),
            ("valid", "rollout/valid_action_rate"),
        )
        if key in metrics
    ]
    if "loss" in metrics:
        parts.append(f"loss {metrics['loss']:.4f}")
    elif skipped:
        parts.append(skipped)
    if "eval/success" in metrics:
        parts.append(f"eval success {metrics['eval/success']:.2f}")
    return parts


class RunView:
    """Where a run is; subclasses show it. Every method may be called from the main thread only.

    Args:
        phases: the run's phases in order (a finished warm start is left out).
        clock: seconds, monotonic (a fake one in tests).
    """

    def __init__(
        self,
        phases: Sequence[Phase],
        *,
        clock: Callable[[], float] = monotonic,
        run_clock: RunClock | None = None,
    ):
        self.phases = list(phases)
        self.clock = clock
        self.run_clock = run_clock
        self.current: Phase | None = None
        self.last_figures: list[str] = []
        self.last_eval: tuple[int, float] | None = None
        self.successes: list[float] = []  # every evaluation's, in order
        self.last_eval_text = ""
        self.started_at = clock()

    def phase(self, name: str) -> Phase:
        """The phase named ``name``."""
        for phase in self.phases:
            if phase.name == name:
                return phase
        raise KeyError(f"no phase {name!r}; phases: {[p.name for p in self.phases]}")

    def begin(self, name: str, *, done: int | None = None, elapsed_before_s: float = 0.0) -> None:
        """Phase ``name`` starts (or goes on after a resume, with ``done`` steps behind it)."""
        phase = self.phase(name)
        if done is not None:
            phase.done = done
        phase.done_at_start = phase.done
        phase.elapsed_before_s = elapsed_before_s
        phase.started_at = self.clock()
        for earlier in self.phases[: self.phases.index(phase)]:
            earlier.finished = True
        self.current = phase

    def step(self, done: int, metrics: Mapping[str, float], *, skipped: str | None = None) -> None:
        """The current phase has ``done`` steps behind it; ``metrics`` are the last step's."""
        assert self.current is not None, "begin() a phase first"
        self.current.done = done
        self.last_figures = _figures(self.current.name, metrics, skipped)
        self._show_step()

    def evaluated(
        self, phase: str, step: int, success: float, episodes: int, seconds: float
    ) -> None:
        """A greedy evaluation of ``phase`` at ``step`` found ``success`` on ``episodes``."""
        self.successes.append(success)
        self.last_eval = (step, success)
        where = (
            "the start" if step == 0 and phase == self.phases[0].name else f"{phase} step {step}"
        )
        self.last_eval_text = f"{success:.0%} at {where} ({episodes} episodes)"
        self._show_evaluation(
            f"evaluation at {where}: success {success:.2f} "
            f"({episodes} episodes, {format_duration(seconds)})"
        )

    def run_elapsed_s(self) -> float:
        """Seconds the whole run has taken (every session, with a run clock)."""
        if self.run_clock is not None:
            return self.run_clock.elapsed_s()
        return self.clock() - self.started_at

    def message(self, text: str) -> None:
        """A line that stays (a checkpoint saved, a model loading)."""
        raise NotImplementedError

    def close(self, summary: RunSummary | None = None) -> None:
        """The run is over; shows ``summary`` when given."""
        raise NotImplementedError

    def run_eta_s(self) -> float | None:
        """Seconds left in the whole run: the phases' ETAs added up, capped by the whole-run
        budget's time left; with a budget, that time left while a phase's pace is unknown, and
        ``None`` without one."""
        now = self.clock()
        etas = [phase.eta_s(now) for phase in self.phases]
        total = None if None in etas else sum(e for e in etas if e is not None)
        budget_left = None if self.run_clock is None else self.run_clock.left_s()
        if budget_left is None:
            return total
        return budget_left if total is None else min(total, budget_left)

    def run_text(self) -> str:
        """``run: elapsed 12m03s of 60m, eta 47m57s``."""
        budget = None if self.run_clock is None else self.run_clock.budget_s
        of = "" if budget is None else f" of {format_duration(budget)}"
        return (
            f"run: elapsed {format_duration(self.run_elapsed_s())}{of}, "
            f"eta {format_duration(self.run_eta_s())}"
        )

    def _show_step(self) -> None:
        raise NotImplementedError

    def _show_evaluation(self, line: str) -> None:
        raise NotImplementedError


class PlainRunView(RunView):
    """One line a step, for logs and CI: ``step 3/200  success 0.50 ... elapsed 12s  eta 9m``.

    Args:
        phases: as ``RunView``.
        write: where lines go (``print`` by default).
        clock: as ``RunView``.
        run_clock: as ``RunView``.
    """

    def __init__(
        self,
        phases: Sequence[Phase],
        *,
        write: Callable[[str], None] = print,
        clock: Callable[[], float] = monotonic,
        run_clock: RunClock | None = None,
    ) -> None:
        super().__init__(phases, clock=clock, run_clock=run_clock)
        self._write = write

    def message(self, text: str) -> None:
        self._write(text)

    def _show_step(self) -> None:
        phase = self.current
        assert phase is not None
        now = self.clock()
        name = (
            phase.progress_text(now)
            if phase.name == "RL"
            else f"{phase.name} " + (phase.progress_text(now))
        )
        parts = [name, *self.last_figures, phase.elapsed_text(now)]
        parts.append(f"eta {format_duration(phase.eta_s(now))}")
        later = self.phases[self.phases.index(phase) + 1 :]
        run_eta = self.run_eta_s()
        if later or self.run_clock is not None and self.run_clock.budget_s is not None:
            parts.append(
                f"run eta {format_duration(run_eta)}"
                if run_eta is not None
                else "then " + ", ".join(f"{p.name}: {p.total} steps" for p in later)
            )
        self._write("  ".join(parts))

    def _show_evaluation(self, line: str) -> None:
        self._write(line)

    def close(self, summary: RunSummary | None = None) -> None:
        if summary is not None:
            for line in summary.lines():
                self._write(line)


class LiveRunView(RunView):
    """One rich panel, redrawn in place on a terminal: a bar a phase, the last step's figures,
    the latest evaluation with the trend of all of them, the run's elapsed time and ETA.
    Messages print above it.

    Every line of the panel fits the terminal's width (from 80 columns), so the terminal never
    wraps one and the redraw moves the cursor back over exactly the lines it drew.

    Args:
        phases: as ``RunView``.
        title: the panel's title (env, model, run folder).
        clock: as ``RunView``.
        run_clock: as ``RunView``.
    """

    def __init__(
        self,
        phases: Sequence[Phase],
        *,
        title: str = "",
        clock: Callable[[], float] = monotonic,
        run_clock: RunClock | None = None,
    ) -> None:
        from rich.console import Console
        from rich.live import Live

        super().__init__(phases, clock=clock, run_clock=run_clock)
        self.title = title
        self.console = Console()
        self._live = Live(
            get_renderable=self._render,
            console=self.console,
            refresh_per_second=2,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
            vertical_overflow="visible",
        )
        self._live.start()

    def _render(self):  # noqa: ANN202 - a rich renderable
        from rich.panel import Panel
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        from trainer.evaluation.log import sparkline

        now = self.clock()
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True, overflow="ellipsis")
        for phase in self.phases:
            if phase.started_at is None and not phase.finished:
                state = "to come"
            elif phase.finished or phase.done >= phase.total:
                state = f"done in {format_duration(phase.elapsed_s(now))}"
            else:
                state = f"{phase.elapsed_text(now)}, eta {format_duration(phase.eta_s(now))}"
            capped = phase.time_capped(now) and phase.time_limit_s
            total, completed = (
                (phase.time_limit_s, phase.elapsed_s(now))
                if capped
                else (max(phase.total, 1), phase.done)
            )
            marker = "> " if phase is self.current else "  "
            table.add_row(
                f"{marker}{phase.name}",
                ProgressBar(total=total, completed=min(completed, total), width=16),
                phase.progress_text(now),
                state,
            )
        success = "success: -"
        if self.last_eval_text:
            trend = sparkline(self.successes, width=20)
            success = f"success: {self.last_eval_text}  {trend}"
            if len(self.successes) > 1:
                success += f" from {self.successes[0]:.0%}"
        grid = Table.grid()
        grid.add_column(no_wrap=True, overflow="ellipsis")
        grid.add_row(table)
        for line in (
            "last step: " + ("  ".join(self.last_figures) or "-"),
            success,
            self.run_text(),
        ):
            grid.add_row(Text(line, no_wrap=True, overflow="ellipsis"))
        return Panel(grid, title=self.title or None, title_align="left")

    def message(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    def _show_step(self) -> None:
        self._live.refresh()

    def _show_evaluation(self, line: str) -> None:
        self._live.refresh()

    def close(self, summary: RunSummary | None = None) -> None:
        self._live.refresh()
        self._live.stop()
        if summary is not None:
            head, *rest = summary.lines()
            self.console.print(head, style="bold", markup=False, highlight=False)
            for line in rest:  # whole lines, so a command copies in one piece
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)


def make_run_view(
    phases: Sequence[Phase],
    *,
    title: str = "",
    write: Callable[[str], None] = print,
    run_clock: RunClock | None = None,
) -> RunView:
    """The live panel when stdout is a terminal and rich is installed, else plain lines."""
    if sys.stdout.isatty():
        try:
            return LiveRunView(phases, title=title, run_clock=run_clock)
        except ImportError:
            pass
    return PlainRunView(phases, write=write, run_clock=run_clock)
