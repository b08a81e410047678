"""``MinesweeperOracle``: a privileged player that reads where the mines are.

Minesweeper needs guesses where logic runs out, so a fair solver cannot win every game; this
oracle instead reads the mines and reveals the safe hidden cell that opens the most cells (a
zero floods its region), taking a flag off a safe cell first where one stands in the way.

Example:
    >>> import rollenv
    >>> from rollenv.policies import oracle_for, run_episode
    >>> env = rollenv.make("Minesweeper-v0")
    >>> run_episode(env, oracle_for(env), seed=0).success
    True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.minesweeper.board import Minefield
from environments.minesweeper.env import MinesweeperEnv


def opening(field: Minefield, cell: int) -> set[int]:
    """The cells that revealing safe, hidden ``cell`` would reveal (itself and its flood)."""
    seen, stack = {cell}, [cell]
    while stack:
        current = stack.pop()
        if field.counts[current] == 0:
            for around in field.neighbours[current]:
                if around not in seen and not field.revealed[around]:
                    seen.add(around)
                    stack.append(around)
    return seen


def planned_reveals(field: Minefield, count: int) -> list[int]:
    """Up to ``count`` safe cells to reveal in turn, each the one that opens the most cells.

    Example:
        >>> field = Minefield(1, 5, mines=frozenset({2}))
        >>> planned_reveals(field, 3)  # the zeros at 0 and 4 open their neighbours 1 and 3
        [0, 4]
    """
    opened: set[int] = set()
    plan: list[int] = []
    while len(plan) < count:
        best, best_size = None, 0
        for cell in range(field.rows * field.cols):
            if field.revealed[cell] or cell in field.mines or cell in opened:
                continue
            # a number opens only itself: the flood search is for zeros
            size = len(opening(field, cell) - opened) if field.counts[cell] == 0 else 1
            if size > best_size:
                best, best_size = cell, size
        if best is None:
            break
        plan.append(best)
        opened |= opening(field, best)
    return plan


class MinesweeperOracle:
    """Reveals safe cells, largest opening first, as many per reply as the format allows."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, MinesweeperEnv):
            raise TypeError(f"MinesweeperOracle needs a MinesweeperEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        field, limit = env.field, env.answer_format.max_actions
        moves: list[str] = []
        for cell in planned_reveals(field, limit):
            where = f"{cell // env.cols + 1} {cell % env.cols + 1}"
            if cell in field.flagged:
                moves.append(f"flag {where}")
            moves.append(f"reveal {where}")
        # nothing safe is hidden (the game is over): any move will do
        return env.answer_format.wrap(moves[:limit] or [env.action_words[0]])
