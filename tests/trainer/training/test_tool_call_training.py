"""Training in the ``tools`` action format: the warm start learns from the oracle's calls, and
an RL step runs in both context modes."""

from __future__ import annotations

import pytest

from rollenv.policies import oracle_for
from tests.trainer.two_by_two_lake import TWO_BY_TWO_LAKE
from trainer.config import load_config
from trainer.training.pipeline import Pipeline
from trainer.training.sft import OracleSFT

TOOLS = [
    *TWO_BY_TWO_LAKE,
    "model.lora=null",
    "env.constrain_to_actions=false",
    "env.action_format=tools",
    "sampling.max_new_tokens=32",
]


def test_the_warm_start_trains_on_the_oracles_calls_as_the_model_writes_them(tmp_path):
    config = load_config(
        None, [*TOOLS, "sft.batch_sequences=2", "sft.episodes=4", f"train.output_dir={tmp_path}"]
    )
    sft = OracleSFT(config, log=lambda message: None)
    (episode,) = sft.manager.rollout([0], policy=oracle_for)  # what the warm start trains on
    assert episode.success
    ((ids, mask),) = [(s.token_ids, s.loss_mask) for s in episode.samples]
    trained = sft.tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    assert trained.startswith('<tool_call>\n{"name": "move", "arguments": {"direction": ')
    assert sft.train(max_steps=1)["sft/loss"] > 0


@pytest.mark.parametrize("context", ["full", "window"])
def test_an_rl_step_runs_on_tool_calls(tmp_path, context):
    config = load_config(None, [*TOOLS, f"env.context={context}", f"train.output_dir={tmp_path}"])
    pipeline = Pipeline(config, log=None)
    metrics = pipeline.train_step()
    # in the tools format a valid action is a call the env ran: the schema-valid call rate
    assert 0.0 <= metrics["rollout/valid_action_rate"] <= 1.0
    assert metrics["rollout/response_tokens_per_turn"] > 1


def test_constrained_tool_calls_are_all_valid_from_the_first_step(tmp_path):
    # random weights: without the grammar hardly a reply is a call (the test above)
    config = load_config(
        None,
        [
            *TOOLS,
            "env.constrain_to_actions=true",
            "sampling.max_new_tokens=48",
            f"train.output_dir={tmp_path}",
        ],
    )
    pipeline = Pipeline(config, log=None)
    metrics = pipeline.train_step()
    assert metrics["rollout/valid_action_rate"] == 1.0
    assert metrics["rollout/response_tokens_per_turn"] > 10  # a call, not a word


def test_score_actions_only_is_refused_with_tool_calls():
    with pytest.raises(ValueError, match="set algorithm.score_actions_only=false"):
        load_config(
            None,
            [*TOOLS, "env.constrain_to_actions=true", "algorithm.score_actions_only=true"],
        )
