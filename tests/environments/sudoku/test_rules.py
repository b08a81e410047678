"""Sudoku's placements, mistakes and rewards, on a grid given by hand and on generated ones."""

from __future__ import annotations

import pytest

import rollenv
from environments.sudoku.env import SudokuEnv
from rollenv.policies import RandomPolicy, oracle_for, run_episode

# solution: 1234 / 3412 / 2143 / 4321; three cells empty
PUZZLE = "1.34 3412 21.3 432."
START = """\
    1 2   3 4
  +-----+-----+
1 | 1 . | 3 4 |
2 | 3 4 | 1 2 |
  +-----+-----+
3 | 2 1 | . 3 |
4 | 4 3 | 2 . |
  +-----+-----+
Mistakes: 0 of 3"""


def _env(**kwargs) -> SudokuEnv:
    env = SudokuEnv(size=4, blanks=6, **kwargs)
    env.reset(options={"puzzle": PUZZLE})
    return env


def test_the_observation_draws_the_grid_and_the_mistakes():
    env = SudokuEnv(size=4, blanks=6)
    obs, info = env.reset(options={"puzzle": PUZZLE})
    assert obs == START and info["anchor"] == obs and info["blanks"] == 3


def test_a_right_placement_fills_the_cell():
    env = _env()
    obs, reward, terminated, _, info = env.step("<answer>1 2 2</answer>")
    assert "1 | 1 2 | 3 4 |" in obs
    assert reward == pytest.approx(0.1) and not terminated
    assert info["metrics"]["action_is_effective"] is True


def test_a_wrong_placement_is_a_mistake_and_writes_nothing():
    env = _env()
    obs, reward, terminated, _, info = env.step("<answer>1 2 3</answer>")
    assert obs == START.replace("Mistakes: 0", "Mistakes: 1")
    assert reward == pytest.approx(-0.1) and not terminated
    assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]


def _allowed_by_the_clues(env: SudokuEnv, cell: int) -> set[int]:
    side, shape = env.size, env.shape
    row, col = divmod(cell, side)
    top, left = row - row % shape.box_height, col - col % shape.box_width
    seen = {env.grid[row * side + c] for c in range(side)}
    seen |= {env.grid[r * side + col] for r in range(side)}
    seen |= {
        env.grid[(top + r) * side + left + c]
        for r in range(shape.box_height)
        for c in range(shape.box_width)
    }
    return set(range(1, side + 1)) - seen


def test_a_digit_that_fits_the_clues_but_not_the_solution_is_a_mistake():
    env = SudokuEnv(size=9, blanks=50)
    env.reset(seed=0)
    cell, digit = next(
        (cell, digit)
        for cell in range(81)
        if not env.grid[cell]
        for digit in _allowed_by_the_clues(env, cell)
        if digit != env.solution[cell]
    )
    obs, reward, *_ = env.step(f"<answer>{cell // 9 + 1} {cell % 9 + 1} {digit}</answer>")
    assert env.mistakes == 1 and env.grid[cell] == 0
    assert reward == pytest.approx(-0.1) and "Mistakes: 1 of 3" in obs


def test_writing_over_a_clue_changes_nothing_and_costs_nothing():
    env = _env()
    obs, reward, _, _, info = env.step("<answer>1 1 2</answer>")
    assert (obs, reward) == (START, 0.0)
    assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]


def test_the_third_mistake_loses():
    env = _env()
    results = [env.step("<answer>1 2 1</answer>") for _ in range(3)]
    assert [r[2] for r in results] == [False, False, True]
    assert results[-1][4]["metrics"]["success"] is False


def test_filling_the_last_cell_wins_in_one_reply():
    env = _env()
    obs, reward, terminated, _, info = env.step("<answer>1 2 2 || 3 3 4 || 4 4 1</answer>")
    assert terminated and info["metrics"]["success"]
    assert reward == pytest.approx(0.3 + 1.0)
    assert "Mistakes: 0 of 3" in obs and "." not in obs.split("Mistakes")[0]


def test_placements_after_the_losing_mistake_are_not_played():
    env = _env(max_mistakes=1)
    _, reward, terminated, _, _ = env.step("<answer>1 2 1 || 1 2 2</answer>")
    assert terminated and reward == pytest.approx(-0.1)
    assert env.grid[1] == 0 and env.actions_taken == 1


@pytest.mark.parametrize(
    "reply",
    [
        "1 2 2",
        "<answer>0 1 1</answer>",
        "<answer>1 5 1</answer>",
        "<answer>1 2 5</answer>",
        "<answer>1 2</answer>",
        "<answer>1,2,2</answer>",
        "<answer>1  2 2</answer>",
        "<answer>row 1 col 2 = 2</answer>",
        "<answer>1 2 2 || nonsense</answer>",
    ],
)
def test_a_reply_without_valid_placements_is_a_penalised_no_op(reply):
    env = _env()
    obs, reward, terminated, _, info = env.step(reply)
    assert (obs, reward, terminated) == (START, -0.1, False)
    assert info["metrics"]["action_is_valid"] is False


def test_a_given_puzzle_must_have_one_solution_and_the_right_size():
    env = SudokuEnv(size=4, blanks=6)
    with pytest.raises(ValueError, match="exactly one solution"):
        env.reset(options={"puzzle": "..34 3412 ..43 4321"})
    with pytest.raises(ValueError, match="16 cells"):
        env.reset(options={"puzzle": "1234"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 5}, r"size must be one of \[4, 6, 9\]"),
        ({"size": 4, "blanks": 16}, r"blanks must be in 1\.\.15"),
        ({"max_mistakes": 0}, "max_mistakes"),
    ],
)
def test_bad_settings_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SudokuEnv(**kwargs)


@pytest.mark.parametrize(("env_id", "blanks"), [("Sudoku4x4-v0", 10), ("SudokuHard-v0", 50)])
def test_the_difficulty_knob_sets_the_blanks(env_id, blanks):
    env = rollenv.make(env_id)
    obs, info = env.reset(seed=3)
    assert info["blanks"] == blanks == obs.count(".")


@pytest.mark.parametrize("env_id", ["Sudoku4x4-v0", "Sudoku6x6-v0", "Sudoku-v0", "SudokuHard-v0"])
def test_the_oracle_solves_200_seeded_episodes(env_id):
    env = rollenv.make(env_id)
    oracle = oracle_for(env)
    failed = [s for s in range(200) if not run_episode(env, oracle, seed=s).success]
    assert failed == []


def test_the_oracle_one_placement_at_a_time():
    env = SudokuEnv(size=4, blanks=10, max_actions_per_turn=1, max_mistakes=1)
    result = run_episode(env, oracle_for(env), seed=5)
    assert result.success and result.turns == 10


def test_random_placements_lose():
    env = rollenv.make("Sudoku4x4-v0")
    results = [run_episode(env, RandomPolicy(env, seed=s), seed=s) for s in range(50)]
    assert not any(r.success for r in results)


@pytest.mark.parametrize("env_id", ["Sudoku4x4-v0", "Sudoku-v0"])
def test_no_task_ignoring_reply_earns_reward(env_id):
    report = rollenv.check_reward(rollenv.make(env_id), seeds=range(20))
    assert report.passed and report.oracle.success_rate == 1.0
