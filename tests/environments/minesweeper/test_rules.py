"""Minesweeper's moves, endings and rewards, on a layout given by hand and on generated ones."""

from __future__ import annotations

import pytest

import rollenv
from environments.minesweeper.env import MinesweeperEnv
from rollenv.policies import RandomPolicy, oracle_for, run_episode

# 4x4, mines at row 1 column 3 and row 3 column 3; the game opens at row 1 column 1:
#   0 1 * 1
#   0 2 2 2
#   0 1 * 1
#   0 1 1 1
LAYOUT = {"mines": [(1, 3), (3, 3)], "start": (1, 1)}
START = "Mines: 2, flags: 0\n  1 2 3 4\n1 0 1 ? ?\n2 0 2 ? ?\n3 0 1 ? ?\n4 0 1 ? ?"
SAFE_HIDDEN = ["1 4", "2 3", "2 4", "3 4", "4 3", "4 4"]


def _env(**kwargs) -> MinesweeperEnv:
    env = MinesweeperEnv(rows=4, cols=4, mines=2, **kwargs)
    env.reset(options=LAYOUT)
    return env


def test_the_game_opens_with_the_start_revealed():
    env = MinesweeperEnv(rows=4, cols=4, mines=2)
    obs, info = env.reset(options=LAYOUT)
    assert obs == START and info["anchor"] == obs
    assert "reveal ROW COL" in info["instruction"] and "2 mines" in info["instruction"]


def test_revealing_a_safe_cell_shows_its_count():
    env = _env()
    obs, reward, terminated, _, info = env.step("<answer>reveal 2 3</answer>")
    assert obs.splitlines()[3] == "2 0 2 2 ?"
    assert (reward, terminated) == (0.0, False)
    assert info["metrics"]["action_is_effective"] is True


def test_revealing_a_mine_loses():
    env = _env()
    obs, reward, terminated, truncated, info = env.step("<answer>reveal 3 3</answer>")
    assert (reward, terminated, truncated, info["metrics"]["success"]) == (0.0, True, False, False)
    assert obs.splitlines()[2] == "1 0 1 * ?" and obs.splitlines()[4] == "3 0 1 * ?"


def test_revealing_the_last_safe_cell_wins():
    env = _env(max_actions_per_turn=6)
    reply = " || ".join(f"reveal {cell}" for cell in SAFE_HIDDEN)
    obs, reward, terminated, _, info = env.step(f"<answer>{reply}</answer>")
    assert (reward, terminated, info["metrics"]["success"]) == (1.0, True, True)
    assert "?" not in obs.split("\n", 1)[1].replace("1 ? ", "")


def test_flags_toggle_and_a_flagged_cell_cannot_be_revealed():
    env = _env()
    obs, reward, _, _, info = env.step("<answer>flag 3 3</answer>")
    assert obs.startswith("Mines: 2, flags: 1") and obs.splitlines()[4] == "3 0 1 F ?"
    assert reward == 0.0 and info["metrics"]["action_is_effective"]
    obs, _, terminated, _, info = env.step("<answer>reveal 3 3</answer>")
    assert not terminated and not info["metrics"]["action_is_effective"]
    obs, *_ = env.step("<answer>FLAG 3 3</answer>")
    assert obs == START


def test_moves_on_open_cells_change_nothing():
    env = _env()
    for move in ("reveal 1 1", "flag 2 2"):
        obs, reward, terminated, _, info = env.step(f"<answer>{move}</answer>")
        assert (obs, reward, terminated) == (START, 0.0, False)
        assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]


@pytest.mark.parametrize(
    "reply",
    [
        "reveal 2 3",
        "<answer>reveal 0 1</answer>",
        "<answer>reveal 5 1</answer>",
        "<answer>reveal 2</answer>",
        "<answer>open 2 3</answer>",
        "<answer>reveal 2 3 4</answer>",
        "<answer>reveal (2, 3)</answer>",
        "<answer>reveal  2 3</answer>",
        "<answer>reveal 2 3 || dig</answer>",
        f"<answer>{START}</answer>",
    ],
)
def test_a_reply_without_valid_moves_is_a_penalised_no_op(reply):
    env = _env()
    obs, reward, terminated, _, info = env.step(reply)
    assert (obs, reward, terminated) == (START, -0.1, False)
    assert info["metrics"]["action_is_valid"] is False and env.actions_taken == 0


def test_a_given_layout_is_checked():
    env = MinesweeperEnv(rows=4, cols=4, mines=2)
    with pytest.raises(ValueError, match="outside the 4x4 field"):
        env.reset(options={"mines": [(1, 3), (5, 3)]})
    with pytest.raises(ValueError, match="2 distinct mines and a start without one"):
        env.reset(options={"mines": [(1, 3), (3, 3)], "start": (1, 3)})


def test_the_same_seed_gives_the_same_field():
    first = [MinesweeperEnv().reset(seed=s)[0] for s in range(20)]
    assert first == [MinesweeperEnv().reset(seed=s)[0] for s in range(20)]
    assert len(set(first)) > 15


@pytest.mark.parametrize(
    ("env_id", "cells", "mines"),
    [("Minesweeper-v0", 25, 3), ("Minesweeper8x8-v0", 64, 10), ("MinesweeperHard-v0", 100, 20)],
)
def test_the_oracle_clears_200_seeded_fields(env_id, cells, mines):
    env = rollenv.make(env_id)
    oracle = oracle_for(env)
    results = [run_episode(env, oracle, seed=s) for s in range(200)]
    assert [r.seed for r in results if not r.success] == []
    assert max(r.turns for r in results) <= cells - mines
    assert len(env.unwrapped.field.mines) == mines


def test_the_oracle_takes_flags_off_safe_cells_and_still_wins():
    env = _env()
    for cell in SAFE_HIDDEN:
        env.step(f"<answer>flag {cell}</answer>")
    oracle = oracle_for(env)
    assert oracle.act("", {}) == "<answer>flag 1 4</answer>"
    for _ in range(2 * len(SAFE_HIDDEN)):
        *_, terminated, _, info = env.step(oracle.act("", {}))
    assert terminated and info["metrics"]["success"]


def test_random_moves_mostly_hit_a_mine():
    env = rollenv.make("Minesweeper8x8-v0")
    results = [run_episode(env, RandomPolicy(env, seed=s), seed=s) for s in range(30)]
    assert sum(r.success for r in results) == 0
    assert sum(r.terminated for r in results) >= 25


@pytest.mark.parametrize("env_id", ["Minesweeper-v0", "Minesweeper8x8-v0"])
def test_no_task_ignoring_reply_earns_reward(env_id):
    report = rollenv.check_reward(rollenv.make(env_id), seeds=range(20))
    assert report.passed and report.oracle.success_rate == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"rows": 1}, "rows and cols"), ({"mines": 40}, r"mines must be in 1\.\.16")],
)
def test_bad_settings_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MinesweeperEnv(**kwargs)
