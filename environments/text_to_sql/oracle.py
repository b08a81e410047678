"""``TextToSQLOracle``: answers with the gold query (it reads the env's task)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.text_to_sql.env import TextToSQLEnv


class TextToSQLOracle:
    """Submits the question's gold SQL at once, in the env's answer syntax."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, TextToSQLEnv):
            raise TypeError(f"TextToSQLOracle needs a TextToSQLEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        return env.answer_format.wrap(env.answer_of(env.task.question.sql))
