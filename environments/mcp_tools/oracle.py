"""``MCPToolsOracle``: plays the task's plan of tool calls, then answers what it knows."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.mcp_tools.env import MCPToolsEnv


class MCPToolsOracle:
    """Makes the calls that find the answer (as an agent must), then gives the answer.

    It reads the task's plan and answer from the env; the calls are played anyway, so an
    oracle episode exercises the server exactly as a good agent would.
    """

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, MCPToolsEnv):
            raise TypeError(f"MCPToolsOracle needs an MCPToolsEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        plan = env.task.plan
        if env.actions_taken < len(plan) and env.actions_taken < env.max_actions - 1:
            return env.answer_format.wrap(plan[env.actions_taken].action())
        answer = env.task.answer
        text = answer if isinstance(answer, str) else f"{answer:.10g}"
        return env.answer_format.wrap(f"answer[{text}]")
