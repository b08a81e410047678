import pytest
import torch
import torch.nn.functional as F

from trainer.generation.packed_linear import PackedLinear, packing_available, row_buckets

pytestmark = pytest.mark.skipif(
    not packing_available(torch.float32, "cpu"), reason="this torch build has no MKL packing"
)


def _linear(out_features=48, in_features=24, bias=True, seed=0):
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(out_features, in_features, generator=gen)
    return weight, torch.randn(out_features, generator=gen) if bias else None


@pytest.mark.parametrize("bias", [True, False])
def test_every_row_count_gives_what_f_linear_gives(bias):
    weight, b = _linear(bias=bias)
    linear = PackedLinear(weight, b, row_buckets(64))
    for rows in range(1, 80):
        x = torch.randn(rows, weight.shape[1])
        torch.testing.assert_close(linear(x), F.linear(x, weight, b), rtol=1e-5, atol=1e-5)
    # 3..64 rows ran on packs, one per bucket; 1, 2 and 65+ on F.linear
    assert sorted(linear.packed_buckets) == [8, 32, 64]


def test_packs_follow_the_weight_after_repack_or_drop():
    weight, bias = _linear()
    linear = PackedLinear(weight, bias, (8,))
    x = torch.randn(6, weight.shape[1])
    before = linear(x)
    with torch.no_grad():
        weight.mul_(-2.0)  # an in-place load, as load_state_dict does
    torch.testing.assert_close(linear(x), before)  # the pack is a copy: stale until re-packed
    linear.repack()
    torch.testing.assert_close(linear(x), F.linear(x, weight, bias), rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        weight.add_(1.0)
    linear.drop_packs()
    assert linear.packed_buckets == ()
    torch.testing.assert_close(linear(x), F.linear(x, weight, bias), rtol=1e-5, atol=1e-5)


def test_packing_is_refused_for_other_dtypes_and_off_without_buckets():
    weight, bias = _linear()
    with pytest.raises(ValueError, match="float32"):
        PackedLinear(weight.bfloat16(), None, (8,))
    plain = PackedLinear(weight.bfloat16(), None, ())
    x = torch.randn(5, weight.shape[1]).bfloat16()
    torch.testing.assert_close(plain(x), F.linear(x, weight.bfloat16()))
    assert plain.packed_buckets == ()


def test_row_buckets_cover_the_batch():
    assert row_buckets(1) == (8,)
    assert row_buckets(16) == (8, 16)
    assert row_buckets(64) == (8, 32, 64)
    assert row_buckets(200) == (8, 32, 128, 200)
