"""``roll-agent train``: RL in an environment, from a preset or a config file.

Example:
    $ roll-agent train --env sokoban
    $ roll-agent train --env frozenlake --algo grpo --steps 50 --set algorithm.kl_coef=0.01
"""

from __future__ import annotations

import argparse

from rollenv.commands.arguments import (
    non_negative_int,
)
from rollenv.extras import INSTALL_COMMANDS, require_extra
from trainer.algorithms.registry import ALGORITHMS
from trainer.cli.eval_command import add_eval_command
from trainer.cli.run_options import add_run_options, add_strategy_options, run_with_config

INTERRUPTED = 130

__all__ = ["add_train_command", "run_train"]


def add_train_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "train",
        help="Train a model in an environment with RL.",
        description="Train a policy with RL in a text environment: rollouts, advantages, PPO "
        "updates, weight sync; metrics in the run folder (TensorBoard, JSONL), checkpoints in "
        "<run>/checkpoints/step-N. Ctrl-C saves a checkpoint and stops; --resume continues. "
        f"Needs the [train] extra: {INSTALL_COMMANDS['train']}",
    )
    add_run_options(parser)
    full_context = [name for name, spec in ALGORITHMS.items() if spec.needs_full_context]
    parser.add_argument(
        "--algo",
        choices=list(ALGORITHMS),
        help="algorithm.name, the advantage estimator"
        + (f"; env.context=full with {' or '.join(full_context)}" if full_context else ""),
    )
    parser.add_argument(
        "--steps", type=non_negative_int, help="train.steps (0: no RL, the warm start is the run)"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint of the run"
    )
    parser.add_argument(
        "--agent",
        metavar="MODULE:FUNCTION",
        help="agent.function: an agent program, async def agent(env, llm), plays the episodes "
        "through the gateway instead of the built-in env manager",
    )
    parser.add_argument(
        "--self-play",
        action="store_true",
        help="env.self_play: the policy plays every seat of a game of several seats "
        "(rollenv.multi_agent_ids() lists them) and learns from every seat",
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
    add_strategy_options(parser)
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


# ---------------------------------------------------------------------------------- train, sft
def run_train(args: argparse.Namespace) -> int:
    """``roll-agent train``: builds the config and runs the pipeline."""
    require_extra("torch", "train")
    status = run_with_config(args, "run_train")
    final = getattr(args, "final_evaluation", None)
    if status != 0 or not final:
        return status
    # --leaderboard: the final checkpoint on the suite, as `roll-agent eval` runs it (its parser
    # supplies every other setting's default)
    parser = argparse.ArgumentParser(prog="roll-agent")
    add_eval_command(parser.add_subparsers())
    arguments, command_line = final
    eval_args = parser.parse_args(arguments)
    eval_args.command_line = command_line
    return eval_args.handler(eval_args)
