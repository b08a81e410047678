from __future__ import annotations

import random

import pytest

from environments.sokoban.generator import generate_puzzle
from environments.sokoban.puzzle import Puzzle, live_cells
from environments.sokoban.solver import apply_plan, solve

CONFIGS = [((6, 6), 1), ((8, 8), 2), ((10, 10), 2)]


@pytest.mark.parametrize(("dim_room", "num_boxes"), CONFIGS)
def test_every_generated_puzzle_is_solved_by_bfs_in_exactly_its_optimal_length(dim_room, num_boxes):
    for seed in range(150):
        generated = generate_puzzle(
            random.Random(seed), dim_room, num_boxes, min_solution_length=2, max_solution_length=10
        )
        puzzle = generated.puzzle
        assert (puzzle.height, puzzle.width) == dim_room
        assert len(puzzle.boxes) == len(puzzle.targets) == num_boxes
        assert not set(puzzle.boxes) & set(puzzle.targets), "every box starts off the targets"
        plan = solve(puzzle)
        # the forward search and the generator's backward search are independent
        assert plan is not None and len(plan) == generated.optimal_plan_length
        assert 2 <= len(plan) <= 10
        assert apply_plan(puzzle, plan).solved


def test_difficulty_knob_raises_the_optimal_length():
    lengths = [
        generate_puzzle(
            random.Random(s), (8, 8), 1, min_solution_length=8, max_solution_length=12
        ).optimal_plan_length
        for s in range(50)
    ]
    assert min(lengths) >= 8 and max(lengths) <= 12


def test_same_rng_seed_same_puzzle():
    one = generate_puzzle(random.Random(42), (10, 10), 2)
    two = generate_puzzle(random.Random(42), (10, 10), 2)
    assert one == two


def test_solver_on_hand_worked_boards():
    # push right three times: player 1 -> 4, box 2 -> 5
    corridor = Puzzle.from_text("#######\n#PX__O#\n#######")
    assert solve(corridor) == [3, 3, 3]
    # a box in a corner that is not a target can never move again
    stuck = Puzzle.from_text("#####\n#X__#\n#_P_#\n#__O#\n#####")
    assert solve(stuck) is None
    # two boxes: push one (1 move), walk back round (1), push the other (1)
    two = Puzzle.from_text("######\n#OXP_#\n#_#X_#\n#_#O_#\n######")
    plan = solve(two)
    assert len(plan) == 3 and apply_plan(two, plan).solved
    assert solve(two, max_moves=2) is None


def test_live_cells_on_a_hand_worked_board():
    #  ######   The target sits in the bottom-right corner. A box reaches it pushed right along
    #  #P___#   row 3 (from column 2 or 3) or down column 4 (from row 2). Row 1 is dead: with
    #  #____#   the wall above, no box there can ever be pushed down. (2,1) and (3,1) are dead:
    #  #__XO#   pushing them right needs the player inside the left wall.
    #  ######
    puzzle = Puzzle.from_text("######\n#P___#\n#____#\n#__XO#\n######")
    live = live_cells(puzzle.walls, puzzle.targets, puzzle.width)
    floor = {c for c, w in enumerate(puzzle.walls) if not w}
    dead = {divmod(c, puzzle.width) for c in floor if not live[c]}
    assert dead == {(1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (3, 1)}
