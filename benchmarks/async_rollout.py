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
``--max-turns``), so some episodes end early and a few run long. Both sides draw the same: an
episode's draws come from its seed and its number among that seed's episodes.

Run (from the repository root)::

    python benchmarks/async_rollout.py --quick   # under 2 minutes
    python benchmarks/async_rollout.py
    python benchmarks/async_rollout.py --redundancy 2   # groups of 4 start 6 episodes

With ``--redundancy`` the asynchronous side starts extra episodes per group and keeps the first
``--group-size`` to end (ROLL's redundant env rollouts): the ratio counts trajectories handed to
training, not env work done.

It plays ``--repeats`` seed sets (3 by default: each a new set of draws) and prints, per set,
both times, the ratio and a ceiling: the lockstep time over the longest total env latency of one
episode, what a scheduler with free generation would take. The ratio over all sets is printed
last; JSON is written too.
"""

from __future__ import annotations

import argparse
import copy
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from provenance import write_report
from table import print_table

from trainer.generation import ContinuousGenerator, SamplingParams
from trainer.generation.actor import GeneratorActor
from trainer.models import load_model
from trainer.rollout.env_actor import launch_env_managers
from trainer.rollout.env_manager import EnvManager
from trainer.rollout.scheduler import RolloutScheduler

REPO_ROOT = Path(__file__).resolve().parent.parent
GOAL = 2.72  # ROLL Flash's agentic speed-up


class DrawCounter:
    """Numbers the episodes reset with each seed: 0, 1, 2, ... (a group's members).

    The lockstep side uses one in process; the asynchronous side shares one Ray actor among
    its env actors. Both sides then draw the same latencies and lengths for the same episodes
    (which member of a group gets which draw may differ: the set is the same).
    """

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}

    def next(self, seed: int) -> int:
        index = self._seen.get(seed, 0)
        self._seen[seed] = index + 1
        return index


class DrawnEpisode(gym.Wrapper):
    """Each episode draws, from ``(seed, its index among that seed's episodes)``, a length of
    1 + Geometric(``p_end``) steps (at most the env manager's turns) and a log-normal sleep per
    step; the sleep goes into ``info["metrics"]["latency_s"]``."""

    def __init__(self, env: gym.Env, slow: SlowEnvs) -> None:
        super().__init__(env)
        self.slow = slow
        self._rng, self._left = random.Random(0), 0

    def reset(self, *, seed: int | None = None, **kwargs: Any) -> Any:
        index = self.slow.episode_index(seed)
        self._rng = random.Random(f"{seed}/{index}")
        self._left = 1
        while self._rng.random() > self.slow.p_end:
            self._left += 1
        return self.env.reset(seed=seed, **kwargs)

    def step(self, action: str) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        median, sigma = self.slow.median_s, self.slow.sigma
        delay = self._rng.lognormvariate(math.log(median), sigma) if median > 0 else 0.0
        time.sleep(delay)
        self._left -= 1
        metrics = {**info.get("metrics", {}), "latency_s": delay}
        return obs, reward, terminated, truncated or self._left <= 0, {**info, "metrics": metrics}


def critical_path_s(trajectories: Sequence[Any]) -> float:
    """The longest episode's total env latency: the time an asynchronous rollout would take
    with free generation (every episode runs at once), so ``sync / this`` is the most any
    scheduler can gain on these draws without redundancy."""
    return max(sum(turn.metrics["latency_s"] for turn in t.turns) for t in trajectories)


class SlowEnvs:
    """Wraps each env made in a :class:`DrawnEpisode`.

    Args:
        median_s, sigma: the log-normal step latency.
        p_end: the chance an episode ends after each step.
        counter: a :class:`DrawCounter`, or a Ray actor handle of one.
    """

    def __init__(self, median_s: float, sigma: float, p_end: float, counter: Any) -> None:
        self.median_s, self.sigma, self.p_end, self.counter = median_s, sigma, p_end, counter

    def episode_index(self, seed: int | None) -> int:
        if isinstance(self.counter, DrawCounter):
            return self.counter.next(seed)
        import ray

        return ray.get(self.counter.next.remote(seed))

    def __call__(self, env: gym.Env) -> gym.Env:
        return DrawnEpisode(env, self)


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
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="seed sets played (each a new set of draws); the ratio is over all of them",
    )
    parser.add_argument("--quick", action="store_true", help="fewer groups, under 2 minutes")
    parser.add_argument(
        "--json", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "async_rollout.json"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.groups, args.env_actors, args.envs_per_actor, args.repeats = 8, 2, 16, 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    import ray

    args = parse_args(argv)
    seed_sets = [
        list(range(1000 + 100_000 * r, 1000 + 100_000 * r + args.groups))
        for r in range(args.repeats)
    ]
    episodes = args.groups * args.group_size
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=1.0, seed=0)
    options = {"max_turns": args.max_turns, "sampling": sampling}
    print(
        f"{args.model}, {args.env}: {args.repeats} x {args.groups} groups x {args.group_size}, "
        f"step latency log-normal median {args.median_latency_s} s sigma {args.sigma}, episode "
        f"end chance {args.p_end} a turn (at most {args.max_turns} turns)"
    )

    model, tokenizer = load_model(args.model, seed=0)
    generator = ContinuousGenerator(copy.deepcopy(model), tokenizer, max_batch_size=64)
    manager = EnvManager(
        args.env,
        tokenizer,
        generator,
        group_size=args.group_size,
        wrap=SlowEnvs(args.median_latency_s, args.sigma, args.p_end, DrawCounter()),
        step_threads=episodes,
        **options,
    )
    sync_s, ceilings = [], []
    for seeds in seed_sets:
        start = time.perf_counter()
        trajectories = manager.rollout(seeds)
        sync_s.append(time.perf_counter() - start)
        # the same episodes, each on its own with generation free: what no scheduler can beat
        ceilings.append(sync_s[-1] / critical_path_s(trajectories))
        print(f"  synchronous batch: {sync_s[-1]:.1f} s", flush=True)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        counter = ray.remote(num_cpus=0)(DrawCounter).remote()
        server = ray.remote(num_cpus=0)(GeneratorActor).remote(
            args.model, torch_threads=torch.get_num_threads(), max_batch_size=64
        )
        actors = launch_env_managers(
            args.env_actors,
            args.env,
            args.model,
            server,
            num_cpus=1 / args.env_actors,
            max_envs=args.envs_per_actor,
            wrap=SlowEnvs(args.median_latency_s, args.sigma, args.p_end, counter),
            **options,
        )
        scheduler = RolloutScheduler(actors, group_size=args.group_size, redundancy=args.redundancy)
        scheduler.rollout([999])  # warm-up (a seed not measured): actors and model loaded
        async_s = []
        for seeds in seed_sets:
            start = time.perf_counter()
            scheduler.rollout(seeds)
            async_s.append(time.perf_counter() - start)
            print(f"  asynchronous: {async_s[-1]:.1f} s", flush=True)
        served = ray.get(server.get_stats.remote())
        aborted = scheduler.metrics["episodes_aborted"]
    finally:
        ray.shutdown()

    rows = [
        [
            f"seeds {seeds[0]}..",
            f"{sync:.1f}",
            f"{asyn:.1f}",
            f"{ceiling:.2f}x",
            f"{sync / asyn:.2f}x",
        ]
        for seeds, sync, asyn, ceiling in zip(seed_sets, sync_s, async_s, ceilings, strict=True)
    ]
    ratio = sum(sync_s) / sum(async_s)
    rows.append(["all", f"{sum(sync_s):.1f}", f"{sum(async_s):.1f}", "", f"{ratio:.2f}x"])
    print_table(
        ["draws", "lockstep s", "asynchronous s", "ceiling", "ratio"],
        rows,
        f"{episodes} episodes a set: RolloutScheduler vs lockstep batches (same run; "
        f"{aborted} stragglers aborted)",
        left_columns=1,
    )
    report = {
        **{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "episodes_per_set": episodes,
        "seed_sets": [seeds[0] for seeds in seed_sets],
        "synchronous_seconds": sync_s,
        "asynchronous_seconds": async_s,
        "ceiling_ratio_free_generation": ceilings,
        "generator_stats": served,
        "episodes_aborted": aborted,
        "ratio": ratio,
        "goal": GOAL,
    }
    write_report(args.json, report, ("rollenv", "torch", "ray"))
    print(f"ratio (goal >= {GOAL}x): {ratio:.2f}x {'PASS' if ratio >= GOAL else 'FAIL'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
