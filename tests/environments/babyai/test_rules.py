"""BabyAI in text: actions move MiniGrid's agent, the view is described where things are."""

from __future__ import annotations

import numpy as np
import pytest
from minigrid.core.world_object import Ball, Box, Key

import rollenv
from environments.babyai.env import ACTION_NAMES, BabyAIEnv, babyai_levels
from environments.babyai.view import describe_view, relative_position


def _empty_room(env: BabyAIEnv) -> None:
    """Clears the (single) room's floor and stands the agent at (3, 3) facing east."""
    grid = env.minigrid.grid
    for x in range(1, grid.width - 1):
        for y in range(1, grid.height - 1):
            grid.set(x, y, None)
    env.minigrid.agent_pos = np.array((3, 3))
    env.minigrid.agent_dir = 0


def _step(env: BabyAIEnv, action: str):
    return env.step(f"<answer>{action}</answer>")


def test_turns_and_moves_follow_minigrid():
    env = BabyAIEnv("GoToLocal")
    env.reset(seed=0)
    _empty_room(env)
    obs, reward, terminated, _, info = _step(env, "go forward")
    assert tuple(env.minigrid.agent_pos) == (4, 3) and "You face east" in obs
    assert info["metrics"]["action_is_effective"] and (reward, terminated) == (0.0, False)
    obs, *_ = _step(env, "turn left")
    assert env.minigrid.agent_dir == 3 and "You face north" in obs
    obs, *_ = _step(env, "TURN RIGHT")
    obs, *_ = _step(env, "turn right")
    assert env.minigrid.agent_dir == 1 and "You face south" in obs


def test_walking_into_a_wall_is_valid_but_changes_nothing():
    env = BabyAIEnv("GoToLocal")
    env.reset(seed=0)
    _empty_room(env)
    env.minigrid.agent_pos = np.array((6, 3))  # the east wall is at x = 7
    before = _step(env, "done")[0]
    obs, reward, _, _, info = _step(env, "go forward")
    assert obs == before and "In front of you: a wall." in obs
    assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]
    assert tuple(env.minigrid.agent_pos) == (6, 3)


def test_the_view_gives_objects_relative_to_the_agent():
    env = BabyAIEnv("GoToLocal")
    env.reset(seed=0)
    _empty_room(env)
    env.minigrid.grid.set(5, 2, Ball("red"))  # facing east: two ahead, one to the left (north)
    env.minigrid.grid.set(3, 5, Key("blue"))  # two to the right (south), none ahead
    obs, *_ = _step(env, "done")
    lines = obs.splitlines()
    assert "- a red ball 2 steps forward and 1 step left" in lines
    assert "- a blue key 2 steps right" in lines
    assert "- a wall 4 steps forward" in lines  # x = 7
    assert "- a wall 3 steps left" in lines  # y = 0
    # the south wall (y = 7) is 4 to the right: beyond the 7-cell-wide view
    assert not [line for line in lines if line.startswith("- a wall") and "right" in line]
    # nearest first
    assert lines.index("- a blue key 2 steps right") < lines.index(
        "- a red ball 2 steps forward and 1 step left"
    )
    assert lines[0] == f"Mission: {env.mission}"


def test_picking_up_carries_the_object_and_drop_puts_it_back():
    env = BabyAIEnv("GoToLocal")
    env.reset(seed=0)
    _empty_room(env)
    env.minigrid.grid.set(4, 3, Key("yellow"))
    obs, *_ = _step(env, "done")
    assert "In front of you: a yellow key." in obs
    obs, *_ = _step(env, "pick up")
    assert "You carry a yellow key. In front of you: nothing." in obs
    obs, *_ = _step(env, "drop")
    assert "You carry nothing. In front of you: a yellow key." in obs


def test_a_go_to_mission_pays_babyai_reward_when_facing_the_object():
    env = BabyAIEnv("GoToObj", max_actions=20)
    env.reset(seed=0)
    _empty_room(env)
    target = env.minigrid.instrs.desc
    kinds = {"ball": Ball, "box": Box, "key": Key}
    env.minigrid.grid.set(5, 3, kinds[target.type](target.color))  # two cells east
    env.minigrid.instrs.reset_verifier(env.minigrid)
    _, reward, terminated, *_ = _step(env, "turn left")
    assert (reward, terminated) == (0.0, False)
    _step(env, "turn right")
    obs, reward, terminated, _, info = _step(env, "go forward")
    assert f"In front of you: a {target.color} {target.type}." in obs
    # the third action of 20: 1 - 0.9 * 3 / 20
    assert terminated and info["metrics"]["success"]
    assert reward == pytest.approx(1 - 0.9 * 3 / 20)


@pytest.mark.parametrize(
    "reply",
    [
        "<answer>forward</answer>",
        "<answer>turn  left</answer>",
        "go forward",
        "<answer>turn left || jump</answer>",
    ],
)
def test_anything_but_the_seven_actions_is_a_penalised_no_op(reply):
    env = BabyAIEnv("GoToLocal")
    before, _ = env.reset(seed=3)
    position = tuple(env.minigrid.agent_pos)
    obs, reward, terminated, _, info = env.step(reply)
    assert (obs, reward, terminated) == (before, -0.1, False)
    assert tuple(env.minigrid.agent_pos) == position and not info["metrics"]["action_is_valid"]


def test_seeds_repeat_and_differ():
    first = [BabyAIEnv("PickupLoc").reset(seed=s)[0] for s in range(10)]
    again = [BabyAIEnv("PickupLoc").reset(seed=s)[0] for s in range(10)]
    assert first == again and len(set(first)) > 5


def test_generating_a_level_prints_nothing(capsys):
    env = BabyAIEnv("GoToLocal")
    for seed in range(30):  # some of these layouts are rejected and drawn again
        env.reset(seed=seed)
    assert capsys.readouterr().out == ""


def test_relative_positions_read_naturally():
    assert relative_position(1, 0) == "1 step forward"
    assert relative_position(0, -3) == "3 steps left"
    assert relative_position(2, 1) == "2 steps forward and 1 step right"


def test_unseen_cells_hide_what_is_behind_them():
    view = np.zeros((7, 7, 3), dtype=np.uint8)  # all unseen
    view[3, 5] = (1, 0, 0)  # the cell ahead is floor, beyond it unseen
    assert describe_view(view) == []


def test_action_words_are_the_seven_minigrid_actions():
    env = rollenv.make("BabyAI-OpenDoor-v0")
    assert env.unwrapped.action_words == ACTION_NAMES and len(ACTION_NAMES) == 7
    assert "toggle" in env.unwrapped.instruction and "<answer>" in env.unwrapped.instruction


def test_an_unknown_level_lists_close_names():
    with pytest.raises(ValueError, match="did you mean GoToLocal"):
        BabyAIEnv("GoToLocl")
    assert {"GoToObj", "GoToLocal", "PickupLoc", "OpenDoor", "UnlockLocal"} <= set(babyai_levels())


def test_a_setting_the_level_lacks_names_it_and_the_allowed_ones():
    with pytest.raises(ValueError, match="takes no room_width; its settings: num_dists, room_size"):
        BabyAIEnv("GoToLocal", {"room_width": 5})


def test_room_size_and_distractors_are_the_difficulty_knob():
    small = BabyAIEnv("GoToLocal", {"room_size": 5, "num_dists": 1})
    small.reset(seed=0)
    assert (small.minigrid.width, small.minigrid.height) == (5, 5)
    objects = [c for c in small.minigrid.grid.grid if c is not None and c.type != "wall"]
    assert len(objects) == 1  # GoToLocal's target is one of its "distractors"
    large = BabyAIEnv("GoToLocal", {"room_size": 9, "num_dists": 6})
    large.reset(seed=0)
    objects = [c for c in large.minigrid.grid.grid if c is not None and c.type != "wall"]
    assert (large.minigrid.width, len(objects)) == (9, 6)
