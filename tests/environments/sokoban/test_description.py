"""``SokobanEnv(observation="relative")``: the position told in words from the player's view."""

from __future__ import annotations

import pytest
from gymnasium.utils.env_checker import check_env

import rollenv
from environments.sokoban.description import describe
from environments.sokoban.env import SokobanEnv
from environments.sokoban.puzzle import Puzzle

ROOM = """
######
#___O#
#_X__#
#__P_#
######
"""


def test_the_description_gives_neighbours_and_offsets():
    assert describe(Puzzle.from_text(ROOM)) == (
        "Up: floor. Down: wall. Left: floor. Right: floor.\n"
        "Box: 1 up, 1 left.\n"
        "Target: 1 up, 2 right of the box."
    )


def test_boxes_on_targets_are_left_out_and_several_are_numbered():
    one_placed = Puzzle.from_text("#######\n#P√_XO#\n#######")
    # the box on its target is only a neighbour; the loose one is the only "Box"
    assert describe(one_placed) == (
        "Up: wall. Down: wall. Left: wall. Right: box on target.\n"
        "Box: 3 right.\n"
        "Target: 1 right of the box."
    )
    two_loose = Puzzle.from_text("#########\n#OX_P_XO#\n#########")
    assert describe(two_loose) == (
        "Up: wall. Down: wall. Left: floor. Right: floor.\n"
        "Box 1: 2 left.\n"
        "Target: 1 left of the box 1.\n"
        "Box 2: 2 right.\n"
        "Target: 1 right of the box 2."
    )


def test_the_env_shows_the_description_and_says_so_in_its_instruction():
    env = SokobanEnv(observation="relative")
    obs, info = env.reset(options={"board": ROOM})
    assert obs == describe(Puzzle.from_text(ROOM))
    assert "where the box is from you" in info["instruction"]
    assert "Symbols:" not in info["instruction"]
    obs, _, _, _, info = env.step("<answer>Up</answer>")
    assert info["metrics"]["action_is_effective"] is True
    assert obs.splitlines()[1] == "Box: 1 left."  # the player moved up beside the box


def test_the_same_seed_gives_the_same_boards_in_either_view():
    grid, words = (
        rollenv.make("SimpleSokoban-v0"),
        rollenv.make("SimpleSokoban-v0", observation="relative"),
    )
    for seed in range(5):
        grid.reset(seed=seed)
        words_obs, _ = words.reset(seed=seed)
        assert grid.unwrapped.state == words.unwrapped.state
        assert words_obs == describe(grid.unwrapped.state)


def test_the_relative_view_keeps_the_gymnasium_api():
    check_env(rollenv.make("SimpleSokoban-v0", observation="relative").unwrapped)


def test_an_unknown_observation_names_the_allowed_values():
    with pytest.raises(ValueError, match="observation must be one of 'grid', 'relative'"):
        SokobanEnv(observation="words")
