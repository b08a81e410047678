"""REINFORCE++ advantages against numbers worked out by hand."""

from __future__ import annotations

import torch
from torch.testing import assert_close

from trainer.algorithms import reinforce_pp_advantages


def test_return_to_go_then_batch_normalised_with_population_std():
    # gamma 1. row 0: r = (0, 0, 1) -> G = (1, 1, 1)
    #          row 1: r = (0, 0, .), mask (1, 1, 0) -> G = (0, 0)
    # valid G = (1, 1, 1, 0, 0): mean 3/5 = 0.6
    #   population var = (3 * 0.4^2 + 2 * 0.6^2) / 5 = (0.48 + 0.72) / 5 = 0.24, std = 0.4898979
    #   A = (1 - 0.6) / 0.4898979 = 0.8164966; (0 - 0.6) / 0.4898979 = -1.2247449
    # (the unbiased std sqrt(0.3) = 0.5477 would give 0.7303 and -1.0954)
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv = reinforce_pp_advantages(rewards, mask)
    expected = torch.tensor([[0.8164966, 0.8164966, 0.8164966], [-1.2247449, -1.2247449, 0.0]])
    assert_close(adv, expected)


def test_discount_skips_masked_tokens():
    # gamma 0.5. row 0: r = (1, 7, 2), mask (1, 0, 1): the 7 is ignored, the hole not counted
    #   G_2 = 2, G_0 = 1 + 0.5 * 2 = 2
    # row 1: r = 0 everywhere -> G = (0, 0, 0)
    # valid G = (2, 2, 0, 0, 0): mean 0.8; population var = (2 * 1.2^2 + 3 * 0.8^2) / 5
    #   = (2.88 + 1.92) / 5 = 0.96, std = 0.9797959
    #   A = 1.2 / 0.9797959 = 1.2247449; -0.8 / 0.9797959 = -0.8164966
    rewards = torch.tensor([[1.0, 7.0, 2.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 0, 1], [1, 1, 1]])
    adv = reinforce_pp_advantages(rewards, mask, gamma=0.5)
    expected = torch.tensor([[1.2247449, 0.0, 1.2247449], [-0.8164966, -0.8164966, -0.8164966]])
    assert_close(adv, expected)


def test_equal_returns_and_empty_mask_give_zero():
    rewards = torch.tensor([[0.0, 0.1], [0.0, 0.1]])
    zero = torch.zeros(2, 2)
    assert_close(reinforce_pp_advantages(rewards, torch.ones(2, 2)), zero)
    assert_close(reinforce_pp_advantages(rewards, torch.zeros(2, 2)), zero)
