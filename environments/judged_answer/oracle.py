"""``JudgedAnswerOracle``: answers with the question's reference answer.

Example:
    >>> import rollenv
    >>> from rollenv.policies import oracle_for, run_episode
    >>> env = rollenv.make("JudgedAnswer-v0")
    >>> run_episode(env, oracle_for(env), seed=0).success
    True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.judged_answer.env import JudgedAnswerEnv


class JudgedAnswerOracle:
    """Writes the reference answer inside the env's answer format."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, JudgedAnswerEnv):
            raise TypeError(
                f"JudgedAnswerOracle needs a JudgedAnswerEnv, got {type(inner).__name__}"
            )
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._env.answer_format.wrap(self._env.current.reference)


__all__ = ["JudgedAnswerOracle"]
