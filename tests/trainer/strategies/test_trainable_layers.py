"""``model.trainable_layers``: only the last N decoder layers (and the final norm) train; their
gradients are those of full training, and nothing below them moves."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from trainer.config import ConfigError, LoraConfig, load_config  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.strategies.batch import TokenBatch  # noqa: E402
from trainer.strategies.from_config import build_strategy  # noqa: E402
from trainer.strategies.frozen_layers import decoder_layers  # noqa: E402
from trainer.strategies.torch_strategy import TorchStrategy  # noqa: E402


def _batch(vocab: int) -> TokenBatch:
    rng = torch.Generator().manual_seed(0)
    sequences = [torch.randint(3, vocab, (n,), generator=rng).tolist() for n in (17, 30, 9)]
    return TokenBatch(
        token_ids=sequences,
        loss_mask=[torch.tensor([0.0] + [1.0] * (len(s) - 1)) for s in sequences],
        advantages=[torch.randn(len(s), generator=rng) for s in sequences],
        old_logprobs=[torch.full((len(s),), -10.0) for s in sequences],
    )


def test_only_the_last_layers_train_with_the_gradients_of_full_training():
    base, tokenizer = load_model("tiny-random", seed=0)
    layers = len(decoder_layers(base))
    assert layers >= 2, "the check needs a frozen layer below a trained one"
    batch = _batch(len(tokenizer))
    # no clipping: the global gradient norm of full training counts the frozen weights too
    same = {"pad_id": tokenizer.pad_token_id, "lr": 1e-2, "grad_clip": None}
    full = TorchStrategy(copy.deepcopy(base), **same)
    top = TorchStrategy(copy.deepcopy(base), **same, trainable_layers=1)
    trained_prefix = f"model.layers.{layers - 1}."
    names = [name for name, _ in top.trainable_parameters()]
    assert names and all(n.startswith(trained_prefix) or n == "model.norm.weight" for n in names)
    assert sum(len(group["params"]) for group in top.optimizer.param_groups) == len(names)

    before = {n: p.detach().clone() for n, p in base.named_parameters()}
    full.train_step(batch)
    top.train_step(batch)
    full_grads = dict(full.model.named_parameters())
    for name, parameter in top.model.named_parameters():
        if name in names:
            torch.testing.assert_close(parameter.grad, full_grads[name].grad, msg=name)
            assert not torch.equal(parameter.detach(), before[name]), f"{name} did not move"
        else:
            assert parameter.grad is None, name
            assert torch.equal(parameter.detach(), before[name]), f"{name} moved while frozen"


def test_the_config_reaches_the_strategy():
    model, tokenizer = load_model("tiny-random", seed=0)
    config = load_config(None, ["model.name=tiny-random", "model.trainable_layers=1"])
    strategy = build_strategy(config, model, tokenizer.pad_token_id)
    assert {n.split(".")[1] for n, _ in strategy.trainable_parameters()} == {"layers", "norm"}


def test_more_layers_than_the_model_has_names_the_count():
    model, tokenizer = load_model("tiny-random", seed=0)
    count = len(decoder_layers(model))
    with pytest.raises(ValueError, match=f"has {count} decoder layers: choose 1 to {count}"):
        TorchStrategy(model, pad_id=tokenizer.pad_token_id, trainable_layers=count + 1)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["model.trainable_layers=0"], "model.trainable_layers"),
        (["model.trainable_layers=2", "model.lora.r=8"], "set one of them"),
        (["model.trainable_layers=2", "train.strategy=fsdp2"], "train.strategy=torch"),
    ],
)
def test_bad_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


def test_lora_and_frozen_layers_are_refused_by_the_strategy_too():
    model, tokenizer = load_model("tiny-random", seed=0)
    with pytest.raises(ValueError, match="set one of them"):
        TorchStrategy(model, pad_id=tokenizer.pad_token_id, lora=LoraConfig(), trainable_layers=1)
