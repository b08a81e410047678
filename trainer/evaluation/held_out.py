"""Greedy evaluation on an env's held-out seeds, as a run's evaluations and ``roll-agent eval``
play it (seeds ``0 .. N-1``, the prompts and sampling of the config, ``env.eval_kwargs``).

Example:
    $ roll-agent eval --env sokoban --model runs/sokoban/checkpoints/step-200/model --episodes 64
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Any

from trainer.config import Config
from trainer.generation.from_config import generator_for, sampling_params
from trainer.models import load_model
from trainer.rollout.env_manager import EnvManager
from trainer.rollout.metrics import rollout_metrics
from trainer.strategies.from_config import resolve_device

__all__ = ["GreedyEvaluation", "evaluate_model"]


class GreedyEvaluation:
    """Plays greedy episodes on seeds ``0 .. episodes - 1`` of ``config.env`` (its
    ``eval_kwargs``) with ``generator``, and times them.

    Args:
        config: the run's configuration.
        tokenizer: the policy's tokenizer.
        generator: what samples the replies (the run's own, or one of its own: see
            :meth:`with_copy_of`).
        episodes: how many seeds (default ``train.eval_groups``).
        reward_pool: the run's reward workers, for envs whose answers they score.

    Attributes:
        seconds: the time the last evaluation took.
    """

    def __init__(
        self,
        config: Config,
        tokenizer: Any,
        generator: Any,
        episodes: int | None = None,
        reward_pool: Any = None,
    ) -> None:
        greedy = replace(sampling_params(config, tokenizer), temperature=0.0)
        self.generator = generator
        self.manager = EnvManager.from_config(
            config, tokenizer, generator, 1, greedy, reward_pool, evaluation=True
        )
        self.episodes = config.train.eval_groups if episodes is None else episodes
        self.seconds = 0.0

    @classmethod
    def with_copy_of(cls, config: Config, model: Any, tokenizer: Any) -> GreedyEvaluation:
        """An evaluation generating with a copy of ``model`` (keep it current with
        ``generator.update_weights``), for a phase that has no generator of its own (the warm
        start)."""
        device = resolve_device(config.train.device)
        return cls(
            config, tokenizer, generator_for(config, copy.deepcopy(model), tokenizer, device)
        )

    def __call__(self) -> dict[str, float]:
        """The ``eval/`` metrics of one greedy pass over the seeds."""
        started = time.perf_counter()
        seeds = list(range(self.episodes))
        metrics = rollout_metrics(self.manager.rollout(seeds, group_ids=seeds), "eval")
        self.seconds = time.perf_counter() - started
        return metrics

    def close(self) -> None:
        """Closes the envs the evaluation made (a later call makes new ones)."""
        self.manager.close()


def evaluate_model(config: Config, episodes: int) -> dict[str, float]:
    """Plays ``episodes`` greedy episodes of ``config.model`` on seeds ``0 .. episodes - 1`` of
    ``config.env``, made with its ``eval_kwargs``; returns ``rollout_metrics`` under ``eval/``
    (success, return, valid...). Under ``env.self_play``, ``episodes`` games in each seat
    against each fixed player instead (``SeatMatches``: ``eval/<player>/<seat>/win|draw|loss``
    as well)."""
    from trainer.evaluation.seat_matches import SeatMatches

    model, tokenizer = load_model(config.model.name, seed=config.train.seed)
    device = resolve_device(config.train.device)
    model.to(device)
    generator = generator_for(config, model, tokenizer, device)
    if config.env.self_play:
        matches = SeatMatches(config, tokenizer, generator, games=episodes)
        try:
            return matches()
        finally:
            matches.close()
    return GreedyEvaluation(config, tokenizer, generator, episodes)()
