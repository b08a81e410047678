"""A Minesweeper field: where the mines are, what is revealed or flagged, and how it is drawn.

Revealing a cell with no mine around it also reveals its neighbours, and theirs, as far as the
zeros reach (the classic flood). The field draws itself with ``?`` for a hidden cell, ``F`` for a
flag, the count of neighbouring mines for a revealed cell and ``*`` for a mine, shown only once
one has gone off.

Example:
    >>> field = Minefield(3, 4, mines=frozenset({3}))
    >>> field.reveal(8)  # a zero: the flood opens every safe cell
    11
    >>> print(field.render())
      1 2 3 4
    1 0 0 1 ?
    2 0 0 1 1
    3 0 0 0 0
    >>> field.cleared()
    True
"""

from __future__ import annotations

import functools

HIDDEN, FLAG, MINE = "?", "F", "*"


@functools.cache
def neighbour_table(rows: int, cols: int) -> tuple[tuple[int, ...], ...]:
    """Each cell's neighbours (up to 8) on a ``rows x cols`` field, built once per size."""
    return tuple(
        tuple(
            (r + dr) * cols + c + dc
            for dr in (-1, 0, 1)
            for dc in (-1, 0, 1)
            if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols
        )
        for r in range(rows)
        for c in range(cols)
    )


class Minefield:
    """A ``rows x cols`` field; cells are flat indices ``row * cols + col``.

    Args:
        rows: rows of the field.
        cols: columns of the field.
        mines: the cells holding a mine.
    """

    def __init__(self, rows: int, cols: int, mines: frozenset[int]):
        self.rows, self.cols, self.mines = rows, cols, mines
        self.neighbours = neighbour_table(rows, cols)
        self.counts = tuple(sum(n in mines for n in around) for around in self.neighbours)
        self.revealed = bytearray(rows * cols)
        self.flagged: set[int] = set()
        self.exploded = False
        self.safe_left = rows * cols - len(mines)

    def reveal(self, cell: int) -> int:
        """Reveals ``cell`` (and the zeros' neighbourhood); returns how many cells it revealed.

        A mine explodes (``exploded`` becomes True). A revealed or flagged cell is left as it is.
        """
        if self.revealed[cell] or cell in self.flagged:
            return 0
        if cell in self.mines:
            self.exploded = True
            self.revealed[cell] = 1
            return 1
        opened, stack = 0, [cell]
        self.revealed[cell] = 1
        while stack:
            current = stack.pop()
            opened += 1
            self.flagged.discard(current)
            if self.counts[current] == 0:
                for around in self.neighbours[current]:
                    if not self.revealed[around]:
                        self.revealed[around] = 1
                        stack.append(around)
        self.safe_left -= opened
        return opened

    def toggle_flag(self, cell: int) -> bool:
        """Flags a hidden cell or takes its flag away; False (no change) on a revealed cell."""
        if self.revealed[cell]:
            return False
        self.flagged.symmetric_difference_update({cell})
        return True

    def cleared(self) -> bool:
        """Whether every cell without a mine is revealed."""
        return self.safe_left == 0 and not self.exploded

    def render(self) -> str:
        """The field as text, rows and columns numbered from 1."""
        width = len(str(max(self.rows, self.cols)))
        lines = [" " * (width + 1) + " ".join(str(c + 1).rjust(width) for c in range(self.cols))]
        for r in range(self.rows):
            cells = []
            for cell in range(r * self.cols, (r + 1) * self.cols):
                if self.exploded and cell in self.mines:
                    symbol = MINE
                elif self.revealed[cell]:
                    symbol = str(self.counts[cell])
                else:
                    symbol = FLAG if cell in self.flagged else HIDDEN
                cells.append(symbol.rjust(width))
            lines.append(f"{str(r + 1).rjust(width)} " + " ".join(cells))
        return "\n".join(lines)
