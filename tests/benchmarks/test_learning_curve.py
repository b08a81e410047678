"""``benchmarks/learning_curve.py`` runs end to end: a few seconds of RL with the tiny random
model, and its report holds what the README quotes (greedy and sampled points from minute 0,
``final_success``) and its plot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "learning_curve.py"


@pytest.mark.slow
def test_a_short_run_reports_greedy_and_sampled_points_from_minute_0(tmp_path: Path) -> None:
    report, png = tmp_path / "curve.json", tmp_path / "curve.png"
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--preset",
            "frozenlake-rl-only",
            "--set",
            "model.name=tiny-random",
            "--budget-minutes",
            "0.05",
            "--eval-every-minutes",
            "1",
            "--eval-seeds",
            "3",
            "--threads",
            "1",
            "--runs-dir",
            str(tmp_path / "run"),
            "--json",
            str(report),
            "--png",
            str(png),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(report.read_text())
    points = data["points"]
    # minute 0 and the end, each greedy and sampled, on the preset's env
    assert [(p["decoding"], p["rl_steps"] > 0) for p in points] == [
        ("greedy", False),
        ("sampled", False),
        ("greedy", True),
        ("sampled", True),
    ]
    assert {p["env"] for p in points} == {"FrozenLake-v0"} and all(p["seeds"] == 3 for p in points)
    assert data["final_success"] == points[2]["success"]
    assert data["rl_steps"] == len(data["steps"]) == points[-1]["rl_steps"]
    assert png.stat().st_size > 0
