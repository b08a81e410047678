"""``CodeOracle``: answers with the problem's reference solution."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.code.env import CodeSandboxEnv


class CodeOracle:
    """Replies with the reference solution of the current problem."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, CodeSandboxEnv):
            raise TypeError(f"CodeOracle needs a CodeSandboxEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        problem = self._env.problem
        if not problem.solution:
            raise ValueError(f"{problem.task_id} has no reference solution")
        return self._env.answer_format.wrap(problem.solution)
