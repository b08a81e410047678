"""GAE against numbers worked out by hand."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from trainer.algorithms import gae_advantages


def test_lam_one_gamma_one_is_return_to_go_minus_value_across_a_mask_hole():
    # valid tokens t = 0, 2, 3 (t = 1 is an observation token: its reward 5 and value 7 ignored)
    # valid rewards (0, 1, 2), values (0.5, 0.25, 1.0)
    # return-to-go over valid tokens: (0 + 1 + 2, 1 + 2, 2) = (3, 3, 2)
    # A = G - V = (2.5, 2.75, 1.0);  returns = A + V = G = (3, 3, 2)
    rewards = torch.tensor([[0.0, 5.0, 1.0, 2.0]])
    values = torch.tensor([[0.5, 7.0, 0.25, 1.0]])
    mask = torch.tensor([[1, 0, 1, 1]])
    adv, ret = gae_advantages(rewards, values, mask, gamma=1.0, lam=1.0)
    assert_close(adv, torch.tensor([[2.5, 0.0, 2.75, 1.0]]))
    assert_close(ret, torch.tensor([[3.0, 0.0, 3.0, 2.0]]))


def test_general_gamma_and_lam_with_prompt_and_padding():
    # gamma = 0.5, lam = 0.5, so gamma * lam = 0.25
    # row 0, all valid: r = (1, 0, 2), V = (1, 2, 1)
    #   t2: delta = 2 + 0.5 * 0 - 1 = 1;       A2 = 1
    #   t1: delta = 0 + 0.5 * 1 - 2 = -1.5;    A1 = -1.5 + 0.25 * 1 = -1.25
    #   t0: delta = 1 + 0.5 * 2 - 1 = 1;       A0 = 1 + 0.25 * -1.25 = 0.6875
    #   returns = A + V = (1.6875, 0.75, 2)
    # row 1, mask (0, 1, 1): r = (9, 0, 1), V = (9, 0.5, 0.5)
    #   t2: delta = 1 + 0 - 0.5 = 0.5;         A2 = 0.5
    #   t1: delta = 0 + 0.5 * 0.5 - 0.5 = -0.25; A1 = -0.25 + 0.25 * 0.5 = -0.125
    #   returns = (0, 0.375, 1)
    rewards = torch.tensor([[1.0, 0.0, 2.0], [9.0, 0.0, 1.0]])
    values = torch.tensor([[1.0, 2.0, 1.0], [9.0, 0.5, 0.5]])
    mask = torch.tensor([[1, 1, 1], [0, 1, 1]])
    adv, ret = gae_advantages(rewards, values, mask, gamma=0.5, lam=0.5)
    assert_close(adv, torch.tensor([[0.6875, -1.25, 1.0], [0.0, -0.125, 0.5]]))
    assert_close(ret, torch.tensor([[1.6875, 0.75, 2.0], [0.0, 0.375, 1.0]]))


def test_lam_zero_is_the_td_error():
    # same row 0 as above: deltas (1, -1.5, 1)
    adv, _ = gae_advantages(
        torch.tensor([[1.0, 0.0, 2.0]]),
        torch.tensor([[1.0, 2.0, 1.0]]),
        torch.ones(1, 3),
        gamma=0.5,
        lam=0.0,
    )
    assert_close(adv, torch.tensor([[1.0, -1.5, 1.0]]))


def test_a_hole_is_skipped_not_stepped_through():
    # gamma = 0.5, lam = 1, V = 0, valid t = 0 and 2, reward 1 at t = 2:
    #   A2 = 1; A0 = 0 + 0.5 * 0 - 0 + 0.5 * 1 * A2 = 0.5 (discounted once, not twice)
    adv, ret = gae_advantages(
        torch.tensor([[0.0, 0.0, 1.0]]),
        torch.zeros(1, 3),
        torch.tensor([[1, 0, 1]]),
        gamma=0.5,
        lam=1.0,
    )
    assert_close(adv, torch.tensor([[0.5, 0.0, 1.0]]))
    assert_close(ret, torch.tensor([[0.5, 0.0, 1.0]]))


def test_fully_masked_row_is_zero_and_no_grad_flows_into_targets():
    values = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    adv, ret = gae_advantages(
        torch.ones(2, 2), values, torch.tensor([[0, 0], [1, 1]]), gamma=1.0, lam=1.0
    )
    # row 1: G = (2, 1) -> A = (2 - 3, 1 - 4) = (-1, -3)
    assert_close(adv, torch.tensor([[0.0, 0.0], [-1.0, -3.0]]))
    assert_close(ret, torch.tensor([[0.0, 0.0], [2.0, 1.0]]))
    assert not adv.requires_grad and not ret.requires_grad


def test_shapes_are_checked():
    with pytest.raises(ValueError, match=r"\(B, L\)"):
        gae_advantages(torch.ones(2, 3), torch.ones(2, 2), torch.ones(2, 3), gamma=1.0, lam=1.0)
