"""Which episodes a step trains on.

StarPO-S uncertainty filtering (RAGEN, arXiv 2504.20073).

Groups whose members all got the same reward teach nothing under a group baseline; groups
with the widest spread of rewards are where the policy is uncertain. StarPO-S trains only on
the groups with the highest reward std:

    keep the ceil(keep_fraction * num_groups) groups with the largest std_g(R)

Zero-advantage filtering (DAPO's dynamic sampling, arXiv 2503.14476, without its resampling):
an episode whose every trained token has advantage 0 adds no policy gradient, so it is left
out of the update:

    keep episode i  iff  A_t != 0 for some trained token t of i
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from trainer.algorithms._groups import check_per_trajectory, group_index


def starpo_s_filter(rewards: Tensor, group_ids: Tensor, *, keep_fraction: float) -> Tensor:
    """Mask over trajectories keeping the groups of highest reward std.

    The number of groups kept is ``ceil(keep_fraction * num_groups)``, so at least one group is
    always kept (RAGEN truncates with ``int()``, which can keep none; rounding up never drops
    the last uncertain group). The product is rounded to 9 decimals first, so float noise such
    as ``0.3 * 10 = 3.0000000000000004`` keeps 3 groups, not 4. The std is the unbiased sample
    std (``torch.std``, as RAGEN); a group of one has std 0. Ties are broken by group order:
    the group whose first trajectory comes earlier in the batch wins.

    Args:
        rewards: 1-D float tensor, one scalar reward per trajectory.
        group_ids: 1-D integer tensor of the same length; any ints.
        keep_fraction: fraction of groups to keep, in ``(0, 1]``.

    Returns:
        1-D bool tensor, ``True`` for every trajectory of a kept group.

    Example:
        >>> import torch
        >>> rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.5])
        >>> group_ids = torch.tensor([0, 0, 1, 1, 2, 2])
        >>> starpo_s_filter(rewards, group_ids, keep_fraction=0.5)  # ceil(1.5) = 2 groups
        tensor([False, False,  True,  True,  True,  True])
    """
    if not 0.0 < keep_fraction <= 1.0:
        raise ValueError(f"keep_fraction must be in (0, 1], got {keep_fraction}")
    check_per_trajectory(rewards, group_ids)
    if rewards.numel() == 0:
        return torch.zeros(0, dtype=torch.bool, device=rewards.device)
    inverse, num_groups = group_index(group_ids)  # groups numbered in batch order
    rewards = rewards.detach()

    # std_g = sqrt( sum_{i in g} (R_i - mean_g)^2 / (n_g - 1) ), 0 for a group of one
    count = rewards.new_zeros(num_groups).index_add_(0, inverse, torch.ones_like(rewards))
    mean = rewards.new_zeros(num_groups).index_add_(0, inverse, rewards) / count
    sq_dev = rewards.new_zeros(num_groups).index_add_(0, inverse, (rewards - mean[inverse]) ** 2)
    std = (sq_dev / (count - 1).clamp(min=1)).sqrt()

    # keep the top ceil(keep_fraction * G) groups; a stable sort keeps ties in batch order
    num_keep = min(num_groups, max(1, math.ceil(round(keep_fraction * num_groups, 9))))
    order = torch.sort(std, descending=True, stable=True).indices
    kept_groups = torch.zeros(num_groups, dtype=torch.bool, device=rewards.device)
    kept_groups[order[:num_keep]] = True
    return kept_groups[inverse]


def nonzero_advantage_filter(
    advantages: list[Tensor],
    loss_masks: list[Tensor],
    owners: list[int],
    *,
    num_trajectories: int,
) -> Tensor:
    """Mask over trajectories keeping those with a nonzero advantage on a trained token.

    Works on advantages, not rewards, so it is right for every estimator: under GRPO / StarPO a
    group of equal returns is dropped whole; under GiGPO an episode of such a group is kept when
    a step-level advantage of one of its turns is nonzero.

    Args:
        advantages: per sample, the advantage of each token.
        loss_masks: per sample, nonzero on the tokens the policy is trained on.
        owners: per sample, the index of the trajectory it belongs to (window mode gives a
            trajectory one sample per turn).
        num_trajectories: how many trajectories the step has.

    Returns:
        1-D bool tensor of length ``num_trajectories``.

    Example:
        >>> import torch
        >>> advantages = [torch.tensor([0.0, 0.5]), torch.zeros(2), torch.tensor([0.0, 1.0])]
        >>> masks = [torch.tensor([0.0, 1.0]), torch.ones(2), torch.tensor([1.0, 0.0])]
        >>> nonzero_advantage_filter(advantages, masks, [0, 1, 2], num_trajectories=3)
        tensor([ True, False, False])
    """
    if not len(advantages) == len(loss_masks) == len(owners):
        raise ValueError("advantages, loss_masks and owners must have one entry per sample")
    keep = torch.zeros(num_trajectories, dtype=torch.bool)
    for advantage, mask, owner in zip(advantages, loss_masks, owners, strict=True):
        if bool((advantage[mask > 0] != 0).any()):
            keep[owner] = True
    return keep
