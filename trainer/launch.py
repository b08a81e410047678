"""``roll-agent train`` and ``roll-agent sft``: command-line options -> ``Config`` -> a run."""

from __future__ import annotations

import argparse

import rollenv
from trainer.config import Config, load_config, preset_names


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
    else:
        preset = None
        overrides.append(f"env.id={rollenv.spec(args.env).id}")
    if args.algo:
        overrides.append(f"algorithm.name={args.algo}")
        if args.algo == "ppo" and not any(s.startswith("env.context=") for s in args.set):
            overrides.append("env.context=full")  # the critic scores whole episodes
    for flag, key in (
        ("model", "model.name"),
        ("steps", "train.steps"),
        ("output", "train.output_dir"),
        ("seed", "train.seed"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            overrides.append(f"{key}={value}")
    if getattr(args, "ray", False) or getattr(args, "ray_address", None):
        overrides.append("rollout.mode=ray")
    if getattr(args, "ray_address", None):
        overrides.append(f"rollout.ray_address={args.ray_address}")
    return load_config(preset, overrides + args.set)


def run_train(args: argparse.Namespace) -> int:
    from trainer.pipeline import Pipeline

    config = config_from_args(args)
    pipeline = Pipeline(config, resume=args.resume)
    metrics = pipeline.run()
    if metrics:
        print(f"Done: step {pipeline.step}; run folder {pipeline.run_dir}")
    return 0


def run_sft(args: argparse.Namespace) -> int:
    from trainer.sft import supervised_warm_start

    if args.episodes is not None:
        args.set = [f"sft.episodes={args.episodes}", *args.set]
    config = config_from_args(args)
    folder = supervised_warm_start(config)
    print(
        f"Saved {folder}; train from it with: roll-agent train --env {args.env} "
        f"--model {folder / 'model'} --set sft.before_rl=false"
    )
    return 0
