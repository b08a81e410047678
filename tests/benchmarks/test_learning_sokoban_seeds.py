"""``benchmarks/learning_sokoban.py --seeds N``: one protocol run per training seed, then every
RL - SFT-only margin with its mean and spread. Seeds whose report is complete are not run again,
so a run of three seeds that was interrupted goes on where it stopped; here every seed is
complete, so nothing trains and the summary is checked against the reports."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "learning_sokoban.py"


def _run(*flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, timeout=300
    )


def test_complete_seeds_are_kept_and_summarised(tmp_path: Path) -> None:
    finals = [{"RL": 0.80, "SFT only": 0.70}, {"RL": 0.74, "SFT only": 0.72}]
    for seed, final in enumerate(finals):
        report = {"points": [], "final_success": final, "rl_minus_sft_only": 0.0}
        (tmp_path / f"seed-{seed}.json").write_text(json.dumps(report))
    out = tmp_path / "seeds.json"
    result = _run("--seeds", "2", "--runs-dir", str(tmp_path), "--json", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("not run again") == 2
    summary = json.loads(out.read_text())
    margins = [0.80 - 0.70, 0.74 - 0.72]
    margin = summary["rl_minus_sft_only"]
    assert margin["per_seed"] == margins
    assert margin["mean"] == statistics.fmean(margins)
    assert margin["stdev"] == statistics.stdev(margins)
    assert (margin["min"], margin["max"]) == (min(margins), max(margins))
    assert summary["final_success"]["SFT only"]["per_seed"] == [0.70, 0.72]
    # one margin under +5 points: the goal (on every seed) is not met
    assert "+10.0, +2.0 points" in result.stdout and "FAIL" in result.stdout


def test_seeds_refuse_a_shared_warm_start(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    result = _run("--seeds", "3", "--from-sft", str(tmp_path), "--from-json", "x.json")
    assert result.returncode == 2
    assert "--seeds runs the warm start once per seed" in result.stderr
    assert "--seeds must be at least 1" in _run("--seeds", "0").stderr


def test_shared_warm_start_needs_more_than_one_seed() -> None:
    result = _run("--seeds", "1", "--share-sft")
    assert result.returncode == 2
    assert "--share-sft shares seed 0's warm start" in result.stderr


def test_later_seeds_start_from_seed_0s_sft_checkpoint(tmp_path: Path) -> None:
    """With --share-sft seed 1 runs the arms from the checkpoint seed 0's report names (here a
    folder with no model in it, so the run stops at once, naming the folder it was given)."""
    checkpoint = tmp_path / "seed-0" / "sft" / "checkpoints" / "step-7"
    checkpoint.mkdir(parents=True)
    report = {"points": [], "final_success": {"RL": 0.8, "SFT only": 0.7}}
    report["sft_checkpoint"] = str(checkpoint)
    (tmp_path / "seed-0.json").write_text(json.dumps(report))
    result = _run("--quick", "--seeds", "2", "--share-sft", "--runs-dir", str(tmp_path))
    assert result.returncode != 0
    assert f"--from-sft {checkpoint}: no model folder in it" in result.stderr


def _rl_report(overrides: list[str], successes: list[float]) -> dict:
    points = [{"arm": "SFT", "env": "SimpleSokoban-v0", "minutes": 15.0, "success": 0.8}]
    points += [
        {"arm": "RL", "env": "SimpleSokoban-v0", "minutes": 15.0 + 10 * (i + 1), "success": s}
        for i, s in enumerate(successes)
    ]
    steps = {"RL": {"steps": 40, "minutes": 30.0, "steps_per_hour": 80.0}}
    return {"overrides": overrides, "points": points, "eval_seeds": 256, "steps": steps}


def test_compare_puts_two_rl_arms_side_by_side_and_judges_the_second(tmp_path: Path) -> None:
    sync = tmp_path / "sync.json"
    sync.write_text(json.dumps(_rl_report(["rollout.mode=ray"], [0.84, 0.86, 0.88])))
    partial = tmp_path / "partial.json"
    flags = ["rollout.mode=ray", "rollout.async_generation_ratio=2"]
    flags += ["rollout.partial_rollouts=true", "algorithm.off_policy_correction=decoupled"]
    partial.write_text(json.dumps(_rl_report(flags, [0.85, 0.87, 0.89])))
    png = tmp_path / "both.png"
    result = _run("--compare", str(sync), str(partial), "--png", str(png))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "partial rollouts, k=2, decoupled (ray) 89.0% >= synchronous (ray) 88.0%: PASS" in (
        result.stdout
    )
    assert png.stat().st_size > 0
    # the other way round the second arm ends lower: the verdict fails
    result = _run("--compare", str(partial), str(sync))
    assert result.returncode == 1 and "FAIL" in result.stdout
