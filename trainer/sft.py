"""Supervised warm start: fine-tune on the env family's oracle episodes, in RL's exact prompts.

The oracle plays through the same ``EnvManager`` RL uses, so every prompt, chat template and
context mode is identical; its replies are tokenised and closed with the end-of-turn token, and
the model learns them by next-token cross-entropy on the reply tokens only.

Episodes are played as training needs them (``sft.batch_sequences`` per step, fresh seeds), so a
run limited by time rather than by ``sft.episodes`` (``OracleSFT.train(max_seconds=...)``) never
waits on data it will not use. With ``sft.epochs > 1`` the first epoch's episodes are replayed in
a new order.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from rollenv.policies import oracle_for
from trainer.batch import TokenBatch
from trainer.checkpoint import save_checkpoint
from trainer.config import Config
from trainer.credit import samples_of
from trainer.metrics import MetricsLogger
from trainer.models import load_model
from trainer.rollout.env_manager import EnvManager
from trainer.rollout.trajectory import Sample
from trainer.seeds import step_seeds
from trainer.strategies.from_config import build_strategy, resolve_device


def sft_dir(config: Config) -> Path:
    """Where a run's supervised warm start lives: ``<train.output_dir>/sft``."""
    return Path(config.train.output_dir) / "sft"


class OracleSFT:
    """Supervised fine-tuning of ``config.model`` on oracle episodes of ``config.env``.

    Args:
        config: the run's configuration (``sft`` section: episodes, epochs, lr, batch).
        log: where progress lines go.
        metrics_dir: where its metrics are written (default ``<run>/sft``).
        resume_from: a checkpoint :meth:`save` wrote: its weights and optimizer state are
            loaded and training goes on with the episodes after those it had seen.
    """

    def __init__(
        self,
        config: Config,
        *,
        log: Callable[[str], None] = print,
        metrics_dir: Path | None = None,
        resume_from: Path | None = None,
    ) -> None:
        self.config, self.log = config, log
        torch.manual_seed(config.train.seed)
        log(f"Loading model {config.model.name}...")
        self.model, self.tokenizer = load_model(config.model.name, seed=config.train.seed)
        self.model.to(resolve_device(config.train.device))
        self.strategy = build_strategy(
            config, self.model, self.tokenizer.pad_token_id, lr=config.sft.lr
        )
        self.manager = EnvManager(
            config.env.id,
            self.tokenizer,
            None,  # no generator: the oracle writes every reply
            env_kwargs=config.env.make_kwargs,
            group_size=1,
            max_turns=config.env.max_turns,
            context=config.env.context,
            window=config.env.window,
            max_context_tokens=config.env.max_context_tokens,
        )
        self.metrics = MetricsLogger(
            metrics_dir or sft_dir(config), config.train.loggers, config.model_dump()
        )
        self.step = 0
        self.episodes_seen = 0
        self.seconds = 0.0
        if resume_from is not None:
            self.strategy.load(resume_from)
            state = json.loads((Path(resume_from) / "sft_state.json").read_text())
            self.step, self.episodes_seen = state["step"], state["episodes_seen"]
        self._batches = self._batch_stream()

    def _batch_stream(self) -> Iterator[tuple[int, list[Sample]]]:
        sft = self.config.sft
        rng = random.Random(self.config.train.seed)
        seeds = step_seeds(self.config.train.seed, 0, sft.episodes)
        kept: list[Sample] = []
        for start in range(self.episodes_seen, len(seeds), sft.batch_sequences):
            trajectories = self.manager.rollout(
                seeds[start : start + sft.batch_sequences], policy=oracle_for
            )
            self.episodes_seen += len(trajectories)
            samples = samples_of(trajectories)
            if sft.epochs > 1:
                kept += samples
            yield 0, samples
        for epoch in range(1, sft.epochs):
            order = list(range(len(kept)))
            rng.shuffle(order)
            for start in range(0, len(order), sft.batch_sequences):
                yield epoch, [kept[i] for i in order[start : start + sft.batch_sequences]]

    def train(
        self, *, max_steps: int | None = None, max_seconds: float | None = None
    ) -> dict[str, float]:
        """Trains until the episodes and epochs run out, ``max_steps`` more steps are done, or
        ``max_seconds`` more seconds have passed (checked between steps); returns the last
        step's metrics. It can be called again to go on where it stopped."""
        started = time.perf_counter()
        steps = 0
        result: dict[str, float] = {}
        while max_steps is None or steps < max_steps:
            if max_seconds is not None and time.perf_counter() - started >= max_seconds:
                break
            clock = time.perf_counter()
            try:
                epoch, rows = next(self._batches)
            except StopIteration:
                break
            batch = TokenBatch(
                token_ids=[s.token_ids for s in rows],
                loss_mask=[torch.tensor(s.loss_mask, dtype=torch.float32) for s in rows],
                advantages=[torch.zeros(len(s.token_ids)) for s in rows],
                old_logprobs=[torch.zeros(len(s.token_ids)) for s in rows],
            )
            result = self.strategy.supervised_step(batch)
            self.step += 1
            steps += 1
            self.seconds += time.perf_counter() - clock
            self.metrics.log(self.step, {**result, "sft/epoch": epoch})
            self.log(
                f"sft step {self.step}  epoch {epoch + 1}/{self.config.sft.epochs}  "
                f"loss {result['sft/loss']:.4f}  {self.seconds:.0f}s"
            )
        return result

    def save(self, run_dir: Path) -> Path:
        """Writes an atomic checkpoint (``model/`` is a full Hugging Face model, LoRA merged)."""

        def write(folder: Path) -> None:
            self.strategy.save(folder)
            self.tokenizer.save_pretrained(folder / "model")
            state = {"step": self.step, "episodes_seen": self.episodes_seen}
            (folder / "sft_state.json").write_text(json.dumps(state))

        return save_checkpoint(run_dir, self.step, write)

    def close(self) -> None:
        self.metrics.close()


def supervised_warm_start(config: Config, log: Callable[[str], None] = print) -> Path:
    """Trains ``config.model`` on ``config.sft.episodes`` oracle episodes (or for
    ``config.sft.max_minutes``, whichever ends first); returns the checkpoint.

    It is written under ``<train.output_dir>/sft/``, apart from the run's RL checkpoints. Its
    ``model/`` folder is a full Hugging Face model (LoRA merged), ready for
    ``roll-agent train --model <that folder>``.
    """
    sft = OracleSFT(config, log=log)
    limit = config.sft.max_minutes
    sft.train(max_seconds=None if limit is None else 60 * limit)
    sft.close()
    log(f"{sft.episodes_seen} oracle episodes, {sft.step} steps.")
    return sft.save(sft_dir(config))
