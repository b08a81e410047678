"""Credit assignment: rewards of trajectories -> an advantage for every sampled token.

:func:`assign_credit` hands the step to the credit function of the estimator that
``algorithm.name`` names in :data:`trainer.algorithms.ALGORITHMS`; the built-ins' are in
:mod:`trainer.algorithms.credit_layouts`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainer.algorithms.registry import algorithm_spec
from trainer.config import AlgorithmConfig
from trainer.rollout.trajectory import Sample, Trajectory


@dataclass
class Credit:
    """Per-token advantages (and PPO returns) of every sample, in trajectory order."""

    advantages: list[torch.Tensor]
    returns: list[torch.Tensor] | None = None


def samples_of(trajectories: list[Trajectory]) -> list[Sample]:
    return [sample for trajectory in trajectories for sample in trajectory.samples]


def assign_credit(
    trajectories: list[Trajectory],
    episode_rewards: torch.Tensor,
    settings: AlgorithmConfig,
    values: list[torch.Tensor] | None = None,
) -> Credit:
    """Advantages for every sampled token of every sample of ``trajectories``.

    Args:
        trajectories: the step's episodes.
        episode_rewards: one scalar per trajectory (the return, possibly KL-penalised).
        settings: which estimator and its constants.
        values: the critic's per-token values of each sample (estimators that need a critic).

    Returns:
        The estimator's advantages (and returns, for one with a critic), one tensor per sample.

    Raises:
        UnknownAlgorithmError: ``settings.name`` is not registered.
    """
    credit = algorithm_spec(settings.name).credit_function()
    return credit(trajectories, episode_rewards, settings, values)
