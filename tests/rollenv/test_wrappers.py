from __future__ import annotations

import time

import pytest

import rollenv
from rollenv.wrappers import ChatHistory, Latency


def _play(env, replies):
    obs, info = env.reset(seed=0)
    for reply in replies:
        obs, reward, terminated, truncated, info = env.step(reply)
    return info


def test_chat_history_keeps_every_turn_by_default():
    env = ChatHistory(rollenv.make("Sokoban-v0"))
    info = _play(env, ["<answer>Up</answer>", "bad", "<answer>Left</answer>"])
    roles = [m["role"] for m in info["messages"]]
    assert roles == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert info["messages"][0]["content"] == env.unwrapped.instruction
    assert [m["content"] for m in info["messages"] if m["role"] == "assistant"] == [
        "<answer>Up</answer>",
        "bad",
        "<answer>Left</answer>",
    ]
    assert info["messages"][3]["content"].startswith("Reward: -0.1\n")
    assert info["messages"][-1]["content"].endswith(env.unwrapped.render())


def test_chat_history_window_keeps_the_last_turns():
    env = ChatHistory(rollenv.make("Sokoban-v0"), window=1)
    info = _play(env, ["<answer>Up</answer>", "<answer>Down</answer>", "<answer>Left</answer>"])
    assert [m["role"] for m in info["messages"]] == ["system", "user", "assistant", "user"]
    assert info["messages"][2]["content"] == "<answer>Left</answer>"
    assert (
        ChatHistory(rollenv.make("Sokoban-v0"), window=0).reset(seed=0)[1]["messages"][-1]["role"]
        == "user"
    )


def test_chat_history_resets_between_episodes():
    env = ChatHistory(rollenv.make("Sokoban-v0"))
    _play(env, ["<answer>Up</answer>"])
    _, info = env.reset(seed=1)
    assert len(info["messages"]) == 2


def test_latency_fixed_delay_is_slept():
    env = Latency(rollenv.make("FrozenLake-v0"), delay_s=0.02)
    env.reset(seed=0)
    start = time.perf_counter()
    env.step("<answer>Right</answer>")
    assert time.perf_counter() - start >= 0.02
    assert env.last_delay_s == 0.02


def test_latency_draws_are_seeded_and_in_range():
    draws = []
    for _ in range(2):
        env = Latency(rollenv.make("FrozenLake-v0"), delay_s=(0.0, 0.001), seed=3)
        env.reset(seed=0)
        run = []
        for _ in range(5):
            env.step("<answer>Down</answer>")
            run.append(env.last_delay_s)
        draws.append(run)
    assert draws[0] == draws[1]
    assert all(0.0 <= d <= 0.001 for d in draws[0]) and len(set(draws[0])) > 1


def test_latency_lognormal_has_a_long_tail():
    env = Latency(rollenv.make("FrozenLake-v0"), delay_s=1e-6, lognormal_sigma=1.0, seed=0)
    samples = sorted(env._draw() for _ in range(2000))
    median, p99 = samples[1000], samples[1980]
    assert 5 < p99 / median < 20  # exp(2.33 sigma) is about 10 for sigma = 1


@pytest.mark.parametrize(
    "kwargs",
    [{"delay_s": -1.0}, {"delay_s": (0.2, 0.1)}, {"delay_s": (0.0, 0.1), "lognormal_sigma": 1.0}],
)
def test_latency_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError, match="Latency"):
        Latency(rollenv.make("FrozenLake-v0"), **kwargs)
