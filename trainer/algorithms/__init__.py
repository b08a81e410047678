"""RL algorithms: the registry of advantage estimators, and pure functions over tensors.

* the registry (:mod:`trainer.algorithms.registry`): :data:`ALGORITHMS`,
  :func:`register_algorithm`, :func:`algorithm_spec`, :class:`AlgorithmSpec`; adding an
  estimator is one module that registers it (see the registry's docstring);
* advantages: :func:`grpo_advantages` (GRPO / StarPO), :func:`gigpo_advantages`,
  :func:`gae_advantages` (PPO with a critic), :func:`reinforce_pp_advantages`,
  :func:`rloo_advantages`, :func:`raft_advantages`;
* filtering: :func:`starpo_s_filter`, :func:`nonzero_advantage_filter`;
* losses: :func:`ppo_policy_loss`, :func:`value_loss`, :func:`kl_penalty`,
  :func:`entropy_from_logits`, and :func:`aggregate_loss` which they share.

Nothing here holds state or touches a model: the pipeline passes in rewards, log-probs,
values and masks, and gets back advantages, masks and scalar losses. The tensor functions
load with their modules on first use, so the CLI and the config read the registry without
importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trainer.algorithms.registry import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    AlgorithmSpec,
    UnknownAlgorithmError,
    algorithm_spec,
    register_algorithm,
    unregister_algorithm,
)

if TYPE_CHECKING:
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

#: The module of each tensor function, imported when the name is first read.
_TENSOR_API = {
    "AGGREGATIONS": "losses",
    "KL_ESTIMATORS": "kl",
    "aggregate_loss": "losses",
    "discounted_returns": "gigpo",
    "entropy_from_logits": "losses",
    "gae_advantages": "gae",
    "gigpo_advantages": "gigpo",
    "grpo_advantages": "grpo",
    "kl_penalty": "kl",
    "nonzero_advantage_filter": "filtering",
    "ppo_policy_loss": "losses",
    "raft_advantages": "raft",
    "reinforce_pp_advantages": "reinforce_pp",
    "rloo_advantages": "rloo",
    "starpo_s_filter": "filtering",
    "value_loss": "losses",
}


def __getattr__(name: str) -> Any:
    module = _TENSOR_API.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_TENSOR_API})


__all__ = [
    "AGGREGATIONS",
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "KL_ESTIMATORS",
    "AlgorithmSpec",
    "UnknownAlgorithmError",
    "aggregate_loss",
    "algorithm_spec",
    "discounted_returns",
    "entropy_from_logits",
    "gae_advantages",
    "gigpo_advantages",
    "grpo_advantages",
    "kl_penalty",
    "nonzero_advantage_filter",
    "ppo_policy_loss",
    "raft_advantages",
    "register_algorithm",
    "reinforce_pp_advantages",
    "rloo_advantages",
    "starpo_s_filter",
    "unregister_algorithm",
    "value_loss",
]
