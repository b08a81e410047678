"""Token-level losses for policy-gradient training: PPO's clipped policy loss (with verl's dual
clip, and the decoupled form for tokens sampled by an older policy), PPO's clipped value loss,
the entropy of the policy, and how per-token terms are aggregated into one scalar.

All take ``(B, L)`` tensors and a ``mask`` that is nonzero on the tokens to train on
(response tokens); everything at a masked position is ignored, NaN or inf included.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from trainer.algorithms.kl import kl_penalty

AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")
Aggregation = Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"]


def _masked_mean(x: Tensor, valid: Tensor) -> Tensor:
    """Mean of ``x`` over the ``valid`` positions; 0 when there are none."""
    return torch.where(valid, x, 0.0).sum() / valid.sum().clamp(min=1)


def aggregate_loss(per_token: Tensor, mask: Tensor, mode: Aggregation = "token-mean") -> Tensor:
    """Reduce a per-token loss to a scalar over the valid tokens.

    Modes (the last dimension is tokens, the others index sequences):

    * ``token-mean``: ``sum over valid tokens / number of valid tokens``; every token weighs
      the same, so long sequences weigh more (DAPO, verl's default).
    * ``seq-mean-token-mean``: mean over each sequence's valid tokens, then mean over
      sequences; every sequence weighs the same (original GRPO).
    * ``seq-mean-token-sum``: sum over each sequence's valid tokens, then mean over sequences.

    The sequence modes average over the sequences that have at least one valid token: a fully
    masked row (padding) does not dilute the loss (verl's ``exclude_fully_masked_seq``). With
    no valid token at all the result is 0 (still differentiable).

    Args:
        per_token: ``(B, L)`` loss of each token.
        mask: ``(B, L)``, nonzero on valid tokens.
        mode: one of ``AGGREGATIONS``.

    Returns:
        Scalar tensor.

    Raises:
        ValueError: ``mode`` is not one of ``AGGREGATIONS``.

    Example:
        >>> import torch
        >>> loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
        >>> aggregate_loss(loss, mask, "token-mean")  # (1 + 2 + 4) / 3
        tensor(2.3333)
        >>> aggregate_loss(loss, mask, "seq-mean-token-mean")  # (1.5 + 4) / 2
        tensor(2.7500)
        >>> aggregate_loss(loss, mask, "seq-mean-token-sum")  # (3 + 4) / 2
        tensor(3.5000)
    """
    if mode not in AGGREGATIONS:
        raise ValueError(
            f"unknown loss aggregation {mode!r}; expected one of {', '.join(AGGREGATIONS)}"
        )
    if per_token.shape != mask.shape:
        raise ValueError(
            f"per_token and mask must have the same shape, got "
            f"{tuple(per_token.shape)} and {tuple(mask.shape)}"
        )
    valid = mask.bool()
    masked = torch.where(valid, per_token, 0.0)
    if mode == "token-mean":
        # sum_{valid} l / |valid|
        return masked.sum() / valid.sum().clamp(min=1)

    tokens_per_seq = valid.sum(dim=-1)
    seq_loss = masked.sum(dim=-1)  # token-sum: sum_{t valid} l_{b,t}
    if mode == "seq-mean-token-mean":
        seq_loss = seq_loss / tokens_per_seq.clamp(min=1)  # token-mean: / |valid_b|
    # seq-mean over the sequences that have any valid token
    has_tokens = tokens_per_seq > 0
    return torch.where(has_tokens, seq_loss, 0.0).sum() / has_tokens.sum().clamp(min=1)


def ppo_policy_loss(
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = 3.0,
    aggregation: Aggregation = "token-mean",
    behaviour_logprobs: Tensor | None = None,
    importance_cap: float | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO clipped surrogate loss (arXiv 1707.06347), with dual clip (arXiv 1912.09729).

    Per token, with ``ratio = exp(logp - old_logp)``::

        loss = max(-A * ratio, -A * clip(ratio, 1 - clip_low, 1 + clip_high))
        loss = min(loss, -A * dual_clip)        where A < 0 (dual clip)

    With ``behaviour_logprobs`` (the log-probs of the policy that sampled each token, where
    ``old_logprobs`` are then the proximal policy's: the weights before this update), the loss
    is decoupled PPO (AReaL, arXiv 2505.24298): the clip keeps the update near the proximal
    policy, and each token's loss is weighted by how much likelier the proximal policy makes
    it than the behaviour policy did::

        w    = exp(old_logp - behaviour_logp)          (a constant: no gradient flows through it)
        w    = min(w, importance_cap)                  (truncated importance sampling, TIS)
        loss = w * loss

    A token sampled by the proximal policy itself has ``w = 1``: the loss is plain PPO's.

    For a negative advantage, plain PPO leaves the loss unbounded as the ratio grows; the dual
    clip caps it at ``-A * dual_clip`` (as verl's ``clip_ratio_c``). Asymmetric
    ``clip_low``/``clip_high`` is DAPO's "clip-higher". The log-ratio is clamped to
    ``[-20, 20]`` before ``exp`` against overflow, as verl does (such tokens are clipped anyway).
    ``old_logprobs`` and ``advantages`` are treated as constants (detached).

    Args:
        logprobs: ``(B, L)`` log-probs of the sampled tokens under the current policy.
        old_logprobs: ``(B, L)`` log-probs under the policy that sampled them.
        advantages: advantages, broadcastable to ``(B, L)``.
        mask: ``(B, L)``, nonzero on the tokens to train on.
        clip_low: the ratio is clipped below at ``1 - clip_low``.
        clip_high: the ratio is clipped above at ``1 + clip_high``.
        dual_clip: the cap ``c > 1`` on the loss of negative-advantage tokens, in units of
            ``-A``; ``None`` turns dual clip off.
        aggregation: how tokens are reduced to a scalar; see :func:`aggregate_loss`.
        behaviour_logprobs: ``(B, L)`` log-probs under the policy that sampled the tokens,
            when that is not the ``old_logprobs`` policy; ``None``: plain PPO.
        importance_cap: the most an importance weight ``w`` may be; ``None``: untruncated.

    Returns:
        ``(loss, metrics)``. ``loss`` is a scalar to minimise. ``metrics`` (detached scalars,
        means over valid tokens): ``clip_fraction``, the fraction of tokens where the clipped
        term was chosen (clipping active); ``dual_clip_fraction``, the fraction where the dual
        clip cap was chosen; ``approx_kl``, the k3 estimate of KL(old || new),
        ``mean((ratio - 1) - log ratio)``, as CleanRL reports it. With
        ``behaviour_logprobs``, also ``importance_weight_mean`` and ``importance_weight_max``
        (before truncation) and ``importance_capped_fraction``, the fraction of tokens whose
        weight was truncated.

    Example:
        >>> import math, torch
        >>> logp = torch.tensor([[math.log(2.0)]])  # ratio 2 against old_logp = 0
        >>> old, mask = torch.zeros(1, 1), torch.ones(1, 1)
        >>> loss, m = ppo_policy_loss(logp, old, torch.tensor([[1.0]]), mask)
        >>> loss, m["clip_fraction"]  # max(-2, -1.2)
        (tensor(-1.2000), tensor(1.))
        >>> loss, m = ppo_policy_loss(logp, old, torch.tensor([[-1.0]]), mask, dual_clip=1.5)
        >>> loss, m["dual_clip_fraction"]  # min(max(2, 1.2), 1.5)
        (tensor(1.5000), tensor(1.))

        Decoupled, by hand. Two tokens with advantage 1, the current policy equal to the
        proximal one (ratio 1, no clipping): the first was sampled by a policy that gave it
        half the proximal probability (``w = 2``), the second a third of it (``w = 3``,
        truncated to 2.5). The loss is the mean of ``-w * A * ratio``:

        >>> prox = torch.log(torch.tensor([[0.4, 0.3]]))
        >>> behaviour = torch.log(torch.tensor([[0.2, 0.1]]))
        >>> loss, m = ppo_policy_loss(prox, prox, torch.ones(1, 2), torch.ones(1, 2),
        ...                           behaviour_logprobs=behaviour, importance_cap=2.5)
        >>> loss  # -(2 * 1 + 2.5 * 1) / 2
        tensor(-2.2500)
        >>> m["importance_weight_mean"], m["importance_weight_max"], m["importance_capped_fraction"]
        (tensor(2.5000), tensor(3.), tensor(0.5000))
    """
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1 (or None to turn it off), got {dual_clip}")
    if not (0.0 <= clip_low < 1.0 and clip_high >= 0.0):
        raise ValueError(
            f"need 0 <= clip_low < 1 and clip_high >= 0, got clip_low={clip_low}, "
            f"clip_high={clip_high}"
        )
    if not (logprobs.shape == old_logprobs.shape == mask.shape):
        raise ValueError(
            "logprobs, old_logprobs and mask must have the same shape, got "
            f"{tuple(logprobs.shape)}, {tuple(old_logprobs.shape)}, {tuple(mask.shape)}"
        )
    if behaviour_logprobs is not None and behaviour_logprobs.shape != mask.shape:
        raise ValueError(
            f"behaviour_logprobs must have the shape of mask {tuple(mask.shape)}, got "
            f"{tuple(behaviour_logprobs.shape)}"
        )
    if importance_cap is not None and importance_cap <= 0.0:
        raise ValueError(f"importance_cap must be > 0 (or None), got {importance_cap}")
    valid = mask.bool()
    # masked positions are set to 0 first, so a NaN there cannot reach the loss or its gradient
    logprobs = torch.where(valid, logprobs, 0.0)
    old_logprobs = torch.where(valid, old_logprobs.detach(), 0.0)
    advantages = torch.where(valid, advantages.detach(), 0.0)

    # ratio = pi(a|s) / pi_old(a|s) = exp(logp - old_logp)
    log_ratio = (logprobs - old_logprobs).clamp(min=-20.0, max=20.0)
    ratio = torch.exp(log_ratio)

    # loss = max(-A * ratio, -A * clip(ratio, 1 - eps_low, 1 + eps_high))
    loss_unclipped = -advantages * ratio
    loss_clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(loss_unclipped, loss_clipped)
    clipped = loss_clipped > loss_unclipped

    # dual clip, A < 0 only: loss = min(loss, -A * c)
    if dual_clip is not None:
        loss_cap = -advantages * dual_clip
        negative = advantages < 0
        dual_clipped = negative & (per_token > loss_cap)
        per_token = torch.where(negative, torch.minimum(per_token, loss_cap), per_token)
    else:
        dual_clipped = torch.zeros_like(valid)

    importance: dict[str, Tensor] = {}
    if behaviour_logprobs is not None:
        # w = pi_prox(a|s) / pi_behaviour(a|s), truncated at the cap (TIS); a constant
        behaviour = torch.where(valid, behaviour_logprobs.detach(), 0.0)
        weight = torch.exp((old_logprobs - behaviour).clamp(min=-20.0, max=20.0))
        capped = torch.zeros_like(valid)
        if importance_cap is not None:
            capped = valid & (weight > importance_cap)
            per_token = per_token * weight.clamp(max=importance_cap)
        else:
            per_token = per_token * weight
        with torch.no_grad():
            importance = {
                "importance_weight_mean": _masked_mean(weight, valid),
                "importance_weight_max": torch.where(valid, weight, 0.0).max(),
                "importance_capped_fraction": _masked_mean(capped.float(), valid),
            }

    loss = aggregate_loss(per_token, mask, aggregation)
    with torch.no_grad():
        metrics = {
            "clip_fraction": _masked_mean(clipped.float(), valid),
            "dual_clip_fraction": _masked_mean(dual_clipped.float(), valid),
            # k3 of KL(old || new) from tokens sampled by old: (ratio - 1) - log ratio
            "approx_kl": _masked_mean(kl_penalty(old_logprobs, logprobs, "k3"), valid),
            **importance,
        }
    return loss, metrics


def value_loss(
    values: Tensor,
    old_values: Tensor,
    returns: Tensor,
    mask: Tensor,
    *,
    clip: float | None = 0.2,
    aggregation: Aggregation = "token-mean",
) -> Tensor:
    """PPO clipped value loss.

    Per token::

        V_clipped = old_V + clamp(V - old_V, -clip, clip)
        loss      = 0.5 * max((V - R)^2, (V_clipped - R)^2)

    ``clip=None`` gives the plain ``0.5 * (V - R)^2``. ``old_values`` and ``returns`` are
    treated as constants (detached).

    Args:
        values: ``(B, L)`` critic values now.
        old_values: ``(B, L)`` critic values when the batch was collected.
        returns: ``(B, L)`` targets (e.g. from :func:`gae_advantages`).
        mask: ``(B, L)``, nonzero on the tokens to train on.
        clip: how far the new value may move from the old one before its loss stops
            improving; ``None`` turns clipping off.
        aggregation: how tokens are reduced to a scalar; see :func:`aggregate_loss`.

    Returns:
        Scalar loss to minimise (unlike :func:`ppo_policy_loss`, no metrics: the loss itself
        is what gets logged).

    Example:
        >>> import torch
        >>> value_loss(
        ...     torch.tensor([[1.0]]), torch.zeros(1, 1), torch.tensor([[2.0]]), torch.ones(1, 1)
        ... )  # V_clipped = 0.2: 0.5 * max((1 - 2)^2, (0.2 - 2)^2) = 0.5 * 3.24
        tensor(1.6200)
    """
    if not (values.shape == old_values.shape == returns.shape == mask.shape):
        raise ValueError(
            "values, old_values, returns and mask must have the same shape, got "
            f"{tuple(values.shape)}, {tuple(old_values.shape)}, {tuple(returns.shape)}, "
            f"{tuple(mask.shape)}"
        )
    if clip is not None and clip < 0:
        raise ValueError(f"clip must be >= 0 (or None to turn it off), got {clip}")
    valid = mask.bool()
    # masked positions are set to 0 first, so a NaN there cannot reach the loss or its gradient
    values = torch.where(valid, values, 0.0)
    old_values = torch.where(valid, old_values.detach(), 0.0)
    returns = torch.where(valid, returns.detach(), 0.0)

    # (V - R)^2
    loss_unclipped = (values - returns) ** 2
    if clip is None:
        per_token = 0.5 * loss_unclipped
    else:
        # V_clipped = old_V + clamp(V - old_V, -clip, clip);  (V_clipped - R)^2
        values_clipped = old_values + torch.clamp(values - old_values, -clip, clip)
        loss_clipped = (values_clipped - returns) ** 2
        # 0.5 * max(unclipped, clipped)
        per_token = 0.5 * torch.maximum(loss_unclipped, loss_clipped)

    return aggregate_loss(per_token, mask, aggregation)


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of the softmax distribution at each position.

    ``H = -sum_v p_v log p_v`` with ``log p = logits - logsumexp(logits)`` (``log_softmax``),
    which is stable for large logits. A logit of ``-inf`` (a vocabulary entry masked out) has
    ``p = 0`` and contributes 0, with a finite gradient. Half-precision logits are upcast to
    float32.

    Args:
        logits: ``(..., V)`` unnormalised log-probabilities over a vocabulary of size ``V``.

    Returns:
        ``(...)`` entropy in nats; differentiable (for an entropy bonus, subtract
        ``coef * aggregate_loss(entropy, mask)`` from the loss).

    Example:
        >>> import torch
        >>> entropy_from_logits(torch.tensor([[0.0, 0.0], [1000.0, 1000.0]]))  # ln 2, twice
        tensor([0.6931, 0.6931])
    """
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    # log p_v = z_v - logsumexp(z)
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    # H = -sum_v p_v log p_v, with 0 * log 0 = 0 for masked-out (-inf) entries
    logp = logp.masked_fill(torch.isneginf(logp), 0.0)
    return -(p * logp).sum(dim=-1)
