"""``SokobanEnv(progress_reward=...)``: potential-based shaping from push and walking distances."""

from __future__ import annotations

import random

import pytest

from environments.sokoban.env import SokobanEnv
from environments.sokoban.oracle import SokobanOracle
from environments.sokoban.progress import push_distances, walk_to_box
from environments.sokoban.puzzle import Puzzle

CORRIDOR = "#######\n#P_X_O#\n#######"
# a box on the outer rows or columns can only slide along that wall, and no target lies on one
ROOM = "######\n#_X__#\n#P___#\n#__O_#\n######"


def _step(env: SokobanEnv, move: str):
    return env.step(f"<answer>{move}</answer>")


def test_push_distances_count_pushes_and_mark_dead_cells_worse_than_any_live_one():
    p = Puzzle.from_text(ROOM)
    distances = push_distances(p.walls, p.targets, p.width)
    cell = lambda row, col: row * p.width + col  # noqa: E731
    assert distances[cell(3, 3)] == 0  # the target
    assert distances[cell(2, 3)] == 1  # pushed down once
    assert distances[cell(2, 2)] == 2  # pushed right, then down
    dead = [cell(1, 2), cell(2, 1), cell(3, 1), cell(2, 4)]
    live = [cell(3, 3), cell(2, 3), cell(3, 2), cell(2, 2)]
    assert {distances[c] for c in dead} == {max(distances[c] for c in live) + 1}


def test_walk_to_box_is_blocked_by_walls_and_boxes_and_ignores_boxes_on_targets():
    p = Puzzle.from_text("#######\n#P#__X#\n#___#O#\n#######")
    # around the wall: down, right, right, up, right reaches (1, 4), the cell left of the box
    assert walk_to_box(p.walls, p.targets, p.boxes, p.player, p.width) == 5
    # the box next to the player is on its target: the walk goes around it to the other one
    q = Puzzle.from_text("#######\n#P√_X_#\n#_____#\n#____O#\n#######")
    assert walk_to_box(q.walls, q.targets, q.boxes, q.player, q.width) == 4
    solved = Puzzle.from_text("#####\n#P_√#\n#####")
    assert walk_to_box(solved.walls, solved.targets, solved.boxes, solved.player, solved.width) == 0


def test_progress_reward_pays_each_push_and_step_toward_the_box():
    env = SokobanEnv(progress_reward=0.5)
    env.reset(options={"board": CORRIDOR})
    # walk next to the box: one step of walking saved
    assert _step(env, "Right")[1] == pytest.approx(-0.1 + 0.5)
    # push: one push saved
    assert _step(env, "Right")[1] == pytest.approx(-0.1 + 0.5)
    # walk away from the box: one step lost
    assert _step(env, "Left")[1] == pytest.approx(-0.1 - 0.5)
    # into a wall of the corridor: nothing changes, no shaping
    assert _step(env, "Up")[1] == pytest.approx(-0.1)
    _step(env, "Right")
    obs, reward, terminated, *_ = _step(env, "Right")
    assert terminated and reward == pytest.approx(-0.1 + 1 + 10 + 0.5)


def test_pushing_a_box_into_a_dead_cell_costs_what_a_good_push_earns_or_more():
    board = "######\n#____#\n#_X__#\n#_P_O#\n######"
    env = SokobanEnv(progress_reward=1.0)
    env.reset(options={"board": board})
    _, reward, *_ = _step(env, "Up")  # onto the top wall, from where no target is reachable
    assert reward <= -0.1 - 1.0
    env.reset(options={"board": board})
    _step(env, "Left")
    _, reward, *_ = _step(env, "Up")  # around to the box's left side: a step away, then back
    assert reward == pytest.approx(-0.1 + 1.0)
    _, reward, *_ = _step(env, "Right")  # pushed toward the target
    assert reward == pytest.approx(-0.1 + 1.0)


@pytest.mark.parametrize("seed", range(20))
def test_shaping_adds_up_to_the_change_in_potential_and_leaves_success_alone(seed):
    plain = SokobanEnv()
    shaped = SokobanEnv(progress_reward=1.0)
    obs_plain, info = plain.reset(seed=seed)
    obs_shaped, _ = shaped.reset(seed=seed)
    assert obs_plain == obs_shaped
    start = shaped._potential()
    rng = random.Random(seed)
    total_shaping = 0.0
    for _ in range(10):
        move = rng.choice(["Up", "Down", "Left", "Right", "jump"])
        a = _step(plain, move)
        b = _step(shaped, move)
        assert a[0] == b[0] and a[2:4] == b[2:4]
        assert a[4]["metrics"] == b[4]["metrics"]
        total_shaping += b[1] - a[1]
        if a[2] or a[3]:
            break
    assert total_shaping == pytest.approx(shaped._potential() - start)


@pytest.mark.parametrize("seed", range(10))
def test_a_solved_episode_earns_exactly_the_distance_it_started_from(seed):
    plain, shaped = SokobanEnv(), SokobanEnv(progress_reward=1.0)
    obs, info = plain.reset(seed=seed)
    shaped.reset(seed=seed)
    start = shaped._potential()
    assert start < 0
    oracle = SokobanOracle(plain)
    total_shaping, terminated = 0.0, False
    while not terminated:
        reply = oracle.act(obs, info)
        obs, reward, terminated, _, info = plain.step(reply)
        total_shaping += shaped.step(reply)[1] - reward
    assert info["metrics"]["success"]
    assert total_shaping == pytest.approx(-start)
