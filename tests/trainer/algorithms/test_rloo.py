"""RLOO advantages against numbers worked out by hand."""

from __future__ import annotations

import pytest
import torch

from trainer.algorithms import rloo_advantages


def test_leave_one_out_baseline():
    # group 0: {1, 0, 0}
    #   A_0 = 1 - (0 + 0) / 2 = 1
    #   A_1 = 0 - (1 + 0) / 2 = -0.5,  A_2 = -0.5
    # group 5: {2, 4}: A = 2 - 4 = -2, 4 - 2 = 2
    rewards = torch.tensor([1.0, 2.0, 0.0, 4.0, 0.0])
    group_ids = torch.tensor([0, 5, 0, 5, 0])
    adv = rloo_advantages(rewards, group_ids)
    assert adv.tolist() == pytest.approx([1.0, -2.0, -0.5, 2.0, -0.5])


def test_equals_n_over_n_minus_one_times_centered_reward():
    # {3, 0, 0, 1}: mean 1; n / (n - 1) = 4/3 -> (2, -1, -1, 0) * 4/3
    # directly: A_0 = 3 - (0 + 0 + 1) / 3 = 8/3; A_1 = 0 - 4/3; A_3 = 1 - 3/3 = 0
    adv = rloo_advantages(torch.tensor([3.0, 0.0, 0.0, 1.0]), torch.tensor([1, 1, 1, 1]))
    assert adv.tolist() == pytest.approx([8 / 3, -4 / 3, -4 / 3, 0.0])


def test_group_of_one_gives_zero():
    adv = rloo_advantages(torch.tensor([7.0, 1.0, 0.0]), torch.tensor([3, 4, 4]))
    assert adv.tolist() == pytest.approx([0.0, 1.0, -1.0])


def test_equal_rewards_give_zero():
    adv = rloo_advantages(torch.tensor([0.5, 0.5, 0.5]), torch.tensor([0, 0, 0]))
    assert adv.tolist() == pytest.approx([0.0, 0.0, 0.0])


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError, match="same length"):
        rloo_advantages(torch.tensor([1.0]), torch.tensor([0, 0]))
