"""The registry of advantage estimators: one registered from this file (outside the package)
trains a step of a real tiny run, and every place that depends on the estimator reads it."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch

from tests.trainer.two_by_two_lake import TWO_BY_TWO_LAKE
from trainer.algorithms import (
    ALGORITHMS,
    AlgorithmSpec,
    UnknownAlgorithmError,
    algorithm_spec,
    register_algorithm,
    unregister_algorithm,
)
from trainer.config import AlgorithmConfig, ConfigError, load_config
from trainer.rollout.trajectory import Trajectory
from trainer.training.credit import Credit, per_episode_credit

BUILT_IN = ["starpo", "grpo", "gigpo", "ppo", "rloo", "reinforce++", "raft"]


class CentredReturnCredit:
    """Each episode's return less its group's mean, on every sampled token (GRPO without the
    division by the standard deviation); it remembers what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, torch.Tensor, AlgorithmConfig]] = []

    def __call__(
        self,
        trajectories: list[Trajectory],
        episode_rewards: torch.Tensor,
        settings: AlgorithmConfig,
        values: list[torch.Tensor] | None = None,
    ) -> Credit:
        self.calls.append((len(trajectories), episode_rewards.clone(), settings))
        groups = torch.tensor([t.group_id for t in trajectories])
        means = torch.stack([episode_rewards[groups == group].mean() for group in groups])
        return Credit(per_episode_credit(trajectories, episode_rewards - means))


@pytest.fixture
def centred_return() -> Iterator[CentredReturnCredit]:
    credit = CentredReturnCredit()
    register_algorithm(
        AlgorithmSpec(
            name="centred-return",
            credit=credit,
            granularity="episode",
            description="each episode's return less its group's mean, on all its tokens",
        )
    )
    yield credit
    unregister_algorithm("centred-return")


@pytest.fixture
def whole_episode_critic() -> Iterator[AlgorithmSpec]:
    spec = register_algorithm(
        AlgorithmSpec(
            name="whole-episode-critic",
            credit=CentredReturnCredit(),
            granularity="token",
            description="needs what PPO needs",
            needs_critic=True,
            needs_full_context=True,
            needs_every_episode=True,
        )
    )
    yield spec
    unregister_algorithm(spec.name)


def test_the_built_in_estimators_are_registered_in_order_with_their_needs():
    assert list(ALGORITHMS)[: len(BUILT_IN)] == BUILT_IN
    assert [n for n, s in ALGORITHMS.items() if s.needs_critic] == ["ppo"]
    assert algorithm_spec("gigpo").granularity == "turn"
    assert {algorithm_spec(n).granularity for n in ("starpo", "grpo", "rloo", "raft")} == {
        "episode"
    }
    for spec in ALGORITHMS.values():
        assert callable(spec.credit_function()), spec.name
        assert spec.description and "\n" not in spec.description


def test_a_registered_estimator_trains_one_step_of_a_real_run(tmp_path, centred_return):
    from trainer.training.pipeline import Pipeline

    config = load_config(
        None,
        [
            *TWO_BY_TWO_LAKE,
            "model.lora=null",
            "algorithm.name=centred-return",
            f"train.output_dir={tmp_path}",
        ],
    )
    pipeline = Pipeline(config, log=None)
    try:
        before = {n: p.detach().clone() for n, p in pipeline.strategy.model.named_parameters()}
        metrics = pipeline.train_step()
        after = dict(pipeline.strategy.model.named_parameters())
    finally:
        pipeline.close()

    assert len(centred_return.calls) == 1
    episodes, returns, settings = centred_return.calls[0]
    assert episodes == config.env.group_size * config.env.groups_per_step
    assert settings.name == "centred-return"
    assert returns.shape == (episodes,)
    assert all(math.isfinite(value) for value in metrics.values())
    assert "policy/loss" in metrics and "critic/loss" not in metrics
    assert any(not torch.equal(before[n], after[n].detach()) for n in before)


def test_an_unknown_algorithm_lists_the_registered_ones_and_the_closest(centred_return):
    with pytest.raises(ConfigError) as refused:
        load_config("sokoban", ["algorithm.name=centered-return"])
    message = str(refused.value)
    assert message.startswith("algorithm.name: Input should be 'starpo', 'grpo', ")
    assert "'raft' or 'centred-return' (got 'centered-return'" in message
    assert "did you mean 'centred-return'?" in message
    assert "\n" not in message
    with pytest.raises(UnknownAlgorithmError, match="'ppo'"):
        algorithm_spec("dqn")


def test_a_name_is_registered_once_unless_replaced(centred_return):
    spec = algorithm_spec("centred-return")
    with pytest.raises(ValueError, match="already registered"):
        register_algorithm(spec)
    assert register_algorithm(spec, replace=True) is spec


def test_the_config_cli_and_strategy_follow_what_an_estimator_needs(whole_episode_critic):
    from trainer.cli.launch import config_from_args
    from trainer.cli.main import build_parser
    from trainer.strategies.from_config import strategy_options

    name = whole_episode_critic.name
    with pytest.raises(ConfigError, match=f"algorithm.name={name} .*set env.context=full"):
        load_config("sokoban", [f"algorithm.name={name}", "env.context=window"])
    with pytest.raises(ConfigError, match=f"skip_zero_advantage .*algorithm.name={name}"):
        load_config(
            "sokoban",
            [f"algorithm.name={name}", "env.context=full", "algorithm.skip_zero_advantage=true"],
        )
    # --algo offers it, and implies what it needs unless the user set it
    args = build_parser().parse_args(["train", "--env", "sokoban", "--algo", name])
    config = config_from_args(args)
    assert config.env.context == "full" and not config.algorithm.skip_zero_advantage
    assert strategy_options(config)["value_head"] is True
    assert strategy_options(load_config("sokoban"))["value_head"] is False
