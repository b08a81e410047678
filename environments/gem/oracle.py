"""``GoldAnswerOracle``: replies a reasoning-gym question's reference answer (privileged).

reasoning-gym's entries carry their answer (``entry["answer"]``), and GEM keeps the entry of
the current question; the oracle writes it in the env's answer format. GEM's games get no
oracle: most hide nothing an oracle could read cheaply that an agent could not also be given,
and solvers for Sokoban, 2048 or Minesweeper are out of scope for an adapter.

Example:
    >>> import rollenv
    >>> from rollenv.policies import oracle_for, run_episode
    >>> env = rollenv.make("gem/Gcd-v0")
    >>> run_episode(env, oracle_for(env), seed=0).success
    True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.gem.env import GemReasoningEnv
from rollenv.policies import text_env_of


class GoldAnswerOracle:
    """Answers with the reference answer of the env's current question.

    Args:
        env: a (possibly wrapped) ``GemReasoningEnv``.
    """

    def __init__(self, env: gym.Env) -> None:
        inner = text_env_of(env)
        if not isinstance(inner, GemReasoningEnv):
            raise TypeError(f"GoldAnswerOracle plays GemReasoningEnv, not {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._env.answer_format.wrap(self._env.gold_answer())
