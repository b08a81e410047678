"""FrozenLake's moves, rewards and slipping on maps written by hand."""

from __future__ import annotations

from collections import Counter

import pytest

from environments.frozenlake.env import FrozenLakeEnv
from environments.frozenlake.oracle import shortest_path

LAKE = ["SFFF", "FHFH", "FFFH", "HFFG"]


def test_observation_draws_the_map_and_player():
    env = FrozenLakeEnv()
    obs, _ = env.reset(options={"desc": LAKE})
    assert obs == "P___\n_O_O\n___O\nO__G"


def test_falling_into_a_hole_ends_the_episode_without_reward():
    env = FrozenLakeEnv()
    env.reset(options={"desc": LAKE})
    env.step("<answer>Right</answer>")
    obs, reward, terminated, truncated, info = env.step("<answer>Down</answer>")
    assert obs == "____\n_X_O\n___O\nO__G"
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["metrics"]["success"] is False


def test_reaching_the_goal_pays_one():
    env = FrozenLakeEnv(max_actions_per_turn=6)
    env.reset(options={"desc": LAKE})
    obs, reward, terminated, _, info = env.step(
        "<answer>Down || Down || Right || Right || Down || Right</answer>"
    )
    assert obs == "____\n_O_O\n___O\nO__√"
    assert (reward, terminated, info["metrics"]["success"]) == (1.0, True, True)


def test_walking_into_the_edge_is_valid_but_not_effective():
    env = FrozenLakeEnv()
    env.reset(options={"desc": LAKE})
    obs, reward, _, _, info = env.step("<answer>Up</answer>")
    assert obs == "P___\n_O_O\n___O\nO__G" and reward == 0.0
    assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]


def test_slippery_ice_follows_gymnasium_probabilities():
    # from the middle of an open lake, "Down" goes down, left or right, a third each
    env = FrozenLakeEnv(size=3, is_slippery=True)
    outcomes = Counter()
    for seed in range(900):
        env.reset(seed=seed, options={"desc": ["FFF", "FSF", "FFG"]})
        env.step("<answer>Down</answer>")
        outcomes[env.position] += 1
    down, left, right = outcomes[7], outcomes[3], outcomes[5]
    assert down + left + right == 900, "never up: Gymnasium slips only sideways"
    for count in (down, left, right):
        assert 240 < count < 360  # 300 expected; 4.5 standard deviations either side


def test_shortest_path_on_a_hand_map():
    # S at 0, goal at 15: round the holes at 5 and 7, 11 and 12: six moves
    plan = shortest_path(tuple(LAKE), 0)
    assert len(plan) == 6
    assert shortest_path(("SH", "HG"), 0) is None


def test_generated_maps_have_the_requested_size_after_a_given_map():
    env = FrozenLakeEnv(size=5)
    env.reset(options={"desc": LAKE})
    obs, _ = env.reset(seed=0)
    assert len(obs.splitlines()) == 5


@pytest.mark.parametrize(
    ("desc", "message"),
    [(["SF", "F"], "square"), (["SX", "FG"], "S F H G"), (["FF", "FG"], "exactly one S")],
)
def test_malformed_maps_are_explained(desc, message):
    with pytest.raises(ValueError, match=message):
        FrozenLakeEnv().reset(options={"desc": desc})


def test_bad_settings_are_explained():
    with pytest.raises(ValueError, match="frozen_probability"):
        FrozenLakeEnv(frozen_probability=0.0)
    with pytest.raises(ValueError, match="render_mode"):
        FrozenLakeEnv(render_mode="human")


def test_slippery_oracle_maximises_the_chance_of_success():
    import rollenv
    from rollenv.policies import RandomPolicy, oracle_for, run_episode

    env = rollenv.make("FrozenLakeSlippery-v0", max_actions=100, max_episode_steps=100)
    oracle = oracle_for(env)
    solved = sum(run_episode(env, oracle, seed=s).success for s in range(100))
    random_solved = sum(
        run_episode(env, RandomPolicy(env, seed=s), seed=s).success for s in range(100)
    )
    # value iteration reaches the goal on about 9 maps in 10 given 100 moves; a random walk
    # on a few in 100
    assert solved >= 75 and solved > 3 * random_solved


def test_a_fixed_map_is_played_every_episode():
    env = FrozenLakeEnv(desc=["SFH", "FFF", "HFG"])
    boards = {env.reset(seed=seed)[0] for seed in range(10)}
    assert boards == {"P_O\n___\nO_G"}
