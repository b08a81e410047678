"""What ``train``, ``sft`` and ``eval --env`` share: the run's options (env, config, model, run
folder, overrides, strategy) and the call into ``trainer.cli.launch`` that turns a config
mistake into a one-line usage error."""

from __future__ import annotations

import argparse
import sys

from rollenv.commands.arguments import (
    PROG,
    UsageError,
    integer,
    positive_int,
)
from trainer.strategy_registry import STRATEGIES

INTERRUPTED = 130

__all__ = ["add_run_options", "add_strategy_options", "run_with_config"]


def add_run_options(parser: argparse.ArgumentParser) -> None:
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


def add_strategy_options(parser: argparse.ArgumentParser) -> None:
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


def run_with_config(args: argparse.Namespace, function: str) -> int:
    from rollenv import UnknownEnvError
    from trainer.cli import launch
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
