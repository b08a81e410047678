"""``FrozenLakeOracle``: the best move on the current map.

On firm ice that is the next step of a shortest safe path to the goal. On slippery ice no plan
is safe, so the oracle maximises the probability of reaching the goal within the moves left,
by finite-horizon value iteration over Gymnasium's own transition table:

    V_0(s) = 1 if s is the goal else 0
    V_k(s) = 1 at the goal, 0 in a hole, else max_a sum_{s'} P(s' | s, a) V_{k-1}(s')

and plays ``argmax_a sum_{s'} P(s' | s, a) V_{k-1}(s')`` with ``k`` the moves left.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym

from environments.frozenlake.env import ACTION_NAMES, FrozenLakeEnv

# row and column change of Left, Down, Right, Up (Gymnasium's action order)
_MOVES = ((0, -1), (1, 0), (0, 1), (-1, 0))
Transitions = dict[int, dict[int, list[tuple[float, int, float, bool]]]]


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
            if (
                0 <= r < size
                and 0 <= c < size
                and desc[r][c] != "H"
                and r * size + c not in came_from
            ):
                came_from[r * size + c] = (cell, action)
                queue.append(r * size + c)
    return None


def best_slippery_action(
    desc: tuple[str, ...], transitions: Transitions, state: int, moves_left: int
) -> int:
    """The action that maximises the chance of reaching the goal within ``moves_left`` moves."""
    cells = "".join(desc)
    goal = [1.0 if c == "G" else 0.0 for c in cells]
    value = goal[:]

    def expected(v: list[float], s: int, a: int) -> float:
        return sum(p * v[nxt] for p, nxt, _, _ in transitions[s][a])

    for _ in range(max(moves_left, 1) - 1):
        value = [
            goal[s] if cells[s] in "GH" else max(expected(value, s, a) for a in range(4))
            for s in range(len(cells))
        ]
    return max(range(4), key=lambda a: expected(value, state, a))


class FrozenLakeOracle:
    """Re-plans from wherever the player is: slipping can push it off any plan."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, FrozenLakeEnv):
            raise TypeError(f"FrozenLakeOracle needs a FrozenLakeEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        if env.is_slippery:
            moves_left = (env.max_actions or 100) - env.actions_taken
            action = best_slippery_action(env.desc, env.transitions, env.position, moves_left)
            return env.answer_format.wrap(ACTION_NAMES[action])
        plan = shortest_path(env.desc, env.position) or [0]
        return env.answer_format.wrap(
            [ACTION_NAMES[a] for a in plan[: env.answer_format.max_actions]]
        )
