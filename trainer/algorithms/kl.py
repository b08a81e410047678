"""Per-token estimators of KL(pi || ref) from tokens sampled from pi (Schulman, "Approximating
KL Divergence", 2020, http://joschu.net/blog/kl-approx.html).

With log r = ref_logp - logp (so r = ref(x) / pi(x), x ~ pi):

    k1 = -log r = logp - ref_logp                  unbiased, high variance, can be negative
    k2 = 0.5 * (log r)^2                           biased, low variance, >= 0
    k3 = (r - 1) - log r                           unbiased, low variance, >= 0
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

KL_ESTIMATORS = ("k1", "k2", "k3")
KLKind = Literal["k1", "k2", "k3"]


def kl_penalty(logprobs: Tensor, ref_logprobs: Tensor, kind: KLKind) -> Tensor:
    """Per-token KL(pi || ref) estimate.

    As a reward penalty the caller subtracts ``coef * kl`` from the token rewards (detach
    first); as a loss term (GRPO's) the caller adds ``coef * aggregate_loss(kl, mask, mode)``.
    ``k3`` is computed as ``expm1(log r) - log r`` (exact near ``log r = 0``) and clamped at 0
    so float rounding can never make it negative; it overflows to ``inf`` only when
    ``ref_logp - logp`` exceeds about 88 in float32.

    Args:
        logprobs: log-probs of the sampled tokens under the policy ``pi``, any shape.
        ref_logprobs: log-probs of the same tokens under the reference policy, same shape.
        kind: ``"k1"``, ``"k2"`` or ``"k3"``.

    Returns:
        Tensor shaped like ``logprobs``; differentiable with respect to both inputs.

    Example:
        >>> import math, torch
        >>> logp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
        >>> kl_penalty(logp, ref, "k1"), kl_penalty(logp, ref, "k3")  # ln 2; 0.5 - 1 + ln 2
        (tensor([0.6931]), tensor([0.1931]))
    """
    if logprobs.shape != ref_logprobs.shape:
        raise ValueError(
            f"logprobs and ref_logprobs must have the same shape, got "
            f"{tuple(logprobs.shape)} and {tuple(ref_logprobs.shape)}"
        )
    log_ratio = ref_logprobs - logprobs  # log r = log ref(x) - log pi(x)
    if kind == "k1":
        return -log_ratio  # k1 = logp - ref_logp
    if kind == "k2":
        return 0.5 * log_ratio**2  # k2 = 0.5 * (logp - ref_logp)^2
    if kind == "k3":
        # k3 = exp(log r) - log r - 1 = expm1(log r) - log r
        return (torch.expm1(log_ratio) - log_ratio).clamp(min=0.0)
    raise ValueError(f"unknown KL estimator {kind!r}; expected one of {', '.join(KL_ESTIMATORS)}")
