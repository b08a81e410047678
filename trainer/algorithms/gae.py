"""Generalized Advantage Estimation (Schulman et al., arXiv 1506.02438) for PPO with a critic.

Token level, over the valid (response) tokens of each row only; masked positions (prompt,
observation, padding) are skipped as if the valid tokens were contiguous:

    delta_t = r_t + gamma * V_{t+1} - V_t          (V after the last valid token = 0)
    A_t     = delta_t + gamma * lam * A_{t+1}
    R_t     = A_t + V_t                            (the critic's target)
"""

from __future__ import annotations

import torch
from torch import Tensor


def gae_advantages(
    rewards: Tensor, values: Tensor, mask: Tensor, *, gamma: float, lam: float
) -> tuple[Tensor, Tensor]:
    """GAE advantages and returns.

    "Next" means the next *valid* token of the same row: a multi-turn sample whose
    observation tokens sit between two replies is treated as one run of reply tokens, as
    verl's ``compute_gae_advantage_return`` does. Rewards and values at masked positions are
    ignored, so put a turn's reward on a valid token (usually its reply's last). Both outputs
    are computed without autograd (they are targets) and are not whitened.

    Args:
        rewards: ``(B, L)`` per-token rewards.
        values: ``(B, L)`` critic values ``V_t``.
        mask: ``(B, L)``, nonzero on valid tokens.
        gamma: discount factor.
        lam: GAE lambda; ``lam=1`` gives Monte-Carlo return minus value, ``lam=0`` the TD error.

    Returns:
        ``(advantages, returns)``, both ``(B, L)``, 0 at masked positions.

    Example:
        >>> import torch
        >>> adv, ret = gae_advantages(
        ...     torch.tensor([[0.0, 9.0, 1.0]]),
        ...     torch.tensor([[0.5, 9.0, 0.5]]),
        ...     torch.tensor([[1, 0, 1]]),
        ...     gamma=1.0,
        ...     lam=1.0,
        ... )
        >>> adv, ret  # return-to-go over valid tokens (1, 1) minus value (0.5, 0.5)
        (tensor([[0.5000, 0.0000, 0.5000]]), tensor([[1., 0., 1.]]))
    """
    if not (rewards.shape == values.shape == mask.shape) or rewards.dim() != 2:
        raise ValueError(
            "rewards, values and mask must all be (B, L), got "
            f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}"
        )
    with torch.no_grad():
        valid = mask.bool()
        values = values.to(rewards.dtype)
        advantages = torch.zeros_like(rewards)
        next_value = rewards.new_zeros(rewards.shape[0])  # V_{t+1} of the next valid token
        next_advantage = rewards.new_zeros(rewards.shape[0])  # A_{t+1} of the next valid token
        for t in reversed(range(rewards.shape[1])):
            # delta_t = r_t + gamma * V_{t+1} - V_t
            delta = rewards[:, t] + gamma * next_value - values[:, t]
            # A_t = delta_t + gamma * lam * A_{t+1}
            advantage = delta + gamma * lam * next_advantage
            is_valid = valid[:, t]
            advantages[:, t] = torch.where(is_valid, advantage, 0.0)
            # a masked position passes the next valid token's V and A through unchanged
            next_value = torch.where(is_valid, values[:, t], next_value)
            next_advantage = torch.where(is_valid, advantage, next_advantage)
        # R_t = A_t + V_t on valid tokens, 0 elsewhere
        returns = torch.where(valid, advantages + values, 0.0)
    return advantages, returns
