"""Sokoban's moves and rewards on boards drawn by hand."""

from __future__ import annotations

import pytest

import rollenv
from environments.sokoban.env import SokobanEnv

CORRIDOR = """
#######
#P_X_O#
#######
"""


def _env(**kwargs) -> SokobanEnv:
    return SokobanEnv(**kwargs)


def test_reading_a_board_and_its_optimal_length():
    env = _env()
    obs, info = env.reset(options={"board": CORRIDOR})
    assert obs == CORRIDOR.strip()
    # walk right once, then push the box two cells onto the target
    assert info["optimal_plan_length"] == 3


def test_step_rewards_follow_the_scheme():
    env = _env()
    env.reset(options={"board": CORRIDOR})
    obs, reward, terminated, _, info = env.step("<answer>Right</answer>")
    assert (obs, reward, terminated) == ("#######\n#_PX_O#\n#######", pytest.approx(-0.1), False)
    assert info["metrics"]["action_is_effective"] is True
    _, reward, terminated, _, _ = env.step("<answer>Right</answer>")
    assert (reward, terminated) == (pytest.approx(-0.1), False)
    obs, reward, terminated, truncated, info = env.step("<answer>Right</answer>")
    # -0.1 for the move, +1 for the box onto the target, +10 for solving
    assert reward == pytest.approx(10.9)
    assert obs == "#######\n#___P√#\n#######"
    assert terminated and not truncated and info["metrics"]["success"] is True


def test_pushing_a_box_off_its_target_costs_one():
    env = _env()
    env.reset(options={"board": "########\n#P√__XO#\n########"})
    obs, reward, *_ = env.step("<answer>Right</answer>")
    assert obs == "########\n#_SX_XO#\n########"
    assert reward == pytest.approx(-1.1)


def test_blocked_moves_cost_a_step_and_change_nothing():
    env = _env()
    env.reset(options={"board": "######\n#PXX_#\n#_OO_#\n######"})
    for move in ("Left", "Up", "Right"):  # a wall, a wall, two boxes in a row
        obs, reward, _, _, info = env.step(f"<answer>{move}</answer>")
        assert obs == "######\n#PXX_#\n#_OO_#\n######"
        assert reward == pytest.approx(-0.1)
        assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]


def test_several_actions_per_turn_add_their_rewards_and_stop_at_success():
    env = _env(max_actions_per_turn=5)
    env.reset(options={"board": CORRIDOR})
    obs, reward, terminated, _, _ = env.step("<answer>Right || right || RIGHT || Left</answer>")
    assert terminated and reward == pytest.approx(-0.1 - 0.1 + 10.9)
    assert env.actions_taken == 3, "the move after the solving push is not played"


def test_action_budget_truncates_the_episode():
    env = _env(max_actions=3)
    env.reset(options={"board": "#######\n#P__XO#\n#######"})
    truncated_at = None
    for turn in range(1, 5):
        *_, terminated, truncated, _ = env.step("<answer>Left</answer>")
        if truncated:
            truncated_at = turn
            break
    assert truncated_at == 3 and not terminated


def test_grid_vocabulary_changes_the_drawing():
    env = rollenv.make("SokobanDifferentGridVocab-v0")
    obs, info = env.reset(seed=0)
    assert set(obs) <= set("W.GCBA@\n")
    assert ("A" in obs) != ("@" in obs), "exactly one player symbol"
    assert "W wall" in info["instruction"] and "B box" in info["instruction"]


@pytest.mark.parametrize(
    ("board", "message"),
    [
        ("#####\n#PX_#\n####", "same length"),
        ("#####\n#PXO_\n#####", "enclosed"),
        ("#####\n#_XO#\n#####", "exactly one player"),
        ("######\n#PXXO#\n######", "as many boxes as targets"),
        ("#####\n#PZO#\n#####", "unknown Sokoban symbol"),
    ],
)
def test_malformed_boards_are_explained(board, message):
    with pytest.raises(ValueError, match=message):
        _env().reset(options={"board": board})


def test_impossible_settings_fail_at_construction():
    with pytest.raises(ValueError, match="no room"):
        SokobanEnv(dim_room=(3, 3), num_boxes=2)
    with pytest.raises(ValueError, match="min_solution_length"):
        SokobanEnv(min_solution_length=11, max_actions=10)
    with pytest.raises(ValueError, match="symbols"):
        SokobanEnv(symbols="#_O")


def test_cell_separator_draws_one_token_per_cell_and_plays_the_same_game():
    plain, spaced = SokobanEnv(), SokobanEnv(cell_separator=" ")
    obs, info = plain.reset(seed=4)
    spaced_obs, spaced_info = spaced.reset(seed=4)
    assert spaced_obs == "\n".join(" ".join(row) for row in obs.split("\n"))
    assert spaced_info["optimal_plan_length"] == info["optimal_plan_length"]
    for action in ("<answer>Up</answer>", "<answer>Left</answer>", "<answer>Down</answer>"):
        obs, reward, *_ = plain.step(action)
        spaced_obs, spaced_reward, *_ = spaced.step(action)
        assert spaced_obs.replace(" ", "") == obs and spaced_reward == reward
    # a board given in the spaced drawing is read back
    again, _ = spaced.reset(options={"board": spaced_obs})
    assert again == spaced_obs
    with pytest.raises(ValueError, match="cell_separator"):
        SokobanEnv(cell_separator="#")


def test_blocked_move_reward_is_added_only_to_moves_that_change_nothing():
    env = _env(blocked_move_reward=-0.5)
    env.reset(options={"board": "######\n#PXX_#\n#_OO_#\n######"})
    for move in ("Left", "Up", "Right"):  # a wall, a wall, two boxes in a row
        _, reward, *_ = env.step(f"<answer>{move}</answer>")
        assert reward == pytest.approx(-0.1 - 0.5)
    _, reward, _, _, info = env.step("<answer>Down</answer>")
    assert reward == pytest.approx(-0.1) and info["metrics"]["action_is_effective"]
