"""``agent.function``: a run trains an agent program through the gateway, the weights it
serves follow every update, and a bad agent is refused before the run starts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from tests.trainer.two_by_two_lake import TWO_BY_TWO_LAKE
from trainer.config import ConfigError, load_config
from trainer.training.pipeline import Pipeline

pytest.importorskip("openai")

AGENT = [
    *TWO_BY_TWO_LAKE,
    "agent=tests.trainer.agents.lake_agents:tool_agent",
    "env.constrain_to_actions=false",  # the agent asks for its calls with tool_choice
    "env.action_format=tools",
    "sampling.max_new_tokens=48",
]


def test_an_agent_program_trains_through_the_gateway_and_is_served_each_new_version(tmp_path):
    pipeline = Pipeline(load_config(None, [*AGENT, f"train.output_dir={tmp_path}"]), log=None)
    engine = pipeline.rollouts.engine
    try:
        before = {k: v.clone() for k, v in engine.generator.model.state_dict().items()}
        for step in (1, 2):
            metrics = pipeline.train_step()
            assert metrics["rollout/agent_raised"] == 0.0
            assert metrics["rollout/valid_action_rate"] == 1.0  # the grammar of tool_choice
            assert metrics["rollout/calls_per_episode"] >= 1
            assert engine.weight_version == step
        served = engine.generator.model.state_dict()
        trained = pipeline.strategy.inference_state_dict()
        assert any(not torch.equal(before[k], served[k]) for k in served)
        assert all(torch.equal(served[k], trained[k].to(served[k].dtype)) for k in trained)
        evaluation = pipeline.rollouts.evaluate(version=2)
        assert 0.0 <= evaluation["eval/success"] <= 1.0
        assert evaluation["eval/agent_raised"] == 0.0
    finally:
        pipeline.rollouts.shutdown()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("agent=nocolon", "agent.function"),
        ("rollout.mode=ray", "set rollout.mode=local"),
        ("generation.backend=hf", "set generation.backend=continuous"),
        ("env.constrain_to_actions=true", "set env.constrain_to_actions=false"),
        ("sft.before_rl=true", "set sft.before_rl=false"),
    ],
)
def test_an_agent_run_that_cannot_work_is_refused_by_the_config(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [*AGENT, override])


EXAMPLE = Path(__file__).parents[3] / "examples"


def test_the_example_agents_need_only_the_openai_sdk():
    tree = ast.parse((EXAMPLE / "tool_agents.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(str(node.module).split(".")[0])
    assert imported <= {"__future__", "json"}


@pytest.mark.parametrize("name", ["frozenlake_tool_agent", "sokoban_tool_agent"])
def test_an_example_agents_config_trains_a_step(name, tmp_path, monkeypatch):
    monkeypatch.chdir(EXAMPLE.parent)  # the config names examples.tool_agents:<agent>
    config = load_config(
        str(EXAMPLE / f"{name}.yaml"),
        [
            "model.name=tiny-random",
            "model.trainable_layers=null",
            "env.groups_per_step=2",
            "env.group_size=2",
            "train.eval_groups=2",
            f"train.output_dir={tmp_path}",
        ],
    )
    assert config.agent.choices_up_to > 0
    pipeline = Pipeline(config, log=None)
    try:
        metrics = pipeline.train_step()
        assert metrics["rollout/agent_raised"] == 0.0
        assert metrics["rollout/valid_action_rate"] == 1.0
        assert metrics["rollout/calls_per_episode"] >= 1
    finally:
        pipeline.rollouts.shutdown()
