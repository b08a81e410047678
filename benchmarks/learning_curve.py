"""RL alone from the base model on any preset's env: greedy success against training minutes.

Issue 23's generality check. ``learning_sokoban.py --arms "RL only"`` measures the pure-RL
recipe on SimpleSokoban; this script runs the same loop for any preset (``frozenlake-rl-only``,
or one of yours, ``--preset my.yaml``): no oracle, no warm start, the preset's RL from step 0.

It records success on the held-out seeds ``0 .. N-1`` of the preset's env (training never uses
a seed below 1,000,000) at minute 0, which is the base model under the preset's sampling, then
every ``--eval-every-minutes`` of training and at ``--budget-minutes``: greedy (temperature 0,
the figure the issue asks for) and sampled at the preset's temperature, as the policy acts in
training. Both are kept because they can part ways: with a one-board prompt (``env.window: 0``)
a greedy policy that bumps into a wall sees the same board again and repeats the same move
until the turns run out, while a sampled one moves on. The clock counts everything a training
step does (rollouts, update, weight sync) and stops while evaluating. Each training step's
sampled success is kept too.

Run (from the repository root)::

    python benchmarks/learning_curve.py --preset frozenlake-rl-only --budget-minutes 20 \
        --json benchmarks/results/learning_curve_frozenlake_rl_only.json \
        --png benchmarks/results/learning_curve_frozenlake_rl_only.png
    python benchmarks/learning_curve.py --quick             # tiny-random, about a minute

It prints a table, writes the JSON after each evaluation (an interrupted run keeps what it
measured) and draws success against minutes.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from learning_sokoban import Evaluator, Recorder, Stopwatch, train_rl_until
from report import RESULTS_DIR, add_common_arguments, parse_arguments
from table import print_table

from trainer.config import load_config
from trainer.training.pipeline import Pipeline

REPO_ROOT = Path(__file__).resolve().parent.parent
QUICK_RUNS_DIR = REPO_ROOT / "runs" / "learning_curve_quick"
#: What ``--quick`` sets (besides the tiny-random model); flags given still win.
QUICK_DEFAULTS = {
    "budget_minutes": 0.5,
    "eval_every_minutes": 0.25,
    "eval_seeds": 8,
    "runs_dir": QUICK_RUNS_DIR,
    "png": QUICK_RUNS_DIR / "learning_curve.png",
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="frozenlake-rl-only")
    parser.add_argument("--budget-minutes", type=float, default=20.0)
    parser.add_argument("--eval-every-minutes", type=float, default=5.0)
    parser.add_argument("--eval-seeds", type=int, default=128, help="held-out seeds 0..N-1")
    parser.add_argument("--set", action="append", default=[], help="config override key=value")
    parser.add_argument(
        "--runs-dir",
        type=Path,
        default=REPO_ROOT / "runs" / "learning_curve",
        metavar="DIR",
        help="the run's folder (its metrics.jsonl)",
    )
    parser.add_argument(
        "--png",
        type=Path,
        default=RESULTS_DIR / "learning_curve.png",
        help="the plot (default: benchmarks/results/learning_curve.png)",
    )
    parser.add_argument("--threads", type=int, help="torch threads (default: every core)")
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "learning_curve.json",
        quick="tiny-random model, 30 training seconds, 8 seeds (about a minute)",
    )
    args = parse_arguments(parser, argv, QUICK_DEFAULTS)
    if args.quick:
        args.set = ["model.name=tiny-random", *args.set]
    return args


def plot(report: dict[str, Any], path: Path) -> None:
    """Greedy success on the held-out seeds, and each step's sampled success, against minutes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    steps = report["steps"]
    ax.plot(
        [s["minutes"] for s in steps],
        [100 * s["success"] for s in steps],
        color="tab:grey",
        lw=0.8,
        label="sampled, each training step",
    )
    for decoding, color in (("greedy", "tab:green"), ("sampled", "tab:olive")):
        points = [p for p in report["points"] if p["decoding"] == decoding]
        ax.plot(
            [p["minutes"] for p in points],
            [100 * p["success"] for p in points],
            "o-",
            color=color,
            label=f"{decoding}, {report['eval_seeds']} held-out seeds",
        )
    ax.set_xlabel("training wall-clock, minutes (evaluation excluded)")
    ax.set_ylabel("success, %")
    ax.set_title(f"RL alone from the base model: {report['env']} ({report['preset']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = [
        f"train.output_dir={args.runs_dir}",
        "train.eval_every=0",
        "train.checkpoint_every=0",
        "train.steps=1000000",  # the clock, not the step count, ends the run
        *args.set,
    ]
    config = load_config(args.preset, overrides)
    env_id = config.env.id
    recorder = Recorder(
        args.json,
        {
            "preset": args.preset,
            "overrides": args.set,
            "env": env_id,
            "config": config.model_dump(),
            "budget_minutes": args.budget_minutes,
            "eval_seeds": args.eval_seeds,
            "torch_threads": torch.get_num_threads(),
            "steps": [],
        },
        main_env=env_id,
    )
    pipeline = Pipeline(config)
    greedy = Evaluator(config, pipeline.rollouts.generator, pipeline.tokenizer)
    sampled = Evaluator(
        config,
        pipeline.rollouts.generator,
        pipeline.tokenizer,
        temperature=config.sampling.temperature,
    )
    budget = args.budget_minutes * 60
    clock = Stopwatch()

    def evaluation_point() -> None:
        for decoding, evaluate in (("greedy", greedy), ("sampled", sampled)):
            recorder.add(
                f"RL only, {decoding}",
                clock.elapsed,
                evaluate({env_id: args.eval_seeds}),
                decoding=decoding,
                rl_steps=pipeline.step,
            )

    def record_step(metrics: dict[str, float]) -> None:
        recorder.header["steps"].append(
            {
                "step": pipeline.step,
                "minutes": clock.now() / 60,
                "success": metrics["rollout/success"],
                "updated": "loss" in metrics,  # a step of equal returns trains nothing
            }
        )

    clock.pause()
    evaluation_point()  # minute 0: the base model
    clock.resume()
    every = args.eval_every_minutes * 60
    train_rl_until(pipeline, clock, budget, every, every, evaluation_point, "RL", record_step)
    clock.pause()
    evaluation_point()
    pipeline.metrics.close()

    report = {**recorder.header, "points": recorder.points}
    greedy_points = [p for p in recorder.points if p["decoding"] == "greedy"]
    sampled_points = [p for p in recorder.points if p["decoding"] == "sampled"]
    summary = {
        "base_success": greedy_points[0]["success"],
        "final_success": greedy_points[-1]["success"],
        "base_sampled_success": sampled_points[0]["success"],
        "final_sampled_success": sampled_points[-1]["success"],
        "rl_steps": pipeline.step,
        "evaluation_seconds": greedy.seconds + sampled.seconds,
    }
    print()
    print_table(
        ["training min", "RL steps", "greedy success", "sampled success", "greedy turns"],
        [
            [
                f"{g['minutes']:.1f}",
                str(g["rl_steps"]),
                f"{g['success']:.1%}",
                f"{s['success']:.1%}",
                f"{g['turns']:.1f}",
            ]
            for g, s in zip(greedy_points, sampled_points, strict=True)
        ],
        f"RL alone from the base model on {env_id} ({args.preset}): success on "
        f"{args.eval_seeds} held-out seeds",
    )
    recorder.write(summary, announce=True)
    plot(report, args.png)
    print(f"plot: {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
