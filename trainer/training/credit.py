"""Credit assignment: rewards of trajectories -> an advantage for every sampled token.

:func:`assign_credit` hands the step to the credit function of the estimator that
``algorithm.name`` names in :data:`trainer.algorithms.ALGORITHMS`. The built-in estimators'
credit functions are here, each laying the output of a pure tensor function of
``trainer.algorithms`` onto the tokens of each ``Sample`` (via ``turn_of_token``):

* ``grpo_credit``: one GRPO advantage per trajectory, on every sampled token.
* ``rloo_credit``: one leave-one-out advantage per trajectory.
* ``raft_credit``: the positive part of the GRPO advantage, per trajectory (no episode pushed
  down).
* ``gigpo_credit``: one advantage per turn (episode-level plus anchor-state-level), on that
  turn's tokens.
* ``reinforce_pp_credit``: each turn's reward on the last token of its reply, return-to-go per
  token, normalised over the batch.
* ``gae_credit``: the same token rewards, with GAE against the critic's values.

The registry (:mod:`trainer.algorithms.registry`) says which names use which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from trainer.algorithms import (
    algorithm_spec,
    gae_advantages,
    gigpo_advantages,
    grpo_advantages,
    raft_advantages,
    reinforce_pp_advantages,
    rloo_advantages,
)
from trainer.config import AlgorithmConfig
from trainer.rollout.trajectory import Sample, Trajectory
from trainer.strategies.batch import pad_values


@dataclass
class Credit:
    """Per-token advantages (and PPO returns) of every sample, in trajectory order."""

    advantages: list[torch.Tensor]
    returns: list[torch.Tensor] | None = None


class CreditFunction(Protocol):
    """What an estimator registered in :data:`trainer.algorithms.ALGORITHMS` is called with:
    the step's trajectories, one return per trajectory, the ``algorithm`` section and (for one
    that ``needs_critic``) the critic's per-token values of each sample."""

    def __call__(
        self,
        trajectories: list[Trajectory],
        episode_rewards: torch.Tensor,
        settings: AlgorithmConfig,
        values: list[torch.Tensor] | None = None,
    ) -> Credit: ...


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
    credit: CreditFunction = algorithm_spec(settings.name).credit_function()
    return credit(trajectories, episode_rewards, settings, values)


def per_episode_credit(trajectories: list[Trajectory], scores: torch.Tensor) -> list[torch.Tensor]:
    """Each trajectory's score on every sampled token of each of its samples.

    Args:
        trajectories: the step's episodes.
        scores: one advantage per trajectory.

    Returns:
        One tensor per sample, in trajectory order: the score where the loss mask is 1, else 0.
    """
    out = []
    for trajectory, value in zip(trajectories, scores.tolist(), strict=True):
        for sample in trajectory.samples:
            out.append(torch.tensor(sample.loss_mask, dtype=torch.float32) * value)
    return out


def _group_ids(trajectories: list[Trajectory]) -> torch.Tensor:
    return torch.tensor([t.group_id for t in trajectories])


def _turn_rewards_on_tokens(trajectory: Trajectory, sample: Sample) -> torch.Tensor:
    """Each turn's reward on the last token of that turn's reply in ``sample``."""
    rewards = torch.zeros(len(sample.token_ids))
    last_token_of_turn: dict[int, int] = {}
    for position, turn in enumerate(sample.turn_of_token):
        if turn >= 0:
            last_token_of_turn[turn] = position
    for turn, position in last_token_of_turn.items():
        rewards[position] = trajectory.turns[turn].reward
    return rewards


def _token_rewards(
    trajectories: list[Trajectory],
) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Turn rewards on the last token of each reply, padded: (rewards, loss mask, lengths)."""
    samples, token_rewards = [], []
    for trajectory in trajectories:
        for sample in trajectory.samples:
            samples.append(sample)
            token_rewards.append(_turn_rewards_on_tokens(trajectory, sample))
    length = max(len(s.token_ids) for s in samples)
    rewards = pad_values(token_rewards, length)
    mask = pad_values([torch.tensor(s.loss_mask, dtype=torch.float32) for s in samples], length)
    return rewards, mask, [len(s.token_ids) for s in samples]


def grpo_credit(
    trajectories: list[Trajectory],
    episode_rewards: torch.Tensor,
    settings: AlgorithmConfig,
    values: list[torch.Tensor] | None = None,
) -> Credit:
    """GRPO's (and StarPO's) group-normalised return, on every sampled token of its episode."""
    scores = grpo_advantages(
        episode_rewards, _group_ids(trajectories), std_normalize=settings.std_normalize
    )
    return Credit(per_episode_credit(trajectories, scores))


def raft_credit(
    trajectories: list[Trajectory],
    episode_rewards: torch.Tensor,
    settings: AlgorithmConfig,
    values: list[torch.Tensor] | None = None,
) -> Credit:
    """The positive part of the GRPO advantage, on every sampled token of its episode."""
    scores = raft_advantages(
        episode_rewards, _group_ids(trajectories), std_normalize=settings.std_normalize
    )
    return Credit(per_episode_credit(trajectories, scores))


def rloo_credit(
    trajectories: list[Trajectory],
    episode_rewards: torch.Tensor,
    settings: AlgorithmConfig,
    values: list[torch.Tensor] | None = None,
) -> Credit:
    """The leave-one-out advantage, on every sampled token of its episode."""
    scores = rloo_advantages(episode_rewards, _group_ids(trajectories))
    return Credit(per_episode_credit(trajectories, scores))


def gigpo_credit(
    trajectories: list[Trajectory],
    episode_rewards: torch.Tensor,
    settings: AlgorithmConfig,
    values: list[torch.Tensor] | None = None,
) -> Credit:
    """GiGPO's advantage of each turn, on that turn's sampled tokens."""
    per_step = gigpo_advantages(
        episode_rewards,
        _group_ids(trajectories),
        [torch.tensor(t.step_rewards, dtype=torch.float32) for t in trajectories],
        [t.anchors_start for t in trajectories],
        gamma=settings.gamma,
        step_weight=settings.step_weight,
        std_normalize=settings.std_normalize,
    )
    advantages = []
    for trajectory, steps in zip(trajectories, per_step, strict=True):
        for sample in trajectory.samples:
            turns = torch.tensor(sample.turn_of_token)
            token = torch.where(turns >= 0, steps[turns.clamp(min=0)], torch.zeros(()))
            advantages.append(token.float())
    return Credit(advantages)


def reinforce_pp_credit(
    trajectories: list[Trajectory],
    episode_rewards: torch.Tensor,
    settings: AlgorithmConfig,
    values: list[torch.Tensor] | None = None,
) -> Credit:
    """REINFORCE++'s normalised return-to-go of the turn rewards, per token."""
    rewards, mask, lengths = _token_rewards(trajectories)
    advantages = reinforce_pp_advantages(rewards, mask, gamma=settings.gamma)
    return Credit([advantages[i, :n] for i, n in enumerate(lengths)])


def gae_credit(
    trajectories: list[Trajectory],
    episode_rewards: torch.Tensor,
    settings: AlgorithmConfig,
    values: list[torch.Tensor] | None = None,
) -> Credit:
    """PPO's GAE advantages of the turn rewards against the critic's values, and the returns."""
    rewards, mask, lengths = _token_rewards(trajectories)
    if values is None:
        raise ValueError("gae_credit needs the critic's values")
    advantages, returns = gae_advantages(
        rewards,
        pad_values(values, rewards.shape[1]),
        mask,
        gamma=settings.gamma,
        lam=settings.gae_lambda,
    )
    return Credit(
        [advantages[i, :n] for i, n in enumerate(lengths)],
        [returns[i, :n] for i, n in enumerate(lengths)],
    )
