"""openenv-core's own client (``GenericEnvClient``, unchanged) plays a rollenv env."""

from __future__ import annotations

import pytest

import rollenv
from rollenv.policies import oracle_for


@pytest.fixture(scope="module")
def openenv_core():
    """openenv-core, imported only where its tests run: it imports gradio (10 s here), which
    every pytest-xdist worker would pay while collecting."""
    return pytest.importorskip("openenv.core", reason="needs openenv-core")


def test_openenv_client_plays_an_episode_to_success(server_url: str, openenv_core) -> None:
    local = rollenv.make("Sokoban-v0")
    observation, info = local.reset(seed=21)
    oracle = oracle_for(local)
    with openenv_core.GenericEnvClient(base_url=server_url).sync() as client:
        result = client.reset(env_id="Sokoban-v0", seed=21)
        assert result.observation["text"] == observation
        assert result.observation["instruction"] == info["instruction"]
        assert result.reward is None and not result.done
        steps = 0
        while not result.done:
            action = oracle.act(observation, info)
            observation, reward, terminated, truncated, info = local.step(action)
            result = client.step({"message": action})
            steps += 1
            assert result.observation["text"] == observation
            assert result.reward == reward and result.done == (terminated or truncated)
            assert result.observation["metrics"] == info["metrics"]
        assert result.observation["metrics"]["success"]
        state = client.state()
        assert state["step_count"] == steps and state["env_id"] == "Sokoban-v0"


def test_openenv_client_sees_errors_and_the_session_goes_on(server_url: str, openenv_core) -> None:
    with openenv_core.GenericEnvClient(base_url=server_url).sync() as client:
        with pytest.raises(RuntimeError, match=r"Did you mean: 'Sokoban-v0'.*UNKNOWN_ENV"):
            client.reset(env_id="Sokobn-v0")
        with pytest.raises(RuntimeError, match="NOT_RESET"):
            client.step({"message": "<answer>Up</answer>"})
        result = client.reset(env_id="FrozenLake-v0", seed=3)
        assert result.observation["text"] == rollenv.make("FrozenLake-v0").reset(seed=3)[0]
