"""Perfect players of TextArena games whose state they can read: opponents, and measures.

Each solver reads TextArena's own state of the game (``TextArenaTurnBased.state_of_game``, its
``game_state``) and answers a move; ``rollenv.seat_policies.SolverPolicy`` plays a seat with
one.

* ``TicTacToe-v0``: minimax over every position (``tic_tac_toe``);
* ``Nim-v0``: the nim-sum (``nim``).

Kuhn poker is not here: TextArena's ``KuhnPoker-v0`` keeps the pot at the antes whatever is
bet, so its equilibrium is not Kuhn's; rollenv's own ``KuhnPoker-v0`` (``environments.
kuhn_poker``) plays one hand with the real stakes, and its solver reads that game's state.

Example:
    >>> import random
    >>> SOLVERS["Nim-v0"]().move({"piles": [3, 4, 5]}, 0, random.Random(0))
    '[0 2]'
"""

from __future__ import annotations

from environments.textarena.solvers.nim import NimSolver
from environments.textarena.solvers.tic_tac_toe import TicTacToeSolver

#: TextArena's game id -> its solver
SOLVERS: dict[str, type] = {solver.game: solver for solver in (TicTacToeSolver, NimSolver)}

__all__ = ["SOLVERS", "NimSolver", "TicTacToeSolver"]
