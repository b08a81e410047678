"""``roll-agent``: one command for rollenv's environments and its trainer.

Subcommands:

* ``roll-agent envs [--family NAME]``: list the registered environments.
* ``roll-agent play ENV [--seed N] [--max-turns N]``: play an environment in the terminal.
* ``roll-agent check ENV [ENV ...] [--episodes N] [--seed S] [--reward]``: run Gymnasium's env
  checker on environments, then random and oracle episodes, and report their success rates;
  with ``--reward``, ``rollenv.check_reward``'s table of task-ignoring replies against the oracle.
* ``roll-agent train --env ENV [--algo A] [--model M] [--steps N] [--output DIR] [--resume]``:
  reinforcement learning (see ``trainer.training.pipeline``). A folder that holds a run is
  refused unless ``--resume`` continues it or ``--overwrite`` deletes it (see
  ``trainer.training.run_folder``).
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

from rollenv.commands import add_hub_commands
from rollenv.commands.arguments import PROG, USAGE_ERROR, OneLineErrorParser, UsageError
from rollenv.extras import MissingExtraError
from trainer.cli.config_command import add_config_command
from trainer.cli.eval_command import add_eval_command
from trainer.cli.leaderboard_command import add_leaderboard_command
from trainer.cli.serve_command import add_serve_command
from trainer.cli.sft_command import add_sft_command
from trainer.cli.train_command import add_train_command

__all__ = ["build_parser", "main"]

INTERRUPTED = 130


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
    add_hub_commands(commands)
    add_train_command(commands)
    add_sft_command(commands)
    add_eval_command(commands)
    add_leaderboard_command(commands)
    add_serve_command(commands)
    add_config_command(commands)
    return parser


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


if __name__ == "__main__":
    raise SystemExit(main())
