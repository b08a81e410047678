"""GRPO advantages (DeepSeekMath, arXiv 2402.03300): a trajectory's reward against its group's.

Every trajectory of a group starts from the same state (same prompt / same env seed). The
group's mean reward is the baseline, so no critic is needed:

    A_i = (R_i - mean_{j in g(i)} R_j) / (std_{j in g(i)} R_j + eps)

StarPO (RAGEN) uses the same estimator over whole multi-turn trajectories.
"""

from __future__ import annotations

from torch import Tensor

from trainer.algorithms._groups import center_within_groups, check_per_trajectory, group_index


def grpo_advantages(
    rewards: Tensor, group_ids: Tensor, *, std_normalize: bool = True, eps: float = 1e-6
) -> Tensor:
    """Group-relative advantage, one value per trajectory.

    The std is the unbiased sample std (``torch.std``, divides by ``n - 1``), as verl's
    ``compute_grpo_outcome_advantage``. Degenerate groups give 0 for every member: a group of
    one (verl would return ``R / (1 + eps)`` there; a lone sample has no baseline, so we give it
    no signal) and a group whose rewards are all equal (zero std; 0, never NaN or noise).

    Args:
        rewards: 1-D float tensor, one scalar reward per trajectory.
        group_ids: 1-D integer tensor of the same length; any ints, not necessarily contiguous.
            Trajectories with equal ids form a group.
        std_normalize: divide by the group std (GRPO). ``False`` gives ``R - mean``
            (Dr. GRPO, arXiv 2503.20783).
        eps: added to the std before dividing.

    Returns:
        1-D tensor shaped like ``rewards``.

    Example:
        >>> import torch
        >>> rewards = torch.tensor([1.0, 0.0, 0.0, 1.0])
        >>> group_ids = torch.tensor([7, 7, 3, 3])
        >>> grpo_advantages(rewards, group_ids, std_normalize=False)
        tensor([ 0.5000, -0.5000, -0.5000,  0.5000])
        >>> grpo_advantages(rewards, group_ids).round(decimals=4)  # std of {1, 0} is sqrt(1/2)
        tensor([ 0.7071, -0.7071, -0.7071,  0.7071])
    """
    check_per_trajectory(rewards, group_ids)
    inverse, num_groups = group_index(group_ids)
    # A_i = (R_i - mean_g) / (std_g + eps)    (or R_i - mean_g without std_normalize)
    return center_within_groups(rewards, inverse, num_groups, std_normalize=std_normalize, eps=eps)
