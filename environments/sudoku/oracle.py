"""``SudokuOracle``: writes the solution's digits into the empty cells (privileged: it reads it)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.sudoku.env import SudokuEnv


class SudokuOracle:
    """Fills as many empty cells per reply as the answer format allows, row by row."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, SudokuEnv):
            raise TypeError(f"SudokuOracle needs a SudokuEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        side, solution = env.size, env.solution
        empty = [cell for cell, digit in enumerate(env.grid) if not digit]
        placements = [
            f"{cell // side + 1} {cell % side + 1} {solution[cell]}"
            for cell in empty[: env.answer_format.max_actions]
        ]
        # a solved grid has nothing to fill: a placement over a clue is a harmless no-op
        return env.answer_format.wrap(placements or [env.action_words[0]])
