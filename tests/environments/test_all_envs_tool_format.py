"""Every registered id in the ``tools`` action format: the same game as in text, through calls,
and no message that makes it raise."""

from __future__ import annotations

import json
import warnings

import jsonschema
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings

import rollenv
from rollenv.policies import RandomPolicy, oracle_for, run_episode, text_env_of
from tests.environments.test_all_envs import (
    ADAPTED_IDS,
    ALL_IDS,
    ORACLE_ELSEWHERE,
    REWARD_IDS,
    SLOW_RESET_IDS,
    SLOW_REWARD_IDS,
    _params,
)
from tests.environments.test_tool_format import _check_garbage, _tools, garbage

# the oracle's episodes in both formats: ids whose oracle runs elsewhere still run here, on
# fewer seeds, as every id must match
PARITY_SEEDS = {"WebShopHTML-v0": 1, "CodeSandbox-v0": 2, "CodeSandboxMultiTurn-v0": 2}


@pytest.mark.parametrize("env_id", _params(ALL_IDS))
def test_check_env_passes_in_the_tools_format(env_id):
    env = _tools(env_id)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
        assert [str(w.message) for w in caught] == []
    finally:
        env.close()


@pytest.mark.parametrize("env_id", _params(ALL_IDS))
def test_every_step_offers_openai_tools_with_valid_schemas(env_id):
    env = _tools(env_id)
    try:
        obs, info = env.reset(seed=0)
        text_obs, _ = rollenv.make(env_id).reset(seed=0)
        assert obs == text_obs  # the first observation is the text format's
        policy = RandomPolicy(env, seed=0)
        for _ in range(3):
            tools = info["tools"]
            assert tools, "an env offers at least one tool"
            names = [tool["function"]["name"] for tool in tools]
            assert len(set(names)) == len(names)
            for tool in tools:
                assert tool["type"] == "function"
                assert set(tool["function"]) == {"name", "description", "parameters"}
                jsonschema.validators.validator_for(tool["function"]["parameters"]).check_schema(
                    tool["function"]["parameters"]
                )
            obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
            messages = json.loads(obs)
            assert messages == info["tool_messages"]
            assert all(m["role"] in ("tool", "user") for m in messages)
            if env_id not in ADAPTED_IDS:  # the game's own rules judge a move there
                assert info["metrics"]["action_is_valid"] is True
                assert [m["role"] for m in messages] == ["tool"]
            if terminated or truncated:
                break
    finally:
        env.close()


@pytest.mark.parametrize("env_id", _params(REWARD_IDS))
def test_the_oracle_plays_the_same_episodes_in_both_formats(env_id):
    seeds = range(PARITY_SEEDS.get(env_id, 1 if env_id in SLOW_RESET_IDS else 2))
    outcomes = {}
    for action_format in ("text", "tools"):
        env = rollenv.make(env_id, action_format=action_format)
        try:
            outcomes[action_format] = [
                run_episode(env, oracle_for(env), seed=seed) for seed in seeds
            ]
        finally:
            env.close()
    for text, tools in zip(outcomes["text"], outcomes["tools"], strict=True):
        assert (tools.success, tools.turns, tools.valid_turns) == (
            text.success,
            text.turns,
            text.valid_turns,
        )
        assert tools.total_reward == pytest.approx(text.total_reward)
    if env_id not in ORACLE_ELSEWHERE and text_env_of(env).deterministic:
        assert all(result.success for result in outcomes["tools"])


@pytest.mark.parametrize(
    "env_id",
    [pytest.param(i, marks=pytest.mark.slow) if i in SLOW_REWARD_IDS else i for i in REWARD_IDS],
)
def test_no_task_ignoring_reply_earns_reward_in_the_tools_format(env_id):
    env = _tools(env_id)
    try:
        seeds = range(min(SLOW_REWARD_IDS.get(env_id, 3), 3))
        report = rollenv.check_reward(env, seeds=seeds)
        deterministic = text_env_of(env).deterministic
    finally:
        env.close()
    assert report.oracle.success_rate == 1.0 if deterministic else report.oracle.success_rate > 0


@pytest.mark.parametrize("env_id", [i for i in ALL_IDS if i not in SLOW_RESET_IDS])
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(message=garbage)
def test_garbage_messages_never_raise_in_any_env(env_id, message):
    _check_garbage(env_id, message)
