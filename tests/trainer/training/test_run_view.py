"""The run view: ETA arithmetic on a fake clock, the plain lines a log gets, the summary."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from trainer.training.run_clock import RunClock
from trainer.training.run_view import Phase, PlainRunView, RunSummary, format_duration


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, "?"), (0, "0s"), (59.6, "1m00s"), (75, "1m15s"), (7260, "2h01m")]
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def _view(*phases: Phase) -> tuple[PlainRunView, list[str], FakeClock]:
    lines: list[str] = []
    clock = FakeClock()
    return PlainRunView(list(phases), write=lines.append, clock=clock), lines, clock


def test_the_eta_is_the_pace_of_this_session_times_the_steps_left():
    view, lines, clock = _view(Phase("warm start", 10), Phase("RL", 4))
    view.begin("warm start")
    clock.now += 20
    view.step(2, {"sft/loss": 1.5})
    # 10 s a step, 8 steps left; RL's pace is not known yet
    assert lines[-1] == (
        "warm start step 2/10  loss 1.5000  elapsed 20s  eta 1m20s  then RL: 4 steps"
    )
    assert view.run_eta_s() is None
    clock.now += 80
    view.step(10, {"sft/loss": 0.5})
    view.begin("RL")
    clock.now += 3
    view.step(1, {"rollout/success": 1.0, "loss": 0.25})
    assert view.phase("warm start").finished
    assert lines[-1] == "step 1/4  success 1.00  loss 0.2500  elapsed 3s  eta 9s"
    assert view.run_eta_s() == pytest.approx(9.0)


def test_a_resumed_phase_counts_its_pace_from_this_session_and_its_time_from_all():
    view, lines, clock = _view(Phase("RL", 100))
    view.begin("RL", done=50, elapsed_before_s=500.0)
    clock.now += 2
    view.step(51, {"rollout/success": 0.5})
    assert lines[-1] == "step 51/100  success 0.50  elapsed 8m22s  eta 1m38s"


def test_a_phase_its_time_limit_ends_shows_time_not_steps_it_will_never_reach():
    view, lines, clock = _view(Phase("warm start", 1000, time_limit_s=60.0))
    view.begin("warm start")
    assert view.run_eta_s() == 60.0  # known before the first step: the time limit
    clock.now += 50
    view.step(1, {"sft/loss": 2.0})
    # 1000 steps at 50 s each would take 14 hours: the limit ends it, and the line says so
    assert lines[-1] == "warm start step 1  loss 2.0000  elapsed 50s of 1m00s  eta 10s"


def test_a_phase_its_steps_end_first_counts_steps():
    view, lines, clock = _view(Phase("warm start", 4, time_limit_s=600.0))
    view.begin("warm start")
    clock.now += 10
    view.step(1, {"sft/loss": 2.0})
    assert lines[-1] == "warm start step 1/4  loss 2.0000  elapsed 10s  eta 30s"


def test_a_whole_run_budget_gives_the_run_eta_from_the_first_moment():
    clock = FakeClock()
    budget = RunClock(budget_s=3600.0, before_s=600.0, clock=clock)
    lines: list[str] = []
    view = PlainRunView(
        [Phase("warm start", 500, time_limit_s=1200.0), Phase("RL", 1000)],
        write=lines.append,
        clock=clock,
        run_clock=budget,
    )
    # RL's pace is unknown, but the budget says how long the run has left
    assert view.run_eta_s() == 3000.0
    view.begin("warm start", elapsed_before_s=600.0)
    clock.now += 60
    view.step(10, {"sft/loss": 1.0})
    assert lines[-1].endswith("elapsed 11m00s of 20m00s  eta 9m00s  run eta 49m00s")
    assert view.run_text() == "run: elapsed 11m00s of 1h00m, eta 49m00s"


def test_each_evaluation_prints_a_line_and_joins_the_trend():
    view, lines, _ = _view(Phase("warm start", 10), Phase("RL", 4))
    view.evaluated("warm start", 0, 0.0, 32, 12.0)
    assert lines[-1] == "evaluation at the start: success 0.00 (32 episodes, 12s)"
    view.evaluated("RL", 20, 0.5, 32, 9.0)
    assert lines[-1] == "evaluation at RL step 20: success 0.50 (32 episodes, 9s)"
    assert view.successes == [0.0, 0.5]
    assert view.last_eval_text == "50% at RL step 20 (32 episodes)"


def test_a_skipped_step_says_why_instead_of_a_loss():
    view, lines, _ = _view(Phase("RL", 2))
    view.begin("RL")
    view.step(1, {"rollout/success": 0.0}, skipped="skipped: all 8 episodes had zero advantage")
    assert "skipped: all 8 episodes had zero advantage" in lines[-1]
    assert "nan" not in lines[-1] and "loss" not in lines[-1]


def test_the_summary_names_the_evaluations_the_checkpoint_and_the_commands():
    summary = RunSummary(
        stopped_early=False,
        step=200,
        best_eval=(120, 0.84),
        final_eval=(200, 0.8),
        checkpoint=Path("runs/sokoban/checkpoints/step-200"),
        commands=(("serve", "roll-agent serve --model runs/sokoban/checkpoints/step-200/model"),),
    )
    assert summary.lines() == [
        "Done: step 200",
        "  best evaluation: success 0.840 at step 120",
        "  final evaluation: success 0.800 at step 200",
        "  checkpoint: runs/sokoban/checkpoints/step-200",
        "  serve: roll-agent serve --model runs/sokoban/checkpoints/step-200/model",
    ]
    with_start = dataclasses.replace(
        summary, start_success=0.0, curve=Path("runs/sokoban/learning_curve.png")
    )
    assert with_start.lines()[2:4] == [
        "  final evaluation: success 0.800 at step 200 (the starting policy: 0.000)",
        "  learning curve: runs/sokoban/learning_curve.png",
    ]
    stopped = RunSummary(True, 7, None, None, Path("x"), phase="warm start")
    assert stopped.lines()[0] == "Stopped in the warm start at step 7"
