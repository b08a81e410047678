"""``roll-agent``: one command for rollenv's environments and its trainer.

Subcommands:

* ``roll-agent envs [--family NAME]``: list the registered environments.
* ``roll-agent play ENV [--seed N] [--max-turns N]``: play an environment in the terminal.
* ``roll-agent check ENV [ENV ...] [--episodes N] [--seed S] [--reward]``: run Gymnasium's env
  checker on environments, then random and oracle episodes, and report their success rates;
  with ``--reward``, ``rollenv.check_reward``'s table of task-ignoring replies against the oracle.
* ``roll-agent train --env ENV [--algo A] [--model M] [--steps N] [--output DIR] [--resume]``:
  reinforcement learning (see ``trainer.pipeline``). A folder that holds a run is refused unless
  ``--resume`` continues it or ``--overwrite`` deletes it (see ``trainer.run_folder``).
* ``roll-agent sft --env ENV [--episodes N]``: supervised warm start on oracle episodes.
* ``roll-agent eval --model M --suite S [--db PATH]``: a model (or ``random`` / ``oracle``) on a
  leaderboard suite, every episode stored; ``--env ENV`` instead: a run's held-out seeds.
* ``roll-agent leaderboard serve|export``: the results database as a web page.
* ``roll-agent serve``: a model behind an OpenAI-compatible API.
* ``roll-agent config [KEY] [--env ENV]``: every training config field, with its description,
  default and allowed values (and a run's values).

Every subcommand imports what it needs inside its handler, so ``roll-agent envs`` never imports
torch or Ray. Mistakes a user can make (an unknown env id, a bad option value, a missing extra)
print one line on stderr and exit with status 2.

Example:
    $ roll-agent envs --family sokoban
    $ roll-agent play Sokoban-v0 --seed 3
    $ roll-agent check Sokoban-v0 --episodes 100
    $ roll-agent check MathVerify-v0 CodeSandbox-v0 --reward --episodes 20
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from trainer.algorithms.registry import ALGORITHMS
from trainer.cli_arguments import (
    PROG,
    USAGE_ERROR,
    OneLineErrorParser,
    UsageError,
    integer,
    non_negative_int,
    positive_int,
)
from trainer.config_command import add_config_command
from trainer.env_commands import add_env_commands
from trainer.eval_commands import add_eval_command, add_leaderboard_command
from trainer.extras import INSTALL_COMMANDS, MissingExtraError, require_extra
from trainer.serve_env_command import add_serve_env_command
from trainer.strategy_registry import STRATEGIES

INTERRUPTED = 130


def _rollenv_version() -> str:
    try:
        return importlib.metadata.version("rollenv")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """Builds the ``roll-agent`` argument parser with all its subcommands."""
    parser = OneLineErrorParser(
        prog=PROG,
        description="Text environments for LLM agents: list them, play them, check them, "
        "and train models in them.",
        epilog=f"Run '{PROG} COMMAND --help' for the options of one command.",
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} (rollenv {_rollenv_version()})"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_env_commands(commands)
    _add_train_command(commands)
    _add_sft_command(commands)
    add_eval_command(commands, run_eval)
    add_leaderboard_command(commands)
    _add_serve_command(commands)
    add_serve_env_command(commands)
    add_config_command(commands)
    return parser


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env",
        required=True,
        metavar="ENV",
        help="a preset (sokoban, frozenlake) or any registered env id",
    )
    parser.add_argument("--config", metavar="FILE", help="a YAML config instead of the preset")
    parser.add_argument("--model", help="smollm2-135m (default), tiny-random, or a model folder")
    parser.add_argument("--output", metavar="DIR", help="the run folder (train.output_dir)")
    parser.add_argument("--seed", type=integer, help="train.seed")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="the run folder already holds a run: delete it (checkpoints, warm start, metrics, "
        "evaluations, TensorBoard events, train.log) and start over; without it (or --resume) "
        "such a folder is refused",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any config field, e.g. --set algorithm.kl_coef=0.01 (repeatable)",
    )


def _add_train_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "train",
        help="Train a model in an environment with RL.",
        description="Train a policy with RL in a text environment: rollouts, advantages, PPO "
        "updates, weight sync; metrics in the run folder (TensorBoard, JSONL), checkpoints in "
        "<run>/checkpoints/step-N. Ctrl-C saves a checkpoint and stops; --resume continues. "
        f"Needs the [train] extra: {INSTALL_COMMANDS['train']}",
    )
    _add_run_options(parser)
    full_context = [name for name, spec in ALGORITHMS.items() if spec.needs_full_context]
    parser.add_argument(
        "--algo",
        choices=list(ALGORITHMS),
        help="algorithm.name, the advantage estimator"
        + (f"; env.context=full with {' or '.join(full_context)}" if full_context else ""),
    )
    parser.add_argument("--steps", type=positive_int, help="train.steps")
    parser.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint of the run"
    )
    parser.add_argument(
        "--ray",
        action="store_true",
        help="play episodes in env manager actors on Ray, a local cluster started for the run "
        "(rollout.mode=ray)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="join this Ray cluster (e.g. 10.0.0.5:6379) instead; implies --ray (the train "
        "workers of a --strategy that has them run there too)",
    )
    _add_strategy_options(parser)
    parser.add_argument(
        "--db",
        help="the leaderboard's results database, where each evaluation point is recorded "
        "with the run's id (default ~/.cache/rollenv/leaderboard.db, or $ROLLENV_CACHE)",
    )
    parser.add_argument(
        "--leaderboard",
        metavar="SUITE",
        help="at the end, evaluate the final checkpoint on this leaderboard suite (e.g. smoke, "
        "core) into --db",
    )
    parser.set_defaults(handler=run_train)


def _add_strategy_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strategy",
        choices=list(STRATEGIES),
        help="train.strategy: "
        + "; ".join(f"{name}: {spec.description}" for name, spec in STRATEGIES.items()),
    )
    in_process = [name for name, spec in STRATEGIES.items() if spec.in_process]
    parser.add_argument(
        "--workers",
        type=positive_int,
        help=f"train.workers: the train workers (1 for {', '.join(in_process)})",
    )


def _add_sft_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "sft",
        help="Fine-tune a model on oracle episodes (warm start).",
        description="Supervised warm start: the env family's oracle plays episodes in the exact "
        "prompt format RL uses, and the model learns its replies. "
        f"Needs the [train] extra: {INSTALL_COMMANDS['train']}",
    )
    _add_run_options(parser)
    parser.add_argument("--episodes", type=positive_int, help="sft.episodes")
    parser.add_argument(
        "--resume", action="store_true", help="continue the run's unfinished warm start"
    )
    _add_strategy_options(parser)
    parser.set_defaults(handler=run_sft)


def _add_serve_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "serve",
        help="Serve a model through an OpenAI-compatible API.",
        description="Serve a model with rollenv's engine (request batching, continuous "
        "batching) at /v1/models, /v1/completions and /v1/chat/completions, for evaluation "
        f"and other tools. Needs the [serve] extra: {INSTALL_COMMANDS['serve']}",
    )
    parser.add_argument(
        "--model",
        default="smollm2-135m",
        help="smollm2-135m (default), tiny-random, or a model folder (a run's checkpoint "
        "model folder works)",
    )
    parser.add_argument("--name", help="the model id clients send (default: --model)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=non_negative_int, default=8000, help="port (8000)")
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default="float32",
        help="weights' and KV cache's dtype (bfloat16 is faster only on CPUs with AVX512-BF16 "
        "or AMX, slower beyond one sequence on AVX2; its log-probs are a few hundredths from "
        "float32's)",
    )
    parser.add_argument(
        "--quantize",
        choices=["int4"],
        help="int4: decode steps of up to 32 sequences read 4-bit copies of the layers (the "
        "GGUF's own Q4_1 values for SmolLM2) and a bfloat16 head: faster decoding for a few "
        "clients on a CPU, its speed and agreement with float32 in benchmarks/serve_load.py",
    )
    parser.add_argument(
        "--max-model-len",
        type=positive_int,
        help="the most tokens a request holds, prompt and reply (default: the model's context)",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=positive_int,
        help="requests generated at once; more wait (default: 64, lowered to fit the KV cache "
        "budget)",
    )
    parser.add_argument(
        "--kv-cache-memory",
        default="0.25",
        help="the KV cache's budget: a size (4GB, 512MiB) or a fraction of this machine's "
        "memory (default 0.25)",
    )
    parser.add_argument(
        "--max-step-tokens",
        type=positive_int,
        default=512,
        help="most tokens a forward pass runs: a longer prompt is read in chunks this size "
        "while the others decode (default 512)",
    )
    parser.add_argument(
        "--queue-timeout",
        type=float,
        default=60.0,
        help="seconds a request may wait for a free sequence before a 503 (default 60)",
    )
    parser.add_argument(
        "--max-waiting",
        type=non_negative_int,
        default=1024,
        help="most requests waiting for a sequence; more get a 503 at once (default 1024)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=5.0,
        help="seconds running requests may finish after SIGTERM or Ctrl-C (default 5)",
    )
    parser.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """``roll-agent serve``: our engine behind an OpenAI-compatible API until Ctrl-C."""
    require_extra("torch", "train")
    require_extra("fastapi", "serve")
    require_extra("uvicorn", "serve")
    from trainer.models import ModelLoadError
    from trainer.openai_server import serve
    from trainer.serving.plan import ServePlanError

    try:
        serve(
            args.model,
            host=args.host,
            port=args.port,
            name=args.name,
            dtype=None if args.dtype == "float32" else args.dtype,
            quantize=args.quantize,
            max_model_len=args.max_model_len,
            max_num_seqs=args.max_num_seqs,
            kv_cache_memory=args.kv_cache_memory,
            max_step_tokens=args.max_step_tokens,
            queue_timeout_s=args.queue_timeout,
            max_waiting=args.max_waiting,
            shutdown_grace_s=args.shutdown_grace,
        )
    except (ModelLoadError, ServePlanError) as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    # stopped cleanly: every request is answered and the engine is closed. Python's own
    # teardown of torch and transformers takes another 1.5 s here, past the grace period
    # a stop promises, and has nothing left to do
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ---------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    """Runs ``roll-agent`` with ``argv`` (default: ``sys.argv[1:]``).

    Args:
        argv: the command-line arguments, without the program name.

    Returns:
        The exit status: 0 on success, 1 when ``check`` finds a problem, 2 on a usage error,
        130 when interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:  # --help, --version and argument errors
        return _exit_status(exit_request.code)
    if args.command is None:
        parser.print_help()
        return USAGE_ERROR
    args.command_line = list(sys.argv[1:] if argv is None else argv)  # for the run summary
    try:
        with _warnings_as_one_line():
            return args.handler(args)
    except (UsageError, MissingExtraError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`roll-agent envs | head`): stop quietly, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _exit_status(code: int | str | None) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _warnings_as_one_line() -> Iterator[None]:
    """Shows warnings (e.g. a plugin that failed to load) as ``warning: ...``, without source."""

    def show(message: Warning | str, *_: Any, **__: Any) -> None:
        print(f"warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


# ---------------------------------------------------------------------------------- train, sft
def run_train(args: argparse.Namespace) -> int:
    """``roll-agent train``: builds the config and runs the pipeline."""
    require_extra("torch", "train")
    return _run_with_config(args, "run_train")


def run_sft(args: argparse.Namespace) -> int:
    """``roll-agent sft``: supervised warm start on oracle episodes."""
    require_extra("torch", "train")
    return _run_with_config(args, "run_sft")


def run_eval(args: argparse.Namespace) -> int:
    """``roll-agent eval --env``: greedy episodes of a model on a run's held-out seeds."""
    require_extra("torch", "train")
    return _run_with_config(args, "run_eval")


def _run_with_config(args: argparse.Namespace, function: str) -> int:
    from rollenv import UnknownEnvError
    from trainer import launch
    from trainer.config import ConfigError
    from trainer.models import ModelLoadError
    from trainer.strategies.train_worker_error import TrainWorkerError as TrainWorkerFailure

    try:
        return getattr(launch, function)(args)
    except (ConfigError, UnknownEnvError, ModelLoadError) as error:
        raise UsageError(str(error)) from None
    except TrainWorkerFailure as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
