"""``roll-agent eval``: a model's greedy episodes on an env's held-out seeds, as the run's own
evaluations play them (seeds ``0 .. N-1``, the prompts and sampling of the config).

Example:
    $ roll-agent eval --env sokoban --model runs/sokoban/checkpoints/step-200/model --episodes 64
"""

from __future__ import annotations

from dataclasses import replace

from trainer.config import Config
from trainer.generation.from_config import generator_for, sampling_params
from trainer.models import load_model
from trainer.pipeline import rollout_metrics
from trainer.rollout.env_manager import EnvManager
from trainer.strategies.from_config import resolve_device

__all__ = ["evaluate_model"]


def evaluate_model(config: Config, episodes: int) -> dict[str, float]:
    """Plays ``episodes`` greedy episodes of ``config.model`` on seeds ``0 .. episodes - 1`` of
    ``config.env``, made with its ``eval_kwargs``; returns ``rollout_metrics`` under ``eval/``
    (success, return, valid...)."""
    model, tokenizer = load_model(config.model.name, seed=config.train.seed)
    device = resolve_device(config.train.device)
    model.to(device)
    generator = generator_for(config, model, tokenizer, device)
    greedy = replace(sampling_params(config, tokenizer), temperature=0.0)
    manager = EnvManager.from_config(config, tokenizer, generator, 1, greedy, evaluation=True)
    seeds = list(range(episodes))
    return rollout_metrics(manager.rollout(seeds, group_ids=seeds), "eval")
