"""GiGPO advantages (Group-in-Group Policy Optimization, arXiv 2505.10978).

Two levels of group-relative credit, added per step:

* episode level: GRPO over the episode returns of a group (same start state);
* step level: within an episode group, steps taken from the *same state* (the anchor: the env
  state without history) form an "anchor group", even across trajectories, and the discounted
  return from each step is compared with the others taken from that state.

    R_t       = r_t + gamma * R_{t+1}                 (per trajectory, backwards; R_T = 0)
    A_episode = grpo(episode_return, group)           (broadcast to every step)
    A_step    = R_t - mean_{anchor group} R           (/ (std + eps) if std_normalize)
    A         = A_episode + step_weight * A_step
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch
from torch import Tensor

from trainer.algorithms._groups import center_within_groups, check_per_trajectory
from trainer.algorithms.grpo import grpo_advantages


def discounted_returns(rewards: Tensor, gamma: float) -> Tensor:
    """Discounted return from each step to the end of the episode.

    Args:
        rewards: 1-D tensor, the reward of each step.
        gamma: discount factor.

    Returns:
        1-D tensor shaped like ``rewards``: ``R_t = r_t + gamma * R_{t+1}``, ``R_T = 0``.

    Example:
        >>> import torch
        >>> discounted_returns(torch.tensor([0.0, 0.0, 1.0]), gamma=0.5)
        tensor([0.2500, 0.5000, 1.0000])
    """
    returns = torch.zeros_like(rewards)
    running = rewards.new_zeros(())
    for t in reversed(range(rewards.shape[0])):
        running = rewards[t] + gamma * running  # R_t = r_t + gamma * R_{t+1}
        returns[t] = running
    return returns


def gigpo_advantages(
    episode_returns: Tensor,
    group_ids: Tensor,
    step_rewards: Sequence[Tensor],
    step_anchors: Sequence[Sequence[Hashable]],
    *,
    gamma: float = 0.95,
    step_weight: float = 1.0,
    std_normalize: bool = False,
    eps: float = 1e-6,
) -> list[Tensor]:
    """Per-step GiGPO advantages.

    Anchor groups are keyed by ``(group_id, anchor)``: equal anchors in different episode
    groups never mix, while within one episode group they span trajectories and may hold
    several steps of one trajectory (a revisited state). Degenerate groups (a single member, or
    all values equal) give 0 at both levels, as in :func:`grpo_advantages`. Std, where used, is
    the unbiased sample std. ``std_normalize=False`` (the default) is the paper's
    "mean_norm" variant that verl-agent ships as default; ``True`` divides both levels by
    ``std + eps``.

    Args:
        episode_returns: 1-D float tensor ``(T,)``, one return per trajectory.
        group_ids: 1-D integer tensor ``(T,)``; trajectories with equal ids share a start state.
        step_rewards: ``T`` 1-D tensors, the reward of each step of each trajectory.
        step_anchors: ``T`` lists of hashable anchors, the env state before each step; each the
            length of that trajectory's ``step_rewards``.
        gamma: discount for the step-level return.
        step_weight: weight ``w`` of the step-level advantage.
        std_normalize: divide by the group std at both levels.
        eps: added to the std before dividing.

    Returns:
        ``T`` 1-D tensors, the advantage of each step of each trajectory.

    Example:
        Two trajectories from state "s": one goes to "a" and wins, one goes to "b" and loses.

        >>> import torch
        >>> adv = gigpo_advantages(
        ...     torch.tensor([1.0, 0.0]),
        ...     torch.tensor([0, 0]),
        ...     [torch.tensor([0.0, 1.0]), torch.tensor([0.0, 0.0])],
        ...     [["s", "a"], ["s", "b"]],
        ...     gamma=0.5,
        ... )
        >>> adv  # episode: +-0.5; step at "s": returns 0.5 and 0, mean 0.25
        [tensor([0.7500, 0.5000]), tensor([-0.7500, -0.5000])]
    """
    check_per_trajectory(episode_returns, group_ids, "episode_returns")
    num_traj = episode_returns.shape[0]
    if len(step_rewards) != num_traj or len(step_anchors) != num_traj:
        raise ValueError(
            f"step_rewards and step_anchors need one entry per trajectory ({num_traj}), got "
            f"{len(step_rewards)} and {len(step_anchors)}"
        )
    for i, (rewards, anchors) in enumerate(zip(step_rewards, step_anchors, strict=True)):
        if rewards.dim() != 1 or rewards.shape[0] != len(anchors):
            raise ValueError(
                f"trajectory {i}: step_rewards has shape {tuple(rewards.shape)} but "
                f"step_anchors has {len(anchors)} anchors"
            )
    if num_traj == 0:
        return []

    # episode level: A_episode_i = grpo(R_i), one value per trajectory
    episode_adv = grpo_advantages(episode_returns, group_ids, std_normalize=std_normalize, eps=eps)

    # step level: R_t = r_t + gamma * R_{t+1}, per trajectory; then all steps side by side
    step_returns = torch.cat([discounted_returns(r, gamma) for r in step_rewards])
    # anchor group of a step = (episode group, anchor), numbered in order of first appearance
    anchor_group_of: dict[tuple[int, Hashable], int] = {}
    step_group = [
        anchor_group_of.setdefault((int(g), anchor), len(anchor_group_of))
        for g, anchors in zip(group_ids.tolist(), step_anchors, strict=True)
        for anchor in anchors
    ]
    # A_step_t = R_t - mean_{anchor group} R    (/ (std + eps) if std_normalize)
    step_adv = center_within_groups(
        step_returns,
        torch.tensor(step_group, dtype=torch.long, device=step_returns.device),
        len(anchor_group_of),
        std_normalize=std_normalize,
        eps=eps,
    )

    # A_t = A_episode + w * A_step_t, split back into trajectories
    lengths = [r.shape[0] for r in step_rewards]
    per_step_episode_adv = torch.repeat_interleave(
        episode_adv.to(step_adv.dtype), torch.tensor(lengths, device=step_adv.device)
    )
    return list(torch.split(per_step_episode_adv + step_weight * step_adv, lengths))
