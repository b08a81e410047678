"""The registry of training strategies: one registered from this file (outside the package)
trains a step of a real tiny run, and every built-in strategy keeps the ``Strategy`` protocol."""

from __future__ import annotations

import math
import typing
from collections.abc import Iterator

import pytest
import torch

from tests.trainer.two_by_two_lake import TWO_BY_TWO_LAKE
from trainer.config import ConfigError, load_config
from trainer.strategies import (
    STRATEGIES,
    MemoryLayout,
    Strategy,
    StrategyRequest,
    StrategySpec,
    UnknownStrategyError,
    missing_methods,
    register_strategy,
    strategy_spec,
    unregister_strategy,
)
from trainer.strategies.torch_strategy import TorchStrategy

BUILT_IN = ["torch", "fsdp2", "deepspeed", "megatron"]


class CountingStrategy(TorchStrategy):
    """The torch strategy, counting its optimiser steps and whether it was closed."""

    def __init__(self, model: torch.nn.Module, **options) -> None:
        super().__init__(model, **options)
        self.steps = 0
        self.closed = False

    def train_step(self, batch, **kwargs) -> dict[str, float]:
        self.steps += 1
        return super().train_step(batch, **kwargs)

    def close(self) -> None:
        self.closed = True


def build_counting_strategy(request: StrategyRequest) -> CountingStrategy:
    return CountingStrategy(request.model, **request.options)


@pytest.fixture
def counting() -> Iterator[StrategySpec]:
    spec = register_strategy(
        StrategySpec(
            name="counting",
            build=build_counting_strategy,
            description="this process, counting its steps",
        )
    )
    yield spec
    unregister_strategy(spec.name)


@pytest.fixture
def broken() -> Iterator[StrategySpec]:
    spec = register_strategy(
        StrategySpec(name="broken", build=lambda request: object(), description="not a strategy")
    )
    yield spec
    unregister_strategy(spec.name)


def test_the_built_in_strategies_are_registered_in_order():
    assert list(STRATEGIES)[: len(BUILT_IN)] == BUILT_IN
    assert [name for name in BUILT_IN if STRATEGIES[name].in_process] == ["torch"]


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_strategy_keeps_the_strategy_protocol(name):
    spec = strategy_spec(name)
    try:
        builder = spec.builder()
        built = typing.get_type_hints(builder)["return"]
        worker_policy = None if spec.in_process else spec.worker_policy_class()
    except ImportError as error:
        pytest.skip(f"train.strategy={name} cannot be imported here: {error}")
    assert isinstance(built, type) and issubclass(built, Strategy), built
    assert missing_methods(built) == []
    if worker_policy is not None:  # what each train worker runs answers the same calls
        assert issubclass(worker_policy, Strategy), worker_policy


def test_the_protocol_names_what_the_pipeline_and_warm_start_call():
    wanted = {
        "sequence_logprobs",
        "reference_logprobs",
        "train_step",
        "supervised_step",
        "inference_state_dict",
        "save",
        "load",
        "load_optimizer_moments",
        "close",
    }
    assert set(missing_methods(object())) == wanted
    assert not isinstance(object(), Strategy)


def test_a_registered_strategy_trains_one_step_of_a_real_run(tmp_path, counting):
    from trainer.training.pipeline import Pipeline

    config = load_config(
        None,
        [
            *TWO_BY_TWO_LAKE,
            "model.lora=null",
            "train.strategy=counting",
            f"train.output_dir={tmp_path}",
        ],
    )
    pipeline = Pipeline(config, log=None)
    strategy = pipeline.strategy
    assert isinstance(strategy, CountingStrategy) and isinstance(strategy, Strategy)
    before = {n: p.detach().clone() for n, p in strategy.model.named_parameters()}
    metrics = pipeline.train_step()
    pipeline.close()

    assert strategy.steps == 1 and strategy.closed
    assert all(math.isfinite(value) for value in metrics.values())
    after = dict(strategy.model.named_parameters())
    assert any(not torch.equal(before[n], after[n].detach()) for n in before)
    # the generator samples from the updated weights
    generator_weights = pipeline.rollouts.generator.model.state_dict()
    policy_weights = strategy.inference_state_dict()
    assert all(torch.equal(generator_weights[k], policy_weights[k]) for k in policy_weights)


@pytest.fixture
def sharded_elsewhere() -> Iterator[StrategySpec]:
    from trainer.strategies.ray_strategy import build_worker_group

    spec = register_strategy(
        StrategySpec(
            name="sharded-elsewhere",
            build=lambda request: build_worker_group(request, mixed_precision=False),
            description="FSDP2 train workers, registered outside the package",
            in_process=False,
            worker_policy="trainer.strategies.sharded:FSDP2Strategy",
            memory=MemoryLayout("workers", gathers_one_layer=True),
        )
    )
    yield spec
    unregister_strategy(spec.name)


def test_a_strategy_with_train_workers_registered_here_trains_one_step(
    tmp_path, ray_cluster, sharded_elsewhere
):
    # the workers' processes never saw this registration: their spec carries the policy class
    from trainer.strategies.ray_strategy import RayStrategy
    from trainer.training.pipeline import Pipeline

    config = load_config(
        None,
        [
            *TWO_BY_TWO_LAKE,
            "model.lora=null",
            "train.strategy=sharded-elsewhere",
            "train.workers=2",
            f"train.output_dir={tmp_path}",
        ],
    )
    pipeline = Pipeline(config, log=None)
    try:
        assert isinstance(pipeline.strategy, RayStrategy)
        before = {k: v.clone() for k, v in pipeline.strategy.inference_state_dict().items()}
        metrics = pipeline.train_step()
        after = pipeline.strategy.inference_state_dict()
    finally:
        pipeline.close()
    assert all(math.isfinite(value) for value in metrics.values())
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_an_unknown_strategy_lists_the_registered_ones_and_the_closest(counting):
    with pytest.raises(ConfigError) as refused:
        load_config("sokoban", ["train.strategy=countin"])
    message = str(refused.value)
    assert message.startswith(
        "train.strategy: Input should be 'torch', 'fsdp2', 'deepspeed', 'megatron'"
    )
    assert "or 'counting' (got 'countin'; did you mean 'counting'?)" in message
    assert "\n" not in message
    with pytest.raises(UnknownStrategyError, match="'fsdp2'"):
        strategy_spec("fsdp3")


def test_a_builder_that_returns_no_strategy_is_refused_with_what_it_lacks(broken):
    from trainer.strategies.from_config import build_strategy

    config = load_config(None, [*TWO_BY_TWO_LAKE, "train.strategy=broken"])
    with pytest.raises(TypeError, match="train.strategy=broken: .* lacks sequence_logprobs, "):
        build_strategy(config, None, pad_id=0)


def test_the_config_and_memory_plan_follow_a_registered_strategys_properties(counting):
    from transformers import LlamaConfig

    from trainer.strategies.memory_plan import plan_memory

    with pytest.raises(
        ConfigError, match="trainable_layers is only trained by train.strategy=torch"
    ):
        load_config(
            None,
            [*TWO_BY_TWO_LAKE, "model.trainable_layers=1", "train.strategy=counting"],
        )
    tiny = LlamaConfig(
        vocab_size=100,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
    )
    # its default memory layout holds everything in one process, as torch's does
    own = plan_memory(tiny, strategy="counting", workers=2)
    assert own.total == plan_memory(tiny, strategy="torch", workers=2).total
    with pytest.raises(ConfigError, match="need deepspeed"):
        plan_memory(tiny, strategy="counting", offload_optimizer=True)
