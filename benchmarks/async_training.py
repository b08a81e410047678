"""Asynchronous training with the real policy, where generation and training share the cores.

Three arms of the same preset on Ray rollouts, in the same run, each ``--steps`` timed training
steps after ``--warmup`` untimed ones (actors started, the first groups ahead in flight):

* **synchronous:** ``rollout.async_generation_ratio`` 0;
* **drop and replace:** ratio ``--ratio``; a group older than that is dropped and replaced;
* **partial rollouts:** ratio ``--ratio``, ``rollout.partial_rollouts``, and AReaL's decoupled
  correction (``algorithm.off_policy_correction=decoupled``, which recomputes the log-probs
  before the update: one forward pass more a step than the other arms' generator log-probs).

Every step is real: the env manager actors play SimpleSokoban against a generator actor (torch
threads ``--generator-threads``), the driver scores and updates the policy (every core), and the
new weights go to the generator. Sokoban's episodes are a natural mixture of short and long: a
board solved in 2 moves ends after 2 turns, a failure runs to the preset's 10.

Figures per arm: wall-clock seconds of the timed steps, trained tokens (the update's tokens
after masking and filtering) per second, episodes played per second, the mean turns of the
episodes collected, the share of sampled tokens masked as too stale, and groups dropped. No goal:
on two cores generation and the update compete for the same cores, where on a GPU trainer they
would not.

Run (from the repository root)::

    python benchmarks/async_training.py --quick           # tiny random model, about 2 minutes
    python benchmarks/async_training.py --model runs/learning_ray_sync/sft/checkpoints/step-N/model
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from trainer.config import load_config
from trainer.training.pipeline import Pipeline

QUICK = {"model": "tiny-random", "steps": 3, "warmup": 1, "groups": 4}


def arm_overrides(ratio: int) -> dict[str, list[str]]:
    """Each arm's settings on top of the preset's."""
    return {
        "synchronous": [],
        "drop and replace": [f"rollout.async_generation_ratio={ratio}"],
        "partial rollouts": [
            f"rollout.async_generation_ratio={ratio}",
            "rollout.partial_rollouts=true",
            "algorithm.off_policy_correction=decoupled",
            "algorithm.old_logprobs=recompute",
        ],
    }


def run_arm(args: argparse.Namespace, overrides: list[str], folder: str) -> dict[str, Any]:
    """Builds the arm's pipeline, runs the warm-up and the timed steps, returns its figures."""
    common = [
        f"model.name={args.model}",
        "rollout.mode=ray",
        f"rollout.generator_threads={args.generator_threads}",
        f"rollout.envs_per_manager={args.envs_per_manager}",
        f"env.groups_per_step={args.groups}",
        "sft.before_rl=false",
        f"train.output_dir={folder}",
        "train.eval_before=false",
        "train.eval_every=0",
        "train.eval_every_minutes=null",
        "train.max_minutes=null",
        "train.checkpoint_every=0",
    ]
    if args.model == "tiny-random":
        common.append("model.trainable_layers=1")
    config = load_config(args.preset, [*common, *overrides])
    pipeline = Pipeline(config)
    try:
        for _ in range(args.warmup):
            pipeline.train_step()
        dropped_before = pipeline.rollouts.metrics().get("rollout/groups_dropped_stale", 0.0)
        steps = []
        start = time.perf_counter()
        for _ in range(args.steps):
            steps.append(pipeline.train_step())
            print(
                f"    step {pipeline.step}: {steps[-1].get('tokens', 0):.0f} tokens trained, "
                f"rollout {steps[-1]['time/rollout']:.1f} s, "
                f"update {steps[-1].get('time/update', 0):.1f} s",
                flush=True,
            )
        seconds = time.perf_counter() - start
        dropped = steps[-1].get("rollout/groups_dropped_stale", 0.0) - dropped_before
    finally:
        pipeline.close()
    episodes = args.steps * args.groups * config.env.group_size
    tokens = sum(m.get("tokens", 0.0) for m in steps)
    return {
        "seconds": seconds,
        "steps": args.steps,
        "episodes": episodes,
        "episodes_per_s": episodes / seconds,
        "trained_tokens": tokens,
        "trained_tokens_per_s": tokens / seconds,
        "mean_turns": sum(m["rollout/turns"] for m in steps) / len(steps),
        "stale_tokens_masked": sum(m.get("rollout/stale_tokens_masked", 0.0) for m in steps)
        / len(steps),
        "groups_dropped": dropped,
        "update_s_mean": sum(m.get("time/update", 0.0) for m in steps) / len(steps),
        "rollout_wait_s_mean": sum(m["time/rollout"] for m in steps) / len(steps),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="sokoban-warm-start-rl")
    parser.add_argument("--model", default="smollm2-135m", help="a preset name or model folder")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--groups", type=int, default=8, help="groups a step")
    parser.add_argument("--ratio", type=int, default=2, help="async_generation_ratio")
    parser.add_argument("--generator-threads", type=int, default=2)
    parser.add_argument("--envs-per-manager", type=int, default=16)
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "async_training.json",
        quick="tiny random model, 3 steps of 4 groups an arm",
    )
    return parse_arguments(parser, argv, QUICK)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="async_training_") as root:
        for index, (name, overrides) in enumerate(arm_overrides(args.ratio).items()):
            print(f"  {name}:", flush=True)
            results[name] = run_arm(args, overrides, f"{root}/arm{index}")
    sync, drop = results["synchronous"], results["drop and replace"]
    rows = [
        [
            name,
            f"{r['seconds']:.0f}",
            f"{r['episodes_per_s']:.2f}",
            f"{r['trained_tokens_per_s']:.1f}",
            f"{r['trained_tokens_per_s'] / sync['trained_tokens_per_s']:.2f}x",
            f"{r['trained_tokens_per_s'] / drop['trained_tokens_per_s']:.2f}x",
            f"{r['mean_turns']:.2f}",
            f"{r['stale_tokens_masked']:.1%}",
            f"{r['groups_dropped']:.0f}",
        ]
        for name, r in results.items()
    ]
    print_table(
        [
            "arm",
            "s",
            "episodes/s",
            "trained tokens/s",
            "vs sync",
            "vs drop",
            "mean turns",
            "tokens masked",
            "groups dropped",
        ],
        rows,
        f"{args.preset}, {args.model}, {args.steps} steps of {args.groups} groups an arm "
        f"(after {args.warmup} untimed), ratio {args.ratio}",
    )
    write_report(
        args.json,
        {"settings": {k: v for k, v in vars(args).items() if k != "json"}, "arms": results},
        announce=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
