"""GiGPO advantages against numbers worked out by hand."""

from __future__ import annotations

import pytest
import torch

from trainer.algorithms import discounted_returns, gigpo_advantages


def _lists(tensors: list[torch.Tensor]) -> list[list[float]]:
    return [t.tolist() for t in tensors]


def _approx(rows: list[list[float]]):
    return [pytest.approx(row) for row in rows]


def test_discounted_returns_by_hand():
    # gamma 0.5, rewards (1, 0, 2): R_2 = 2, R_1 = 0 + 0.5 * 2 = 1, R_0 = 1 + 0.5 * 1 = 1.5
    returns = discounted_returns(torch.tensor([1.0, 0.0, 2.0]), gamma=0.5)
    assert returns.tolist() == pytest.approx([1.5, 1.0, 2.0])


# Two episode groups; gamma = 0.5, no std normalisation.
#
# group 0, trajectory A: anchors S -> X -> S (S revisited), rewards (0, 0, 1), return 1
#                        R_2 = 1, R_1 = 0 + 0.5 * 1 = 0.5, R_0 = 0 + 0.5 * 0.5 = 0.25
#          trajectory B: anchors S -> Y, rewards (0, 0), return 0;  R = (0, 0)
# group 1, trajectory C: anchors S -> X, rewards (0, 1), return 1;  R_1 = 1, R_0 = 0.5
#          trajectory D: anchors S, rewards (0,), return 0;  R = (0,)
#
# episode level (R - group mean): group 0 {1, 0} mean 0.5 -> A +0.5, B -0.5;
#                                 group 1 {1, 0} mean 0.5 -> C +0.5, D -0.5
# step level, anchor groups keyed by (group, anchor):
#   (0, S) = {A_0: 0.25, A_2: 1, B_0: 0} (spans A and B, holds two steps of A)
#          mean = 1.25 / 3 = 5/12 -> A_0: 0.25 - 5/12 = -1/6, A_2: 1 - 5/12 = 7/12, B_0: -5/12
#   (0, X) = {A_1}, (0, Y) = {B_1}, (1, X) = {C_1}: singletons -> 0
#     (mixing X across groups would give {0.5, 1}, mean 0.75, nonzero)
#   (1, S) = {C_0: 0.5, D_0: 0} mean 0.25 -> C_0: +0.25, D_0: -0.25
#     (mixing S across groups would give a mean of (0.25 + 1 + 0 + 0.5 + 0) / 5 = 0.35)
# A = A_episode + w * A_step with w = 1:
#   A: (0.5 - 1/6, 0.5 + 0, 0.5 + 7/12) = (1/3, 1/2, 13/12)
#   B: (-0.5 - 5/12, -0.5 + 0) = (-11/12, -1/2)
#   C: (0.5 + 0.25, 0.5 + 0) = (3/4, 1/2)
#   D: (-0.5 - 0.25,) = (-3/4,)
EPISODE_RETURNS = torch.tensor([1.0, 0.0, 1.0, 0.0])
GROUP_IDS = torch.tensor([0, 0, 1, 1])
STEP_REWARDS = [
    torch.tensor([0.0, 0.0, 1.0]),
    torch.tensor([0.0, 0.0]),
    torch.tensor([0.0, 1.0]),
    torch.tensor([0.0]),
]
STEP_ANCHORS = [["S", "X", "S"], ["S", "Y"], ["S", "X"], ["S"]]


def test_anchor_groups_span_trajectories_revisit_and_do_not_mix_across_groups():
    adv = gigpo_advantages(EPISODE_RETURNS, GROUP_IDS, STEP_REWARDS, STEP_ANCHORS, gamma=0.5)
    assert _lists(adv) == _approx(
        [[1 / 3, 1 / 2, 13 / 12], [-11 / 12, -1 / 2], [3 / 4, 1 / 2], [-3 / 4]]
    )


def test_step_weight_scales_only_the_step_level():
    # w = 2: A: (0.5 - 2/6, 0.5, 0.5 + 14/12) = (1/6, 1/2, 5/3); B: (-0.5 - 10/12, -0.5)
    #        C: (0.5 + 0.5, 0.5) = (1, 1/2); D: (-0.5 - 0.5,) = (-1,)
    adv = gigpo_advantages(
        EPISODE_RETURNS, GROUP_IDS, STEP_REWARDS, STEP_ANCHORS, gamma=0.5, step_weight=2.0
    )
    assert _lists(adv) == _approx([[1 / 6, 1 / 2, 5 / 3], [-4 / 3, -1 / 2], [1.0, 1 / 2], [-1.0]])


def test_step_weight_zero_is_grpo_broadcast_to_steps():
    adv = gigpo_advantages(
        EPISODE_RETURNS, GROUP_IDS, STEP_REWARDS, STEP_ANCHORS, gamma=0.5, step_weight=0.0
    )
    assert _lists(adv) == _approx([[0.5, 0.5, 0.5], [-0.5, -0.5], [0.5, 0.5], [-0.5]])


def test_std_normalize_divides_both_levels_by_unbiased_std():
    # gamma 1. group 0, A: anchors S -> S (revisit), rewards (1, 1), return 2; R = (2, 1)
    #                   B: anchors S, rewards (0,), return 0; R = (0,)
    # episode: {2, 0}: mean 1, unbiased std sqrt((1 + 1) / 1) = sqrt(2)
    #   -> A +1 / 1.4142136 = +0.7071068, B -0.7071068
    # step (0, S) = {2, 1, 0}: mean 1, unbiased std sqrt((1 + 0 + 1) / 2) = 1 -> (1, 0, -1)
    # A: (0.7071068 + 1, 0.7071068 + 0), B: (-0.7071068 - 1,)
    adv = gigpo_advantages(
        torch.tensor([2.0, 0.0]),
        torch.tensor([3, 3]),
        [torch.tensor([1.0, 1.0]), torch.tensor([0.0])],
        [["S", "S"], ["S"]],
        gamma=1.0,
        std_normalize=True,
        eps=0.0,
    )
    assert _lists(adv) == _approx([[1.7071068, 0.7071068], [-1.7071068]])


def test_revisit_within_a_lone_trajectory_still_gives_step_signal():
    # one trajectory, a group of one: episode level 0.
    # anchors S -> S, rewards (1, 0), gamma 1: R = (1, 0); (0, S) = {1, 0}, mean 0.5 -> (0.5, -0.5)
    adv = gigpo_advantages(
        torch.tensor([1.0]), torch.tensor([0]), [torch.tensor([1.0, 0.0])], [["S", "S"]], gamma=1.0
    )
    assert _lists(adv) == _approx([[0.5, -0.5]])


def test_degenerate_groups_give_zero():
    # group 0 has one trajectory with distinct anchors: every group is a singleton -> all 0.
    # group 1: equal returns (1, 1) and the shared start state has equal step returns
    #   (gamma 1: R = 1 for both) -> zero spread at both levels -> all 0, never NaN.
    adv = gigpo_advantages(
        torch.tensor([3.0, 1.0, 1.0]),
        torch.tensor([0, 1, 1]),
        [torch.tensor([1.0, 2.0]), torch.tensor([1.0]), torch.tensor([0.0, 1.0])],
        [["a", "b"], ["s"], ["s", "t"]],
        gamma=1.0,
        std_normalize=True,
    )
    assert _lists(adv) == [[0.0, 0.0], [0.0], [0.0, 0.0]]


def test_any_hashable_anchor_and_empty_batch():
    adv = gigpo_advantages(
        torch.tensor([1.0, 0.0]),
        torch.tensor([0, 0]),
        [torch.tensor([1.0]), torch.tensor([0.0])],
        [[(0, 0)], [(0, 0)]],
    )
    # episode +-0.5; step (0, (0,0)) = {1, 0} -> +-0.5: totals +-1
    assert _lists(adv) == _approx([[1.0], [-1.0]])
    assert gigpo_advantages(torch.zeros(0), torch.zeros(0, dtype=torch.long), [], []) == []


def test_mismatched_anchors_are_rejected():
    with pytest.raises(ValueError, match="trajectory 0"):
        gigpo_advantages(
            torch.tensor([1.0]), torch.tensor([0]), [torch.tensor([1.0, 0.0])], [["S"]]
        )
    with pytest.raises(ValueError, match="one entry per trajectory"):
        gigpo_advantages(torch.tensor([1.0, 0.0]), torch.tensor([0, 0]), [], [])
