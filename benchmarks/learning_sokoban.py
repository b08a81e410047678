"""The whole recipe, measured: base model -> supervised warm start -> RL, against wall-clock.

One command runs what ``roll-agent train --env sokoban-warm-start-rl`` runs (the
``sokoban-warm-start-rl`` preset), from the base model, and records greedy validation success
on ``--eval-seeds`` held-out seeds (``0 .. N-1``; training never uses a seed below 1,000,000)
of ``SimpleSokoban-v0`` and, for transfer, of ``FrozenLake-v0`` and ``LargerSokoban-v0``:

1. **base**: the model as downloaded;
2. **SFT**: after ``--sft-minutes`` of supervised training on oracle (BFS) episodes, in RL's
   exact prompts;
3. **RL arm**: from the SFT weights, RL with the preset until ``--budget-minutes`` of training
   wall-clock have passed since the start, evaluated every ``--eval-every-minutes``;
4. **SFT-only arm**: from the same SFT weights, supervised training goes on for the same
   remaining time, evaluated at the same clock points: what the RL time would have bought
   with more supervised data instead. It is the main job's recipe (``roll-agent train --env
   sokoban``: the warm start for the whole hour).
5. **RL-only arm** (``--arms "RL only"``): RL alone from the base model with the
   ``--rl-only-preset`` (``sokoban-rl-only``: one action word a turn, constrained decoding), no
   oracle and no SFT anywhere, from minute 0 to the budget. Alone, it skips steps 1-4; its first
   point is the base model under that preset.

The clock counts everything a training run does (model loading, rollouts, updates, weight sync,
oracle episodes) and stops while evaluating, so evaluation cost does not eat the budget; the time
spent evaluating is recorded too. Sokoban evaluation uses the preset's env settings (the board
drawn with the preset's ``cell_separator``); FrozenLake-v0 its own defaults. Episodes are greedy
(temperature 0), at most ``env.max_turns`` turns.

Run (from the repository root)::

    python benchmarks/learning_sokoban.py                   # the full recipe, about 1h25
    python benchmarks/learning_sokoban.py --quick           # tiny-random, about 1.5 minutes
    # RL alone from the base model, no oracle (about 1h10 with its evaluations):
    python benchmarks/learning_sokoban.py --arms "RL only" --eval-seeds 256 \
        --json benchmarks/results/learning_sokoban_rl_only.json
    # the whole recipe once per training seed (train.seed 0, 1, 2), each margin, mean and spread;
    # run again after an interruption, it goes on from the first seed not complete:
    python benchmarks/learning_sokoban.py --seeds 3 --runs-dir runs/learning_sokoban_seeds \
        --json benchmarks/results/learning_sokoban_seeds.json
    # the same with one warm start (seed 0's) for every seed's arms, about 2 hours:
    python benchmarks/learning_sokoban.py --seeds 3 --share-sft --eval-every-minutes 20 \
        --runs-dir runs/learning_sokoban_seeds_shared_sft \
        --json benchmarks/results/learning_sokoban_seeds_shared_sft.json
    # the arms again (another recipe: --set ...) from an earlier run's SFT checkpoint,
    # its base and SFT points copied from that run's JSON (one command):
    python benchmarks/learning_sokoban.py --json new.json --png new.png
        --from-sft runs/learning_sokoban/sft/checkpoints/step-429
        --from-json benchmarks/results/learning_sokoban.json

It prints a table, writes every point to JSON after each evaluation (an interrupted run keeps
what it measured) and draws a PNG of success against minutes of training.
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import dataclasses
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

import rollenv
from trainer.config import Config, load_config
from trainer.generation import make_generator
from trainer.generation.from_config import sampling_params
from trainer.rollout.env_manager import EnvManager
from trainer.rollout.metrics import rollout_metrics
from trainer.rollout.trajectory import Trajectory
from trainer.training.pipeline import Pipeline
from trainer.training.sft import WARM_START, OracleSFT

REPO_ROOT = Path(__file__).resolve().parent.parent
RUNS_DIR = REPO_ROOT / "runs" / "learning_sokoban"
QUICK_RUNS_DIR = REPO_ROOT / "runs" / "learning_sokoban_quick"
#: What ``--quick`` sets (besides the tiny-random model); flags given still win.
QUICK_DEFAULTS = {
    "budget_minutes": 1.0,
    "sft_minutes": 0.25,
    "eval_every_minutes": 0.5,
    "eval_seeds": 8,
    "transfer_seeds": 4,
    "runs_dir": QUICK_RUNS_DIR,
    "png": QUICK_RUNS_DIR / "learning_sokoban.png",
}
MAIN_ENV = "SimpleSokoban-v0"
TRANSFER_ENVS = ("FrozenLake-v0", "LargerSokoban-v0")
ALL_ENVS = (MAIN_ENV, *TRANSFER_ENVS)
ARMS = ("RL", "SFT only", "RL only")
GOAL_SUCCESS = 0.85  # the goal of the main job: greedy success at the budget
GOAL_MARGIN = 0.05
GOAL_RL_ONLY_SUCCESS = 0.50  # RL alone, from the base model (random play: 12.3%)


class Stopwatch:
    """Training wall-clock that can be paused (for evaluation)."""

    def __init__(self) -> None:
        self.elapsed, self._since = 0.0, time.perf_counter()

    def pause(self) -> None:
        self.elapsed += time.perf_counter() - self._since

    def resume(self) -> None:
        self._since = time.perf_counter()

    def now(self) -> float:
        return self.elapsed + time.perf_counter() - self._since


class Evaluator:
    """Greedy episodes on the held-out seeds ``0 .. N-1`` of each env, with a generator
    (sampled ones with ``temperature`` > 0)."""

    def __init__(
        self, config: Config, generator: Any, tokenizer: Any, temperature: float = 0.0
    ) -> None:
        self.config, self.generator, self.tokenizer = config, generator, tokenizer
        # training's sampling at this temperature: with env.constrain_to_actions, the policy
        # still picks among the action words only, as it did in training
        self.sampling = dataclasses.replace(
            sampling_params(config, tokenizer), temperature=temperature
        )
        self.seconds = 0.0

    @classmethod
    def with_own_generator(cls, config: Config, model: Any, tokenizer: Any) -> Evaluator:
        """An evaluator generating with a copy of ``model`` (sync it with ``update_weights``)."""
        generator = make_generator(
            config.generation.backend,
            copy.deepcopy(model),
            tokenizer,
            max_batch_size=config.generation.max_batch_size,
            **config.generation.engine_options(),
        )
        return cls(config, generator, tokenizer)

    def env_kwargs(self, env_id: str) -> dict[str, Any]:
        """The preset's evaluation kwargs (``env.eval_kwargs`` over ``env.kwargs``) for its own
        family; another family gets only its answer format (a policy trained to reply with the
        bare word is evaluated on bare words)."""
        kwargs = self.config.env.eval_make_kwargs
        same_family = (
            rollenv.spec(env_id).entry_point == rollenv.spec(self.config.env.id).entry_point
        )
        if same_family:
            return kwargs
        return {"answer_format": kwargs["answer_format"]} if "answer_format" in kwargs else {}

    def __call__(self, seeds: dict[str, int]) -> dict[str, dict[str, float]]:
        """Success and the other rollout metrics of ``seeds[env_id]`` episodes per env."""
        started = time.perf_counter()
        results = {}
        for env_id, count in seeds.items():
            manager = EnvManager(
                env_id,
                self.tokenizer,
                self.generator,
                env_kwargs=self.env_kwargs(env_id),
                group_size=1,
                max_turns=self.config.env.max_turns,
                context=self.config.env.context,
                window=self.config.env.window,
                max_context_tokens=self.config.env.max_context_tokens,
                sampling=self.sampling,
                reply_prefix=self.config.env.reply_prefix,
            )
            # 32 episodes at a time: every running episode's previous turn stays in the
            # generator's cache, which stays small (about 3 GB for SmolLM2 at 1024 tokens)
            chunk = 32
            trajectories = []
            for start in range(0, count, chunk):
                trajectories += manager.rollout(list(range(start, min(start + chunk, count))))
            metrics = rollout_metrics(trajectories, "eval")
            results[env_id] = {k.removeprefix("eval/"): v for k, v in metrics.items()}
            results[env_id]["seeds"] = count
            by_length = success_by_optimal_length(manager, trajectories)
            if by_length:
                results[env_id]["success_by_optimal_length"] = by_length
        self.seconds += time.perf_counter() - started
        return results


def success_by_optimal_length(
    manager: EnvManager, trajectories: list[Trajectory]
) -> dict[str, dict[str, float]]:
    """Success grouped by the length of each board's shortest solution, for an env whose reset
    reports it (``info["optimal_plan_length"]``, Sokoban's); ``{}`` for one that does not.

    Returns:
        ``{length: {"episodes": n, "success": rate}}``, lengths in order (as strings, for JSON).
    """
    env = manager.make_env()
    try:
        groups: dict[int, list[bool]] = {}
        for trajectory in trajectories:
            _, info = env.reset(seed=trajectory.seed)
            length = info.get("optimal_plan_length")
            if length is None:
                return {}
            groups.setdefault(int(length), []).append(trajectory.success)
    finally:
        env.close()
    return {
        str(length): {"episodes": len(won), "success": sum(won) / len(won)}
        for length, won in sorted(groups.items())
    }


class Recorder:
    """Collects evaluation points and writes them to JSON as they come.

    Args:
        path: the JSON report (``--json``).
        header: the run's settings, written first.
        main_env: the env whose success :meth:`add` returns.
    """

    #: Distributions whose versions the report records (besides rollenv's and Python's).
    LIBRARIES = ("torch", "transformers", "peft")

    def __init__(self, path: Path, header: dict[str, Any], main_env: str = MAIN_ENV) -> None:
        self.path, self.header, self.points, self.main_env = path, header, [], main_env

    def add(self, arm: str, clock: float, results: dict[str, dict[str, float]], **extra: Any):
        for env_id, metrics in results.items():
            self.points.append(
                {"arm": arm, "minutes": clock / 60, "env": env_id, **metrics, **extra}
            )
        main = results.get(self.main_env, {})
        shown = ", ".join(f"{env} {m['success']:.1%}" for env, m in results.items())
        print(f"[{clock / 60:6.1f} min] {arm}: {shown}", flush=True)
        self.write()
        return main.get("success")

    def write(self, summary: dict[str, Any] | None = None, *, announce: bool = False) -> None:
        """Writes the header, every point so far and ``summary`` to the report.

        Args:
            summary: figures known at the end of the run.
            announce: print where the report went (the last write does).
        """
        report = {**self.header, "points": self.points, **(summary or {})}
        write_report(self.path, report, self.LIBRARIES, announce=announce)


def plot(points: list[dict[str, Any]], path: Path, budget_minutes: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    styles = {"RL": "tab:red", "SFT only": "tab:blue", "RL only": "tab:green"}
    arms: list[str] = []
    for env_id, dash in zip((MAIN_ENV, *TRANSFER_ENVS), ("-", ":", "--"), strict=False):
        start = [p for p in points if p["env"] == env_id and p["arm"] in ("base", "SFT")]
        for arm, color in styles.items():
            # the RL and SFT-only arms go on from the SFT point; RL only has its own minute 0
            own_start = [] if arm == "RL only" else start
            line = own_start + [p for p in points if p["env"] == env_id and p["arm"] == arm]
            if len(line) > len(own_start):
                arms += [arm] if arm not in arms else []
                ax.plot(
                    [p["minutes"] for p in line],
                    [100 * p["success"] for p in line],
                    dash,
                    color=color,
                    marker="o" if env_id == MAIN_ENV else None,
                    label=f"{arm}: {env_id}",
                )
    goal = GOAL_RL_ONLY_SUCCESS if arms == ["RL only"] else GOAL_SUCCESS
    ax.axhline(100 * goal, color="grey", lw=0.8, ls="--")
    ax.axvline(budget_minutes, color="grey", lw=0.8)
    ax.set_xlabel("training wall-clock, minutes (2 CPU cores; evaluation excluded)")
    ax.set_ylabel("greedy success, %")
    ax.set_title(f"SmolLM2-135M-Instruct on Sokoban: {' vs '.join(arms)}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def train_rl_until(
    pipeline: Pipeline,
    clock: Stopwatch,
    budget: float,
    next_eval: float,
    eval_every: float,
    evaluation_point: Callable[[], None],
    label: str,
    on_step: Callable[[dict[str, float]], None] | None = None,
) -> None:
    """RL steps until ``budget`` seconds of training clock, each logged to the run's metrics
    and printed on one line (``on_step`` sees its metrics); ``evaluation_point()`` runs with
    the clock paused at ``next_eval`` and every ``eval_every`` seconds after, short of the
    budget (the caller evaluates the end)."""
    while clock.now() < budget:
        metrics = pipeline.train_step()
        pipeline.metrics.log(pipeline.step, metrics)
        if on_step is not None:
            on_step(metrics)
        print(
            f"  {label} step {pipeline.step}: success {metrics['rollout/success']:.2f} "
            f"valid {metrics['rollout/valid_action_rate']:.2f} "
            f"rollout {metrics['time/rollout']:.0f}s update {metrics['time/update']:.0f}s "
            f"[{clock.now() / 60:.1f} min]",
            flush=True,
        )
        if next_eval <= clock.now() < budget:
            clock.pause()
            evaluation_point()
            clock.resume()
            next_eval += eval_every


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="sokoban-warm-start-rl")
    parser.add_argument("--budget-minutes", type=float, default=60.0)
    parser.add_argument(
        "--sft-minutes",
        type=float,
        help="the warm start's training minutes (default: the preset's sft.max_minutes)",
    )
    parser.add_argument("--eval-every-minutes", type=float, default=15.0)
    parser.add_argument("--eval-seeds", type=int, default=256, help=f"of {MAIN_ENV}")
    parser.add_argument("--transfer-seeds", type=int, default=64, help="of the transfer envs")
    parser.add_argument(
        "--base-seeds",
        type=int,
        help=f"of {MAIN_ENV} for the base model (default: --eval-seeds; the base model plays "
        "every turn of every episode, so this point is the slowest to evaluate)",
    )
    parser.add_argument("--arms", nargs="+", default=["RL", "SFT only"], choices=ARMS)
    parser.add_argument(
        "--rl-only-preset",
        default="sokoban-rl-only",
        help="the RL-only arm's preset (default: sokoban-rl-only); --set applies to it too",
    )
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="run the arms one after the other with every core (default: side by side, one "
        "core each, both within the same wall-clock budget)",
    )
    parser.add_argument("--set", action="append", default=[], help="config override key=value")
    parser.add_argument(
        "--runs-dir",
        type=Path,
        default=RUNS_DIR,
        metavar="DIR",
        help="the run's folder: the SFT checkpoint, the metrics and the arms' own JSON "
        f"(default: runs/{RUNS_DIR.name}; with --quick: runs/{QUICK_RUNS_DIR.name})",
    )
    parser.add_argument(
        "--png",
        type=Path,
        default=RESULTS_DIR / "learning_sokoban.png",
        help="the plot (default: benchmarks/results/learning_sokoban.png; with --quick: in "
        "the runs folder)",
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "learning_sokoban.json",
        quick="tiny-random model, 1 training minute of which 15 s SFT, 8 seeds (about 1.5 minutes)",
    )
    parser.add_argument(
        "--from-sft",
        type=Path,
        help="skip base and SFT: run the arms from this SFT checkpoint of an earlier run "
        "(needs --from-json)",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        help="the earlier run's JSON: its base and SFT points and SFT clock are reused",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="run the whole protocol once per training seed 0..N-1 (train.seed), each in its "
        "own process and runs folder (DIR/seed-K), then report every RL - SFT-only margin, "
        "their mean and spread; a seed whose report is complete is not run again",
    )
    parser.add_argument(
        "--share-sft",
        action="store_true",
        help="with --seeds: seed 0 runs the whole protocol, and every later seed runs the arms "
        "from seed 0's SFT checkpoint (the seeds then vary RL and SFT-only, not the warm "
        "start; about 40 minutes of SFT saved per seed)",
    )
    parser.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="run nothing: print, for these runs' JSON (one a training seed), the success "
        "after the warm start and at the budget, each phase's steps, the CPU and the verdict "
        "against the goal",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        nargs=2,
        metavar=("BASELINE", "OTHER"),
        help="run nothing: put the RL arms of two runs from one warm start (the second run "
        "made with --from-sft of the first) side by side: success at each evaluation, steps, "
        "and whether OTHER's final success is at least BASELINE's; with --png, both curves",
    )
    # internal: one arm in its own process
    parser.add_argument("--run-arm", choices=ARMS, help=argparse.SUPPRESS)
    parser.add_argument("--sft-checkpoint", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--clock-start", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--threads",
        type=int,
        help="torch threads per arm (default: 1 when arms run side by side, else every core); "
        "e.g. 1 for two runs of one arm each at once",
    )
    args = parse_arguments(parser, argv, QUICK_DEFAULTS)
    if (args.from_sft is None) != (args.from_json is None):
        parser.error("--from-sft and --from-json go together")
    if args.from_sft is not None and not (args.from_sft / "model").is_dir():
        parser.error(
            f"--from-sft {args.from_sft}: no model folder in it (a sft/checkpoints/step-N)"
        )
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    if args.seeds > 1 and args.from_sft is not None:
        parser.error(
            "--seeds runs the warm start once per seed: it does not take --from-sft "
            "(--share-sft runs it once, on seed 0, for every seed)"
        )
    if args.share_sft and args.seeds < 2:
        parser.error(
            f"--share-sft shares seed 0's warm start with later seeds: needs --seeds 2 "
            f"or more, got {args.seeds}"
        )
    if args.base_seeds is None:
        args.base_seeds = args.eval_seeds
    if args.sft_minutes is None:
        preset_minutes = load_config(args.preset).sft.max_minutes
        args.sft_minutes = 40.0 if preset_minutes is None else preset_minutes
    if args.quick:  # the tiny model has 2 layers, where the presets train SmolLM2's top 10
        args.set = ["model.name=tiny-random", "model.trainable_layers=1", *args.set]
    return args


def arm_threads(args: argparse.Namespace) -> int:
    """Torch threads per arm: ``--threads``, else 1 when arms run side by side, else every
    core (0)."""
    if args.threads is not None:
        return args.threads
    return 1 if len(args.arms) > 1 and not args.sequential else 0


def base_overrides(args: argparse.Namespace) -> list[str]:
    return [
        "sft.before_rl=false",
        "sft.epochs=1",
        "sft.episodes=1000000",  # the clock, not the episode count, ends SFT
        f"train.output_dir={args.runs_dir}",
        "train.eval_every=0",
        # the benchmark evaluates on its own seeds, with its clock paused, and ends the arms
        "train.eval_every_minutes=null",
        "train.eval_before=false",
        "train.max_minutes=null",
        "train.checkpoint_every=0",
        *args.set,
    ]


def main_config(args: argparse.Namespace) -> Config | None:
    """``--preset`` with the overrides, for the base, SFT, RL and SFT-only arms; ``None`` when
    ``RL only`` is the only arm, so overrides that only the RL-only preset accepts (such as
    ``algorithm.score_actions_only``, which needs its constrained decoding) are not refused."""
    if args.arms == ["RL only"] or args.run_arm == "RL only":
        return None
    return load_config(args.preset, base_overrides(args))


def all_envs(args: argparse.Namespace, main_seeds: int) -> dict[str, int]:
    """SimpleSokoban on ``main_seeds`` seeds, the transfer envs on ``--transfer-seeds``."""
    return {MAIN_ENV: main_seeds, **dict.fromkeys(TRANSFER_ENVS, args.transfer_seeds)}


def run_arm(args: argparse.Namespace) -> int:
    """One arm, from the SFT checkpoint, until the budget; its points go to ``--json``."""
    if args.threads:
        torch.set_num_threads(args.threads)
    arm, budget = args.run_arm, args.budget_minutes * 60
    config = main_config(args)
    recorder = Recorder(args.json, {"arm": arm, "torch_threads": torch.get_num_threads()})
    clock = Stopwatch()
    clock.elapsed = args.clock_start
    next_eval = args.clock_start + args.eval_every_minutes * 60

    if arm in ("RL", "RL only"):
        if arm == "RL":
            preset = args.preset
            own = [
                f"model.name={args.sft_checkpoint / 'model'}",
                f"train.output_dir={args.runs_dir / 'rl'}",
            ]
        else:  # from the base model, with no oracle and no SFT anywhere
            preset, own = args.rl_only_preset, [f"train.output_dir={args.runs_dir / 'rl-only'}"]
        rl_config = load_config(preset, [*base_overrides(args), *own])
        pipeline = Pipeline(rl_config)
        on_ray = rl_config.rollout.mode == "ray"
        if on_ray:
            # the generators are Ray actors: the evaluation plays on a copy of the policy here,
            # with the fleet paused, so episodes started ahead (async_generation_ratio) do not
            # play on while the clock is stopped
            evaluate = Evaluator.with_own_generator(
                rl_config, pipeline.strategy.model, pipeline.tokenizer
            )
        else:
            evaluate = Evaluator(rl_config, pipeline.rollouts.generator, pipeline.tokenizer)

        def play(seeds: dict[str, int]) -> dict[str, dict[str, float]]:
            if not on_ray:
                return evaluate(seeds)
            pipeline.rollouts.pause()
            try:
                evaluate.generator.update_weights(pipeline.strategy.inference_state_dict())
                return evaluate(seeds)
            finally:
                pipeline.rollouts.resume()

        if arm == "RL only":  # its minute 0: the base model under the arm's own preset
            clock.pause()
            recorder.add(arm, clock.elapsed, play(all_envs(args, args.eval_seeds)), rl_steps=0)
            clock.resume()

        def evaluation_point() -> None:
            recorder.add(
                arm, clock.elapsed, play({MAIN_ENV: args.eval_seeds}), rl_steps=pipeline.step
            )

        train_rl_until(
            pipeline, clock, budget, next_eval, args.eval_every_minutes * 60, evaluation_point, arm
        )
        clock.pause()
        recorder.add(
            arm, clock.elapsed, play(all_envs(args, args.eval_seeds)), rl_steps=pipeline.step
        )
        pipeline.metrics.close()
        pipeline.close()
    else:
        assert config is not None  # only the RL-only arm goes without the main preset
        sft = OracleSFT(
            config, metrics_dir=args.runs_dir / "sft-only", resume_from=args.sft_checkpoint
        )
        evaluate = Evaluator.with_own_generator(config, sft.strategy.model, sft.tokenizer)
        # its lines' ETA: the budget (each call below stops at the next evaluation)
        sft.view.phase(WARM_START).time_limit_s = sft.clock.elapsed_s() + budget - clock.now()
        while clock.now() < budget:
            sft.train(max_seconds=min(next_eval, budget) - clock.now())
            if next_eval <= clock.now() < budget:
                clock.pause()
                evaluate.generator.update_weights(sft.strategy.inference_state_dict())
                recorder.add(
                    arm, clock.elapsed, evaluate({MAIN_ENV: args.eval_seeds}), sft_steps=sft.step
                )
                clock.resume()
                next_eval += args.eval_every_minutes * 60
        clock.pause()
        evaluate.generator.update_weights(sft.strategy.inference_state_dict())
        recorder.add(
            arm, clock.elapsed, evaluate(all_envs(args, args.eval_seeds)), sft_steps=sft.step
        )
        sft.close()
    recorder.write({"evaluation_seconds": evaluate.seconds}, announce=True)
    return 0


def run_sft(
    args: argparse.Namespace, config: Config, recorder: Recorder
) -> tuple[Path, float, float, float]:
    """Base point, ``--sft-minutes`` of SFT, SFT point, checkpoint. Returns the checkpoint, the
    training clock at its end (s), SFT success and the seconds spent evaluating."""
    clock = Stopwatch()
    sft = OracleSFT(config, metrics_dir=args.runs_dir / "sft")
    sft.view.phase(WARM_START).time_limit_s = args.sft_minutes * 60  # its lines' ETA
    evaluate = Evaluator.with_own_generator(config, sft.strategy.model, sft.tokenizer)

    clock.pause()
    recorder.add("base", 0.0, evaluate(all_envs(args, args.base_seeds)))
    clock.resume()
    sft.train(max_seconds=args.sft_minutes * 60 - clock.now())
    clock.pause()
    evaluate.generator.update_weights(sft.strategy.inference_state_dict())
    sft_results = evaluate(all_envs(args, args.eval_seeds))
    sft_success = recorder.add("SFT", clock.elapsed, sft_results, sft_steps=sft.step)
    clock.resume()
    checkpoint = sft.save(args.runs_dir / "sft")
    sft.close()
    return checkpoint, clock.now(), sft_success, evaluate.seconds


def release_freed_memory() -> None:
    """Frees what the SFT phase left before the arms start: objects held only in reference
    cycles, and heap pages glibc keeps for reuse.

    After SFT this process held 6.2 GB while waiting for the arms, and with both arms
    evaluating, the machine's 24 GB ran out (the RL arm was killed). Which of the two held it
    was not measured.
    """
    gc.collect()
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def reuse_sft(
    args: argparse.Namespace, recorder: Recorder
) -> tuple[Path, float, float, float | None]:
    """What :func:`run_sft` returns, read from an earlier run (``--from-sft``, ``--from-json``):
    its base and SFT points join ``recorder``; the arms start at its SFT point's clock."""
    earlier = json.loads(args.from_json.read_text())
    points = [p for p in earlier["points"] if p["arm"] in ("base", "SFT")]
    sft_points = [p for p in points if p["arm"] == "SFT" and p["env"] == MAIN_ENV]
    if not sft_points:
        raise SystemExit(f"{args.from_json} has no SFT point of {MAIN_ENV}")
    recorder.points += points
    recorder.header["sft_from"] = {"checkpoint": str(args.from_sft), "json": str(args.from_json)}
    sft = sft_points[0]
    print(f"base and SFT points from {args.from_json}; the arms start at {sft['minutes']:.1f} min")
    # None where the earlier run ended before writing its summary (an arm failed)
    seconds = (earlier.get("evaluation_seconds") or {}).get("base_and_sft")
    return args.from_sft, sft["minutes"] * 60, sft["success"], seconds


def phase_steps(points: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per phase (SFT, then each arm), the steps it reached by its last point of the main env,
    the training minutes it took and its steps an hour: machines differ in speed, so a figure
    at 60 minutes is read beside the steps that made it."""
    phases: dict[str, dict[str, float]] = {}
    starts = {"SFT": 0.0}
    sft = [p for p in points if p["arm"] == "SFT" and p["env"] == MAIN_ENV]
    arm_start = sft[-1]["minutes"] if sft else 0.0
    for arm in dict.fromkeys(p["arm"] for p in points if p["arm"] != "base"):
        mine = [p for p in points if p["arm"] == arm and p["env"] == MAIN_ENV]
        if not mine:
            continue
        last = mine[-1]
        steps = last.get("rl_steps", last.get("sft_steps", 0))
        start = starts.get(arm, 0.0 if arm == "RL only" else arm_start)
        if arm == "SFT only":  # its step count goes on from the warm start's
            steps -= sft[-1].get("sft_steps", 0) if sft else 0
        minutes = last["minutes"] - start
        per_hour = steps / minutes * 60 if minutes > 0 else 0.0
        phases[arm] = {"steps": steps, "minutes": minutes, "steps_per_hour": per_hour}
    return phases


def summary_rows(points: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The summary table's rows: per arm (base, SFT, then the arms), in the order the points
    came, its last point's training minutes and its last success on each env."""
    rows = []
    for arm in dict.fromkeys(point["arm"] for point in points):
        last = {point["env"]: point for point in points if point["arm"] == arm}
        clock = (last.get(MAIN_ENV) or next(iter(last.values())))["minutes"]
        cells = [f"{last[env]['success']:.1%}" if env in last else "-" for env in ALL_ENVS]
        rows.append([arm, f"{clock:.1f}", *cells])
    return rows


def seed_summary(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Across the reports of one protocol run per training seed: each arm's final success and
    each RL - SFT-only margin, per seed, with their mean, sample standard deviation and range.

    Example:
        >>> reports = [{"final_success": {"RL": 0.8, "SFT only": 0.7}},
        ...            {"final_success": {"RL": 0.75, "SFT only": 0.72}}]
        >>> summary = seed_summary(reports)
        >>> [round(m, 2) for m in summary["rl_minus_sft_only"]["per_seed"]]
        [0.1, 0.03]
        >>> round(summary["rl_minus_sft_only"]["mean"], 3)
        0.065
    """

    def spread(values: list[float]) -> dict[str, Any]:
        return {
            "per_seed": values,
            "mean": statistics.fmean(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values),
            "max": max(values),
        }

    arms = dict.fromkeys(arm for report in reports for arm in report["final_success"])
    summary: dict[str, Any] = {
        "final_success": {
            arm: spread([report["final_success"][arm] for report in reports]) for arm in arms
        }
    }
    if {"RL", "SFT only"} <= set(arms):
        margins = [r["final_success"]["RL"] - r["final_success"]["SFT only"] for r in reports]
        summary["rl_minus_sft_only"] = spread(margins)
    return summary


def run_seeds(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``--seeds N``: this script's run once per training seed, then the spread across seeds."""
    reports = []
    for seed in range(args.seeds):
        path = args.runs_dir / f"seed-{seed}.json"
        done = path.is_file() and "final_success" in json.loads(path.read_text())
        if done:
            print(f"seed {seed}: complete in {path}, not run again", flush=True)
        else:
            print(f"seed {seed} of {args.seeds}: train.seed={seed}", flush=True)
            shared = []
            if args.share_sft and seed > 0:
                first = args.runs_dir / "seed-0.json"
                checkpoint = json.loads(first.read_text()).get("sft_checkpoint")
                if checkpoint is None:
                    raise SystemExit(
                        f"--share-sft: {first} names no sft_checkpoint (written by a run "
                        "without one); move it away to run seed 0 again"
                    )
                shared = ["--from-sft", checkpoint, "--from-json", str(first)]
            # later flags win: the seed's own folder, report, plot and train.seed
            subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    *(flag for flag in argv if flag != "--share-sft"),
                    "--seeds",
                    "1",
                    "--set",
                    f"train.seed={seed}",
                    "--runs-dir",
                    str(args.runs_dir / f"seed-{seed}"),
                    "--json",
                    str(path),
                    "--png",
                    str(args.runs_dir / f"seed-{seed}.png"),
                    *shared,
                ],
                check=True,
            )
        reports.append(json.loads(path.read_text()))
    summary = seed_summary(reports)
    finals = summary["final_success"]
    rows = [
        [str(seed), *(f"{report['final_success'][arm]:.1%}" for arm in finals)]
        for seed, report in enumerate(reports)
    ]
    rows.append(["mean", *(f"{finals[arm]['mean']:.1%}" for arm in finals)])
    rows.append(["stdev", *(f"{finals[arm]['stdev'] * 100:.1f} pt" for arm in finals)])
    print_table(
        ["train.seed", *finals],
        rows,
        f"Final greedy success on {args.eval_seeds} held-out seeds of {MAIN_ENV}, per seed",
    )
    if "rl_minus_sft_only" in summary:
        margin = summary["rl_minus_sft_only"]
        shown = ", ".join(f"{m * 100:+.1f}" for m in margin["per_seed"])
        held = all(m >= GOAL_MARGIN for m in margin["per_seed"])
        print(
            f"  RL - SFT only per seed: {shown} points; mean {margin['mean'] * 100:+.1f}, "
            f"stdev {margin['stdev'] * 100:.1f} (goal >= +5 on every seed): "
            f"{'PASS' if held else 'FAIL'}"
        )
    write_report(
        args.json,
        {
            "seeds": args.seeds,
            "shared_sft": args.share_sft,
            "reports": [str(args.runs_dir / f"seed-{k}.json") for k in range(args.seeds)],
            **summary,
        },
        Recorder.LIBRARIES,
        announce=True,
    )
    return 0


def summarize(reports: Sequence[Path]) -> int:
    """Prints one row a run (a training seed) and the verdict of each against the goal;
    returns 0 when every run met it."""
    rows, met = [], []
    for path in reports:
        report = json.loads(path.read_text())
        seed = next(
            (o.split("=", 1)[1] for o in report["overrides"] if o.startswith("train.seed=")), "0"
        )
        arm = next(iter(report["final_success"]))
        final = report["final_success"][arm]
        phases = ", ".join(
            f"{name} {s['steps']} ({s['steps_per_hour']:,.0f}/h)"
            for name, s in report["steps"].items()
        )
        met.append(final >= GOAL_SUCCESS)
        rows.append(
            [
                seed,
                report["machine"]["cpu_model"],
                f"{report['sft_success']:.1%}",
                f"{arm} {final:.1%}",
                phases,
                "PASS" if met[-1] else "FAIL",
            ]
        )
    print_table(
        ["seed", "CPU", "after the warm start", "at the budget", "steps", f">= {GOAL_SUCCESS:.0%}"],
        rows,
        f"greedy {MAIN_ENV} success on the held-out boards, one run a training seed",
        left_columns=2,
    )
    print(f"goal >= {GOAL_SUCCESS:.0%} on every seed: {'PASS' if all(met) else 'FAIL'}")
    return 0 if all(met) else 1


def rollout_label(overrides: Sequence[str]) -> str:
    """How a run's overrides schedule its rollouts, in words."""
    settings = dict(o.split("=", 1) for o in overrides if "=" in o)
    ratio = int(settings.get("rollout.async_generation_ratio", "0"))
    mode = settings.get("rollout.mode", "local")
    if ratio == 0:
        return f"synchronous ({mode})"
    if settings.get("rollout.partial_rollouts") == "true":
        correction = settings.get("algorithm.off_policy_correction", "none")
        return f"partial rollouts, k={ratio}, {correction} ({mode})"
    return f"drop and replace, k={ratio} ({mode})"


def compare(reports: Sequence[Path], png: Path | None) -> int:
    """Prints the RL arms of ``reports`` (baseline first) side by side and the verdict: the
    second's final success at least the first's. Returns 0 when it holds."""
    runs = [json.loads(path.read_text()) for path in reports]
    labels = [rollout_label(run["overrides"]) for run in runs]
    curves = [
        [p for p in run["points"] if p["env"] == MAIN_ENV and p["arm"] == "RL"] for run in runs
    ]
    start = [p for p in runs[0]["points"] if p["env"] == MAIN_ENV and p["arm"] == "SFT"]
    rows = [
        ["warm start (shared)", f"{start[0]['minutes']:.1f}", *[f"{start[0]['success']:.1%}"] * 2]
    ]
    for first, second in zip(*curves, strict=False):
        rows.append(
            ["RL", f"{first['minutes']:.1f}", f"{first['success']:.1%}", f"{second['success']:.1%}"]
        )
    print_table(
        ["point", "training min", *labels],
        rows,
        f"greedy {MAIN_ENV} success on {runs[0]['eval_seeds']} held-out boards",
    )
    for label, run in zip(labels, runs, strict=True):
        steps = run["steps"]["RL"]
        print(f"  {label}: {steps['steps']} RL steps ({steps['steps_per_hour']:.0f} an hour)")
    finals = [curve[-1]["success"] for curve in curves]
    held = finals[1] >= finals[0]
    print(
        f"  {labels[1]} {finals[1]:.1%} >= {labels[0]} {finals[0]:.1%}: "
        f"{'PASS' if held else 'FAIL'}"
    )
    if png is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 4.5))
        for label, curve, color in zip(labels, curves, ("tab:blue", "tab:red"), strict=True):
            line = start + curve
            ax.plot(
                [p["minutes"] for p in line],
                [100 * p["success"] for p in line],
                "-o",
                color=color,
                label=label,
            )
        ax.set_xlabel("training wall-clock, minutes (2 CPU cores; evaluation excluded)")
        ax.set_ylabel(f"greedy success, % ({MAIN_ENV})")
        ax.set_title("SmolLM2-135M-Instruct on Sokoban: RL after a shared warm start")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(png, dpi=120)
        print(f"plot: {png}")
    return 0 if held else 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.summarize:
        return summarize(args.summarize)
    if args.compare:
        return compare(args.compare, args.png if "--png" in argv else None)
    if args.run_arm:
        return run_arm(args)
    if args.seeds > 1:
        return run_seeds(args, argv)
    config = main_config(args)
    recorder = Recorder(
        args.json,
        {
            "preset": args.preset,
            "overrides": args.set,
            "config": None if config is None else config.model_dump(),
            "budget_minutes": args.budget_minutes,
            "sft_minutes": args.sft_minutes,
            "eval_seeds": args.eval_seeds,
            "transfer_seeds": args.transfer_seeds,
            "base_seeds": args.base_seeds,
            "arms": args.arms,
            "arms_side_by_side": not args.sequential,
            "arm_threads": arm_threads(args),
            "torch_threads": torch.get_num_threads(),
        },
    )
    if "RL only" in args.arms:
        recorder.header["rl_only_preset"] = args.rl_only_preset
        recorder.header["rl_only_config"] = load_config(
            args.rl_only_preset, base_overrides(args)
        ).model_dump()
    if args.arms == ["RL only"]:  # no base and SFT points: it starts from the base model at 0
        checkpoint, sft_clock, sft_success, base_and_sft_eval_seconds = None, 0.0, None, None
    elif args.from_sft is not None:
        checkpoint, sft_clock, sft_success, base_and_sft_eval_seconds = reuse_sft(args, recorder)
    else:
        checkpoint, sft_clock, sft_success, base_and_sft_eval_seconds = run_sft(
            args, config, recorder
        )
        recorder.header["sft_checkpoint"] = str(checkpoint)
        release_freed_memory()

    arm_files = {arm: args.runs_dir / f"arm-{arm.replace(' ', '-')}.json" for arm in args.arms}
    commands = {
        arm: [
            sys.executable,
            str(Path(__file__).resolve()),
            "--run-arm",
            arm,
            *(["--sft-checkpoint", str(checkpoint)] if arm != "RL only" else []),
            "--clock-start",
            str(sft_clock if arm != "RL only" else 0.0),
            "--threads",
            str(arm_threads(args)),
            "--rl-only-preset",
            args.rl_only_preset,
            "--json",
            str(arm_files[arm]),
            "--preset",
            args.preset,
            "--budget-minutes",
            str(args.budget_minutes),
            "--eval-every-minutes",
            str(args.eval_every_minutes),
            "--eval-seeds",
            str(args.eval_seeds),
            "--transfer-seeds",
            str(args.transfer_seeds),
            "--runs-dir",
            str(args.runs_dir),
            *[item for s in args.set for item in ("--set", s)],
        ]
        for arm in args.arms
    }
    if args.sequential:
        for command in commands.values():
            subprocess.run(command, check=True)
    else:
        processes = [subprocess.Popen(command) for command in commands.values()]
        if any(process.wait() for process in processes):
            raise SystemExit("an arm failed; see its output above")
    finals: dict[str, float] = {}
    arm_eval_seconds = {}
    for arm, path in arm_files.items():
        report = json.loads(path.read_text())
        recorder.points += report["points"]
        finals[arm] = [p for p in report["points"] if p["env"] == MAIN_ENV][-1]["success"]
        arm_eval_seconds[arm] = report.get("evaluation_seconds")

    summary: dict[str, Any] = {
        "sft_success": sft_success,
        "final_success": finals,
        "evaluation_seconds": {"base_and_sft": base_and_sft_eval_seconds, **arm_eval_seconds},
    }
    print()
    print_table(
        ["point", "training min", *ALL_ENVS],
        summary_rows(recorder.points),
        f"Greedy success on held-out seeds ({args.eval_seeds} of {MAIN_ENV}, base "
        f"{args.base_seeds}; {args.transfer_seeds} of the others)",
    )
    summary["steps"] = phase_steps(recorder.points)
    for arm, figures in summary["steps"].items():
        print(
            f"  {arm}: {figures['steps']} steps in {figures['minutes']:.1f} training min "
            f"({figures['steps_per_hour']:.0f} an hour)"
        )
    if "RL" in finals:
        ok = finals["RL"] >= GOAL_SUCCESS
        print(f"  goal RL >= {GOAL_SUCCESS:.0%}: {'PASS' if ok else 'FAIL'}")
    if "SFT only" in finals:  # the main job's recipe (the sokoban preset)
        ok = finals["SFT only"] >= GOAL_SUCCESS
        print(f"  goal SFT only >= {GOAL_SUCCESS:.0%}: {'PASS' if ok else 'FAIL'}")
    if "RL only" in finals:
        ok = finals["RL only"] >= GOAL_RL_ONLY_SUCCESS
        print(f"  goal RL only >= {GOAL_RL_ONLY_SUCCESS:.0%}: {'PASS' if ok else 'FAIL'}")
    if "RL" in finals and "SFT only" in finals:
        margin = finals["RL"] - finals["SFT only"]
        verdict = "PASS" if margin >= GOAL_MARGIN else "FAIL"
        print(f"  RL - SFT only = {margin * 100:+.1f} points (goal >= +5): {verdict}")
        summary["rl_minus_sft_only"] = margin
    recorder.write(summary, announce=True)
    plot(recorder.points, args.png, args.budget_minutes)
    print(f"plot: {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
