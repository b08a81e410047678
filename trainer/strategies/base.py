"""The ``Strategy`` protocol: how the policy is updated and where its weights live.

The pipeline and the warm start (``trainer.training.sft``) drive a strategy through these methods
only. The built-in strategies are :class:`~trainer.strategies.torch_strategy.TorchStrategy`
(this process, CPU or one GPU) and :class:`~trainer.strategies.ray_strategy.RayStrategy` (a Ray
group of train workers sharding the update); :mod:`trainer.strategy_registry` names them, and
:func:`~trainer.strategies.from_config.build_strategy` builds the one ``train.strategy`` asks
for. Type annotations only name torch: importing this
module imports neither torch nor Ray.

A registered strategy's builder is a :class:`StrategyBuilder`: it gets a
:class:`StrategyRequest` and returns a :class:`Strategy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch
    from torch import nn

    from trainer.config import Config
    from trainer.strategies.batch import TokenBatch


@runtime_checkable
class Strategy(Protocol):
    """What a training strategy does for the pipeline and the warm start."""

    def sequence_logprobs(
        self, sequences: list[list[int]], masks: list[torch.Tensor], *, with_values: bool = False
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        """Log-probs of the masked tokens under the current policy (and the critic's values,
        ``with_values``), without gradients."""
        ...

    def reference_logprobs(
        self, sequences: list[list[int]], masks: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        """Log-probs of the masked tokens under the frozen reference policy."""
        ...

    def train_step(self, batch: TokenBatch) -> dict[str, float]:
        """One optimiser step of the RL loss on ``batch``; returns metrics."""
        ...

    def supervised_step(self, batch: TokenBatch) -> dict[str, float]:
        """One optimiser step of next-token cross-entropy on ``batch``'s masked tokens (SFT)."""
        ...

    def inference_state_dict(self) -> Mapping[str, torch.Tensor]:
        """Full policy weights for a generator (LoRA merged in)."""
        ...

    def save(self, folder: Path) -> None:
        """Writes the policy and the optimizer state to ``folder``."""
        ...

    def load(self, folder: Path) -> None:
        """Reads back what :meth:`save` wrote."""
        ...

    def load_optimizer_moments(self, folder: Path) -> None:
        """Starts the optimizer from the moments saved in ``folder``, weights untouched."""
        ...

    def close(self) -> None:
        """Releases what the strategy started (train workers, Ray); safe to call twice."""
        ...


@dataclass(frozen=True)
class StrategyRequest:
    """What a strategy's builder gets.

    Attributes:
        config: the run's config.
        model: the policy loaded in this process (``None`` where none was: a strategy whose
            train workers load their own, with the generator elsewhere).
        options: :class:`~trainer.strategies.torch_strategy.TorchStrategy` keyword arguments
            (``pad_id``, ``loss``, ``lr``, ``lora``, ``value_head``, ...).
        model_name: the model train workers load (``model.name``, or the warm start's).
        started_ray: Ray was started to check this strategy; it should stop Ray on ``close``.
    """

    config: Config
    model: nn.Module | None
    options: dict[str, Any]
    model_name: str
    started_ray: bool = False


class StrategyBuilder(Protocol):
    """Builds a strategy for a request (the ``build`` of a registered strategy)."""

    def __call__(self, request: StrategyRequest) -> Strategy: ...


def missing_methods(strategy: object) -> list[str]:
    """The methods of :class:`Strategy` that ``strategy`` lacks.

    Args:
        strategy: any object, e.g. what a registered strategy's builder returned.

    Returns:
        The names of the missing methods, in the protocol's order (empty: it is a Strategy).

    Example:
        >>> missing_methods(object())[:2]
        ['sequence_logprobs', 'reference_logprobs']
    """
    wanted = [name for name in vars(Strategy) if not name.startswith("_")]
    return [name for name in wanted if not callable(getattr(strategy, name, None))]
