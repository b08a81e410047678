"""Nim (whoever takes the last object wins) solved by its nim-sum, Bouton's theorem.

The player to move loses with best play exactly when the piles' bitwise XOR (the nim-sum) is
0; otherwise a winning move takes from a pile ``p`` with ``p ^ s < p`` down to ``p ^ s``, which
leaves a nim-sum of 0. TextArena's move ``[pile quantity]`` removes ``quantity`` from ``pile``.

Example:
    >>> winning_moves([3, 4, 5])  # 3 ^ 4 ^ 5 = 2: take 2 from the pile of 3
    [(0, 2)]
    >>> winning_moves([1, 4, 5])  # nim-sum 0: every move loses
    []
"""

from __future__ import annotations

import functools
import operator
import random
from collections.abc import Sequence


def nim_sum(piles: Sequence[int]) -> int:
    """The XOR of the piles: 0 where the player to move loses with best play."""
    return functools.reduce(operator.xor, piles, 0)


def winning_moves(piles: Sequence[int]) -> list[tuple[int, int]]:
    """Every ``(pile, quantity)`` that leaves a nim-sum of 0; none where the nim-sum is 0."""
    total = nim_sum(piles)
    if total == 0:
        return []
    return [(i, p - (p ^ total)) for i, p in enumerate(piles) if p ^ total < p]


class NimSolver:
    """A perfect player of TextArena's ``Nim-v0``: a winning move where there is one, else
    one object from the largest pile (which leaves the opponent the most room to err)."""

    game = "Nim-v0"

    def move(self, game_state: dict, seat: int, rng: random.Random) -> str:
        piles = game_state["piles"]
        moves = winning_moves(piles)
        if moves:
            pile, quantity = rng.choice(moves)
        else:
            pile, quantity = max(range(len(piles)), key=lambda i: piles[i]), 1
        return f"[{pile} {quantity}]"
