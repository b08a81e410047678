"""``SokobanOracle``: replies with the next move of an optimal plan for the current board."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.sokoban.env import SokobanEnv
from environments.sokoban.puzzle import ACTION_NAMES
from environments.sokoban.solver import apply_plan, solve


class SokobanOracle:
    """Plans with the BFS solver on the env's real board and plays the plan.

    It re-plans whenever the board is not where its plan expects, so it also recovers after
    another policy played some moves. With ``max_actions_per_turn > 1`` it sends that many
    moves per reply.
    """

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, SokobanEnv):
            raise TypeError(f"SokobanOracle needs a SokobanEnv, got {type(inner).__name__}")
        self._env = inner
        self._plan: list[int] = []
        self._expected = None

    def act(self, observation: str, info: dict[str, Any]) -> str:
        state = self._env.state
        if state != self._expected or not self._plan:
            self._plan = solve(state) or []
        count = self._env.answer_format.max_actions
        moves, self._plan = self._plan[:count], self._plan[count:]
        if not moves:  # solved already or unsolvable: any move is as good as another
            moves = [0]
        self._expected = apply_plan(state, moves)
        return self._env.answer_format.wrap([ACTION_NAMES[m] for m in moves])
