"""Tic-tac-toe solved by minimax: the value of every position and the moves that keep it.

TextArena's board is three rows of ``""``, ``"O"`` (player 0, who moves first) and ``"X"``
(player 1); cell ``3 * row + column`` is the move ``[cell]``. A position's value, for the
player to move, is 1 (a win with best play), 0 (a draw) or -1 (a loss). There are 5,478
positions reachable from the empty board: every value is cached after the first call.

Example:
    >>> empty = [["", "", ""], ["", "", ""], ["", "", ""]]
    >>> value(empty, "O")  # tic-tac-toe is a draw
    0
    >>> best_moves([["O", "O", ""], ["X", "X", ""], ["", "", ""]], "O")  # take the row
    [2]
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence

LINES = (
    (0, 1, 2), (3, 4, 5), (6, 7, 8),  # rows
    (0, 3, 6), (1, 4, 7), (2, 5, 8),  # columns
    (0, 4, 8), (2, 4, 6),  # diagonals
)  # fmt: skip
MARKS = ("O", "X")  # player 0's, player 1's


def _cells(board: Sequence[Sequence[str]]) -> tuple[str, ...]:
    return tuple(cell for row in board for cell in row)


def _winner(cells: tuple[str, ...]) -> str | None:
    for a, b, c in LINES:
        if cells[a] and cells[a] == cells[b] == cells[c]:
            return cells[a]
    return None


def _other(mark: str) -> str:
    return MARKS[1 - MARKS.index(mark)]


@functools.cache
def _value(cells: tuple[str, ...], mark: str) -> int:
    if _winner(cells) is not None:  # the player who just moved won
        return -1
    free = [i for i, cell in enumerate(cells) if not cell]
    if not free:
        return 0
    return max(-_value(_placed(cells, i, mark), _other(mark)) for i in free)


def _placed(cells: tuple[str, ...], cell: int, mark: str) -> tuple[str, ...]:
    return cells[:cell] + (mark,) + cells[cell + 1 :]


def value(board: Sequence[Sequence[str]], mark: str) -> int:
    """The position's value for ``mark``, to move: 1 a win, 0 a draw, -1 a loss."""
    return _value(_cells(board), mark)


def best_moves(board: Sequence[Sequence[str]], mark: str) -> list[int]:
    """Every free cell whose move keeps the position's value for ``mark``, in cell order."""
    cells = _cells(board)
    free = [i for i, cell in enumerate(cells) if not cell]
    if not free or _winner(cells) is not None:
        return []
    scores = {i: -_value(_placed(cells, i, mark), _other(mark)) for i in free}
    best = max(scores.values())
    return [i for i in free if scores[i] == best]


class TicTacToeSolver:
    """A perfect player of TextArena's ``TicTacToe-v0``: one of the best moves, at random."""

    game = "TicTacToe-v0"

    def move(self, game_state: dict, seat: int, rng: random.Random) -> str:
        moves = best_moves(game_state["board"], MARKS[seat])
        return f"[{rng.choice(moves)}]" if moves else "[0]"
