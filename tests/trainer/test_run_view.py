"""The run view: ETA arithmetic on a fake clock, the plain lines a log gets, the summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.run_view import Phase, PlainRunView, RunSummary, format_duration


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


def test_a_time_limit_caps_the_eta():
    view, lines, clock = _view(Phase("warm start", 1000, time_limit_s=60.0))
    view.begin("warm start")
    clock.now += 50
    view.step(1, {"sft/loss": 2.0})
    assert lines[-1].endswith("elapsed 50s  eta 10s")


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
    stopped = RunSummary(True, 7, None, None, Path("x"), phase="warm start")
    assert stopped.lines()[0] == "Stopped in the warm start at step 7"
