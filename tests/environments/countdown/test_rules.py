"""Countdown's rules, rewards and episodes, on puzzles given by hand and generated."""

from __future__ import annotations

import pytest

import rollenv
from environments.countdown.env import CountdownEnv
from rollenv.policies import RandomPolicy, oracle_for, run_episode

PUZZLE = {"numbers": [3, 5, 7], "target": 22}


def _play(reply: str, **kwargs):
    env = CountdownEnv(**kwargs)
    env.reset(options=PUZZLE)
    return env, env.step(reply)


def test_the_observation_lists_the_numbers_and_the_target():
    obs, info = CountdownEnv().reset(options=PUZZLE)
    assert obs == "Numbers: 3 5 7\nTarget: 22"
    assert (info["numbers"], info["target"]) == ([3, 5, 7], 22)
    assert "exactly once" in info["instruction"]


@pytest.mark.parametrize("answer", ["3 * 5 + 7", "7 + 5 * 3", "(7 + 5 * 3)", "3*5+7 = 22"])
def test_a_correct_expression_wins(answer):
    _, (obs, reward, terminated, truncated, info) = _play(f"<answer>{answer}</answer>")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["metrics"] == {
        "success": True,
        "action_is_valid": True,
        "action_is_effective": True,
    }


def test_a_fraction_along_the_way_is_exact():
    env = CountdownEnv()
    env.reset(options={"numbers": [3, 3, 8, 8], "target": 24})
    _, reward, terminated, _, _ = env.step("<answer>8 / (3 - 8 / 3)</answer>")
    assert (reward, terminated) == (1.0, True)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("3 * 7 + 1", "it uses 1 beyond the given numbers; it leaves out 5"),
        ("3 * 5 + 7 + 7 - 7", "it uses 7, 7 beyond the given numbers"),
        ("22", "it uses 22 beyond the given numbers; it leaves out 3, 5, 7"),
        ("3 + 5 + 7", "it equals 15, not 22"),
        ("3 / (5 - 5) + 7", "it uses 5 beyond the given numbers"),
        ("7 / (5 - 5 + 3 - 3)", "it uses 3, 5 beyond the given numbers"),
        ("(3 + 5) / 7", "it equals 8/7, not 22"),
    ],
)
def test_a_wrong_expression_is_an_attempt_that_earns_nothing(answer, why):
    env, (obs, reward, terminated, _, info) = _play(f"<answer>{answer}</answer>", max_attempts=2)
    assert (reward, terminated) == (0.0, False)
    assert info["metrics"]["action_is_valid"] and not info["metrics"]["success"]
    assert obs == f"Numbers: 3 5 7\nTarget: 22\nWrong: {why}. Attempts left: 1."


def test_dividing_by_zero_is_reported():
    env = CountdownEnv(max_attempts=2)
    env.reset(options={"numbers": [4, 4, 2], "target": 2})
    obs, reward, *_ = env.step("<answer>2 / (4 - 4)</answer>")
    assert reward == 0.0 and "it equals undefined, not 2" in obs


def test_one_wrong_attempt_ends_a_single_attempt_episode():
    _, (_, reward, terminated, truncated, info) = _play("<answer>3 + 5 + 7</answer>")
    assert (reward, terminated, truncated, info["metrics"]["success"]) == (0.0, True, False, False)


def test_attempts_run_out_then_the_episode_fails():
    env = CountdownEnv(max_attempts=3)
    env.reset(options=PUZZLE)
    outcomes = [env.step("<answer>3 + 5 + 7</answer>")[2] for _ in range(3)]
    assert outcomes == [False, False, True]
    env.reset(options=PUZZLE)
    env.step("<answer>3 + 5 + 7</answer>")
    _, reward, terminated, _, info = env.step("<answer>3 * 5 + 7</answer>")
    assert (reward, terminated, info["metrics"]["success"]) == (1.0, True, True)


@pytest.mark.parametrize(
    "reply",
    [
        "3 * 5 + 7",  # no answer tag
        "<answer>three times five plus seven</answer>",
        "<answer>-3 + 25</answer>",
        "<answer>3 ** 2 + 13</answer>",
        "<answer></answer>",
        "<answer>Numbers: 3 5 7\nTarget: 22</answer>",
    ],
)
def test_a_reply_without_an_expression_is_a_penalised_no_op(reply):
    env, (obs, reward, terminated, truncated, info) = _play(reply)
    assert obs == "Numbers: 3 5 7\nTarget: 22"
    assert (reward, terminated, truncated) == (-0.1, False, False)
    assert info["metrics"]["action_is_valid"] is False
    assert env.actions_taken == 0


def test_same_seed_same_puzzle_and_seeds_differ():
    env = CountdownEnv()
    first = [env.reset(seed=s)[0] for s in range(20)]
    assert first == [CountdownEnv().reset(seed=s)[0] for s in range(20)]
    assert len(set(first)) == 20


@pytest.mark.parametrize(
    ("env_id", "sizes"), [("Countdown-v0", {3, 4}), ("CountdownHard-v0", {5, 6})]
)
def test_the_difficulty_knob_sets_how_many_numbers(env_id, sizes):
    env = rollenv.make(env_id)
    seen = {len(env.reset(seed=s)[1]["numbers"]) for s in range(30)}
    assert seen == sizes


@pytest.mark.parametrize("env_id", ["Countdown-v0", "CountdownHard-v0", "CountdownRetry-v0"])
def test_the_oracle_solves_200_seeded_episodes(env_id):
    env = rollenv.make(env_id)
    oracle = oracle_for(env)
    failed = [s for s in range(200) if not run_episode(env, oracle, seed=s).success]
    assert failed == []


def test_the_random_policy_solves_nothing():
    env = rollenv.make("Countdown-v0")
    results = [run_episode(env, RandomPolicy(env, seed=s), seed=s) for s in range(50)]
    assert not any(r.success for r in results)
    assert all(r.valid_turns == r.turns for r in results)


@pytest.mark.parametrize("env_id", ["Countdown-v0", "CountdownHard-v0", "CountdownRetry-v0"])
def test_no_task_ignoring_reply_earns_reward(env_id):
    report = rollenv.check_reward(rollenv.make(env_id), seeds=range(20))
    assert report.passed and report.oracle.success_rate == 1.0
    summed = next(p for p in report.probes if p.name == "numbers summed")
    assert summed.success_rate == 0.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_numbers": 1}, "num_numbers"),
        ({"num_numbers": (5, 3)}, "num_numbers"),
        ({"max_target": 0}, "max_target"),
    ],
)
def test_bad_settings_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        CountdownEnv(**kwargs)


def test_bad_reset_options_name_what_is_needed():
    with pytest.raises(ValueError, match="'numbers'.*'target'"):
        CountdownEnv().reset(options={"numbers": [1, 2]})
