"""RLOO advantages (REINFORCE Leave-One-Out; Kool et al. 2019, Ahmadian et al. arXiv 2402.14740).

Each trajectory's baseline is the mean reward of the *other* members of its group:

    A_i = R_i - (sum_{j in g(i)} R_j - R_i) / (n_g - 1)
"""

from __future__ import annotations

import torch
from torch import Tensor

from trainer.algorithms._groups import check_per_trajectory, group_index


def rloo_advantages(rewards: Tensor, group_ids: Tensor) -> Tensor:
    """Leave-one-out advantage, one value per trajectory.

    Equivalently ``n / (n - 1) * (R_i - mean_g)``. A group of one has no other member to be a
    baseline and gives 0.

    Args:
        rewards: 1-D float tensor, one scalar reward per trajectory.
        group_ids: 1-D integer tensor of the same length; any ints.

    Returns:
        1-D tensor shaped like ``rewards``.

    Example:
        >>> import torch
        >>> rloo_advantages(torch.tensor([1.0, 0.0, 0.0, 5.0]), torch.tensor([0, 0, 0, 1]))
        tensor([ 1.0000, -0.5000, -0.5000,  0.0000])
    """
    check_per_trajectory(rewards, group_ids)
    inverse, num_groups = group_index(group_ids)
    count = rewards.new_zeros(num_groups).index_add_(0, inverse, torch.ones_like(rewards))
    total = rewards.new_zeros(num_groups).index_add_(0, inverse, rewards)
    # baseline_i = (sum_g - R_i) / (n_g - 1)
    others = (count - 1)[inverse]
    baseline = (total[inverse] - rewards) / others.clamp(min=1)
    # A_i = R_i - baseline_i; a group of one gives 0
    return torch.where(others > 0, rewards - baseline, torch.zeros_like(rewards))
