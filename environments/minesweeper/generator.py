"""Minesweeper layouts whose opening move is safe: the start and its neighbours hold no mine.

The generator draws a start cell, then the mines among the cells outside the start's 3x3
neighbourhood, so the start is a zero and revealing it opens a region. A layout where that
opening already clears the field is drawn again (a bounded number of times), so every episode
leaves something to do.

Example:
    >>> import random
    >>> layout = generate_layout(random.Random(0), rows=5, cols=5, mines=3)
    >>> len(layout.mines), layout.start in layout.mines
    (3, False)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from environments.minesweeper.board import Minefield, neighbour_table

_MAX_DRAWS = 100


@dataclass(frozen=True)
class Layout:
    """Where the mines are and which cell is revealed at the start.

    Attributes:
        rows: rows of the field.
        cols: columns of the field.
        mines: the mined cells, as flat indices.
        start: the cell revealed before the first move.
    """

    rows: int
    cols: int
    mines: frozenset[int]
    start: int

    def field(self) -> Minefield:
        """A fresh field of this layout with the start revealed."""
        field = Minefield(self.rows, self.cols, self.mines)
        field.reveal(self.start)
        return field


def check_settings(rows: int, cols: int, mines: int) -> None:
    """Raises ``ValueError`` naming the field when a layout of these settings cannot exist."""
    if not (2 <= rows <= 30 and 2 <= cols <= 30):
        raise ValueError(f"rows and cols must be in 2..30, got rows={rows}, cols={cols}")
    # a start in the middle keeps 9 cells free of mines
    most = rows * cols - 9 if rows >= 3 and cols >= 3 else rows * cols - 4
    if not 1 <= mines <= most:
        raise ValueError(f"mines must be in 1..{most} for a {rows}x{cols} field, got {mines}")


def generate_layout(rng: random.Random, rows: int, cols: int, mines: int) -> Layout:
    """A layout of ``mines`` mines whose start is safe and does not clear the field at once."""
    check_settings(rows, cols, mines)
    layout = None
    for _ in range(_MAX_DRAWS):
        start = rng.randrange(rows * cols)
        free = neighbour_table(rows, cols)[start] + (start,)
        allowed = [cell for cell in range(rows * cols) if cell not in free]
        if len(allowed) < mines:
            continue  # a start by the edge frees fewer cells; one inside frees more
        layout = Layout(rows, cols, frozenset(rng.sample(allowed, mines)), start)
        if not layout.field().cleared():
            return layout
    # only a field with very few mines gets here: its opening clears it, a free win
    if layout is None:
        raise ValueError(f"no start leaves room for {mines} mines on a {rows}x{cols} field")
    return layout
