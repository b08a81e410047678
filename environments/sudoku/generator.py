"""Sudoku puzzles with exactly one solution, generated per seed.

A full grid comes from the solver run on an empty grid with its digits tried in a random order
(randomized backtracking). Clues are then taken away one by one in a random order, each only if
the solution stays unique, until the puzzle has the requested number of blanks or every cell
has been tried once (bounded effort: then the puzzle has as many blanks as uniqueness allows,
``len(puzzle.blanks)`` says how many).

Example:
    >>> import random
    >>> puzzle = generate_puzzle(random.Random(0), Shape(2, 2), blanks=8)
    >>> len(puzzle.blanks), count_solutions(puzzle.shape, list(puzzle.clues))
    (8, 1)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from environments.sudoku.solver import Shape, count_solutions, has_other_solution, solve

__all__ = ["Shape", "SudokuPuzzle", "count_solutions", "generate_puzzle"]


@dataclass(frozen=True)
class SudokuPuzzle:
    """A puzzle and its unique solution, as flat row-major tuples (0 for an empty cell).

    Attributes:
        shape: the box geometry.
        clues: the given digits.
        solution: the solved grid.
    """

    shape: Shape
    clues: tuple[int, ...]
    solution: tuple[int, ...]

    @property
    def blanks(self) -> tuple[int, ...]:
        """The empty cells, as flat indices."""
        return tuple(cell for cell, digit in enumerate(self.clues) if not digit)


def generate_puzzle(rng: random.Random, shape: Shape, blanks: int) -> SudokuPuzzle:
    """A puzzle of ``shape`` with up to ``blanks`` empty cells and exactly one solution."""
    cells = shape.side * shape.side
    if not 1 <= blanks < cells:
        raise ValueError(f"blanks must be in 1..{cells - 1} for a {shape.side}x{shape.side} grid")
    solution = solve(shape, [0] * cells, rng)
    grid = list(solution)
    order = list(range(cells))
    rng.shuffle(order)
    removed = 0
    for cell in order:
        if removed == blanks:
            break
        digit = grid[cell]
        grid[cell] = 0
        if has_other_solution(shape, grid, cell, digit):
            grid[cell] = digit
        else:
            removed += 1
    return SudokuPuzzle(shape, tuple(grid), tuple(solution))
