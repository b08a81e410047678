"""RL algorithms as pure functions over tensors: advantage estimators, filtering, losses.

Nothing here holds state or touches a model: the pipeline passes in rewards, log-probs,
values and masks, and gets back advantages, masks and scalar losses.

* advantages: :func:`grpo_advantages` (GRPO / StarPO), :func:`gigpo_advantages`,
  :func:`gae_advantages` (PPO with a critic), :func:`reinforce_pp_advantages`,
  :func:`rloo_advantages`, :func:`raft_advantages`;
* filtering: :func:`starpo_s_filter`, :func:`nonzero_advantage_filter`;
* losses: :func:`ppo_policy_loss`, :func:`value_loss`, :func:`kl_penalty`,
  :func:`entropy_from_logits`, and :func:`aggregate_loss` which they share.
"""

from __future__ import annotations

from trainer.algorithms.filtering import nonzero_advantage_filter, starpo_s_filter
from trainer.algorithms.gae import gae_advantages
from trainer.algorithms.gigpo import discounted_returns, gigpo_advantages
from trainer.algorithms.grpo import grpo_advantages
from trainer.algorithms.kl import KL_ESTIMATORS, kl_penalty
from trainer.algorithms.losses import (
    AGGREGATIONS,
    aggregate_loss,
    entropy_from_logits,
    ppo_policy_loss,
    value_loss,
)
from trainer.algorithms.raft import raft_advantages
from trainer.algorithms.reinforce_pp import reinforce_pp_advantages
from trainer.algorithms.rloo import rloo_advantages

__all__ = [
    "AGGREGATIONS",
    "KL_ESTIMATORS",
    "aggregate_loss",
    "discounted_returns",
    "entropy_from_logits",
    "gae_advantages",
    "gigpo_advantages",
    "grpo_advantages",
    "kl_penalty",
    "nonzero_advantage_filter",
    "ppo_policy_loss",
    "raft_advantages",
    "reinforce_pp_advantages",
    "rloo_advantages",
    "starpo_s_filter",
    "value_loss",
]
