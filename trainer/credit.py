"""Credit assignment: rewards of trajectories -> an advantage for every sampled token.

The estimators themselves are pure functions in ``trainer.algorithms``; this module only lays
their outputs onto the tokens of each ``Sample`` (via ``turn_of_token``):

* ``starpo``, ``grpo``: one GRPO advantage per trajectory, on every sampled token.
* ``rloo``: one leave-one-out advantage per trajectory.
* ``raft``: the positive part of the GRPO advantage, per trajectory (no episode pushed down).
* ``gigpo``: one advantage per turn (episode-level plus anchor-state-level), on that turn's tokens.
* ``reinforce++``: each turn's reward on the last token of its reply, return-to-go per token,
  normalised over the batch.
* ``ppo``: the same token rewards, with GAE against the critic's values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainer.algorithms import (
    gae_advantages,
    gigpo_advantages,
    grpo_advantages,
    raft_advantages,
    reinforce_pp_advantages,
    rloo_advantages,
)
from trainer.batch import pad_values
from trainer.config import AlgorithmConfig
from trainer.rollout.trajectory import Sample, Trajectory


@dataclass
class Credit:
    """Per-token advantages (and PPO returns) of every sample, in trajectory order."""

    advantages: list[torch.Tensor]
    returns: list[torch.Tensor] | None = None


def samples_of(trajectories: list[Trajectory]) -> list[Sample]:
    return [sample for trajectory in trajectories for sample in trajectory.samples]


def _per_trajectory(trajectories: list[Trajectory], values: torch.Tensor) -> list[torch.Tensor]:
    out = []
    for trajectory, value in zip(trajectories, values.tolist(), strict=True):
        for sample in trajectory.samples:
            out.append(torch.tensor(sample.loss_mask, dtype=torch.float32) * value)
    return out


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
        values: the critic's per-token values of each sample (``ppo`` only).
    """
    group_ids = torch.tensor([t.group_id for t in trajectories])
    name = settings.name
    if name in ("starpo", "grpo"):
        scores = grpo_advantages(episode_rewards, group_ids, std_normalize=settings.std_normalize)
        return Credit(_per_trajectory(trajectories, scores))
    if name == "raft":
        scores = raft_advantages(episode_rewards, group_ids, std_normalize=settings.std_normalize)
        return Credit(_per_trajectory(trajectories, scores))
    if name == "rloo":
        return Credit(_per_trajectory(trajectories, rloo_advantages(episode_rewards, group_ids)))
    if name == "gigpo":
        per_step = gigpo_advantages(
            episode_rewards,
            group_ids,
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
    # token-level estimators: rewards on the last token of each reply
    samples, token_rewards = [], []
    for trajectory in trajectories:
        for sample in trajectory.samples:
            samples.append(sample)
            token_rewards.append(_turn_rewards_on_tokens(trajectory, sample))
    length = max(len(s.token_ids) for s in samples)
    rewards = pad_values(token_rewards, length)
    mask = pad_values([torch.tensor(s.loss_mask, dtype=torch.float32) for s in samples], length)
    lengths = [len(s.token_ids) for s in samples]
    if name == "reinforce++":
        advantages = reinforce_pp_advantages(rewards, mask, gamma=settings.gamma)
        return Credit([advantages[i, :n] for i, n in enumerate(lengths)])
    if name == "ppo":
        if values is None:
            raise ValueError("ppo needs the critic's values")
        advantages, returns = gae_advantages(
            rewards, pad_values(values, length), mask, gamma=settings.gamma, lam=settings.gae_lambda
        )
        return Credit(
            [advantages[i, :n] for i, n in enumerate(lengths)],
            [returns[i, :n] for i, n in enumerate(lengths)],
        )
    raise ValueError(f"unknown algorithm {name!r}")
