"""GRPO advantages against numbers worked out by hand."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from trainer.algorithms import grpo_advantages


def test_two_groups_of_two_std_normalized():
    # group 7: {1, 0}: mean 0.5, deviations +-0.5,
    #   unbiased var = (0.5^2 + 0.5^2) / (2 - 1) = 0.5, std = sqrt(0.5) = 0.70710678
    #   A = +-0.5 / 0.70710678 = +-0.70710678 (eps = 0 here)
    # group 3: {0, 1}: the same, mirrored
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), torch.tensor([7, 7, 3, 3]), eps=0.0)
    assert adv.tolist() == pytest.approx([0.70710678, -0.70710678, -0.70710678, 0.70710678])


def test_eps_is_added_to_the_std():
    # 0.5 / (0.70710678 + 0.1) = 0.5 / 0.80710678 = 0.61949...
    adv = grpo_advantages(torch.tensor([1.0, 0.0]), torch.tensor([0, 0]), eps=0.1)
    assert adv.tolist() == pytest.approx([0.6194977, -0.6194977], abs=1e-6)


def test_std_is_unbiased_like_torch_std():
    # {0, 0, 3}: mean 1, deviations (-1, -1, 2), sum of squares 1 + 1 + 4 = 6
    #   unbiased var = 6 / (3 - 1) = 3, std = sqrt(3) = 1.7320508
    #   A = (-1, -1, 2) / 1.7320508 = (-0.5773503, -0.5773503, 1.1547005)
    # (the population std sqrt(6 / 3) = 1.4142 would give (-0.7071, -0.7071, 1.4142))
    adv = grpo_advantages(torch.tensor([0.0, 0.0, 3.0]), torch.tensor([1, 1, 1]), eps=0.0)
    assert adv.tolist() == pytest.approx([-0.5773503, -0.5773503, 1.1547005])


def test_three_members_std_one():
    # {2, 0, 1}: mean 1, deviations (1, -1, 0), unbiased var = (1 + 1 + 0) / 2 = 1, std 1
    adv = grpo_advantages(torch.tensor([2.0, 0.0, 1.0]), torch.tensor([4, 4, 4]), eps=0.0)
    assert adv.tolist() == pytest.approx([1.0, -1.0, 0.0])


def test_without_std_normalize_is_reward_minus_group_mean():
    # group 0: {1, 0, 0}: mean 1/3 -> (2/3, -1/3, -1/3); group 1: {4, 2}: mean 3 -> (1, -1)
    rewards = torch.tensor([1.0, 4.0, 0.0, 2.0, 0.0])
    group_ids = torch.tensor([0, 1, 0, 1, 0])
    adv = grpo_advantages(rewards, group_ids, std_normalize=False)
    assert adv.tolist() == pytest.approx([2 / 3, 1.0, -1 / 3, -1.0, -1 / 3])


def test_group_of_one_gives_zero():
    # group 9 has one member: no baseline, 0 (verl would give R / (1 + eps) = 5)
    # group 2: {1, 3}: mean 2, std sqrt(2) -> (-1, 1) / 1.4142136
    adv = grpo_advantages(torch.tensor([5.0, 1.0, 3.0]), torch.tensor([9, 2, 2]), eps=0.0)
    assert adv.tolist() == pytest.approx([0.0, -0.7071068, 0.7071068])


@pytest.mark.parametrize("std_normalize", [True, False])
def test_zero_std_group_gives_exact_zero_not_nan(std_normalize):
    # {0.1, 0.1, 0.1} in float32: the mean 0.3 / 3 is not exactly 0.1 after rounding, so
    # (R - mean) / (0 + eps) could be float noise blown up by 1e6; it must be exactly 0.
    rewards = torch.tensor([0.1, 0.1, 0.1, 1.0, 0.0], dtype=torch.float32)
    group_ids = torch.tensor([0, 0, 0, 1, 1])
    adv = grpo_advantages(rewards, group_ids, std_normalize=std_normalize, eps=1e-6)
    assert adv[:3].tolist() == [0.0, 0.0, 0.0]
    assert not torch.isnan(adv).any()


def test_non_contiguous_ids_and_groups_do_not_mix():
    # group -2: {0, 1} -> mean 0.5 -> (-0.5, 0.5); group 100: {10, 11} -> mean 10.5 -> (-0.5, 0.5)
    # (mixed together the mean would be 5.5 and the advantages -5.5, -4.5, 4.5, 5.5)
    rewards = torch.tensor([10.0, 0.0, 11.0, 1.0])
    group_ids = torch.tensor([100, -2, 100, -2])
    adv = grpo_advantages(rewards, group_ids, std_normalize=False)
    assert adv.tolist() == pytest.approx([-0.5, -0.5, 0.5, 0.5])


def test_dtype_and_shape_are_kept():
    rewards = torch.tensor([1.0, 0.0], dtype=torch.float64)
    adv = grpo_advantages(rewards, torch.tensor([0, 0]))
    assert adv.dtype == torch.float64 and adv.shape == (2,)


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError, match="same length"):
        grpo_advantages(torch.tensor([1.0, 0.0]), torch.tensor([0]))


@given(
    st.lists(st.integers(min_value=-5, max_value=5), min_size=2, max_size=12),
    st.lists(st.integers(min_value=0, max_value=2), min_size=2, max_size=12),
)
def test_advantages_sum_to_zero_in_each_group(scores, ids):
    n = min(len(scores), len(ids))
    rewards = torch.tensor(scores[:n], dtype=torch.float64)
    group_ids = torch.tensor(ids[:n])
    adv = grpo_advantages(rewards, group_ids)
    assert torch.isfinite(adv).all()
    for g in group_ids.unique():
        assert adv[group_ids == g].sum().item() == pytest.approx(0.0, abs=1e-9)
