"""REINFORCE++ advantages (arXiv 2501.03262): return-to-go, normalised over the whole batch.

No critic and no groups: each valid token gets its discounted return-to-go, and the batch of
all valid tokens is standardised, which is REINFORCE++'s baseline:

    G_t = r_t + gamma * G_{t+1}                    (over the valid tokens of a row; G_T = 0)
    A_t = (G_t - mean_batch G) / (std_batch G + eps)
"""

from __future__ import annotations

import torch
from torch import Tensor


def reinforce_pp_advantages(
    token_rewards: Tensor, mask: Tensor, *, gamma: float = 1.0, eps: float = 1e-8
) -> Tensor:
    """REINFORCE++ per-token advantages.

    The return runs over the valid tokens of a row as if they were contiguous (masked
    positions are skipped and their rewards ignored, as in :func:`gae_advantages`; with the
    usual ``gamma=1`` this is the same as OpenRLHF's). Mean and std are taken over every valid
    token of the batch; the std is the population std (divides by the number of valid tokens),
    as OpenRLHF, the paper authors' implementation, computes its masked variance. If every
    valid token has the same return (or there are none) the advantages are all 0. Any KL
    penalty belongs in ``token_rewards`` already (``r_t - coef * kl_t``), as in the paper.

    Args:
        token_rewards: ``(B, L)`` per-token rewards (typically the outcome reward on the last
            valid token, minus the KL penalty on every valid token).
        mask: ``(B, L)``, nonzero on valid tokens.
        gamma: discount factor.
        eps: added to the std before dividing.

    Returns:
        ``(B, L)`` advantages, 0 at masked positions.

    Example:
        >>> import torch
        >>> rewards = torch.tensor([[0.0, 1.0], [0.0, 0.0]])
        >>> mask = torch.tensor([[1, 1], [1, 1]])
        >>> reinforce_pp_advantages(rewards, mask)  # G = [1, 1, 0, 0]: mean 0.5, std 0.5
        tensor([[ 1.,  1.],
                [-1., -1.]])
    """
    if token_rewards.shape != mask.shape or token_rewards.dim() != 2:
        raise ValueError(
            "token_rewards and mask must both be (B, L), got "
            f"{tuple(token_rewards.shape)} and {tuple(mask.shape)}"
        )
    with torch.no_grad():
        valid = mask.bool()
        returns = torch.zeros_like(token_rewards)
        running = token_rewards.new_zeros(token_rewards.shape[0])  # G_{t+1}
        for t in reversed(range(token_rewards.shape[1])):
            # G_t = r_t + gamma * G_{t+1} on valid tokens; a masked token passes G_{t+1} on
            g_t = token_rewards[:, t] + gamma * running
            running = torch.where(valid[:, t], g_t, running)
            returns[:, t] = running

        g = returns[valid]
        if g.numel() == 0 or bool(g.max() == g.min()):
            return torch.zeros_like(token_rewards)
        # A_t = (G_t - mean) / (std + eps), mean and population std over all valid tokens
        mean = g.mean()
        std = g.std(unbiased=False)
        advantages = (returns - mean) / (std + eps)
        return torch.where(valid, advantages, 0.0)
