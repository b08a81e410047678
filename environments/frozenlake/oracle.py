"""``FrozenLakeOracle``: follows a shortest safe path from the player's cell to the goal."""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym

from environments.frozenlake.env import ACTION_NAMES, FrozenLakeEnv

# row and column change of Left, Down, Right, Up (Gymnasium's action order)
_MOVES = ((0, -1), (1, 0), (0, 1), (-1, 0))


def shortest_path(desc: tuple[str, ...], start: int) -> list[int] | None:
    """Actions of a shortest path from cell ``start`` to the goal avoiding holes, or ``None``."""
    size = len(desc)
    came_from: dict[int, tuple[int, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        row, col = divmod(cell, size)
        if desc[row][col] == "G":
            plan = []
            while came_from[cell] is not None:
                cell, action = came_from[cell]
                plan.append(action)
            return plan[::-1]
        for action, (dr, dc) in enumerate(_MOVES):
            r, c = row + dr, col + dc
            if 0 <= r < size and 0 <= c < size and desc[r][c] != "H" and r * size + c not in came_from:
                came_from[r * size + c] = (cell, action)
                queue.append(r * size + c)
    return None


class FrozenLakeOracle:
    """Re-plans a shortest path from wherever the player is (slipping can push it off course)."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, FrozenLakeEnv):
            raise TypeError(f"FrozenLakeOracle needs a FrozenLakeEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        plan = shortest_path(self._env.desc, self._env.position) or [0]
        count = 1 if self._env.is_slippery else self._env.answer_format.max_actions
        return self._env.answer_format.wrap([ACTION_NAMES[a] for a in plan[:count]])
