"""4-bit, 8-bit and bfloat16 copies of weights for small decode steps: exact for weights already
in 4-bit groups (as the GGUF's Q4_1 layers are) or 8-bit rows, used only where they are meant to
be, an 8-bit head's top logits recomputed exactly, and the engine's ``quantize="int4"`` decodes
close to float32."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from trainer.generation import ContinuousGenerator, SamplingParams  # noqa: E402
from trainer.generation.packed_linear import PackedLinear  # noqa: E402
from trainer.generation.small_batch_weights import (  # noqa: E402
    GROUP_SIZE,
    BFloat16Weight,
    Int4Weight,
    Int8Weight,
    int4_available,
    rescore_top_logits,
)

pytestmark = pytest.mark.skipif(
    not int4_available("cpu", GROUP_SIZE), reason="this torch build has no CPU int4 matmul"
)


def _q4_1_like(rows: int, columns: int, seed: int = 0) -> torch.Tensor:
    """Weights as a Q4_1 GGUF stores them: each group of 32 is ``q * scale + minimum`` with
    4-bit ``q``, the group's smallest and largest values at q = 0 and q = 15."""
    generator = torch.Generator().manual_seed(seed)
    groups = columns // GROUP_SIZE
    q = torch.randint(0, 16, (rows, groups, GROUP_SIZE), generator=generator)
    q[..., 0], q[..., 1] = 0, 15
    # scales and minimums that bfloat16 holds exactly
    scale = torch.randint(1, 64, (rows, groups, 1), generator=generator) / 1024
    minimum = -torch.randint(0, 64, (rows, groups, 1), generator=generator) / 256
    return (q * scale + minimum).reshape(rows, columns)


def test_weights_in_4_bit_groups_come_back_exactly():
    weight = _q4_1_like(96, 128)
    x = torch.eye(128)
    recovered = Int4Weight.quantize(weight)(x).T
    # the integers, scales and minimums are found again; only the product is rounded to
    # bfloat16 on the way out (8 bits of mantissa: 2^-8 relative)
    assert torch.allclose(recovered, weight, rtol=2**-8, atol=1e-6)


def test_a_hand_worked_group():
    # one group a row: 0, 1, ..., 15 then 15s, so scale (15 - 0) / 15 = 1 and minimum 0
    # (the kernel packs rows 16 at a time: the row is there 16 times)
    weight = torch.tensor([list(range(16)) + [15.0] * 16] * 16)
    x = torch.zeros(1, 32)
    x[0, 3] = 1.0  # picks w[0, 3] = 3
    assert Int4Weight.quantize(weight)(x)[0, 0].item() == 3.0
    x[0, 3], x[0, 20] = 2.0, -1.0  # 2 * 3 - 15
    assert Int4Weight.quantize(weight)(x)[0, 0].item() == -9.0
    with pytest.raises(ValueError, match="rows in multiples of 16"):
        Int4Weight.quantize(weight[:3])


def test_a_linear_uses_its_compact_copy_only_for_few_rows():
    weight = torch.randn(64, 96)
    linear = PackedLinear(weight, torch.ones(64), buckets=(), small_rows=4)
    few, many = torch.randn(3, 96), torch.randn(8, 96)
    exact = many @ weight.T + 1
    assert torch.equal(linear(many), exact)  # 8 rows: the float32 weight
    assert linear._small is None
    approximate = linear(few)
    assert isinstance(linear._small, Int4Weight)
    relative = (approximate - (few @ weight.T + 1)).norm() / (few @ weight.T + 1).norm()
    assert 0 < relative < 0.15
    with torch.no_grad():
        weight.mul_(2)
    linear.repack()  # the copy follows the weight
    doubled = linear(few)
    assert torch.allclose(doubled - 1, 2 * (approximate - 1), rtol=0.02, atol=0.05)
    head = PackedLinear(weight, None, buckets=(), small_rows=4, small_format="bfloat16")
    head(few)
    assert isinstance(head._small, BFloat16Weight)
    head = PackedLinear(weight, None, buckets=(), small_rows=4, small_format="int8")
    head(few)
    assert isinstance(head._small, Int8Weight)


def test_weights_in_8_bit_rows_come_back_exactly():
    generator = torch.Generator().manual_seed(0)
    q = torch.randint(-127, 128, (48, 64), generator=generator)
    q[:, 0] = 127  # each row's largest magnitude sets its scale: 127 * scale
    scale = 2.0 ** -torch.randint(3, 9, (48, 1), generator=generator)  # exact in bfloat16
    weight = q * scale
    copy_ = Int8Weight.quantize(weight)
    assert torch.equal(copy_.quantized, q.to(torch.int8))
    assert torch.equal(copy_.scale.float(), scale[:, 0])
    # 7-bit integers times a power of two: exact in bfloat16 on the way out too
    assert torch.equal(copy_(torch.eye(64)).T, weight)
    assert Int8Weight.nbytes_for(48, 64) == 48 * 64 + 48 * 2
    with pytest.raises(ValueError, match="columns in multiples of 16"):
        Int8Weight.quantize(torch.randn(8, 100))  # the kernel would crash the process


def test_rescoring_restores_the_order_of_a_tie_8_bits_cannot_see():
    generator = torch.Generator().manual_seed(1)
    hidden = torch.randn(1, 64, generator=generator)
    weight = torch.randint(-20, 21, (256, 64), generator=generator) * 0.01
    weight[5] = 1.27 * hidden[0].sign()  # the largest logit by far
    weight[7] = weight[5]
    column = int(hidden[0].argmax())
    weight[7, column] += 1e-3  # row 7 a hair above row 5: the same 8-bit row and scale
    exact = hidden @ weight.T
    assert exact[0].argmax() == 7
    rough = Int8Weight.quantize(weight)(hidden).float()
    assert rough[0, 5] == rough[0, 7] and rough[0].argmax() == 5  # a tie, the first one wins
    logits = rescore_top_logits(rough.clone(), hidden, weight, k=4)
    assert logits[0].argmax() == 7
    top = exact.topk(4).indices
    assert torch.allclose(logits.gather(1, top), exact.gather(1, top), atol=1e-5)
    # outside the top 4 the 8-bit logits stay as they were
    outside = torch.ones_like(logits, dtype=torch.bool).scatter_(1, top, False)
    assert torch.equal(logits[outside], rough[outside])
    bias = torch.randn(256, generator=generator)
    with_bias = rescore_top_logits(rough + bias, hidden, weight, bias, k=4)
    top = (exact + bias).topk(4).indices
    assert torch.allclose(with_bias.gather(1, top), (exact + bias).gather(1, top), atol=1e-5)


def test_a_linear_leaves_its_compact_output_in_bfloat16_for_few_rows_only():
    weight = torch.randn(64, 96)
    linear = PackedLinear(weight, None, buckets=(), small_rows=4)
    x = torch.randn(3, 96)
    out = linear.compact(x)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out.float(), linear(x))  # __call__ is the same matmul, converted back
    with pytest.raises(ValueError, match="up to 4 rows"):
        linear.compact(torch.randn(5, 96))


def test_an_int4_engine_reads_prompts_in_float32_and_decodes_close_to_it(tiny):
    model, tokenizer = tiny
    exact = ContinuousGenerator(copy.deepcopy(model), tokenizer)
    small = ContinuousGenerator(copy.deepcopy(model), tokenizer, quantize="int4")
    prompt = [1] + list(range(500, 540))  # 41 tokens: more than the 32 rows int4 takes
    params = SamplingParams(max_new_tokens=6, temperature=0.0, stop_token_ids=())
    [want] = exact.generate([prompt], params)
    [got] = small.generate([prompt], params)
    # the first token comes from the prompt's pass: float32 layers; only the head, one row
    # a sequence, ran on its 8-bit copy, and its largest logits were recomputed in float32
    assert got.token_ids[0] == want.token_ids[0]
    assert got.logprobs[0] == pytest.approx(want.logprobs[0], abs=1e-2)
    assert all(linear._small is not None for linear in small._linears)  # decode used them
    assert isinstance(small._lm_head._small, Int8Weight)
    # random weights are not 4-bit groups: the later steps are close, not equal
    teacher_forced = exact.generate([prompt + got.token_ids[:1]], params)[0]
    assert teacher_forced.logprobs[0] == pytest.approx(got.logprobs[1], abs=0.5)
    with pytest.raises(ValueError, match="quantize must be None or 'int4'"):
        ContinuousGenerator(copy.deepcopy(model), tokenizer, quantize="int8")


@torch.inference_mode()
def test_an_int4_engine_s_largest_logits_are_the_float32_head_s(tiny):
    model, tokenizer = tiny
    exact = ContinuousGenerator(copy.deepcopy(model), tokenizer)
    small = ContinuousGenerator(copy.deepcopy(model), tokenizer, quantize="int4")
    prompt = [1] + list(range(500, 540))  # 41 tokens: the float32 layers, then the head
    want = exact._forward([0], [prompt], [0])
    got = small._forward([0], [prompt], [0])
    top = want.topk(16).indices
    assert torch.allclose(got.gather(1, top), want.gather(1, top), atol=1e-4)
    assert not torch.allclose(got, want, atol=1e-4)  # the rest: the 8-bit head's


def test_copies_made_up_front_are_the_ones_counted_and_decode_as_lazy_ones(tiny):
    model, tokenizer = tiny
    lazy = ContinuousGenerator(
        copy.deepcopy(model), tokenizer, quantize="int4", packed_weights=True, max_batch_size=64
    )
    eager = ContinuousGenerator(
        copy.deepcopy(model), tokenizer, quantize="int4", packed_weights=True, max_batch_size=64
    )
    assert all(linear._small is None and not linear.packed_buckets for linear in eager._linears)
    eager.make_weight_copies()
    for linear in eager._linears:
        assert linear._small is not None
        # the 8- and 32-row packs are never reached (int4 takes up to 32 rows): not made
        assert linear.packed_buckets == (64,)
    made = {id(linear): (linear._small, linear._packs[64]) for linear in eager._linears}
    prompts = [[1, *range(500 + i, 520 + i)] for i in range(40)]  # 40 rows: the 64-row pack
    params = SamplingParams(max_new_tokens=6, temperature=0.0, stop_token_ids=())
    replies = [o.token_ids for o in eager.generate(prompts, params)]
    assert replies == [o.token_ids for o in lazy.generate(prompts, params)]
    for linear in eager._linears:  # the steps used the copies made up front, made no others
        small, pack = made[id(linear)]
        assert linear._small is small and linear._packs[64] is pack
        assert linear.packed_buckets == (64,)
