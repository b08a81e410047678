"""Supervised warm start: fine-tune on the env family's oracle episodes, in RL's exact prompts.

The oracle plays through the same ``EnvManager`` RL uses, so every prompt, chat template and
context mode is identical; its replies are tokenised and closed with the end-of-turn token, and
the model learns them by next-token cross-entropy on the reply tokens only.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import torch

from rollenv.policies import oracle_for
from trainer.batch import TokenBatch
from trainer.checkpoint import save_checkpoint
from trainer.config import Config
from trainer.credit import samples_of
from trainer.metrics import MetricsLogger
from trainer.models import load_model
from trainer.pipeline import build_strategy, resolve_device, step_seeds
from trainer.rollout.env_manager import EnvManager


def sft_dir(config: Config) -> Path:
    """Where a run's supervised warm start lives: ``<train.output_dir>/sft``."""
    return Path(config.train.output_dir) / "sft"


def supervised_warm_start(config: Config, log: Callable[[str], None] = print) -> Path:
    """Trains ``config.model`` on ``config.sft.episodes`` oracle episodes; returns the checkpoint.

    It is written under ``<train.output_dir>/sft/``, apart from the run's RL checkpoints. Its
    ``model/`` folder is a full Hugging Face model (LoRA merged), ready for
    ``roll-agent train --model <that folder>``.
    """
    sft = config.sft
    torch.manual_seed(config.train.seed)
    log(f"Loading model {config.model.name}...")
    model, tokenizer = load_model(config.model.name, seed=config.train.seed)
    model.to(resolve_device(config.train.device))
    strategy = build_strategy(config, model, tokenizer.pad_token_id, lr=sft.lr)
    manager = EnvManager(
        config.env.id,
        tokenizer,
        None,  # no generator: the oracle writes every reply
        env_kwargs=config.env.kwargs,
        group_size=1,
        max_turns=config.env.max_turns,
        context=config.env.context,
        window=config.env.window,
        max_context_tokens=config.env.max_context_tokens,
    )
    seeds = step_seeds(config.train.seed, 0, sft.episodes)
    trajectories = manager.rollout(seeds, policy=oracle_for)
    samples = samples_of(trajectories)
    solved = sum(t.success for t in trajectories) / len(trajectories)
    log(f"{len(trajectories)} oracle episodes ({solved:.0%} solved), {len(samples)} samples.")

    run_dir = sft_dir(config)
    metrics = MetricsLogger(run_dir, config.train.loggers, config.model_dump())
    rng = random.Random(config.train.seed)
    step = 0
    for epoch in range(sft.epochs):
        order = list(range(len(samples)))
        rng.shuffle(order)
        for start in range(0, len(order), sft.batch_sequences):
            rows = [samples[i] for i in order[start : start + sft.batch_sequences]]
            batch = TokenBatch(
                token_ids=[s.token_ids for s in rows],
                loss_mask=[torch.tensor(s.loss_mask, dtype=torch.float32) for s in rows],
                advantages=[torch.zeros(len(s.token_ids)) for s in rows],
                old_logprobs=[torch.zeros(len(s.token_ids)) for s in rows],
            )
            step += 1
            result = strategy.supervised_step(batch)
            metrics.log(step, {**result, "sft/epoch": epoch})
            log(f"sft step {step}  epoch {epoch + 1}/{sft.epochs}  loss {result['sft/loss']:.4f}")
    metrics.close()

    def write(folder: Path) -> None:
        strategy.save(folder)
        tokenizer.save_pretrained(folder / "model")

    return save_checkpoint(run_dir, step, write)
