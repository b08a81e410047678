"""Asynchronous training on a long-tail workload: synchronous steps, dropping stale groups, and
partial rollouts, in one run (``python benchmarks/async_rollout.py --workload long-tail``).

Each arm runs ``--steps`` training steps of ``--groups`` groups as ``RayRollouts`` drives them:
``EnvManagerActor`` actors play the episodes against a ``GeneratorActor``; a step collects its
complete groups, the update runs, and the generator is sent a new weight version. The update
is simulated (``--update-s`` of sleep in the driver: the actors play on meanwhile, as they do
beside a real update on other cores), so the arms differ only in scheduling:

* **synchronous** (``async_generation_ratio = 0``): a step's groups start after the previous
  update and the step waits for the last of them;
* **drop and replace** (``k``): the groups of the next ``k`` steps play ahead; a group that
  started more than ``k`` versions before it is collected is dropped and replaced;
* **partial rollouts** (``k``, ``rollout.partial_rollouts``): the same, but no group is
  dropped: its episodes play on under each new version, and tokens sampled more than ``k``
  versions before the update are masked out of it.

The workload: every episode's length is drawn from a Pareto law, ``floor(U ** (-1 / alpha))``
turns (``P(length >= n) = n ** -alpha``; ``--tail-alpha`` 1.0: half the episodes end after one
turn, one in ten runs 10 turns or more), at most ``--max-turns``; every env step sleeps a
log-normal delay (``--median-latency-s``, ``--sigma``), and every reply waits
``--generator-latency-s`` before the model decodes it (requests waiting together wait once,
as a batched decode on a GPU would; ``--generator-slots N`` lets only N wait at once, as a
generator whose batch is full: then an episode that is dropped took time from the others). An
episode's draws come from its seed and its index among that seed's episodes, so the arms draw
alike for the groups they share.

Figures per arm: wall-clock seconds, episodes trained per second, trained tokens per second
(reply tokens that enter an update, after masking), the share of trained episodes that ran 10
turns or more (the law's share is ``10 ** -alpha``), groups dropped, tokens masked, and the
replies that entered an update out of those the generator was asked for (dropped and aborted
episodes' included, and those of the groups still in flight when the arm ends: where generation
is the bottleneck, the rest is its time not trained on). Goals:
partial rollouts >= 1.3x drop and replace, and >= 4x synchronous, in trained tokens/s.

Run (from the repository root)::

    python benchmarks/async_rollout.py --workload long-tail --quick   # about 2 minutes
    python benchmarks/async_rollout.py --workload long-tail
    python benchmarks/async_rollout.py --workload long-tail --generator-slots 16 \
        --json benchmarks/results/async_rollout_long_tail_slots16.json
    # the real policy, no simulated latency and no goal: generation shares the 2 cores
    python benchmarks/async_rollout.py --workload long-tail --model smollm2-135m \\
        --generator-latency-s 0 --json benchmarks/results/async_rollout_long_tail_135m.json
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from typing import Any

from async_rollout import DrawCounter, SlowEnvs
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from trainer.generation import SamplingParams
from trainer.generation.actor import GeneratorActor
from trainer.rollout.env_actor import launch_env_managers
from trainer.rollout.ray_rollouts import mask_stale_tokens
from trainer.rollout.scheduler import RolloutScheduler

GOAL_OVER_DROP = 1.3
GOAL_OVER_SYNC = 4.0
LONG_TURNS = 10


class SlowGenerator(GeneratorActor):
    """A ``GeneratorActor`` whose every reply first waits ``latency_s``: the decode time of a
    GPU, stood in for on this CPU. Requests that wait together wait once, as a batch would; with
    ``slots``, at most that many wait at once and the rest queue for a slot, as requests do at
    a generator serving a full batch."""

    def __init__(
        self, *args: Any, latency_s: float = 0.0, slots: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.latency_s, self.slots = latency_s, slots
        self._slots: asyncio.Semaphore | None = None

    async def generate(self, prompt: list[int], params: SamplingParams) -> Any:
        if self.slots is None:
            await asyncio.sleep(self.latency_s)
        else:
            if self._slots is None:  # made on the actor's event loop
                self._slots = asyncio.Semaphore(self.slots)
            async with self._slots:
                await asyncio.sleep(self.latency_s)
        return await super().generate(prompt, params)


def _replies_trained(sample: Any) -> int:
    """The replies (turns) of ``sample`` with a token left in the update after masking."""
    return len({t for t, m in zip(sample.turn_of_token, sample.loss_mask, strict=True) if m})


def train_steps(
    scheduler: RolloutScheduler,
    generator: Any,
    *,
    steps: int,
    groups: int,
    ahead: int,
    update_s: float,
    partial: bool,
) -> dict[str, float]:
    """Runs ``steps`` steps as ``RayRollouts.rollout`` does (``RolloutScheduler.training_step``)
    and returns the arm's figures."""
    import ray

    tokens = masked = replies_trained = 0
    trained: list[Any] = []
    requests_before = ray.get(generator.get_stats.remote())["requests"]
    start = time.perf_counter()
    for version in range(steps):
        collected = scheduler.training_step(version, groups, seed_of=lambda n: 1000 + n)
        played = [t for g in collected for t in g.trajectories]
        replies = sum(sum(s.loss_mask) for t in played for s in t.samples)
        mask_stale_tokens(played, version, ahead if partial else None)
        kept = sum(sum(s.loss_mask) for t in played for s in t.samples)
        replies_trained += sum(_replies_trained(s) for t in played for s in t.samples)
        trained += played
        tokens, masked = tokens + kept, masked + replies - kept
        time.sleep(update_s)  # the update; the actors play on meanwhile
        ray.get(generator.update_weights.remote([ray.put({})], version + 1))
    wall = time.perf_counter() - start
    scheduler.cancel_all()
    replies_generated = ray.get(generator.get_stats.remote())["requests"] - requests_before
    long = sum(len(t.turns) >= LONG_TURNS for t in trained)
    return {
        "seconds": wall,
        "episodes": len(trained),
        "episodes_per_s": len(trained) / wall,
        "trained_tokens": tokens,
        "trained_tokens_per_s": tokens / wall,
        "long_share": long / len(trained),
        "mean_turns": sum(len(t.turns) for t in trained) / len(trained),
        "groups_dropped": scheduler.metrics["groups_dropped_stale"],
        "tokens_masked": masked,
        "replies_generated": replies_generated,
        "replies_trained": replies_trained,
        "replies_trained_share": replies_trained / replies_generated,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("long-tail",), default="long-tail")
    parser.add_argument("--model", default="tiny-random")
    parser.add_argument("--env", default="Sokoban-v0")
    parser.add_argument("--groups", type=int, default=8, help="groups a training step")
    parser.add_argument("--steps", type=int, default=12, help="training steps an arm")
    parser.add_argument("--async-generation-ratio", type=int, default=2, help="k")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--env-actors", type=int, default=8)
    parser.add_argument("--envs-per-actor", type=int, default=16)
    parser.add_argument("--max-turns", type=int, default=30)
    parser.add_argument("--tail-alpha", type=float, default=1.0, help="Pareto exponent")
    parser.add_argument("--median-latency-s", type=float, default=0.05)
    parser.add_argument("--sigma", type=float, default=0.5, help="log-normal sigma of latency")
    parser.add_argument("--generator-latency-s", type=float, default=0.05)
    parser.add_argument(
        "--generator-slots",
        type=int,
        help="replies the generator works on at once, the others queue (default: no limit)",
    )
    parser.add_argument("--update-s", type=float, default=1.0, help="the simulated update")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "async_rollout_long_tail.json",
        quick="4 steps of 4 groups an arm (about 2 minutes)",
    )
    return parse_arguments(parser, argv, {"steps": 4, "groups": 4, "env_actors": 4})


def run_long_tail(argv: Sequence[str] | None = None) -> int:
    import ray

    args = parse_args(argv)
    k = args.async_generation_ratio
    arms = {
        "synchronous": (0, False),
        "drop and replace": (k, False),
        "partial rollouts": (k, True),
    }
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=1.0, seed=0)
    print(
        f"{args.model}, {args.env}: {args.steps} steps x {args.groups} groups x "
        f"{args.group_size} an arm, k = {k}; episode length Pareto alpha {args.tail_alpha} "
        f"(at most {args.max_turns} turns), env step log-normal median {args.median_latency_s} "
        f"s, reply wait {args.generator_latency_s} s"
        f"{f' ({args.generator_slots} at once)' if args.generator_slots else ''}, update "
        f"{args.update_s} s"
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    results: dict[str, dict[str, float]] = {}
    try:
        counter = ray.remote(num_cpus=0)(DrawCounter).remote()
        generator = ray.remote(num_cpus=0)(SlowGenerator).remote(
            args.model,
            latency_s=args.generator_latency_s,
            slots=args.generator_slots,
            max_batch_size=64,
        )
        slow = SlowEnvs(args.median_latency_s, args.sigma, 1.0, counter, args.tail_alpha)
        actors = launch_env_managers(
            args.env_actors,
            args.env,
            args.model,
            generator,
            num_cpus=1 / args.env_actors,
            max_envs=args.envs_per_actor,
            max_turns=args.max_turns,
            sampling=sampling,
            env_kwargs={"max_episode_steps": args.max_turns},
            wrap=slow,
        )
        RolloutScheduler(actors, group_size=args.group_size).rollout([999])  # warm-up
        for name, (ahead, partial) in arms.items():
            ray.get(counter.reset.remote())  # the same draws for the same seeds
            scheduler = RolloutScheduler(
                actors, group_size=args.group_size, max_staleness=ahead, partial_rollouts=partial
            )
            results[name] = train_steps(
                scheduler,
                generator,
                steps=args.steps,
                groups=args.groups,
                ahead=ahead,
                update_s=args.update_s,
                partial=partial,
            )
            print(f"  {name}: {results[name]['seconds']:.1f} s", flush=True)
    finally:
        ray.shutdown()

    partial = results["partial rollouts"]["trained_tokens_per_s"]
    over_drop = partial / results["drop and replace"]["trained_tokens_per_s"]
    over_sync = partial / results["synchronous"]["trained_tokens_per_s"]
    print_table(
        [
            "arm",
            "s",
            "episodes/s",
            "trained tokens/s",
            "long share",
            "dropped",
            "masked",
            "replies trained",
        ],
        [
            [
                name,
                f"{r['seconds']:.1f}",
                f"{r['episodes_per_s']:.2f}",
                f"{r['trained_tokens_per_s']:.1f}",
                f"{r['long_share']:.3f}",
                str(r["groups_dropped"]),
                str(r["tokens_masked"]),
                f"{r['replies_trained']}/{r['replies_generated']}",
            ]
            for name, r in results.items()
        ],
        f"trained episodes of {LONG_TURNS}+ turns: the law's share is "
        f"{LONG_TURNS**-args.tail_alpha:.3f}",
        left_columns=1,
    )
    write_report(
        args.json,
        {
            **vars(args),
            "arms": results,
            "partial_over_drop": over_drop,
            "partial_over_sync": over_sync,
            "goals": {"over_drop": GOAL_OVER_DROP, "over_sync": GOAL_OVER_SYNC},
        },
        ("torch", "ray"),
    )
    for label, ratio, goal in (
        ("drop and replace", over_drop, GOAL_OVER_DROP),
        ("synchronous", over_sync, GOAL_OVER_SYNC),
    ):
        verdict = "PASS" if ratio >= goal else "FAIL"
        goal_text = f"(goal >= {goal}x): {ratio:.2f}x {verdict}"
        print(f"partial rollouts / {label}, trained tokens/s {goal_text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_long_tail())
