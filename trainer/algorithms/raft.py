"""RAFT advantages (reward-ranked fine-tuning; Dong et al. arXiv 2304.06767, Xiong et al.
arXiv 2504.11343): reinforce only the episodes that beat their group, never push one down.

    A_i = max(R_i - mean_{g(i)}(R), 0)        (divided by std_g(R) + eps with std_normalize)

An online rejection-sampling fine-tune weighted by the margin: the policy's own better episodes
are imitated, the worse ones are left out rather than unlearned. On a nearly deterministic
policy the pushes down of GRPO hit tokens that the failed and the successful episodes share;
without them a step is as safe as a supervised one.
"""

from __future__ import annotations

from torch import Tensor

from trainer.algorithms.grpo import grpo_advantages


def raft_advantages(
    rewards: Tensor, group_ids: Tensor, *, std_normalize: bool = True, eps: float = 1e-6
) -> Tensor:
    """The positive part of the GRPO advantage, one value per trajectory.

    Args:
        rewards: 1-D float tensor, one scalar reward per trajectory.
        group_ids: 1-D integer tensor of the same length; any ints.
        std_normalize: divide by the group's std, as GRPO does.
        eps: added to the std.

    Returns:
        1-D tensor shaped like ``rewards``, every entry ``>= 0``.

    Example:
        >>> import torch
        >>> rewards = torch.tensor([9.0, -1.0, -1.0, 9.0, 9.0, 9.0])
        >>> raft_advantages(rewards, torch.tensor([0, 0, 0, 0, 1, 1]), std_normalize=False)
        tensor([5., 0., 0., 5., 0., 0.])
    """
    return grpo_advantages(rewards, group_ids, std_normalize=std_normalize, eps=eps).clamp(min=0)
