"""StarPO-S filtering against groups ranked by hand; zero-advantage filtering on hand-built
advantages."""

from __future__ import annotations

import pytest
import torch

from trainer.algorithms import grpo_advantages, nonzero_advantage_filter, starpo_s_filter

# four groups of two, unbiased std = |a - b| / sqrt(2):
#   g10 {1, 1}: 0;  g20 {0, 1}: 0.7071;  g30 {0, 0.5}: 0.3536;  g40 {0, 2}: 1.4142
# ranked: g40 > g20 > g30 > g10
REWARDS = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.0, 2.0])
GROUP_IDS = torch.tensor([10, 10, 20, 20, 30, 30, 40, 40])


@pytest.mark.parametrize(
    ("keep_fraction", "kept_groups"),
    [
        (0.25, {40}),  # ceil(0.25 * 4) = 1
        (0.5, {40, 20}),  # ceil(0.5 * 4) = 2
        (0.6, {40, 20, 30}),  # ceil(2.4) = 3
        (1.0, {10, 20, 30, 40}),
        (0.01, {40}),  # ceil(0.04) = 1: at least one group
    ],
)
def test_keeps_the_highest_std_groups(keep_fraction, kept_groups):
    keep = starpo_s_filter(REWARDS, GROUP_IDS, keep_fraction=keep_fraction)
    assert keep.dtype == torch.bool
    expected = [int(g) in kept_groups for g in GROUP_IDS]
    assert keep.tolist() == expected


def test_ties_go_to_the_group_that_comes_first_in_the_batch():
    # g9 {0, 1} and g2 {1, 0} both have std 0.7071, g5 {0, 0} has 0; keep ceil(1/3 * 3) = 1.
    # g9 comes first in the batch (though its id is larger), so g9 is kept
    rewards = torch.tensor([0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    group_ids = torch.tensor([9, 9, 2, 2, 5, 5])
    keep = starpo_s_filter(rewards, group_ids, keep_fraction=1 / 3)
    assert keep.tolist() == [True, True, False, False, False, False]
    # the same groups in the other order: now g2 comes first and is kept
    keep = starpo_s_filter(
        rewards[[2, 3, 0, 1, 4, 5]], group_ids[[2, 3, 0, 1, 4, 5]], keep_fraction=1 / 3
    )
    assert keep.tolist() == [True, True, False, False, False, False]


def test_std_is_unbiased():
    # ga {0, 2} (n=2): unbiased std sqrt(2 / 1) = 1.4142, population std sqrt(2 / 2) = 1
    # gb {0, 0, 2.25} (n=3): mean 0.75, squares 0.5625 + 0.5625 + 2.25 = 3.375
    #   unbiased std sqrt(3.375 / 2) = 1.2990, population std sqrt(3.375 / 3) = 1.0607
    # unbiased ranks ga first (population would rank gb first); keep 1 of 2
    rewards = torch.tensor([0.0, 2.0, 0.0, 0.0, 2.25])
    group_ids = torch.tensor([0, 0, 1, 1, 1])
    keep = starpo_s_filter(rewards, group_ids, keep_fraction=0.5)
    assert keep.tolist() == [True, True, False, False, False]


def test_rounding_is_safe_from_float_noise():
    # 0.3 * 10 = 3.0000000000000004 in floats; ceil must still keep 3 groups, not 4.
    # groups 0..9 with spread (0, g): std grows with g, so groups 9, 8, 7 are kept
    rewards = torch.tensor([[0.0, float(g)] for g in range(10)]).flatten()
    group_ids = torch.arange(10).repeat_interleave(2)
    keep = starpo_s_filter(rewards, group_ids, keep_fraction=0.3)
    assert keep.tolist() == [g >= 7 for g in group_ids.tolist()]


def test_group_of_one_has_zero_std():
    # g0 {5} has std 0 (not NaN), g1 {0, 1} has 0.7071 -> g1 is kept
    keep = starpo_s_filter(
        torch.tensor([5.0, 0.0, 1.0]), torch.tensor([0, 1, 1]), keep_fraction=0.5
    )
    assert keep.tolist() == [False, True, True]


@pytest.mark.parametrize("keep_fraction", [0.0, -0.1, 1.5])
def test_keep_fraction_out_of_range_is_rejected(keep_fraction):
    with pytest.raises(ValueError, match="keep_fraction"):
        starpo_s_filter(REWARDS, GROUP_IDS, keep_fraction=keep_fraction)


def test_a_group_of_equal_returns_is_dropped_and_a_mixed_one_kept():
    # group 0 all solved (equal returns), group 1 mixed; full context: one sample per episode
    rewards = torch.tensor([9.5, 9.5, 9.5, 9.5, 9.25, -1.0, -1.0, 9.75])
    group_ids = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    per_episode = grpo_advantages(rewards, group_ids, std_normalize=False)
    mask = torch.tensor([0.0, 0.0, 1.0, 1.0])  # two prompt tokens, then two reply tokens
    advantages = [value * torch.ones(4) for value in per_episode]
    keep = nonzero_advantage_filter(advantages, [mask] * 8, list(range(8)), num_trajectories=8)
    assert keep.tolist() == [False] * 4 + [True] * 4


def test_an_episode_is_kept_when_any_of_its_samples_has_a_nonzero_advantage():
    # window mode: episode 0 has two turn samples, only the second carries credit (GiGPO step
    # advantage); episode 1's only nonzero advantage sits on a prompt token, which is not trained
    advantages = [torch.zeros(3), torch.tensor([0.0, 0.0, -0.3]), torch.tensor([2.0, 0.0, 0.0])]
    masks = [torch.tensor([0.0, 1.0, 1.0])] * 3
    keep = nonzero_advantage_filter(advantages, masks, [0, 0, 1], num_trajectories=2)
    assert keep.tolist() == [True, False]


def test_zero_advantage_filter_checks_one_entry_per_sample():
    with pytest.raises(ValueError, match="one entry per sample"):
        nonzero_advantage_filter([torch.zeros(2)], [], [0], num_trajectories=1)
