"""Loss aggregation, PPO policy and value losses and entropy against numbers worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from trainer.algorithms import aggregate_loss, entropy_from_logits, ppo_policy_loss, value_loss

# --- aggregate_loss ----------------------------------------------------------------------

# ragged mask; row 2 is fully masked (padding) and must not dilute the sequence means
PER_TOKEN = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
RAGGED = torch.tensor([[1, 1, 0], [1, 0, 0], [0, 0, 0]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # valid tokens 1, 2 | 4: (1 + 2 + 4) / 3 = 7/3
        ("token-mean", 7 / 3),
        # row means (1 + 2) / 2 = 1.5 and 4 / 1 = 4; mean over the 2 rows with tokens = 2.75
        ("seq-mean-token-mean", 2.75),
        # row sums 3 and 4; mean over the 2 rows with tokens = 3.5
        ("seq-mean-token-sum", 3.5),
    ],
)
def test_aggregation_modes_on_a_ragged_mask(mode, expected):
    assert aggregate_loss(PER_TOKEN, RAGGED, mode).item() == pytest.approx(expected)


def test_aggregation_gradients_weigh_tokens_as_the_mode_says():
    # token-mean: each valid token 1/3; seq-mean-token-mean: row 0 tokens 1/2 * 1/2 = 1/4,
    # row 1 token 1 * 1/2 = 1/2; seq-mean-token-sum: each valid token 1/2
    expected = {
        "token-mean": [[1 / 3, 1 / 3, 0], [1 / 3, 0, 0], [0, 0, 0]],
        "seq-mean-token-mean": [[1 / 4, 1 / 4, 0], [1 / 2, 0, 0], [0, 0, 0]],
        "seq-mean-token-sum": [[1 / 2, 1 / 2, 0], [1 / 2, 0, 0], [0, 0, 0]],
    }
    for mode, grad in expected.items():
        per_token = PER_TOKEN.clone().requires_grad_()
        aggregate_loss(per_token, RAGGED, mode).backward()
        assert_close(per_token.grad, torch.tensor(grad))


def test_masked_nan_is_ignored_and_empty_mask_gives_zero():
    per_token = torch.tensor([[1.0, float("nan")], [float("inf"), 3.0]])
    mask = torch.tensor([[1, 0], [0, 1]])
    assert aggregate_loss(per_token, mask, "token-mean").item() == pytest.approx(2.0)
    assert aggregate_loss(per_token, torch.zeros(2, 2), "seq-mean-token-mean").item() == 0.0


def test_unknown_aggregation_names_the_allowed_ones():
    with pytest.raises(ValueError, match="token-mean, seq-mean-token-mean, seq-mean-token-sum"):
        aggregate_loss(PER_TOKEN, RAGGED, "seq-sum")


# --- ppo_policy_loss ---------------------------------------------------------------------

# old_logp = 0 everywhere, so ratio = exp(logp). clip 0.2 (range [0.8, 1.2]), dual clip 3.
#  tok  A   ratio  -A*ratio  -A*clip(ratio)  max          dual: min(., -3A) for A < 0
#  0   +1   1      -1        -1              -1           -
#  1   +1   2      -2        -1.2            -1.2 clipped -
#  2   +1   0.5    -0.5      -0.8            -0.5         -
#  3   -1   0.5     0.5       0.8             0.8 clipped min(0.8, 3) = 0.8
#  4   -1   5       5         1.2             5           min(5, 3) = 3 (dual clip)
#  5   -2   1.1     2.2       2.2             2.2         min(2.2, 6) = 2.2
# token-mean: (-1 - 1.2 - 0.5 + 0.8 + 3 + 2.2) / 6 = 3.3 / 6 = 0.55
# clip fraction 2/6 (tokens 1 and 3); dual-clip fraction 1/6 (token 4)
# approx KL, k3 = (ratio - 1) - ln ratio:
#   0, 1 - ln 2 = 0.3068528, -0.5 + ln 2 = 0.1931472 (twice), 4 - ln 5 = 2.3905621,
#   0.1 - ln 1.1 = 0.0046898; sum 3.0883991, / 6 = 0.5147332
RATIOS = [1.0, 2.0, 0.5, 0.5, 5.0, 1.1]
ADVANTAGES = torch.tensor([[1.0, 1.0, 1.0, -1.0, -1.0, -2.0]])


def _logp() -> torch.Tensor:
    return torch.tensor([[math.log(r) for r in RATIOS]], requires_grad=True)


def test_ppo_loss_and_metrics_by_hand():
    logp = _logp()
    loss, metrics = ppo_policy_loss(logp, torch.zeros(1, 6), ADVANTAGES, torch.ones(1, 6))
    assert loss.item() == pytest.approx(0.55)
    assert metrics["clip_fraction"].item() == pytest.approx(2 / 6)
    assert metrics["dual_clip_fraction"].item() == pytest.approx(1 / 6)
    assert metrics["approx_kl"].item() == pytest.approx(0.5147332, abs=1e-6)
    assert not any(m.requires_grad for m in metrics.values())


def test_ppo_gradients_by_hand():
    # d(-A * ratio)/d logp = -A * ratio where the unclipped term is chosen, 0 where a clip is:
    #   tok0: -1; tok1: 0 (clipped); tok2: -0.5; tok3: 0 (clipped); tok4: 0 (dual clip);
    #   tok5: -(-2) * 1.1 = 2.2;  all / 6 (token-mean)
    # a positive advantage gets a negative gradient: gradient descent raises its log-prob
    logp = _logp()
    loss, _ = ppo_policy_loss(logp, torch.zeros(1, 6), ADVANTAGES, torch.ones(1, 6))
    loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([-1 / 6, 0, -0.5 / 6, 0, 0, 2.2 / 6], abs=1e-6)
    assert logp.grad[0, 0] < 0


def test_dual_clip_off():
    # token 4 keeps its unclipped 5: (-1 - 1.2 - 0.5 + 0.8 + 5 + 2.2) / 6 = 5.3 / 6
    loss, metrics = ppo_policy_loss(
        _logp(), torch.zeros(1, 6), ADVANTAGES, torch.ones(1, 6), dual_clip=None
    )
    assert loss.item() == pytest.approx(5.3 / 6)
    assert metrics["dual_clip_fraction"].item() == 0.0


def test_dual_clip_activates_for_negative_advantage_with_large_ratio():
    # A = -1, ratio 5: PPO's max(5, 1.2) = 5, dual clip min(5, 3) = 3, constant in logp
    logp = torch.tensor([[math.log(5.0)]], requires_grad=True)
    loss, metrics = ppo_policy_loss(
        logp, torch.zeros(1, 1), torch.tensor([[-1.0]]), torch.ones(1, 1)
    )
    loss.backward()
    assert loss.item() == pytest.approx(3.0)
    assert metrics["dual_clip_fraction"].item() == 1.0
    assert logp.grad.item() == 0.0


@pytest.mark.parametrize("dual_clip", [1.0, 0.5])
def test_dual_clip_must_exceed_one(dual_clip):
    with pytest.raises(ValueError, match="dual_clip"):
        ppo_policy_loss(
            _logp(), torch.zeros(1, 6), ADVANTAGES, torch.ones(1, 6), dual_clip=dual_clip
        )


def test_asymmetric_clip_higher():
    # A = 1, ratio 2, clip_high 0.28: max(-2, -1.28) = -1.28
    # A = 1, ratio 0.5, clip_low 0.4: max(-0.5, -0.6) = -0.5 (unclipped)
    logp = torch.log(torch.tensor([[2.0, 0.5]]))
    loss, metrics = ppo_policy_loss(
        logp, torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2), clip_low=0.4, clip_high=0.28
    )
    assert loss.item() == pytest.approx((-1.28 - 0.5) / 2)
    assert metrics["clip_fraction"].item() == pytest.approx(0.5)


def test_ppo_aggregation_and_masked_nan():
    # row 0: tokens A = 1, ratio 1 -> -1 and A = 2, ratio 1 -> -2; row 1: A = -1, ratio 1 -> 1,
    # then a masked token with NaN log-prob.
    # seq-mean-token-mean: ((-1 - 2) / 2 + 1 / 1) / 2 = (-1.5 + 1) / 2 = -0.25
    logp = torch.tensor([[0.0, 0.0], [0.0, float("nan")]], requires_grad=True)
    adv = torch.tensor([[1.0, 2.0], [-1.0, 5.0]])
    mask = torch.tensor([[1, 1], [1, 0]])
    loss, metrics = ppo_policy_loss(
        logp, torch.zeros(2, 2), adv, mask, aggregation="seq-mean-token-mean"
    )
    loss.backward()
    assert loss.item() == pytest.approx(-0.25)
    # d/dlogp = -A * ratio * weight: row 0 weights 1/4 -> -1/4, -2/4; row 1 weight 1/2 -> 1/2
    assert_close(logp.grad, torch.tensor([[-0.25, -0.5], [0.5, 0.0]]))
    assert metrics["approx_kl"].item() == 0.0


# --- decoupled PPO: tokens sampled by an older policy -----------------------------------


def _policy_gradient(logits, **kwargs):
    """The gradient of the policy loss on ``logits`` (the sampled tokens are 0 and 2)."""
    logits = logits.clone().requires_grad_(True)
    logprobs = logits.log_softmax(-1)[[0, 1], [0, 2]].unsqueeze(0)  # (1, 2)
    loss, metrics = ppo_policy_loss(logprobs, OLD_TWO_TOKENS, ADVANTAGE_TWO, MASK_TWO, **kwargs)
    loss.backward()
    return logits.grad, metrics


LOGITS_TWO = torch.tensor([[0.3, -0.2, 1.1], [0.9, 0.1, -0.4]])
# the proximal policy's log-probs: the ratios are 0.78 and 1.06 (log-probs -1.34 and -1.84), so
# with these advantages neither is clipped: both carry a gradient
OLD_TWO_TOKENS = torch.tensor([[-1.1, -1.9]])
ADVANTAGE_TWO = torch.tensor([[1.5, -0.7]])
MASK_TWO = torch.ones(1, 2)


def test_decoupled_loss_with_every_token_on_policy_has_ppos_gradient():
    plain, _ = _policy_gradient(LOGITS_TWO)
    decoupled, metrics = _policy_gradient(LOGITS_TWO, behaviour_logprobs=OLD_TWO_TOKENS.clone())
    capped, _ = _policy_gradient(
        LOGITS_TWO, behaviour_logprobs=OLD_TWO_TOKENS.clone(), importance_cap=2.0
    )
    assert plain.abs().sum() > 0
    assert torch.equal(decoupled, plain) and torch.equal(capped, plain)
    assert metrics["importance_weight_mean"].item() == 1.0
    assert metrics["importance_capped_fraction"].item() == 0.0


def test_decoupled_loss_weighs_each_tokens_gradient_by_its_importance_weight():
    # the first token was sampled by a policy that gave it a quarter of the proximal
    # probability (w = 4); the second by one that gave it twice as much (w = 1/2)
    behaviour = OLD_TWO_TOKENS + torch.tensor([[-math.log(4.0), math.log(2.0)]])

    def token_gradient(token, **kwargs):
        mask = torch.zeros(1, 2)
        mask[0, token] = 1.0
        logits = LOGITS_TWO.clone().requires_grad_(True)
        logprobs = logits.log_softmax(-1)[[0, 1], [0, 2]].unsqueeze(0)
        loss, _ = ppo_policy_loss(logprobs, OLD_TWO_TOKENS, ADVANTAGE_TWO, mask, **kwargs)
        loss.backward()
        return logits.grad

    for token, weight in ((0, 4.0), (1, 0.5)):
        assert_close(
            token_gradient(token, behaviour_logprobs=behaviour),
            weight * token_gradient(token),
        )
    # truncated at 2: the first token's weight is 2, the second's stays 1/2
    assert_close(
        token_gradient(0, behaviour_logprobs=behaviour, importance_cap=2.0),
        2.0 * token_gradient(0),
    )
    _, metrics = _policy_gradient(LOGITS_TWO, behaviour_logprobs=behaviour, importance_cap=2.0)
    assert metrics["importance_weight_mean"].item() == pytest.approx((4.0 + 0.5) / 2)
    assert metrics["importance_weight_max"].item() == pytest.approx(4.0)
    assert metrics["importance_capped_fraction"].item() == pytest.approx(0.5)


def test_decoupled_loss_refuses_a_misshapen_behaviour_or_a_nonpositive_cap():
    logp = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="behaviour_logprobs must have the shape"):
        ppo_policy_loss(logp, logp, logp, MASK_TWO, behaviour_logprobs=torch.zeros(2, 2))
    with pytest.raises(ValueError, match="importance_cap must be > 0"):
        ppo_policy_loss(logp, logp, logp, MASK_TWO, behaviour_logprobs=logp, importance_cap=0.0)


# --- value_loss --------------------------------------------------------------------------

# clip 0.2, token 3 masked
#  tok  V    old_V  R    (V-R)^2  V_clipped               (V_clip-R)^2  0.5*max
#  0    1    0      2    1        0 + clamp(1) = 0.2      3.24          1.62 (clipped)
#  1    0.5  0.4    1    0.25     0.4 + 0.1 = 0.5         0.25          0.125
#  2    3    2      2    1        2 + 0.2 = 2.2           0.04          0.5
# token-mean: (1.62 + 0.125 + 0.5) / 3 = 2.245 / 3 = 0.7483333
VALUES = [[1.0, 0.5, 3.0, 9.0]]
OLD_VALUES = torch.tensor([[0.0, 0.4, 2.0, 0.0]])
RETURNS = torch.tensor([[2.0, 1.0, 2.0, 0.0]])
VALUE_MASK = torch.tensor([[1, 1, 1, 0]])


def test_clipped_value_loss_by_hand():
    values = torch.tensor(VALUES, requires_grad=True)
    loss = value_loss(values, OLD_VALUES, RETURNS, VALUE_MASK)
    loss.backward()
    assert loss.item() == pytest.approx(2.245 / 3)
    # d/dV: tok0 clipped term chosen and saturated -> 0; tok1 (V - R) = -0.5; tok2 (V - R) = 1;
    # each / 3 (token-mean); masked tok3 -> 0
    assert values.grad[0].tolist() == pytest.approx([0.0, -0.5 / 3, 1 / 3, 0.0])


def test_unclipped_value_loss_by_hand():
    # 0.5 * (1 + 0.25 + 1) / 3 = 1.125 / 3 = 0.375
    loss = value_loss(torch.tensor(VALUES), OLD_VALUES, RETURNS, VALUE_MASK, clip=None)
    assert loss.item() == pytest.approx(0.375)


def test_value_loss_ignores_nan_at_masked_positions():
    # the masked token 3 holds NaN: the loss is still 2.245 / 3 and its gradient 0
    values = torch.tensor([[1.0, 0.5, 3.0, float("nan")]], requires_grad=True)
    loss = value_loss(values, OLD_VALUES, RETURNS, VALUE_MASK)
    loss.backward()
    assert loss.item() == pytest.approx(2.245 / 3)
    assert values.grad[0, 3].item() == 0.0


def test_value_loss_seq_mean_token_sum():
    # one sequence: 1.62 + 0.125 + 0.5 = 2.245
    loss = value_loss(
        torch.tensor(VALUES), OLD_VALUES, RETURNS, VALUE_MASK, aggregation="seq-mean-token-sum"
    )
    assert loss.item() == pytest.approx(2.245)


# --- entropy_from_logits ---------------------------------------------------------------------


def test_entropy_by_hand():
    # uniform over 4: ln 4 = 1.3862944
    # p = (0.5, 0.25, 0.25): 0.5 ln 2 + 2 * 0.25 ln 4 = 0.3465736 + 0.6931472 = 1.0397208
    # logits (0, -inf, ...): a point mass: 0
    # logits (1000, 1000, 1000, 1000): uniform again, no overflow: ln 4
    logits = torch.tensor(
        [
            [0.0, 0.0, 0.0, 0.0],
            [math.log(0.5), math.log(0.25), math.log(0.25), float("-inf")],
            [0.0, float("-inf"), float("-inf"), float("-inf")],
            [1000.0, 1000.0, 1000.0, 1000.0],
        ]
    )
    assert entropy_from_logits(logits).tolist() == pytest.approx(
        [1.3862944, 1.0397208, 0.0, 1.3862944], abs=1e-6
    )


def test_entropy_shape_dtype_and_gradient():
    # (B, L, V) -> (B, L); bfloat16 is computed in float32
    logits = torch.zeros(2, 3, 5, dtype=torch.bfloat16)
    entropy = entropy_from_logits(logits)
    assert entropy.shape == (2, 3) and entropy.dtype == torch.float32
    # two outcomes, logits (z, 0): H is largest at z = 0 (gradient 0) and falls as z grows;
    # with a masked (-inf) third entry the gradient must stay finite
    z = torch.tensor([[0.0, 0.0, float("-inf")], [1.0, 0.0, float("-inf")]], requires_grad=True)
    entropy_from_logits(z).sum().backward()
    assert torch.isfinite(z.grad).all()
    assert z.grad[0, 0].item() == pytest.approx(0.0, abs=1e-7)
    assert z.grad[1, 0].item() < 0
