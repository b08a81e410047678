"""Rollout throughput with slow rewards: scored by reward workers while generation goes on,
against scored inline in the env's step.

The env is ``InstructionFollowing-v0`` with the whole reply as the answer, so every episode's
one reply is scored. Scoring is made to take ``--delays`` seconds more (0.2 and 1 by default;
:class:`~trainer.rollout.deferred_rewards.SlowScoring`): a sleep, as a sandbox or a judge on
another device costs the rollout process, not its cores. Each setting plays the same seeds
with the same sampling, on the continuous engine with the continuous schedule (sample-level
scheduling), in one run:

* ``no delay``: inline scoring of the real rule alone: the ceiling;
* ``inline``: the env scores in ``step``, as every env did before reward workers: the
  manager waits for each score before generating on;
* ``inline, N threads``: the same with ``step_threads=N`` (envs stepped in threads, those
  whose replies one forward pass finished at once);
* ``reward workers``: ``defer_reward=True``; each ended episode goes to a
  :class:`~trainer.rewards.pool.RewardPool` of ``--workers`` Ray actors and the manager
  generates on; the rollout ends when the last score is in.

Run (from the repository root)::

    python benchmarks/reward_async.py --quick   # the tiny random model, a few minutes
    python benchmarks/reward_async.py           # the default model (SmolLM2-135M)
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

ENV = "InstructionFollowing-v0"
WHOLE_REPLY = {"answer_format": {"tag": None, "separator": None}}


def _rollout(
    manager_args: dict[str, Any], seeds: list[int]
) -> tuple[float, list[Any]]:  # fmt: skip
    from trainer.rollout.env_manager import EnvManager

    manager = EnvManager(**manager_args)
    try:
        started = time.perf_counter()
        trajectories = manager.rollout(seeds)
        return time.perf_counter() - started, trajectories
    finally:
        manager.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="the policy (smollm2-135m)")
    parser.add_argument("--groups", type=int, default=16, help="groups a rollout (16)")
    parser.add_argument("--group-size", type=int, default=4, help="episodes a group (4)")
    parser.add_argument("--in-flight", type=int, default=8, help="episodes played at once (8)")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="reply length (48)")
    parser.add_argument("--delays", type=float, nargs="+", default=[0.2, 1.0])
    parser.add_argument("--workers", type=int, default=8, help="reward workers (8)")
    parser.add_argument("--threads", type=int, default=8, help="step threads, inline (8)")
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "reward_async.json",
        quick="the tiny random model, 6 groups",
    )
    args = parse_arguments(
        parser, argv, quick_defaults={"model": "tiny-random", "groups": 6, "in_flight": 8}
    )

    import ray
    import torch

    from trainer.generation import ContinuousGenerator, SamplingParams
    from trainer.models import load_model
    from trainer.rewards.pool import RewardPool
    from trainer.rollout.deferred_rewards import SlowScoring

    torch.manual_seed(0)
    model, tokenizer = load_model(args.model, seed=0)
    generator = ContinuousGenerator(model, tokenizer, max_batch_size=args.in_flight)
    sampling = SamplingParams(
        max_new_tokens=args.max_new_tokens, stop_token_ids=(tokenizer.eos_token_id,), seed=7
    )
    seeds = list(range(1000, 1000 + args.groups))
    common = {
        "env_id": ENV,
        "tokenizer": tokenizer,
        "generator": generator,
        "env_kwargs": WHOLE_REPLY,
        "group_size": args.group_size,
        "max_turns": 1,
        "sampling": sampling,
        "schedule": "continuous",
        "episodes_in_flight": args.in_flight,
    }
    ray.init(num_cpus=max(2, args.workers), include_dashboard=False, log_to_driver=False)
    pool = RewardPool(
        min_workers=args.workers, max_workers=args.workers, num_cpus=0.25, rule_deadline_s=30.0
    )
    try:
        # warm-up: the engine's weight copies, the workers' processes and the rule's import
        _rollout({**common, "reward_pool": pool, "wrap": lambda e: SlowScoring(e, 0.0)}, [0])
        _rollout(common, [0])

        rows, runs = [], []
        seconds, baseline = _rollout(common, seeds)
        episodes = len(baseline)
        runs.append({"setting": "no delay", "delay_s": 0.0, "seconds": seconds})
        for delay in args.delays:

            def slow(env, delay=delay):
                return SlowScoring(env, delay)

            settings = {
                "inline": {**common, "wrap": slow},
                f"inline, {args.threads} threads": {
                    **common, "wrap": slow, "step_threads": args.threads,
                },
                f"reward workers ({args.workers})": {**common, "wrap": slow, "reward_pool": pool},
            }  # fmt: skip
            returns = {}
            for name, manager_args in settings.items():
                print(f"delay {delay:g} s: {name}...", flush=True)
                seconds, trajectories = _rollout(manager_args, seeds)
                returns[name] = [t.episode_return for t in trajectories]
                runs.append({"setting": name, "delay_s": delay, "seconds": seconds})
            same = len({tuple(r) for r in returns.values()}) == 1
            if not same:
                print(f"warning: the settings' returns differ at delay {delay:g} s")
            runs[-1]["returns_match_inline"] = same
        by_key = {(r["delay_s"], r["setting"]): r for r in runs}
        for run in runs:
            run["episodes_per_s"] = episodes / run["seconds"]
            inline = by_key.get((run["delay_s"], "inline"))
            run["vs_inline"] = run["episodes_per_s"] / inline["episodes_per_s"] if inline else None
            rows.append(
                [
                    f"{run['delay_s']:g} s",
                    run["setting"],
                    f"{run['seconds']:.1f}",
                    f"{run['episodes_per_s']:.2f}",
                    "" if run["vs_inline"] is None else f"{run['vs_inline']:.2f}x",
                ]
            )
        print_table(
            ["reward time", "scoring", "seconds", "episodes/s", "vs inline"],
            rows,
            f"{episodes} episodes of {ENV}, {args.model}, {args.in_flight} in flight",
        )
        headline = {
            delay: by_key[(delay, f"reward workers ({args.workers})")]["vs_inline"]
            for delay in args.delays
        }
        for delay, ratio in headline.items():
            print(f"reward workers vs inline at {delay:g} s a reward: {ratio:.2f}x")
        print(f"pool: {pool.stats}")
        write_report(
            args.json,
            {
                "model": args.model,
                "episodes": episodes,
                "in_flight": args.in_flight,
                "workers": args.workers,
                "runs": runs,
                "workers_vs_inline": {f"{d:g}": r for d, r in headline.items()},
                "goal": "reward workers vs inline >= 1.3x at 1 s a reward",
            },
            libraries=["torch", "ray"],
        )
    finally:
        pool.close()
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
