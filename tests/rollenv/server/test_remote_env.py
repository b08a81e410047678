"""``rollenv.RemoteEnv``: a remote env gives what the local one gives, seed for seed."""

from __future__ import annotations

import time
import warnings

import httpx
import pytest
from gymnasium.utils.env_checker import check_env

import rollenv
from rollenv import RemoteEnv
from rollenv.policies import RandomPolicy, oracle_for
from rollenv.remote import RemoteEnvError


@pytest.mark.parametrize("env_id", ["Sokoban-v0", "FrozenLake-v0", "MathVerify-v0", "WebShop-v0"])
def test_same_seed_and_replies_give_the_same_episode_remotely(server_url: str, env_id: str) -> None:
    local = rollenv.make(env_id)
    with RemoteEnv(server_url, env_id) as remote:
        for seed in (0, 7):
            observation, info = local.reset(seed=seed)
            assert remote.reset(seed=seed) == (observation, info)
            assert info["instruction"]
            oracle, random_policy = oracle_for(local), RandomPolicy(local, seed=seed)
            # an invalid reply, a random valid one, then the oracle's until the episode ends
            replies = iter(["no answer here", random_policy.act(observation, info)])
            done = False
            while not done:
                reply = next(replies, None) or oracle.act(observation, info)
                observation, reward, terminated, truncated, info = local.step(reply)
                assert remote.step(reply) == (observation, reward, terminated, truncated, info)
                assert remote.render() == observation
                done = terminated or truncated
        # a reset without a seed goes on with the env's random stream, as locally
        assert remote.reset()[0] == local.reset()[0]


@pytest.mark.parametrize("env_id", ["Sokoban-v0", "WebShop-v0"])
def test_an_env_in_the_tools_format_plays_the_same_remotely(server_url: str, env_id: str) -> None:
    local = rollenv.make(env_id, action_format="tools")
    with RemoteEnv(server_url, env_id, action_format="tools") as remote:
        observation, info = local.reset(seed=3)
        assert remote.reset(seed=3) == (observation, info)
        assert info["tools"]
        oracle, done = oracle_for(local), False
        while not done:
            message = oracle.act(observation, info)  # the JSON of an assistant message
            observation, reward, terminated, truncated, info = local.step(message)
            assert remote.step(message) == (observation, reward, terminated, truncated, info)
            done = terminated or truncated
        assert info["metrics"]["success"]


def test_close_ends_the_server_session(server_url: str) -> None:
    remote = RemoteEnv(server_url, "FrozenLake-v0", is_slippery=False)
    remote.reset(seed=0)
    session_id = remote.session_id
    state = httpx.get(f"{server_url}/state", params={"session_id": session_id}).json()
    assert state["kwargs"] == {"is_slippery": False}
    remote.close()
    remote.close()  # twice is harmless
    assert httpx.get(f"{server_url}/state", params={"session_id": session_id}).status_code == 404
    with pytest.raises(RemoteEnvError, match="closed"):
        remote.step("<answer>Up</answer>")


def test_errors_are_the_local_ones(server_url: str) -> None:
    with pytest.raises(rollenv.UnknownEnvError, match="Did you mean: 'FrozenLake-v0'"):
        RemoteEnv(server_url, "FrozenLak-v0")
    with pytest.raises(RemoteEnvError) as refused:
        RemoteEnv(server_url, "Sokoban-v0", num_boxs=2)
    assert refused.value.code == "BAD_ENV_KWARGS" and "num_boxes" in str(refused.value)
    with pytest.raises(RemoteEnvError) as unreachable:
        RemoteEnv("http://127.0.0.1:9", "Sokoban-v0", request_timeout=5)
    assert unreachable.value.code == "UNREACHABLE"


def test_a_reset_reopens_a_session_the_server_expired(small_server) -> None:
    url, store = small_server
    with RemoteEnv(url, "Sokoban-v0") as remote:
        first = remote.reset(seed=2)
        expired = remote.session_id
        deadline = time.monotonic() + 10
        while expired in store and time.monotonic() < deadline:
            time.sleep(0.05)  # the server sweeps sessions idle for 0.4 s
        with pytest.raises(RemoteEnvError) as gone:
            remote.step("<answer>Up</answer>")
        assert gone.value.code == "SESSION_EXPIRED"
        assert remote.reset(seed=2) == first
        assert remote.session_id != expired


def test_a_remote_env_registers_like_any_env(server_url: str) -> None:
    """Registered under an id, ``rollenv.make`` builds it (as the trainer's env managers do)
    and Gymnasium's checker passes it without a warning."""
    rollenv.register(
        "ServerTestRemoteSokoban-v0",
        "rollenv.remote:RemoteEnv",
        kwargs={"base_url": server_url, "env_id": "Sokoban-v0"},
        max_episode_steps=10,
    )
    try:
        env = rollenv.make("ServerTestRemoteSokoban-v0")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
        assert env.reset(seed=1)[0] == rollenv.make("Sokoban-v0").reset(seed=1)[0]
        env.close()
    finally:
        rollenv.registry._remove("ServerTestRemoteSokoban-v0")  # no public removal
