"""Asynchronous rollouts (``RolloutScheduler`` on Ray) against a synchronous batch rollout.

Both sides play the same groups (same seeds, same envs, same model, same sampling) on this
machine, in one run, as the rollouts of ``--steps`` consecutive training steps of ``--groups``
groups each:

* **synchronous batch** (what a batch-level system does): a step's episodes run in lockstep:
  every turn, one batched ``generate`` call for all running episodes, then every env steps (in
  parallel threads) and the turn waits for the slowest before the next batch starts; the next
  step's batch starts when the last episode of this one has ended;
* **asynchronous** (``RolloutScheduler``, as ``RayRollouts`` drives it in training):
  ``EnvManagerActor`` actors play each episode on its own against a ``GeneratorActor``, which
  batches whatever requests are waiting; a group hands back its first ``group_size`` episodes,
  and with ``--async-generation-ratio k`` the groups of steps n..n+k are in flight while step n
  waits for its groups, so an env freed by a short episode starts a later step's episode at
  once instead of idling until the step's longest episode ends. It runs twice: with ratio 0
  (each step drains before the next starts) and with ``k``.

Both sides have the same env slots (``--env-actors`` x ``--envs-per-actor`` against one thread
per episode of a step) and the same generator on the same cores. No training happens between
steps, so the weights stay at version 0: this measures rollout throughput alone.

The envs are latency bound, as agent environments with a browser, a sandbox or a remote API
are: every step sleeps a log-normal delay (``--median-latency-s``, ``--sigma``: a long tail),
and each episode's length is drawn too (1 + a geometric number of turns, at most
``--max-turns``), so some episodes end early and a few run long. Both sides draw the same: an
episode's draws come from its seed and its number among that seed's episodes.

Run (from the repository root)::

    python benchmarks/async_rollout.py --quick   # under 2 minutes
    python benchmarks/async_rollout.py
    python benchmarks/async_rollout.py --workload long-tail   # partial rollouts: see there
    python benchmarks/async_rollout.py --redundancy 2   # groups of 4 start 6 episodes

With ``--redundancy`` the asynchronous side starts extra episodes per group and keeps the first
``--group-size`` to end (ROLL's redundant env rollouts): the ratio counts trajectories handed to
training, not env work done.

It plays ``--repeats`` seed sets (each a new set of draws) and prints, per set, the times, the
ratios and a ceiling: the lockstep time over the least time any scheduler with free generation
could take on these draws (the longest episode's total env latency, or all env latency spread
evenly over the env slots, whichever is more). The ratio at ``k`` over all sets is printed last;
JSON is written too.
"""

from __future__ import annotations

import argparse
import copy
import math
import random
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import torch
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from trainer.generation import ContinuousGenerator, SamplingParams
from trainer.generation.actor import GeneratorActor
from trainer.models import load_model
from trainer.rollout.env_actor import launch_env_managers
from trainer.rollout.env_manager import EnvManager
from trainer.rollout.scheduler import RolloutScheduler

GOAL = 2.72  # ROLL Flash's agentic speed-up


class DrawCounter:
    """Numbers the episodes reset with each seed: 0, 1, 2, ... (a group's members).

    The lockstep side uses one in process; the asynchronous side shares one Ray actor among
    its env actors. Both sides then draw the same latencies and lengths for the same episodes
    (which member of a group gets which draw may differ: the set is the same).
    """

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}

    def reset(self) -> None:
        """Numbers every seed's episodes from 0 again (a second pass over the same draws)."""
        self._seen.clear()

    def next(self, seed: int) -> int:
        index = self._seen.get(seed, 0)
        self._seen[seed] = index + 1
        return index


class DrawnEpisode(gym.Wrapper):
    """Each episode draws, from ``(seed, its index among that seed's episodes)``, a length of
    1 + Geometric(``p_end``) steps, or with ``tail_alpha`` a Pareto length ``floor(U ** (-1 /
    alpha))`` (``P(length >= n) = n ** -alpha``: a heavy tail), at most the env manager's turns,
    and a log-normal sleep per step; the sleep goes into ``info["metrics"]["latency_s"]``."""

    def __init__(self, env: gym.Env, slow: SlowEnvs) -> None:
        super().__init__(env)
        self.slow = slow
        self._rng, self._left = random.Random(0), 0

    def reset(self, *, seed: int | None = None, **kwargs: Any) -> Any:
        index = self.slow.episode_index(seed)
        self._rng = random.Random(f"{seed}/{index}")
        if self.slow.tail_alpha is not None:
            self._left = math.floor((1.0 - self._rng.random()) ** (-1.0 / self.slow.tail_alpha))
        else:
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


def least_async_s(trajectories: Sequence[Any], env_slots: int) -> float:
    """The least time any scheduler could play ``trajectories`` in with free generation and
    ``env_slots`` envs: no less than the longest episode's total env latency, nor than all the
    env latency spread evenly over the slots. ``lockstep / this`` bounds the ratio (without
    redundancy)."""
    totals = [sum(turn.metrics["latency_s"] for turn in t.turns) for t in trajectories]
    return max(max(totals), sum(totals) / env_slots)


def stream_rollout(scheduler: RolloutScheduler, steps: Sequence[Sequence[int]]) -> int:
    """Plays the groups of consecutive training steps (``steps[n]``: step n's seeds) as
    ``RayRollouts.rollout`` does with ``async_generation_ratio`` = the scheduler's
    ``max_staleness`` (:meth:`RolloutScheduler.training_step`; the version stays 0, so nothing
    is dropped). Returns the number of trajectories handed back."""
    seeds = [seed for step in steps for seed in step]
    first = scheduler.groups_started  # a scheduler reused for several passes numbers on
    handed_back = 0
    for step in steps:
        groups = scheduler.training_step(
            0, len(step), lambda n: seeds[n - first], first + len(seeds)
        )
        handed_back += sum(len(group.trajectories) for group in groups)
    return handed_back


class SlowEnvs:
    """Wraps each env made in a :class:`DrawnEpisode`.

    Args:
        median_s, sigma: the log-normal step latency.
        p_end: the chance an episode ends after each step.
        counter: a :class:`DrawCounter`, or a Ray actor handle of one.
        tail_alpha: draw Pareto lengths with this exponent instead of geometric ones.
    """

    def __init__(
        self,
        median_s: float,
        sigma: float,
        p_end: float,
        counter: Any,
        tail_alpha: float | None = None,
    ) -> None:
        self.median_s, self.sigma, self.p_end, self.counter = median_s, sigma, p_end, counter
        self.tail_alpha = tail_alpha

    def episode_index(self, seed: int | None) -> int:
        if isinstance(self.counter, DrawCounter):
            return self.counter.next(seed)
        import ray

        return ray.get(self.counter.next.remote(seed))

    def __call__(self, env: gym.Env) -> gym.Env:
        return DrawnEpisode(env, self)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: this benchmark's flags, ``--json`` and ``--quick``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workload",
        choices=("latency", "long-tail"),
        default="latency",
        help="latency: rollouts alone, against lockstep batches (this module); long-tail: "
        "training steps with weight updates, synchronous, dropping stale groups and partial "
        "rollouts (benchmarks/long_tail_rollout.py)",
    )
    parser.add_argument("--model", default="tiny-random")
    parser.add_argument("--env", default="Sokoban-v0")
    parser.add_argument("--groups", type=int, default=16, help="groups a training step")
    parser.add_argument("--steps", type=int, default=4, help="training steps a seed set")
    parser.add_argument(
        "--async-generation-ratio",
        type=int,
        default=1,
        help="k: the groups of steps n..n+k are in flight while step n waits (asynchronous side)",
    )
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
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "async_rollout.json",
        quick="1 seed set of 2 steps of 8 groups, 2 env actors (about a minute)",
    )
    return parse_arguments(
        parser,
        argv,
        {"groups": 8, "steps": 2, "env_actors": 2, "envs_per_actor": 16, "repeats": 1},
    )


def main(argv: Sequence[str] | None = None) -> int:
    import ray

    workload = argparse.ArgumentParser(add_help=False)
    workload.add_argument("--workload", default="latency")
    if workload.parse_known_args(argv)[0].workload == "long-tail":  # its own flags
        from long_tail_rollout import run_long_tail

        return run_long_tail(argv)
    args = parse_args(argv)
    # seed set r, step n: groups 1000 + 100_000 r + n * groups ..
    seed_sets = [
        [
            list(range(first + n * args.groups, first + (n + 1) * args.groups))
            for n in range(args.steps)
        ]
        for first in (1000 + 100_000 * r for r in range(args.repeats))
    ]
    episodes = args.steps * args.groups * args.group_size
    env_slots = args.env_actors * args.envs_per_actor
    ratios = (0, args.async_generation_ratio) if args.async_generation_ratio else (0,)
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=1.0, seed=0)
    options = {"max_turns": args.max_turns, "sampling": sampling}
    print(
        f"{args.model}, {args.env}: {args.repeats} sets x {args.steps} steps x {args.groups} "
        f"groups x {args.group_size}, step latency log-normal median {args.median_latency_s} s "
        f"sigma {args.sigma}, episode end chance {args.p_end} a turn (at most {args.max_turns} "
        f"turns), {env_slots} env slots a side"
    )

    model, tokenizer = load_model(args.model, seed=0)
    generator = ContinuousGenerator(copy.deepcopy(model), tokenizer, max_batch_size=64)
    manager = EnvManager(
        args.env,
        tokenizer,
        generator,
        group_size=args.group_size,
        wrap=SlowEnvs(args.median_latency_s, args.sigma, args.p_end, DrawCounter()),
        step_threads=args.groups * args.group_size,
        **options,
    )
    sync_s, ceilings = [], []
    for steps in seed_sets:
        start, trajectories = time.perf_counter(), []
        for step in steps:  # a batch-level system: the next batch starts when this one ends
            trajectories += manager.rollout(step)
        sync_s.append(time.perf_counter() - start)
        ceilings.append(sync_s[-1] / least_async_s(trajectories, env_slots))
        print(f"  synchronous batches: {sync_s[-1]:.1f} s", flush=True)

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
        # warm-up (a seed not measured): actors and model loaded
        RolloutScheduler(actors, group_size=args.group_size).rollout([999])
        async_s: dict[int, list[float]] = {}
        aborted = {}
        for ahead in ratios:
            scheduler = RolloutScheduler(
                actors, group_size=args.group_size, redundancy=args.redundancy, max_staleness=ahead
            )
            ray.get(counter.reset.remote())  # this pass draws what the lockstep side drew
            async_s[ahead] = []
            for steps in seed_sets:
                start = time.perf_counter()
                handed_back = stream_rollout(scheduler, steps)
                async_s[ahead].append(time.perf_counter() - start)
                assert handed_back == episodes, (handed_back, episodes)
                print(f"  asynchronous, ratio {ahead}: {async_s[ahead][-1]:.1f} s", flush=True)
            aborted[ahead] = scheduler.metrics["episodes_aborted"]
        served = ray.get(server.get_stats.remote())
    finally:
        ray.shutdown()

    top = ratios[-1]
    rows = []
    for r, steps in enumerate(seed_sets):
        times = [f"{async_s[k][r]:.1f}" for k in ratios]
        shown = [f"{sync_s[r] / async_s[k][r]:.2f}x" for k in ratios]
        rows.append(
            [f"seeds {steps[0][0]}..", f"{sync_s[r]:.1f}", *times, f"{ceilings[r]:.2f}x", *shown]
        )
    totals = {k: sum(async_s[k]) for k in ratios}
    ratio = {k: sum(sync_s) / totals[k] for k in ratios}
    rows.append(
        [
            "all",
            f"{sum(sync_s):.1f}",
            *[f"{totals[k]:.1f}" for k in ratios],
            "",
            *[f"{ratio[k]:.2f}x" for k in ratios],
        ]
    )
    print_table(
        [
            "draws",
            "lockstep s",
            *[f"async k={k} s" for k in ratios],
            "ceiling",
            *[f"ratio k={k}" for k in ratios],
        ],
        rows,
        f"{episodes} episodes a set ({args.steps} steps): RolloutScheduler with "
        f"async_generation_ratio k vs lockstep batches (same run; stragglers aborted: "
        f"{', '.join(f'k={k} {aborted[k]}' for k in ratios)})",
        left_columns=1,
    )
    report = {
        **vars(args),
        "episodes_per_set": episodes,
        "env_slots": env_slots,
        "seed_sets": [steps[0][0] for steps in seed_sets],
        "synchronous_seconds": sync_s,
        "asynchronous_seconds": {f"ratio_{k}": async_s[k] for k in ratios},
        "ceiling_ratio_free_generation": ceilings,
        "generator_stats": served,
        "episodes_aborted": {f"ratio_{k}": aborted[k] for k in ratios},
        "ratios": {f"ratio_{k}": ratio[k] for k in ratios},
        "ratio": ratio[top],
        "goal": GOAL,
    }
    write_report(args.json, report, ("torch", "ray"))
    verdict = "PASS" if ratio[top] >= GOAL else "FAIL"
    print(f"ratio at async_generation_ratio {top} (goal >= {GOAL}x): {ratio[top]:.2f}x {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
