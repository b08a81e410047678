"""``roll-agent sft``: the supervised warm start alone, on the env family's oracle episodes.

Example:
    $ roll-agent sft --env sokoban --episodes 256
"""

from __future__ import annotations

import argparse

from rollenv.commands.arguments import (
    positive_int,
)
from rollenv.extras import INSTALL_COMMANDS, require_extra
from trainer.cli.run_options import add_run_options, add_strategy_options, run_with_config

INTERRUPTED = 130

__all__ = ["add_sft_command", "run_sft"]


def add_sft_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "sft",
        help="Fine-tune a model on oracle episodes (warm start).",
        description="Supervised warm start: the env family's oracle plays episodes in the exact "
        "prompt format RL uses, and the model learns its replies. "
        f"Needs the [train] extra: {INSTALL_COMMANDS['train']}",
    )
    add_run_options(parser)
    parser.add_argument("--episodes", type=positive_int, help="sft.episodes")
    parser.add_argument(
        "--resume", action="store_true", help="continue the run's unfinished warm start"
    )
    add_strategy_options(parser)
    parser.set_defaults(handler=run_sft)


def run_sft(args: argparse.Namespace) -> int:
    """``roll-agent sft``: supervised warm start on oracle episodes."""
    require_extra("torch", "train")
    return run_with_config(args, "run_sft")
