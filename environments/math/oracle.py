"""``MathOracle``: answers with the reference answer (after one Python call in ``MathTool``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.math.env import MathEnv


class MathOracle:
    """Replies with the current problem's reference answer.

    In a tool env it first prints the answer from Python, so episodes exercise the session.
    """

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, MathEnv):
            raise TypeError(f"MathOracle needs a MathEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        if env.max_tool_calls and env.actions_taken == 0:
            return f"<python>print({env.problem.answer!r})</python>"
        return env.answer_format.wrap(env.problem.answer)
