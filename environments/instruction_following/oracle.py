"""``InstructionFollowingOracle``: answers with the scripted writer's reply
(:func:`~environments.instruction_following.writer.write_reply`).

Example:
    >>> import rollenv
    >>> from rollenv.policies import oracle_for, run_episode
    >>> env = rollenv.make("InstructionFollowing-v0")
    >>> run_episode(env, oracle_for(env), seed=0).success
    True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.instruction_following.env import InstructionFollowingEnv
from environments.instruction_following.writer import write_reply


class InstructionFollowingOracle:
    """Writes :func:`write_reply` for the env's prompt, inside the env's answer format."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, InstructionFollowingEnv):
            raise TypeError(
                f"InstructionFollowingOracle needs an InstructionFollowingEnv, got "
                f"{type(inner).__name__}"
            )
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._env.answer_format.wrap(write_reply(self._env.prompt))


__all__ = ["InstructionFollowingOracle"]
