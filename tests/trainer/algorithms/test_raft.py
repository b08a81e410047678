"""RAFT advantages against numbers worked out by hand."""

from __future__ import annotations

import pytest
import torch

from trainer.algorithms import grpo_advantages, raft_advantages


def test_only_the_episodes_above_their_group_mean_are_reinforced():
    # group 0: {9, -1, -1, 9}, mean 4 -> (5, 0, 0, 5); group 1: {9.75, 9.25}, mean 9.5 -> (0.25, 0)
    rewards = torch.tensor([9.0, -1.0, -1.0, 9.0, 9.75, 9.25])
    group_ids = torch.tensor([0, 0, 0, 0, 1, 1])
    adv = raft_advantages(rewards, group_ids, std_normalize=False)
    assert adv.tolist() == pytest.approx([5.0, 0.0, 0.0, 5.0, 0.25, 0.0])


def test_std_normalize_scales_the_positive_part_as_grpo_does():
    # {1, 0, 0}: mean 1/3, unbiased std sqrt(1/3); A_0 = (2/3) / sqrt(1/3) = 2 / sqrt(3)
    rewards = torch.tensor([1.0, 0.0, 0.0])
    group_ids = torch.tensor([7, 7, 7])
    adv = raft_advantages(rewards, group_ids)
    assert adv.tolist() == pytest.approx([2 / 3**0.5, 0.0, 0.0], rel=1e-5)
    grpo = grpo_advantages(rewards, group_ids)
    assert adv[0] == pytest.approx(float(grpo[0]))
    assert float(grpo[1]) < 0  # what RAFT leaves out


def test_equal_rewards_give_zero():
    adv = raft_advantages(torch.tensor([2.0, 2.0]), torch.tensor([0, 0]), std_normalize=False)
    assert adv.tolist() == [0.0, 0.0]
