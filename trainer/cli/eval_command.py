"""``roll-agent eval``: a model (or ``random`` / ``oracle``) on a leaderboard suite, every episode
stored; with ``--env`` instead, greedy episodes on a run's held-out seeds.

``eval --suite`` with a baseline never imports torch: it needs only the ``[leaderboard]`` extra.

Example:
    $ roll-agent eval --model oracle --suite smoke
    $ roll-agent eval --model smollm2-135m --suite core --db board.db
    $ roll-agent eval --model openai:http://127.0.0.1:8000/v1#smollm2-135m --suite smoke
    $ roll-agent eval --env sokoban --model runs/sokoban/checkpoints/step-200/model --episodes 64
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from rollenv.commands.arguments import PROG, UsageError, non_negative_int, positive_int
from rollenv.commands.terminal import labelled_progress, print_table
from rollenv.extras import require_extra
from trainer.cli.leaderboard_command import open_store
from trainer.cli.run_options import run_with_config

__all__ = ["add_eval_command", "run_env_eval", "run_suite_eval"]


def add_eval_command(commands: argparse._SubParsersAction) -> None:
    """Adds ``eval``: ``--suite`` (the leaderboard) or ``--env`` (a run's held-out seeds,
    handled by ``run_env_eval``)."""
    parser = commands.add_parser(
        "eval",
        help="Evaluate a model on a leaderboard suite (or on one env's held-out seeds).",
        description="With --suite: play every episode of a versioned leaderboard suite "
        "(leaderboard/suites/*.yaml) with a model or a baseline, greedy unless --temperature "
        "is given, and store each episode with its transcript in the results database; an "
        "interrupted eval resumes when the same command runs again, and an identical eval "
        "already complete is reported, not re-run (--force plays it again). With --env: greedy "
        "episodes on seeds 0..N-1, the seeds a run's evaluations use, printed, not stored.",
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--suite", help="a suite: smoke, core (newest version), core-v0, a .yaml")
    target.add_argument("--env", metavar="ENV", help="a preset or env id (no store)")
    parser.add_argument(
        "--model",
        help="random, oracle, smollm2-135m (default), tiny-random, a model folder, a run's "
        "checkpoint, or openai:http://HOST:PORT/v1#MODEL_ID",
    )
    parser.add_argument(
        "--db",
        help="the results database: a file or postgresql://... URL "
        "(default ~/.cache/rollenv/leaderboard.db, or $ROLLENV_CACHE)",
    )
    parser.add_argument("--force", action="store_true", help="re-run an eval already complete")
    parser.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature (0: greedy)"
    )
    parser.add_argument("--seed", type=non_negative_int, default=0, help="sampling seed (0)")
    parser.add_argument(
        "--max-new-tokens", type=positive_int, default=64, help="tokens a reply may have (64)"
    )
    parser.add_argument("--tokenizer", help="an openai: model's tokenizer (default: its model id)")
    parser.add_argument(
        "--chunk",
        type=positive_int,
        default=32,
        help="finished episodes stored together (32): what an interrupted eval may lose",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=64,
        help="episodes a model plays at once (64)",
    )
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default="float32",
        help="a local model's weights and cache on the continuous engine: float32 (default), "
        "or bfloat16, faster on CPUs with AVX512-BF16 or AMX (its greedy replies may differ; "
        "it is stored as part of the eval)",
    )
    parser.add_argument(
        "--backend",
        choices=["continuous", "hf"],
        default="continuous",
        help="the in-process engine for a local model",
    )
    parser.add_argument("--episodes", type=positive_int, default=32, help="--env: episodes (32)")
    parser.add_argument("--config", metavar="FILE", help="--env: a YAML config")
    parser.add_argument("--output", metavar="DIR", help="--env: the run folder")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="--env: override a config field (repeatable)",
    )

    def handler(args: argparse.Namespace) -> int:
        return run_suite_eval(args) if args.suite else run_env_eval(args)

    parser.set_defaults(handler=handler)


def run_suite_eval(args: argparse.Namespace) -> int:
    """``roll-agent eval --suite``: plays the suite, stores every episode, prints the results."""
    require_extra("sqlalchemy", "leaderboard")
    from leaderboard.suites import SuiteError, load_suite
    from trainer.evaluation.suite import SuiteEvalError, evaluate_suite, parse_model

    model = args.model or "smollm2-135m"
    try:
        suite = load_suite(args.suite)
        choice = parse_model(model)
    except (SuiteError, SuiteEvalError) as error:
        raise UsageError(str(error)) from None
    if choice.kind != "baseline":
        require_extra("torch", "train")
    if choice.kind == "openai":
        require_extra("openai", "serve")
    with open_store(args.db) as store, labelled_progress(suite.episodes) as progress:

        def announce(eval_id: int, stored: int) -> None:
            resumed = f", {stored} stored before" if stored else ""
            print(
                f"{suite.label}: {suite.episodes} episodes of {len(suite.envs)} envs, model "
                f"{choice.name}, into {store.url} (eval {eval_id}{resumed})",
                file=sys.stderr,
            )

        try:
            outcome = evaluate_suite(
                choice,
                suite,
                store,
                temperature=args.temperature,
                seed=args.seed,
                max_new_tokens=args.max_new_tokens,
                chunk=args.chunk,
                batch_size=args.batch_size,
                dtype=args.dtype,
                force=args.force,
                tokenizer_name=args.tokenizer,
                backend=args.backend,
                command=shlex.join([PROG, *args.command_line]),
                progress=progress,
                on_start=announce,
            )
        except SuiteEvalError as error:
            raise UsageError(str(error)) from None
        except _model_errors() as error:
            raise UsageError(str(error)) from None
    if outcome.already_complete:
        print(
            f"already evaluated: eval {outcome.eval_id} of {choice.name} on {suite.label} is "
            "complete in the store (--force plays it again)"
        )
    title = f"{choice.name} on {suite.label} (eval {outcome.eval_id})"
    _print_row(outcome.row, [env.id for env in suite.envs], title=title)
    if not outcome.already_complete:
        print(f"played {outcome.played} episodes in {outcome.wall_s:.1f}s")
    return 0


def _model_errors() -> tuple[type[BaseException], ...]:
    try:
        from trainer.models import ModelLoadError
    except ImportError:  # no [train]: only baselines got this far
        return ()
    return (ModelLoadError,)


def _print_row(row: Any, env_ids: list[str], title: str) -> None:
    rows = []
    for env_id in env_ids:
        result = row.results[env_id]
        rows.append(
            [
                env_id,
                str(result.episodes),
                f"{100 * result.success_rate:.1f}% [{100 * result.low:.1f}, "
                f"{100 * result.high:.1f}]",
                f"{result.mean_return:.3f}",
                f"{result.mean_turns:.2f}",
                f"{result.prompt_tokens}/{result.reply_tokens}",
                f"{result.wall_s:.1f}",
            ]
        )
    overall = "-" if row.overall is None else f"{100 * row.overall:.1f}%"
    rows.append(["overall", "", overall, "", "", "", ""])
    columns = ["env", "episodes", "success [95% CI]", "return", "turns", "tokens in/out", "wall s"]
    print_table(columns, rows, title=title, no_wrap_columns=1)


def run_env_eval(args: argparse.Namespace) -> int:
    """``roll-agent eval --env``: greedy episodes of a model on a run's held-out seeds."""
    require_extra("torch", "train")
    return run_with_config(args, "run_eval")
