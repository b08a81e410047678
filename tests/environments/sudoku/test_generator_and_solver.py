"""Sudoku's solver and generator: unique solutions, valid grids."""

from __future__ import annotations

import random

import pytest

from environments.sudoku.generator import generate_puzzle
from environments.sudoku.solver import Shape, count_solutions, has_other_solution, solve

SHAPES = {4: Shape(2, 2), 6: Shape(2, 3), 9: Shape(3, 3)}


def _is_valid_solution(shape: Shape, grid) -> bool:
    side = shape.side
    digits = set(range(1, side + 1))
    rows = [grid[r * side : (r + 1) * side] for r in range(side)]
    cols = [[grid[r * side + c] for r in range(side)] for c in range(side)]
    boxes = [
        [
            grid[(top + r) * side + left + c]
            for r in range(shape.box_height)
            for c in range(shape.box_width)
        ]
        for top in range(0, side, shape.box_height)
        for left in range(0, side, shape.box_width)
    ]
    return all(set(unit) == digits for unit in rows + cols + boxes)


# 1 and 2 swap in the top-left and bottom-left boxes' first columns: a "deadly rectangle"
TWO_SOLUTIONS = [0, 0, 3, 4, 3, 4, 1, 2, 0, 0, 4, 3, 4, 3, 2, 1]


def test_counting_stops_at_the_limit_and_sees_both_solutions():
    shape = SHAPES[4]
    assert count_solutions(shape, TWO_SOLUTIONS, limit=10) == 2
    assert count_solutions(shape, TWO_SOLUTIONS, limit=1) == 1
    assert has_other_solution(shape, TWO_SOLUTIONS, cell=0, digit=1)


def test_an_empty_4x4_grid_has_288_solutions():
    # the known count of 4x4 Sudoku grids
    assert count_solutions(SHAPES[4], [0] * 16, limit=1000) == 288


def test_a_contradiction_has_no_solution():
    grid = [1, 1] + [0] * 14
    assert count_solutions(SHAPES[4], grid) == 0
    assert solve(SHAPES[4], grid) is None


def test_solve_fills_a_valid_grid_that_keeps_the_clues():
    grid = [0] * 81
    grid[0], grid[40], grid[80] = 5, 3, 9
    solution = solve(SHAPES[9], grid)
    assert _is_valid_solution(SHAPES[9], solution)
    assert (solution[0], solution[40], solution[80]) == (5, 3, 9)


@pytest.mark.parametrize(("size", "blanks"), [(4, 10), (6, 18), (9, 35), (9, 50)])
def test_generated_puzzles_have_exactly_one_solution(size, blanks):
    shape = SHAPES[size]
    for seed in range(40):
        puzzle = generate_puzzle(random.Random(seed), shape, blanks)
        assert _is_valid_solution(shape, puzzle.solution)
        assert all(c in (0, s) for c, s in zip(puzzle.clues, puzzle.solution, strict=True))
        assert len(puzzle.blanks) == blanks
        assert count_solutions(shape, list(puzzle.clues), limit=2) == 1
        assert solve(shape, list(puzzle.clues)) == list(puzzle.solution)


def test_removal_stops_where_uniqueness_would_be_lost():
    # a 4x4 grid cannot keep a unique solution with 15 blanks: the generator stops short
    puzzle = generate_puzzle(random.Random(0), SHAPES[4], 15)
    assert 8 <= len(puzzle.blanks) < 15
    assert count_solutions(SHAPES[4], list(puzzle.clues)) == 1


def test_generation_is_deterministic_per_seed_and_varies_across_seeds():
    first = [generate_puzzle(random.Random(s), SHAPES[9], 40) for s in range(10)]
    assert first == [generate_puzzle(random.Random(s), SHAPES[9], 40) for s in range(10)]
    assert len({p.clues for p in first}) == 10


def test_bad_blank_counts_name_the_range():
    with pytest.raises(ValueError, match=r"1\.\.15"):
        generate_puzzle(random.Random(0), SHAPES[4], 16)
