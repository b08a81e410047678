"""``roll-agent train`` and ``roll-agent sft``: command-line options -> ``Config`` -> a run."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import rollenv
from rollenv.multi_agent_registration import multi_agent_spec
from trainer.algorithms.registry import ALGORITHMS
from trainer.cli.library_output import quiet_library_output
from trainer.config import Config, ConfigError, load_config, preset_names
from trainer.training.run_folder import check_run_folder
from trainer.training.training_points import TrainingPointRecorder

if TYPE_CHECKING:
    from leaderboard.suites import Suite
    from trainer.training.pipeline import Pipeline
    from trainer.training.run_view import RunSummary
    from trainer.training.stop_request import RunStopped


def config_from_args(args: argparse.Namespace) -> Config:
    """The preset for ``--env`` (or ``--config``), then the flags, then every ``--set``.

    ``--env`` names a preset (``sokoban``) when one exists, else any registered env id, which
    runs with the default settings. Raises ``ConfigError`` or ``UnknownEnvError`` with a clear
    message.
    """
    overrides: list[str] = []
    if args.config:
        preset = args.config
    elif args.env.lower() in preset_names():
        preset = args.env.lower()
    elif getattr(args, "self_play", False):  # a game of several seats, by its multi-agent id
        preset = None
        overrides.append(f"env.id={multi_agent_spec(args.env).id}")
    else:
        preset = None
        overrides.append(f"env.id={rollenv.spec(args.env).id}")
    algo = getattr(args, "algo", None)
    if algo:
        overrides.append(f"algorithm.name={algo}")
        spec = ALGORITHMS.get(algo)  # an unknown name is the config's error to report
        implied = []
        if spec is not None and spec.needs_full_context:
            implied.append(("env.context", "full"))
        if spec is not None and spec.needs_every_episode:
            # even the episodes whose group returns were all equal (a critic's loss uses them)
            implied.append(("algorithm.skip_zero_advantage", "false"))
        for key, value in implied:
            if not any(s.startswith(f"{key}=") for s in args.set):
                overrides.append(f"{key}={value}")
    for flag, key in (
        ("model", "model.name"),
        ("steps", "train.steps"),
        ("output", "train.output_dir"),
        ("seed", "train.seed"),
        ("strategy", "train.strategy"),
        ("workers", "train.workers"),
        ("agent", "agent.function"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            overrides.append(f"{key}={value}")
    if getattr(args, "self_play", False):
        overrides.append("env.self_play=true")
    if getattr(args, "ray", False) or getattr(args, "ray_address", None):
        overrides.append("rollout.mode=ray")
    if getattr(args, "ray_address", None):
        overrides.append(f"rollout.ray_address={args.ray_address}")
    return load_config(preset, overrides + args.set)


def run_train(args: argparse.Namespace) -> int:
    """Runs the pipeline with the run view, library output in ``<run>/train.log``, and ends with
    the summary (or, stopped in the warm start, how to resume)."""
    from trainer.training.pipeline import Pipeline, plan_phases, plan_text, run_clock
    from trainer.training.run_view import make_run_view
    from trainer.training.stop_request import RunStopped

    config = config_from_args(args)
    run_dir = Path(config.train.output_dir)
    suite = _leaderboard_suite(args)
    check_run_folder(config, resume=args.resume, overwrite=getattr(args, "overwrite", False))
    phases = plan_phases(config, resume=args.resume)
    clock = run_clock(config, resume=args.resume)
    view = make_run_view(
        phases,
        title=f"roll-agent train · {config.env.id} · {config.model.name} · {run_dir}",
        run_clock=clock,
    )
    view.message(plan_text(config, phases))
    pipeline = None
    recorder = TrainingPointRecorder(getattr(args, "db", None), run_dir, config, view.message)
    try:
        with quiet_library_output(run_dir / "train.log"):
            pipeline = Pipeline(
                config,
                resume=args.resume,
                view=view,
                on_evaluation=recorder.record,
                clock=clock,
            )
            pipeline.run()
    except RunStopped as stopped:
        view.close(_summary(args, config, None, stopped))
        return 0
    except BaseException:
        view.close()
        raise
    finally:
        recorder.close()
    view.close(_summary(args, config, pipeline))
    if suite is not None and not pipeline.stopped_early:
        # the train command runs it: this module imports no command
        args.final_evaluation = _final_evaluation_arguments(args, config, suite)
        return 0 if args.final_evaluation else 1
    return 0


def _leaderboard_suite(args: argparse.Namespace) -> Suite | None:
    """``--leaderboard SUITE``, read before training so a wrong name fails at once."""
    if not getattr(args, "leaderboard", None):
        return None
    from leaderboard.suites import SuiteError, load_suite

    try:
        return load_suite(args.leaderboard)
    except SuiteError as error:
        raise ConfigError(f"--leaderboard: {error}") from None


def _final_evaluation_arguments(
    args: argparse.Namespace, config: Config, suite: Suite
) -> tuple[list[str], list[str]] | None:
    """``--leaderboard``: the ``roll-agent eval`` arguments that put the newest checkpoint's
    model on ``suite``, into ``--db``, and the command line the results record (the suite by
    its label); ``None``: no checkpoint."""
    from trainer.training.checkpoint import latest_checkpoint

    checkpoint = latest_checkpoint(Path(config.train.output_dir))
    if checkpoint is None:
        print("no checkpoint to evaluate on the leaderboard")
        return None
    model = str(checkpoint / "model")
    options = ["--model", model, "--max-new-tokens", str(config.sampling.max_new_tokens)]
    if getattr(args, "db", None):
        options += ["--db", args.db]
    arguments = ["eval", "--suite", str(suite.path), *options]
    return arguments, ["eval", "--suite", suite.label, *options]


def _summary(
    args: argparse.Namespace,
    config: Config,
    pipeline: Pipeline | None,
    stopped: RunStopped | None = None,
) -> RunSummary:
    """The run's evaluations, its newest checkpoint, and the commands that use it."""
    from trainer.evaluation.log import CURVE_FILE, EvaluationLog, plot_learning_curve
    from trainer.training.checkpoint import latest_checkpoint
    from trainer.training.pipeline import RL
    from trainer.training.run_view import RunSummary
    from trainer.training.sft import WARM_START

    run_dir = Path(config.train.output_dir)
    points = EvaluationLog(run_dir).points()
    curve = plot_learning_curve(
        points,
        run_dir / CURVE_FILE,
        f"{config.model.name} on {config.env.id}: greedy success, {run_dir}",
    )
    start_success = points[0].success if points and points[0].step == 0 else None
    resume = shlex.join(["roll-agent", *_without_resume(args.command_line), "--resume"])
    if pipeline is None:  # stopped in the warm start
        assert stopped is not None
        return RunSummary(
            stopped_early=True,
            step=stopped.step,
            best_eval=None,
            final_eval=None,
            checkpoint=stopped.checkpoint,
            commands=(("resume", resume),),
            phase=stopped.phase,
            start_success=start_success,
            curve=curve,
        )
    checkpoint = latest_checkpoint(Path(config.train.output_dir))
    commands: list[tuple[str, str]] = []
    if checkpoint is not None:
        model = shlex.quote(str(checkpoint / "model"))
        env = shlex.quote(args.env)
        settings = "".join(
            f" --set {shlex.quote(value)}"
            for flag, value in zip(args.command_line, args.command_line[1:], strict=False)
            if flag == "--set" and value.startswith("env.")
        )
        commands += [
            ("evaluate", f"roll-agent eval --env {env} --model {model}{settings}"),
            ("serve", f"roll-agent serve --model {model}"),
            (
                "episodes",
                f"roll-agent eval --suite smoke --model {model} && roll-agent leaderboard "
                f"serve --port 8080, then open {_episodes_page(checkpoint)}",
            ),
        ]
    without_rl = config.train.steps == 0
    if pipeline.stopped_early:
        commands.append(("resume", resume))
    elif not without_rl:
        commands.append(("train on", _train_on(args.command_line, config, pipeline)))
    evaluations = pipeline.evaluations
    return RunSummary(
        stopped_early=pipeline.stopped_early,
        # a run that is its warm start ends at the warm start's last step
        step=evaluations[-1][0] if without_rl and evaluations else pipeline.step,
        phase=WARM_START if without_rl else RL,
        best_eval=max(evaluations, key=lambda e: (e[1], e[0])) if evaluations else None,
        final_eval=evaluations[-1] if evaluations else None,
        checkpoint=checkpoint,
        commands=tuple(commands),
        start_success=start_success,
        curve=curve,
    )


def _episodes_page(checkpoint: Path) -> str:
    """The leaderboard page listing a checkpoint's evaluated episodes (each opens the episode
    viewer), once ``roll-agent leaderboard serve --port 8080`` serves it."""
    try:
        from leaderboard.site.paths import model_path
        from trainer.evaluation.suite import parse_model
    except ImportError:  # the page needs the [leaderboard] extra
        return "http://127.0.0.1:8080 (pip install 'rollenv[leaderboard]')"
    return f"http://127.0.0.1:8080/{model_path(parse_model(str(checkpoint / 'model')).name)}"


def _train_on(command_line: list[str], config: Config, pipeline: Pipeline) -> str:
    """The command that trains a finished run as long again: twice the minutes where the time
    limit ended it (the clock goes on from the checkpoint's), else twice the steps."""
    budget = config.train.max_minutes
    if pipeline.out_of_time and budget is not None:
        kept = _without_setting(_without_resume(command_line), "train.max_minutes")
        more = ["--set", f"train.max_minutes={2 * budget:g}", "--resume"]
    else:
        kept = _without_resume(command_line, drop_steps=True)
        more = ["--steps", str(2 * pipeline.step), "--resume"]
    return shlex.join(["roll-agent", *kept, *more])


def _without_setting(command_line: list[str], field: str) -> list[str]:
    """``command_line`` without its ``--set FIELD=...``."""
    kept: list[str] = []
    arguments = iter(command_line)
    for argument in arguments:
        if argument == "--set":
            value = next(arguments, "")
            if not value.startswith(f"{field}="):
                kept += [argument, value]
        elif not argument.startswith(f"--set={field}="):
            kept.append(argument)
    return kept


def _without_resume(command_line: list[str], *, drop_steps: bool = False) -> list[str]:
    """``command_line`` without ``--resume`` and ``--overwrite`` (and, with ``drop_steps``, its
    ``--steps``): the commands that go on from a run add ``--resume`` themselves."""
    kept: list[str] = []
    arguments = iter(command_line)
    for argument in arguments:
        if argument in ("--resume", "--overwrite") or (
            drop_steps and argument.startswith("--steps=")
        ):
            continue
        if drop_steps and argument == "--steps":
            next(arguments, None)
            continue
        kept.append(argument)
    return kept


def run_sft(args: argparse.Namespace) -> int:
    from trainer.training.sft import supervised_warm_start
    from trainer.training.stop_request import StopRequest

    if args.episodes is not None:
        args.set = [f"sft.episodes={args.episodes}", *args.set]
    config = config_from_args(args)
    check_run_folder(config, resume=args.resume, overwrite=getattr(args, "overwrite", False))
    stop = StopRequest()
    with quiet_library_output(Path(config.train.output_dir) / "train.log"), stop.installed():
        state = supervised_warm_start(config, resume=args.resume, stop=stop)
    if not state.finished:
        print(f"Stopped at step {state.step}; continue with --resume.")
        return 0
    # --resume: the warm start is this run's, so RL continues the run in the same folder
    train = shlex.join(
        ["roll-agent", "train", "--env", args.env, "--output", config.train.output_dir]
        + ["--model", str(state.checkpoint / "model"), "--set", "sft.before_rl=false", "--resume"]
    )
    print(f"Saved {state.checkpoint}; train from it with: {train}")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from trainer.evaluation.held_out import evaluate_model

    config = config_from_args(args)
    with quiet_library_output(Path(config.train.output_dir) / "eval.log"):
        metrics = evaluate_model(config, args.episodes)
    if config.env.self_play:
        _print_seat_matches(config, args.episodes, metrics)
        return 0
    print(
        f"{config.env.id}: {args.episodes} greedy episodes (seeds 0-{args.episodes - 1}) of "
        f"{config.model.name}"
    )
    for key in ("success", "return", "valid_action_rate", "turns"):
        if f"eval/{key}" in metrics:
            print(f"  {key}: {metrics[f'eval/{key}']:.3f}")
    return 0


def _print_seat_matches(config: Config, games: int, metrics: dict[str, float]) -> None:
    """The shares of wins, draws and losses of each seat against each fixed player."""
    from rollenv.commands.terminal import print_table

    rows = []
    for key in metrics:
        parts = key.split("/")
        if len(parts) == 4 and parts[3] == "win":
            _, player, seat, _ = parts
            shares = [metrics[f"eval/{player}/{seat}/{o}"] for o in ("win", "draw", "loss")]
            rows.append([player, seat, *(f"{100 * share:.1f}%" for share in shares)])
    title = (
        f"{config.env.id}: {config.model.name}, greedy, {games} games a seat against each "
        f"player (seeds 0-{games - 1})"
    )
    print_table(["against", "seat", "win", "draw", "loss"], rows, title=title)
