"""A run's evaluations file, its learning curve, and the whole-run clock a resume goes on with."""

from __future__ import annotations

import json

import torch

from trainer.config import load_config
from trainer.evaluation.log import EvaluationLog, plot_learning_curve, sparkline
from trainer.training.checkpoint import save_checkpoint
from trainer.training.pipeline import run_clock


def _filled(tmp_path):
    log = EvaluationLog(tmp_path)
    log.add("warm start", 0, 0.0, {"eval/success": 0.0}, 32)
    log.add("warm start", 40, 5.0, {"eval/success": 0.25}, 32)
    log.add("warm start", 80, 10.0, {"eval/success": 0.5}, 32)
    log.add("RL", 0, 15.0, {"eval/success": 0.5}, 32)
    log.add("RL", 10, 20.0, {"eval/success": 0.75}, 32)
    return log


def test_a_resumed_rl_phase_drops_only_its_later_evaluations(tmp_path):
    log = _filled(tmp_path)
    log.truncate("RL", 0)  # resumed from RL step 0: step 10 is played again
    assert [(p.phase, p.step) for p in log.points()] == [
        ("warm start", 0),
        ("warm start", 40),
        ("warm start", 80),
        ("RL", 0),
    ]


def test_a_resumed_warm_start_drops_its_later_evaluations_and_every_rl_one(tmp_path):
    log = _filled(tmp_path)
    log.truncate("warm start", 40)
    assert [(p.phase, p.step) for p in log.points()] == [("warm start", 0), ("warm start", 40)]
    log.truncate("warm start", -1)  # a run started over
    assert log.points() == []


def test_each_line_keeps_every_eval_metric(tmp_path):
    log = EvaluationLog(tmp_path)
    log.add("RL", 3, 1.5, {"eval/success": 1.0, "eval/turns": 4.0}, 2)
    (row,) = [json.loads(line) for line in log.path.read_text().splitlines()]
    assert row == {
        "phase": "RL",
        "step": 3,
        "minutes": 1.5,
        "success": 1.0,
        "episodes": 2,
        "eval/success": 1.0,
        "eval/turns": 4.0,
    }


def test_the_curve_is_a_png_and_nothing_is_drawn_without_points(tmp_path):
    path = tmp_path / "curve.png"
    assert plot_learning_curve([], path, "empty") is None and not path.exists()
    assert plot_learning_curve(_filled(tmp_path).points(), path, "a run") == path
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_sparkline_has_one_block_an_evaluation_from_lowest_to_highest():
    assert sparkline([0.0, 1.0]) == "▁█"
    assert sparkline([0.5] * 30, width=5) == "▅" * 5  # the last five
    assert sparkline([-1.0, 2.0]) == "▁█"  # clipped to [0, 1]


def test_resume_goes_on_with_the_time_the_newest_checkpoint_recorded(tmp_path):
    config = load_config(
        "sokoban-warm-start-rl",
        [f"train.output_dir={tmp_path}", "train.max_minutes=60", "sft.before_rl=false"],
    )
    fresh = run_clock(config, resume=False)
    assert fresh.budget_s == 3600 and fresh.before_s == 0.0

    def write(folder):
        torch.save({"step": 7, "run_elapsed_s": 1234.5}, folder / "trainer_state.pt")

    save_checkpoint(tmp_path, 7, write)
    assert run_clock(config, resume=True).before_s == 1234.5
    assert run_clock(config, resume=False).before_s == 0.0
