"""Packed micro-batches (several sequences in one row) give the results of padded ones."""

from __future__ import annotations

import copy
import random

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from trainer.config import LoraConfig  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.strategies.batch import TokenBatch, micro_batches  # noqa: E402
from trainer.strategies.logprobs import Layout, score_layout, sequence_logprobs  # noqa: E402
from trainer.strategies.packing import (  # noqa: E402
    pack,
    packed_attention,
    shared_prefix_length,
    supports_packing,
)
from trainer.strategies.torch_strategy import LossSettings, TorchStrategy  # noqa: E402

ATOL = RTOL = 1e-5


def tiny_qwen(kind: str, **overrides):
    config_class, model_class = {
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
        "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM),
    }[kind]
    config = config_class(
        vocab_size=1000,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=512,
        **overrides,
    )
    torch.manual_seed(0)
    return model_class(config).eval()


@pytest.fixture(scope="module", params=["llama", "qwen2", "qwen3"])
def model_and_vocab(request):
    if request.param == "llama":
        model, tokenizer = load_model("tiny-random", seed=0)
        return model, len(tokenizer)
    return tiny_qwen(request.param), 1000


def random_batch(vocab: int, count: int = 6, seed: int = 0, prefix: int = 0):
    """Random sequences; with ``prefix``, all begin with the same ``prefix`` tokens (as every
    turn's prompt begins with the instruction), none of them scored."""
    rng = random.Random(seed)
    shared = [rng.randrange(3, vocab) for _ in range(prefix)]
    sequences = [
        shared + [rng.randrange(3, vocab) for _ in range(rng.randint(5, 60))] for _ in range(count)
    ]
    masks = [
        torch.tensor([0.0] * (prefix + 1) + [float(rng.random() < 0.6) for _ in s[prefix + 1 :]])
        for s in sequences
    ]
    return sequences, masks


SHARED = 24  # tokens every sequence of a prefixed batch begins with


def test_pack_restarts_positions_per_sequence():
    input_ids, position_ids = pack([[5, 6, 7], [8], [9, 10]])
    assert input_ids.tolist() == [[5, 6, 7, 8, 9, 10]]
    assert position_ids.tolist() == [[0, 1, 2, 0, 0, 1]]


@pytest.mark.parametrize("packed", [False, True])
def test_micro_batches_fit_the_budget_cover_every_sequence_costliest_first(packed):
    lengths = [random.Random(i).randint(1, 300) for i in range(40)] + [500]
    groups = list(micro_batches(lengths, 400, packed=packed))
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    costs = []
    for group in groups:
        size = [lengths[i] for i in group]
        costs.append(sum(size) if packed else len(size) * max(size))
        assert costs[-1] <= 400 or len(group) == 1
    assert costs == sorted(costs, reverse=True)  # costliest first: later ones reuse its memory


@pytest.mark.parametrize("prefix", [0, SHARED])
def test_packed_logprobs_match_padded(model_and_vocab, prefix):
    model, vocab = model_and_vocab
    assert supports_packing(model)
    sequences, masks = random_batch(vocab, prefix=prefix)
    options = {"pad_id": 0, "token_budget": 150}
    padded, _ = sequence_logprobs(model, sequences, masks, packing=False, **options)
    packed, _ = sequence_logprobs(model, sequences, masks, packing=True, **options)
    for a, b, mask in zip(padded, packed, masks, strict=True):
        assert a.shape == b.shape == mask.shape
        torch.testing.assert_close(b, a, atol=ATOL, rtol=RTOL)
        assert bool((b[mask == 0] == 0).all())


@pytest.mark.parametrize("prefix", [0, SHARED])
def test_packed_entropy_values_and_gradients_match_padded(model_and_vocab, prefix):
    model, vocab = model_and_vocab
    sequences, masks = random_batch(vocab, seed=1, prefix=prefix)
    # seeded: drawn from the global generator, the head depended on the tests run before in
    # the same process, and one draw (under -n 3) moved an embedding gradient past 1e-4
    torch.manual_seed(0)
    head = torch.nn.Linear(model.config.hidden_size, 1)
    results = {}
    for packed in (False, True):
        model.zero_grad(set_to_none=True)
        layout = Layout.of(sequences, 0, packed=packed, select=masks)
        if packed:  # the shared beginning is in the row once
            assert layout.prefix == prefix
            rests = sum(len(s) - prefix for s in sequences)
            assert layout.input_ids.shape == (1, prefix + rests)
        scores = score_layout(model, layout, masks, with_entropy=True, temperature=0.7)
        logprobs, entropy = layout.rows(scores.logprobs), layout.rows(scores.entropy)
        values = layout.rows(head(scores.hidden).squeeze(-1))
        values = torch.nn.utils.rnn.pad_sequence(
            [values[i, : len(s)] for i, s in enumerate(sequences)], batch_first=True
        )
        (logprobs.sum() + 0.1 * entropy.sum() + values.sum()).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results[packed] = (logprobs.detach(), entropy.detach(), values.detach(), grads)
    for a, b in zip(results[False][:3], results[True][:3], strict=True):
        torch.testing.assert_close(b, a, atol=ATOL, rtol=RTOL)
    grads_padded, grads_packed = results[False][3], results[True][3]
    assert grads_padded.keys() == grads_packed.keys()
    for name, grad in grads_padded.items():
        torch.testing.assert_close(grads_packed[name], grad, atol=1e-4, rtol=1e-4, msg=name)
    model.zero_grad(set_to_none=True)


@pytest.mark.parametrize(
    ("lora", "aggregation", "critic", "prefix"),
    [
        (True, "token-mean", False, 0),
        (False, "seq-mean-token-mean", True, 0),
        (False, "token-mean", True, SHARED),
    ],
)
def test_train_step_packed_matches_padded(lora, aggregation, critic, prefix, monkeypatch):
    from trainer.strategies import logprobs

    shared_rows = []
    real = logprobs.pack_sharing_prefix
    monkeypatch.setattr(
        logprobs,
        "pack_sharing_prefix",
        lambda sequences, length: shared_rows.append(length) or real(sequences, length),
    )
    base, tokenizer = load_model("tiny-random", seed=0)
    sequences, masks = random_batch(len(tokenizer), count=8, seed=2, prefix=prefix)
    rng = torch.Generator().manual_seed(0)

    def per_token(scale: float = 1.0) -> list[torch.Tensor]:
        return [torch.randn(len(s), generator=rng) * scale for s in sequences]

    batch = TokenBatch(
        token_ids=sequences,
        loss_mask=masks,
        advantages=per_token(),
        old_logprobs=[-10.0 + x for x in per_token(0.1)],
        ref_logprobs=[-10.0 + x for x in per_token(0.1)],
        old_values=per_token() if critic else None,
        returns=per_token() if critic else None,
    )
    runs = {}
    for packing in (False, True):
        torch.manual_seed(0)
        strategy = TorchStrategy(
            copy.deepcopy(base),
            pad_id=tokenizer.pad_token_id,
            loss=LossSettings(aggregation=aggregation, kl_coef=0.1, entropy_coef=0.01),
            micro_batch_tokens=120,
            lora=LoraConfig(r=4, alpha=8) if lora else None,
            value_head=critic,
            packing=packing,
        )
        assert strategy.packing is packing
        metrics = strategy.train_step(batch)
        grads = {
            n: p.grad.clone() for n, p in strategy.model.named_parameters() if p.grad is not None
        }
        runs[packing] = (metrics, grads)
    (metrics_padded, grads_padded), (metrics_packed, grads_packed) = runs[False], runs[True]
    # packed, every micro-batch of two or more prefixed sequences held their beginning once
    assert (set(shared_rows) == {prefix}) if prefix else not shared_rows
    assert metrics_padded.keys() == metrics_packed.keys()
    # clip fractions and approx_kl are token means within a micro-batch; with a per-sequence
    # aggregation they are averaged by sequence share, so they depend on how the batch is cut
    # (packed micro-batches hold more sequences): only the token-mean run compares them.
    grouping_dependent = {"policy/clip_fraction", "policy/dual_clip_fraction", "policy/approx_kl"}
    for name, value in metrics_padded.items():
        if aggregation != "token-mean" and name in grouping_dependent:
            continue
        assert metrics_packed[name] == pytest.approx(value, rel=1e-4, abs=1e-5), name
    assert grads_padded.keys() == grads_packed.keys()
    for name, grad in grads_padded.items():
        torch.testing.assert_close(grads_packed[name], grad, atol=1e-5, rtol=1e-3, msg=name)


@pytest.mark.parametrize("prefix", [0, SHARED])
def test_checkpointed_layers_are_recomputed_packed(prefix):
    """``train.activation_checkpointing`` (``checkpoint_layers``, on every strategy): each
    layer is recomputed in the backward pass, after packing's context is left; without
    ``recompute_contexts`` the recomputed attention would cross sequences (torch raises
    CheckpointError, other tensors saved), or, with a shared prefix, miss it."""
    base, tokenizer = load_model("tiny-random", seed=0)
    sequences, masks = random_batch(len(tokenizer), count=8, seed=3, prefix=prefix)
    rng = torch.Generator().manual_seed(0)
    batch = TokenBatch(
        token_ids=sequences,
        loss_mask=masks,
        advantages=[torch.randn(len(s), generator=rng) for s in sequences],
        old_logprobs=[torch.full((len(s),), -10.0) for s in sequences],
    )
    grads = {}
    for checkpointed in (False, True):
        model = copy.deepcopy(base)
        strategy = TorchStrategy(
            model,
            pad_id=tokenizer.pad_token_id,
            micro_batch_tokens=120,
            packing=checkpointed,
            activation_checkpointing=checkpointed,
        )
        assert model.is_gradient_checkpointing == checkpointed
        strategy.train_step(batch)
        grads[checkpointed] = {n: p.grad.clone() for n, p in model.named_parameters()}
    for name, grad in grads[False].items():
        torch.testing.assert_close(grads[True][name], grad, atol=1e-5, rtol=1e-3, msg=name)


def test_models_without_checked_packing_are_padded():
    assert not supports_packing(tiny_qwen("qwen2", use_sliding_window=True, sliding_window=8))
    gpt2 = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=1, n_head=2)
    )
    assert not supports_packing(gpt2)
    strategy = TorchStrategy(gpt2, pad_id=0, micro_batch_tokens=64)
    assert strategy.packing is False


def test_packed_attention_refuses_a_model_that_bypasses_it(model_and_vocab):
    model, _ = model_and_vocab
    with pytest.raises(RuntimeError, match="did not use the attention interface"):  # noqa: SIM117
        with packed_attention(model, [3]):
            pass  # no forward: as if the model ignored the attention interface
    assert model.config._attn_implementation == "sdpa"  # restored


@pytest.mark.parametrize(
    ("sequences", "select", "expected"),
    [
        # the common beginning, minus the token that predicts the first scored one
        ([[5, 6, 7, 8, 9], [5, 6, 7, 8, 4]], [[0, 0, 0, 0, 1], [0, 0, 0, 0, 1]], 3),
        # a token scored early in one sequence cuts the prefix for all
        ([[5, 6, 7, 8, 9], [5, 6, 7, 8, 4]], [[0, 0, 1, 1, 1], [0, 0, 0, 0, 1]], 1),
        # identical sequences each keep a token of their own
        ([[5, 6, 7], [5, 6, 7]], [[0, 0, 0], [0, 0, 0]], 2),
        ([[5, 6, 7], [4, 6, 7]], [[0, 0, 1], [0, 0, 1]], 0),
        ([[5, 6, 7, 8]], [[0, 0, 0, 1]], 0),  # one sequence: nothing to share
    ],
)
def test_shared_prefix_length(sequences, select, expected):
    masks = [torch.tensor(m, dtype=torch.float32) for m in select]
    assert shared_prefix_length(sequences, masks, minimum=1) == expected


def test_a_shared_prefix_below_the_minimum_is_not_worth_it():
    sequences = [[5] * 10 + [6, 7], [5] * 10 + [8, 9]]
    masks = [torch.tensor([0.0] * 11 + [1.0])] * 2
    assert shared_prefix_length(sequences, masks, minimum=11) == 0
    assert shared_prefix_length(sequences, masks, minimum=10) == 10
