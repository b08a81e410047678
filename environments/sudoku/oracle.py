"""``SudokuOracle``: writes the solution's digits into the empty cells (privileged: it reads it).

Example:
    >>> import rollenv
    >>> from rollenv.policies import oracle_for
    >>> env = rollenv.make("Sudoku4x4-v0")
    >>> obs, info = env.reset(options={"puzzle": "1.34 3412 21.3 432."})
    >>> oracle_for(env).act(obs, info)
    '<answer>1 2 2 || 3 3 4 || 4 4 1</answer>'
"""

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
