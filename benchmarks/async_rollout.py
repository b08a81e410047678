"""Asynchronous rollouts (``RolloutScheduler`` on Ray) against a synchronous batch rollout.

Both sides play the same groups (same seeds, same envs, same model, same sampling) on this
machine, in one run:

* **synchronous batch** (what a batch-level system does): every turn, one batched ``generate``
  call for all running episodes, then every env steps (in parallel threads) and the turn waits
  for the slowest before the next batch starts;
* **asynchronous** (``RolloutScheduler``): ``EnvManagerActor`` actors play each episode on its
  own against a ``GeneratorActor``, which batches whatever requests are waiting; a group hands
  back its first ``group_size`` episodes.

The envs are latency bound, as agent environments with a browser, a sandbox or a remote API
are: every step sleeps a log-normal delay (``--median-latency-s``, ``--sigma``: a long tail),
and each episode's length is drawn too (1 + a geometric number of turns, at most
``--max-turns``), so some episodes end early and a few run long.

Run (from the repository root)::

    python benchmarks/async_rollout.py --quick   # under 2 minutes
    python benchmarks/async_rollout.py
    python benchmarks/async_rollout.py --redundancy 2   # groups of 4 start 6 episodes

With ``--redundancy`` the asynchronous side starts extra episodes per group and keeps the first
``--group-size`` to end (ROLL's redundant env rollouts): the ratio counts trajectories handed to
training, not env work done.

It prints a table, the ratio last, and writes JSON.
"""

from __future__ import annotations

import argparse
import copy
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from provenance import write_report
from table import print_table

from rollenv.wrappers import Latency
from trainer.generation import ContinuousGenerator, SamplingParams
from trainer.generation.actor import GeneratorActor
from trainer.models import load_model
from trainer.rollout.env_actor import launch_env_managers
from trainer.rollout.env_manager import EnvManager
from trainer.rollout.scheduler import RolloutScheduler

REPO_ROOT = Path(__file__).resolve().parent.parent
GOAL = 2.72  # ROLL Flash's agentic speed-up


class RandomLength(gym.Wrapper):
    """Truncates each episode after 1 + Geometric(p) steps (a long tail of episode lengths)."""

    def __init__(self, env: gym.Env, p_end: float, seed: int) -> None:
        super().__init__(env)
        self.p_end, self._rng, self._left = p_end, random.Random(seed), 0

    def reset(self, **kwargs: Any) -> Any:
        self._left = 1
        while self._rng.random() > self.p_end:
            self._left += 1
        return self.env.reset(**kwargs)

    def step(self, action: str) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._left -= 1
        return obs, reward, terminated, truncated or self._left <= 0, info


class ReportLatency(gym.Wrapper):
    """Adds the step's sleep to ``info["metrics"]["latency_s"]`` (read by the ceiling below)."""

    def step(self, action: str) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        metrics = {**info.get("metrics", {}), "latency_s": self.env.last_delay_s}
        return obs, reward, terminated, truncated, {**info, "metrics": metrics}


def critical_path_s(trajectories: Sequence[Any]) -> float:
    """The longest episode's total env latency: the time an asynchronous rollout would take
    with free generation (every episode runs at once), so ``sync / this`` is the most any
    scheduler can gain on these draws without redundancy."""
    return max(sum(turn.metrics["latency_s"] for turn in t.turns) for t in trajectories)


class SlowEnvs:
    """Wraps each env made: its own latency and length draws (seeded by creation order)."""

    def __init__(self, median_s: float, sigma: float, p_end: float, seed: int) -> None:
        self.median_s, self.sigma, self.p_end = median_s, sigma, p_end
        self.seed, self.made = seed, 0

    def __call__(self, env: gym.Env) -> gym.Env:
        self.made += 1
        seed = self.seed * 100_003 + self.made
        env = RandomLength(env, self.p_end, seed)
        env = Latency(env, delay_s=self.median_s, lognormal_sigma=self.sigma, seed=seed)
        return ReportLatency(env)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-random")
    parser.add_argument("--env", default="Sokoban-v0")
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--env-actors", type=int, default=4)
    parser.add_argument("--envs-per-actor", type=int, default=16)
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--p-end", type=float, default=0.2, help="chance an episode ends a turn")
    parser.add_argument("--median-latency-s", type=float, default=0.2)
    parser.add_argument("--sigma", type=float, default=1.0, help="log-normal sigma of latency")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument(
        "--redundancy",
        type=int,
        default=0,
        help="extra episodes per group for the asynchronous side (the slowest are aborted)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer groups, under 2 minutes")
    parser.add_argument(
        "--json", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "async_rollout.json"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.groups, args.env_actors, args.envs_per_actor = 8, 2, 16
    return args


def main(argv: Sequence[str] | None = None) -> int:
    import ray

    args = parse_args(argv)
    seeds = list(range(1000, 1000 + args.groups))
    episodes = args.groups * args.group_size
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=1.0, seed=0)
    slow = SlowEnvs(args.median_latency_s, args.sigma, args.p_end, seed=0)
    options = {"max_turns": args.max_turns, "sampling": sampling}
    print(
        f"{args.model}, {args.env}: {args.groups} groups x {args.group_size}, step latency "
        f"log-normal median {args.median_latency_s} s sigma {args.sigma}, episode end chance "
        f"{args.p_end} a turn (at most {args.max_turns} turns)"
    )

    model, tokenizer = load_model(args.model, seed=0)
    generator = ContinuousGenerator(copy.deepcopy(model), tokenizer, max_batch_size=64)
    manager = EnvManager(
        args.env,
        tokenizer,
        generator,
        group_size=args.group_size,
        wrap=slow,
        step_threads=episodes,
        **options,
    )
    start = time.perf_counter()
    sync_trajectories = manager.rollout(seeds)
    sync_s = time.perf_counter() - start
    # the same episodes, each on its own with generation free: what no scheduler can beat
    ceiling = sync_s / critical_path_s(sync_trajectories)
    print(f"  synchronous batch: {sync_s:.1f} s", flush=True)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        server = ray.remote(num_cpus=0)(GeneratorActor).remote(
            args.model, torch_threads=torch.get_num_threads(), max_batch_size=64
        )
        actors = [
            actor
            for i in range(args.env_actors)
            for actor in launch_env_managers(
                1,
                args.env,
                args.model,
                server,
                num_cpus=1 / args.env_actors,
                max_envs=args.envs_per_actor,
                wrap=SlowEnvs(args.median_latency_s, args.sigma, args.p_end, seed=1 + i),
                **options,
            )
        ]
        scheduler = RolloutScheduler(actors, group_size=args.group_size, redundancy=args.redundancy)
        scheduler.rollout([seeds[0]])  # warm-up: actors and the model loaded
        start = time.perf_counter()
        async_trajectories = scheduler.rollout(seeds)
        async_s = time.perf_counter() - start
        served = ray.get(server.get_stats.remote())
        aborted = scheduler.metrics["episodes_aborted"]
    finally:
        ray.shutdown()
    print(f"  asynchronous: {async_s:.1f} s ({aborted} stragglers aborted)", flush=True)
    async_path_s = critical_path_s(async_trajectories)
    print(
        f"  longest env latency of one episode: {async_path_s:.1f} s asynchronous; with the "
        f"lockstep side's draws the most a scheduler can reach is {ceiling:.2f}x",
        flush=True,
    )

    ratio = sync_s / async_s
    print_table(
        ["rollout", "seconds", "trajectories/s", "ratio"],
        [
            ["synchronous batch", f"{sync_s:.1f}", f"{episodes / sync_s:.2f}", "1.00x"],
            ["asynchronous", f"{async_s:.1f}", f"{episodes / async_s:.2f}", f"{ratio:.2f}x"],
        ],
        f"{episodes} episodes: RolloutScheduler vs lockstep batches (same run)",
        left_columns=1,
    )
    report = {
        **{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "episodes": episodes,
        "synchronous_seconds": sync_s,
        "asynchronous_seconds": async_s,
        "generator_stats": served,
        "episodes_aborted": aborted,
        "ratio": ratio,
        "ceiling_ratio_free_generation": ceiling,
        "async_critical_path_seconds": async_path_s,
        "goal": GOAL,
    }
    write_report(args.json, report, ("rollenv", "torch", "ray"))
    print(f"ratio (goal >= {GOAL}x): {ratio:.2f}x {'PASS' if ratio >= GOAL else 'FAIL'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
