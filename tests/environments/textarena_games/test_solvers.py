"""The tic-tac-toe and Nim solvers: hand-worked positions, and play in TextArena's own games."""

from __future__ import annotations

import pytest

from environments.textarena.solvers.nim import nim_sum, winning_moves
from environments.textarena.solvers.tic_tac_toe import best_moves, value

E = ""


@pytest.mark.parametrize(
    ("board", "mark", "moves", "worth"),
    [
        # O to move wins at once on the top row (X's threat on the middle row does not matter)
        ([["O", "O", E], ["X", "X", E], [E, E, E]], "O", [2], 1),
        # O must block X's top row, and draws
        ([["X", "X", E], [E, "O", E], [E, E, E]], "O", [2], 0),
        # X, after O's corner, X's centre, O's opposite corner: a corner loses to a fork, an
        # edge draws
        ([["O", E, E], [E, "X", E], [E, E, "O"]], "X", [1, 3, 5, 7], 0),
        # X facing O's two open lines (the top row at 1, the right column at 5) cannot block
        # both, and has no line of its own to finish
        ([["O", E, "O"], [E, "X", E], ["X", E, "O"]], "X", [1, 3, 5, 7], -1),
    ],
)
def test_tic_tac_toe_positions_worked_by_hand(board, mark, moves, worth):
    assert value(board, mark) == worth
    if worth >= 0:
        assert best_moves(board, mark) == moves
    else:  # every move loses; the solver still plays one
        assert sorted(best_moves(board, mark)) == moves


def test_the_empty_board_is_a_draw_whatever_the_first_move():
    empty = [[E] * 3 for _ in range(3)]
    assert value(empty, "O") == 0
    assert best_moves(empty, "O") == list(range(9))


@pytest.mark.parametrize(
    ("piles", "moves"),
    [
        ([3, 4, 5], [(0, 2)]),  # 3^4^5 = 2: only the pile of 3 can shed it
        ([1, 4, 5], []),  # nim-sum 0
        ([2, 1], [(0, 1)]),
        ([0, 0, 7], [(2, 7)]),  # take the last objects
        # nim-sum 2: the piles with that bit (2, 3, 7) each shed 2; the pile of 4 cannot
        ([4, 2, 3, 7], [(1, 2), (2, 2), (3, 2)]),
    ],
)
def test_nim_positions_worked_by_hand(piles, moves):
    assert sorted(winning_moves(piles)) == moves
    for pile, quantity in moves:
        after = list(piles)
        after[pile] -= quantity
        assert nim_sum(after) == 0


pytest.importorskip("textarena")
pytest.importorskip("pettingzoo")

import rollenv  # noqa: E402
from rollenv.seat_policies import RandomSeatPolicy, SolverPolicy, play_game  # noqa: E402


@pytest.mark.parametrize("seat", ["player_0", "player_1"])
def test_the_tic_tac_toe_solver_never_loses_to_random_play_in_textarenas_game(seat):
    env = rollenv.make_multi("textarena/TicTacToe-v0")
    other = "player_1" if seat == "player_0" else "player_0"
    solver, random_player = SolverPolicy(seed=1), RandomSeatPolicy(seed=2)
    results = [
        play_game(env, {seat: solver, other: random_player}, seed=s).results[seat]
        for s in range(100)
    ]
    assert min(results) >= 0.0
    assert results.count(1.0) > len(results) / 2  # and beats it in most games


def test_the_tic_tac_toe_solver_draws_against_itself():
    env = rollenv.make_multi("textarena/TicTacToe-v0")
    solver = SolverPolicy(seed=3)
    for seed in range(30):
        record = play_game(env, {"player_0": solver, "player_1": solver}, seed=seed)
        assert record.results == {"player_0": 0.0, "player_1": 0.0}
        assert len(record.turns) == 9


def test_the_nim_solver_wins_textarenas_game_from_the_first_seat():
    env = rollenv.make_multi("textarena/Nim-v0")  # piles 3, 4, 5: the first seat wins
    solver, random_player = SolverPolicy(seed=1), RandomSeatPolicy(seed=2)
    for seed in range(30):
        record = play_game(env, {"player_0": solver, "player_1": random_player}, seed=seed)
        assert record.results["player_0"] == 1.0
    record = play_game(env, {"player_0": solver, "player_1": solver}, seed=0)
    assert record.results == {"player_0": 1.0, "player_1": -1.0}
