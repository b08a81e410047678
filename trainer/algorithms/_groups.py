"""Group statistics shared by the group-relative estimators (GRPO, GiGPO, RLOO, StarPO-S).

Private: the public functions in this package are the API.
"""

from __future__ import annotations

import torch
from torch import Tensor


def check_per_trajectory(rewards: Tensor, group_ids: Tensor, name: str = "rewards") -> None:
    """Raises ``ValueError`` unless ``rewards`` and ``group_ids`` are 1-D and equally long."""
    if rewards.dim() != 1 or rewards.shape != group_ids.shape:
        raise ValueError(
            f"{name} and group_ids must be 1-D and the same length, got "
            f"{tuple(rewards.shape)} and {tuple(group_ids.shape)}"
        )


def group_index(group_ids: Tensor) -> tuple[Tensor, int]:
    """Map arbitrary integer ids to contiguous group indices ``0..G-1``.

    Groups are numbered in order of first appearance in ``group_ids`` (batch order), so that
    anything that breaks ties "by group order" is deterministic and follows the batch.

    Args:
        group_ids: 1-D integer tensor, one id per item.

    Returns:
        ``(inverse, num_groups)``: ``inverse[i]`` is the index of item ``i``'s group.
    """
    if group_ids.dim() != 1:
        raise ValueError(f"group_ids must be 1-D, got shape {tuple(group_ids.shape)}")
    first_seen: dict[int, int] = {}
    inverse = [first_seen.setdefault(int(g), len(first_seen)) for g in group_ids.tolist()]
    return torch.tensor(inverse, dtype=torch.long, device=group_ids.device), len(first_seen)


def center_within_groups(
    values: Tensor, inverse: Tensor, num_groups: int, *, std_normalize: bool, eps: float
) -> Tensor:
    """``(x - group mean) / (group std + eps)``, or ``x - group mean`` without ``std_normalize``.

    The std is the unbiased sample std (divides by ``n - 1``), as ``torch.std``. A group of one,
    or one whose values are all equal, gives exactly 0 for each member (detected by comparing
    the group's max and min, so float rounding in the mean cannot leak through as noise
    divided by ``eps``).
    """
    # n_g, mean_g = sum_{i in g} x_i / n_g
    count = values.new_zeros(num_groups).index_add_(0, inverse, torch.ones_like(values))
    mean = values.new_zeros(num_groups).index_add_(0, inverse, values) / count
    centered = values - mean[inverse]
    if std_normalize:
        # std_g = sqrt( sum_{i in g} (x_i - mean_g)^2 / (n_g - 1) )   (unbiased, like torch.std)
        sq_dev = values.new_zeros(num_groups).index_add_(0, inverse, centered**2)
        std = (sq_dev / (count - 1).clamp(min=1)).sqrt()
        centered = centered / (std[inverse] + eps)
    # degenerate groups (one member, or zero spread) carry no learning signal: exactly 0
    group_max = values.new_full((num_groups,), float("-inf"))
    group_max = group_max.scatter_reduce(0, inverse, values, reduce="amax")
    group_min = values.new_full((num_groups,), float("inf"))
    group_min = group_min.scatter_reduce(0, inverse, values, reduce="amin")
    degenerate = (count < 2) | (group_max == group_min)
    return torch.where(degenerate[inverse], torch.zeros_like(centered), centered)
