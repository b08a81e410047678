"""The training strategy and device a config asks for.

Example:
    >>> from trainer.strategies.from_config import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
"""

from __future__ import annotations

import torch

from trainer.config import Config, ConfigError
from trainer.strategies.torch_strategy import LossSettings, TorchStrategy

__all__ = ["build_strategy", "resolve_device"]


def resolve_device(setting: str) -> torch.device:
    """``auto`` is the GPU when there is one, else the CPU; ``cuda`` without a GPU is an error."""
    if setting == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device=cuda but torch sees no GPU; use auto or cpu")
    if setting == "auto":
        setting = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(setting)


def build_strategy(
    config: Config, model: torch.nn.Module, pad_id: int, *, lr: float | None = None
) -> TorchStrategy:
    """The torch strategy a config describes (``lr`` overrides ``optim.lr``, as SFT does)."""
    algorithm = config.algorithm
    return TorchStrategy(
        model,
        pad_id=pad_id,
        loss=LossSettings(
            clip_low=algorithm.clip_low,
            clip_high=algorithm.clip_high,
            dual_clip=algorithm.dual_clip,
            aggregation=algorithm.aggregation,
            kl_coef=algorithm.kl_coef,
            kl_estimator=algorithm.kl_estimator,
            kl_in_loss=algorithm.kl_mode == "loss",
            entropy_coef=algorithm.entropy_coef,
            value_coef=algorithm.value_coef,
            temperature=max(config.sampling.temperature, 1e-6),
        ),
        lr=config.optim.lr if lr is None else lr,
        weight_decay=config.optim.weight_decay,
        grad_clip=config.optim.grad_clip,
        micro_batch_tokens=config.optim.micro_batch_tokens,
        lora=config.model.lora,
        value_head=algorithm.name == "ppo",
        reference=algorithm.kl_coef > 0,
    )
