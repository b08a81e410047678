"""Steps/s of GEM games and tasks through rollenv's adapter against calling GEM directly.

For each env, the same moves are played both ways in one process, in alternating chunks (so a
busy machine slows both alike): ours through ``rollenv.make(env_id)`` with every reply written
``<answer>move</answer>`` (Gymnasium's wrappers, the answer parsing, the global-RNG isolation
included), GEM's through ``gem.make(gem_id)`` with ``\\boxed{move}``. Both sides play the same
episodes: when one ends, ours resets with the next of 64 seeds, GEM with the seed the adapter
reported for it (``info["gem_seed"]``, recorded beforehand, untimed), which starts the same
game or question. Resets count in the time, only steps in the count. The moves are the env's
``action_words`` drawn by a seeded RNG, identical on both sides.

A third side measures the ceiling: GEM behind a pass-through ``gymnasium.Env`` (its ``step``
hands the reply to GEM's, its ``reset`` resets GEM with the seed) wrapped in the same wrappers
``rollenv.make`` gives ours (``TimeLimit``, ``OrderEnforcing``, ``PassiveEnvChecker``). It
parses nothing and reports no metrics: its ratio to GEM is the most any adapter served through
Gymnasium's ``make`` could reach, and "ours / ceiling" what is left to win.

Prints a table (steps/s each way, ours over GEM's, the ceiling's ratio, and the microseconds
the adapter adds to a step, resets included) and the geometric mean of the ratios (goal:
>= 0.9x), and writes the figures to JSON. Two more columns say whether the goal is in reach at
all: the microseconds a step may add to GEM's and still run at 0.9x (a ninth of GEM's own
step), and what Gymnasium's wrappers alone add (the ceiling's microseconds over GEM's).

Run (from the repository root)::

    python benchmarks/gem_throughput.py --quick
    python benchmarks/gem_throughput.py --seconds 4
    python benchmarks/gem_throughput.py --envs gem/SudokuEasy-v0 gem/Gcd-v0
"""

from __future__ import annotations

import argparse
import math
import random
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

import rollenv
from environments.gem.catalog import BY_ENV_ID
from environments.gem.runtime import import_gem
from rollenv.policies import text_env_of

DEFAULT_ENVS = (
    "gem/GuessTheNumberHard-v0",
    "gem/MastermindHard-v0",
    "gem/TowerofHanoiHard-v0",
    "gem/Game2048Easy-v0",
    "gem/MinesweeperEasy-v0",
    "gem/SudokuEasy-v0",
    "gem/BasicArithmetic-v0",
    "gem/Gcd-v0",
    "gem/LetterCounting-v0",
)
GOAL_RATIO = 0.9  # the goal: the adapter runs at >= 0.9x GEM's steps/s
CHUNKS = 6  # alternations per env and side
EPISODE_SEEDS = 64  # episodes cycled through, the same ones on both sides


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds", type=float, default=4.0, help="time per env and side, all chunks (4)"
    )
    parser.add_argument("--envs", nargs="+", default=list(DEFAULT_ENVS), help="rollenv gem ids")
    add_common_arguments(
        parser, default_json=RESULTS_DIR / "gem_throughput.json", quick="0.6 s per env and side"
    )
    return parse_arguments(parser, argv, quick_defaults={"seconds": 0.6})


class Side:
    """One way of playing: a reset and a step function, its moves, and what it counted."""

    def __init__(
        self,
        reset: Callable[[int], Any],
        step: Callable[[str], tuple],
        wrap: Callable[[str], str],
        seeds: list[int],
    ) -> None:
        self.reset, self.step, self.wrap, self.seeds = reset, step, wrap, seeds
        self.steps, self.seconds, self.episode, self.move = 0, 0.0, 0, 0
        self.reset(self.seeds[0])

    def run(self, moves: list[str], seconds: float) -> None:
        """Plays ``moves`` in order (cycling) for about ``seconds``, resetting on episode ends."""
        replies = [self.wrap(move) for move in moves]
        steps, started = 0, time.perf_counter()
        deadline = started + seconds
        while True:
            for _ in range(16):  # check the clock every 16 steps
                result = self.step(replies[self.move % len(replies)])
                self.move += 1
                steps += 1
                if result[2] or result[3]:
                    self.episode += 1
                    self.reset(self.seeds[self.episode % len(self.seeds)])
            if time.perf_counter() >= deadline:
                break
        self.steps += steps
        self.seconds += time.perf_counter() - started

    @property
    def rate(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0


class PassThrough(gym.Env):
    """GEM's env behind Gymnasium's API and nothing else: the reply goes to GEM as it is."""

    def __init__(self, gem_env: Any, spaces_of: gym.Env) -> None:
        self.gem_env = gem_env
        self.observation_space, self.action_space = (
            spaces_of.observation_space,
            spaces_of.action_space,
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        return self.gem_env.reset(seed=seed)

    def step(self, action: str) -> tuple:
        return self.gem_env.step(action)


def ceiling_env(gem_env: Any, ours: gym.Env) -> gym.Env:
    """``PassThrough`` in the wrappers ``rollenv.make`` put around ``ours``, in their order."""
    names = []
    layer = ours
    while isinstance(layer, gym.Wrapper):
        names.append(type(layer).__name__)
        layer = layer.env
    expected = ["TimeLimit", "OrderEnforcing", "PassiveEnvChecker"]
    if names != expected:
        raise SystemExit(f"rollenv.make's wrappers changed: {names}, this side builds {expected}")
    wrapped = PassiveEnvChecker(PassThrough(gem_env, layer))
    wrapped = OrderEnforcing(wrapped)
    return TimeLimit(wrapped, max_episode_steps=ours.spec.max_episode_steps)


def measure(env_id: str, seconds: float) -> dict[str, Any]:
    entry = BY_ENV_ID[env_id]
    ours = rollenv.make(env_id)
    theirs = import_gem().make(entry.gem_id)
    ceiling = ceiling_env(import_gem().make(entry.gem_id), ours)
    rng = random.Random(0)
    moves = [rng.choice(text_env_of(ours).action_words) for _ in range(997)]
    seeds = list(range(EPISODE_SEEDS))
    recorder = rollenv.make(env_id)
    gem_seeds = [recorder.reset(seed=seed)[1]["gem_seed"] for seed in seeds]

    def gem_reset(seed: int) -> Any:
        if entry.kind == "task":
            theirs.idx = 0  # as the adapter does: GEM's 500-reset dataset switch off (env.py)
        return theirs.reset(seed=seed)

    def ceiling_reset(seed: int) -> Any:
        if entry.kind == "task":
            ceiling.unwrapped.gem_env.idx = 0
        return ceiling.reset(seed=seed)

    sides = {
        "ours": Side(
            lambda seed: ours.reset(seed=seed),
            ours.step,
            lambda move: f"<answer>{move}</answer>",
            seeds,
        ),
        "gem": Side(gem_reset, theirs.step, lambda move: f"\\boxed{{{move}}}", gem_seeds),
        "ceiling": Side(ceiling_reset, ceiling.step, lambda move: f"\\boxed{{{move}}}", gem_seeds),
    }
    for _ in range(CHUNKS):
        for side in sides.values():
            side.run(moves, seconds / CHUNKS)
    figures = {
        name: {"steps": s.steps, "seconds": s.seconds, "steps_per_s": s.rate}
        for name, s in sides.items()
    }
    figures["ratio"] = sides["ours"].rate / sides["gem"].rate
    figures["ceiling_ratio"] = sides["ceiling"].rate / sides["gem"].rate
    figures["ours_over_ceiling"] = sides["ours"].rate / sides["ceiling"].rate
    # what the adapter adds to each step (its share of the resets included), in microseconds
    gem_us = 1e6 / sides["gem"].rate
    figures["adapter_us_per_step"] = 1e6 / sides["ours"].rate - gem_us
    # 0.9x means a step of at most gem_us / 0.9: the adapter may add a ninth of GEM's step
    figures["allowed_us_per_step"] = gem_us * (1 / GOAL_RATIO - 1)
    figures["wrappers_us_per_step"] = 1e6 / sides["ceiling"].rate - gem_us
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    unknown = [e for e in args.envs if e not in BY_ENV_ID or e not in rollenv.registry]
    if unknown:
        raise SystemExit(f"not a runnable GEM id here: {', '.join(unknown)}")
    per_env: dict[str, dict[str, Any]] = {}
    for env_id in args.envs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            per_env[env_id] = measure(env_id, args.seconds)
        figures = per_env[env_id]
        print(
            f"{env_id}: ours {figures['ours']['steps_per_s']:.0f} steps/s, "
            f"GEM {figures['gem']['steps_per_s']:.0f}, {figures['ratio']:.2f}x "
            f"(ceiling {figures['ceiling_ratio']:.2f}x)",
            flush=True,
        )
    rows = [
        [
            env_id,
            f"{f['ours']['steps_per_s']:.0f}",
            f"{f['gem']['steps_per_s']:.0f}",
            f"{f['ratio']:.2f}x",
            f"{f['ceiling_ratio']:.2f}x",
            f"{f['ours_over_ceiling']:.2f}x",
            f"{f['adapter_us_per_step']:.1f}",
            f"{f['allowed_us_per_step']:.1f}",
            f"{f['wrappers_us_per_step']:.1f}",
        ]
        for env_id, f in per_env.items()
    ]

    def geometric_mean(key: str) -> float:
        return math.exp(sum(math.log(f[key]) for f in per_env.values()) / len(per_env))

    geomean = geometric_mean("ratio")
    ceiling_geomean = geometric_mean("ceiling_ratio")
    print_table(
        [
            "env",
            "ours steps/s",
            "GEM steps/s",
            "ours / GEM",
            "ceiling / GEM",
            "ours / ceiling",
            "adapter µs/step",
            "µs/step allowed at 0.9x",
            "wrappers' µs/step",
        ],
        rows,
        "GEM through rollenv vs GEM directly (same moves, same process, alternating chunks)",
    )
    print(
        f"geometric mean ratio: {geomean:.2f}x (goal >= {GOAL_RATIO}x); the pass-through ceiling: "
        f"{ceiling_geomean:.2f}x; ours / ceiling {geomean / ceiling_geomean:.2f}x"
    )
    write_report(
        args.json,
        {
            "settings": {
                "seconds": args.seconds,
                "envs": args.envs,
                "chunks": CHUNKS,
                "episode_seeds": EPISODE_SEEDS,
            },
            "per_env": per_env,
            "geomean_ratio": geomean,
            "geomean_ceiling_ratio": ceiling_geomean,
        },
        libraries=["gem-llm", "reasoning-gym", "gymnasium", "numpy"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
