"""KL estimators k1, k2, k3 against numbers worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

from trainer.algorithms import kl_penalty

LN2 = 0.69314718


def test_estimators_by_hand():
    # token 0: pi = 0.5, ref = 0.25 -> log r = ln(ref / pi) = ln 0.5 = -ln 2, r = 0.5
    #   k1 = ln 2 = 0.6931472; k2 = 0.5 * (ln 2)^2 = 0.2402265; k3 = 0.5 - 1 + ln 2 = 0.1931472
    # token 1: pi = 0.25, ref = 0.5 -> log r = ln 2, r = 2
    #   k1 = -ln 2 = -0.6931472 (k1 can be negative); k2 = 0.2402265; k3 = 2 - 1 - ln 2 = 0.3068528
    # token 2: pi = ref -> all 0
    logp = torch.log(torch.tensor([0.5, 0.25, 0.3]))
    ref = torch.log(torch.tensor([0.25, 0.5, 0.3]))
    assert kl_penalty(logp, ref, "k1").tolist() == pytest.approx([LN2, -LN2, 0.0], abs=1e-6)
    assert kl_penalty(logp, ref, "k2").tolist() == pytest.approx(
        [0.5 * LN2**2, 0.5 * LN2**2, 0.0], abs=1e-6
    )
    assert kl_penalty(logp, ref, "k3").tolist() == pytest.approx(
        [0.5 - 1 + LN2, 2 - 1 - LN2, 0.0], abs=1e-6
    )


def test_k1_and_k3_are_unbiased_on_a_small_categorical():
    # pi = (0.5, 0.25, 0.25), ref = (0.25, 0.25, 0.5)
    # KL(pi || ref) = 0.5 ln 2 + 0.25 ln 1 + 0.25 ln 0.5 = 0.25 ln 2 = 0.1732868
    # E_pi[k3]: r = (0.5, 1, 2), k3 = (0.1931472, 0, 0.3068528)
    #   0.5 * 0.1931472 + 0.25 * 0 + 0.25 * 0.3068528 = 0.0965736 + 0.0767132 = 0.1732868
    pi = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
    ref = torch.tensor([0.25, 0.25, 0.5], dtype=torch.float64)
    for kind in ("k1", "k3"):
        expectation = (pi * kl_penalty(pi.log(), ref.log(), kind)).sum().item()
        assert expectation == pytest.approx(0.25 * math.log(2))


def test_gradients_by_hand():
    # d k1 / d logp = 1; d k2 / d logp = logp - ref_logp = ln 2;
    # d k3 / d logp = d/dlogp [exp(ref - logp) - (ref - logp) - 1] = 1 - r = 1 - 0.5 = 0.5
    ref = torch.log(torch.tensor([0.25]))
    for kind, grad in (("k1", 1.0), ("k2", LN2), ("k3", 0.5)):
        logp = torch.log(torch.tensor([0.5])).requires_grad_()
        kl_penalty(logp, ref, kind).sum().backward()
        assert logp.grad.item() == pytest.approx(grad, abs=1e-6)


def test_unknown_kind_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="k1, k2, k3"):
        kl_penalty(torch.zeros(1), torch.zeros(1), "low_var_kl")


def test_shapes_must_match():
    with pytest.raises(ValueError, match="same shape"):
        kl_penalty(torch.zeros(2), torch.zeros(3), "k1")


finite = st.floats(min_value=-30.0, max_value=30.0, allow_nan=False, width=32)


@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=16))
def test_k2_and_k3_are_never_negative(pairs):
    logp = torch.tensor([a for a, _ in pairs])
    ref = torch.tensor([b for _, b in pairs])
    assert (kl_penalty(logp, ref, "k3") >= 0).all()
    assert (kl_penalty(logp, ref, "k2") >= 0).all()
    assert_close(kl_penalty(logp, logp, "k3"), torch.zeros_like(logp))
