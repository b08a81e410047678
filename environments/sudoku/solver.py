"""A Sudoku solver on bit masks: depth first, always filling the cell with the fewest candidates.

A grid is a flat list of ``side * side`` digits, 0 for an empty cell, read row by row; boxes are
``box_height x box_width`` (2x2 for 4x4 Sudoku, 3x3 for 9x9). Digit ``d`` is bit ``1 << d``.

Example:
    >>> shape = Shape(2, 2)
    >>> grid = [0, 0, 3, 4,  3, 4, 1, 2,  0, 0, 4, 3,  4, 3, 2, 1]  # 1 and 2 may swap
    >>> count_solutions(shape, grid, limit=5)
    2
    >>> solution = solve(shape, [1, 2, 3, 4,  3, 4, 0, 0,  0, 0, 4, 3,  4, 3, 0, 0])
    >>> solution[6:8], solution[8:10], solution[14:]
    ([1, 2], [2, 1], [2, 1])
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Shape:
    """The geometry of a Sudoku: box size, and each cell's row, column and box.

    Attributes:
        box_height: rows of one box.
        box_width: columns of one box.
    """

    box_height: int
    box_width: int
    side: int = field(init=False)
    units: tuple[tuple[int, int, int], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        side = self.box_height * self.box_width
        object.__setattr__(self, "side", side)
        object.__setattr__(
            self,
            "units",
            tuple(
                (r, c, (r // self.box_height) * self.box_height + c // self.box_width)
                for r in range(side)
                for c in range(side)
            ),
        )

    @property
    def all_digits(self) -> int:
        """The mask of every digit ``1..side``."""
        return ((1 << (self.side + 1)) - 1) & ~1


class _Search:
    """One search over a grid: the used-digit masks of every row, column and box."""

    def __init__(self, shape: Shape, grid: list[int]):
        self.shape = shape
        self.grid = list(grid)
        side = shape.side
        self.rows, self.cols, self.boxes = [0] * side, [0] * side, [0] * side
        self.consistent = True
        for cell, digit in enumerate(self.grid):
            if digit:
                r, c, b = shape.units[cell]
                bit = 1 << digit
                if (self.rows[r] | self.cols[c] | self.boxes[b]) & bit:
                    self.consistent = False
                self.rows[r] |= bit
                self.cols[c] |= bit
                self.boxes[b] |= bit
        self.empty = [cell for cell, digit in enumerate(self.grid) if not digit]

    def run(self, limit: int, rng: random.Random | None, found: list[list[int]]) -> int:
        """Counts solutions up to ``limit``, appending the first one to ``found``."""
        if not self.empty:
            if not found:
                found.append(list(self.grid))
            return 1
        units, full = self.shape.units, self.shape.all_digits
        rows, cols, boxes = self.rows, self.cols, self.boxes
        best, best_mask, best_count = -1, 0, 99
        for index, cell in enumerate(self.empty):
            r, c, b = units[cell]
            mask = full & ~(rows[r] | cols[c] | boxes[b])
            count = mask.bit_count()
            if count < best_count:
                best, best_mask, best_count = index, mask, count
                if count <= 1:
                    break
        if best_count == 0:
            return 0
        cell = self.empty[best]
        self.empty[best] = self.empty[-1]
        self.empty.pop()
        r, c, b = units[cell]
        digits = [d for d in range(1, self.shape.side + 1) if best_mask >> d & 1]
        if rng is not None:
            rng.shuffle(digits)
        total = 0
        for digit in digits:
            bit = 1 << digit
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
            self.grid[cell] = digit
            total += self.run(limit - total, rng, found)
            rows[r] &= ~bit
            cols[c] &= ~bit
            boxes[b] &= ~bit
            if total >= limit:
                break
        self.grid[cell] = 0
        self.empty.append(cell)
        self.empty[best], self.empty[-1] = self.empty[-1], self.empty[best]
        return total


def count_solutions(shape: Shape, grid: list[int], limit: int = 2) -> int:
    """How many solutions ``grid`` has, counting no further than ``limit``."""
    search = _Search(shape, grid)
    return search.run(limit, None, []) if search.consistent else 0


def solve(shape: Shape, grid: list[int], rng: random.Random | None = None) -> list[int] | None:
    """A solution of ``grid`` (a random one when ``rng`` orders the digits), or ``None``."""
    search = _Search(shape, grid)
    found: list[list[int]] = []
    if search.consistent:
        search.run(1, rng, found)
    return found[0] if found else None


def has_other_solution(shape: Shape, grid: list[int], cell: int, digit: int) -> bool:
    """Whether ``grid`` has a solution with something other than ``digit`` at empty ``cell``.

    Removing a clue keeps the solution unique exactly when this is False; it searches for one
    solution per other candidate of the cell instead of counting solutions to two.
    """
    search = _Search(shape, grid)
    if not search.consistent:
        return False
    r, c, b = shape.units[cell]
    candidates = shape.all_digits & ~(search.rows[r] | search.cols[c] | search.boxes[b])
    search.empty.remove(cell)
    for other in range(1, shape.side + 1):
        if other == digit or not candidates >> other & 1:
            continue
        bit = 1 << other
        search.rows[r] |= bit
        search.cols[c] |= bit
        search.boxes[b] |= bit
        search.grid[cell] = other
        if search.run(1, None, []):
            return True
        search.rows[r] &= ~bit
        search.cols[c] &= ~bit
        search.boxes[b] &= ~bit
    return False
