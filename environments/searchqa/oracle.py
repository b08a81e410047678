"""``SearchQAOracle``: knows the question's evidence chain, and still has to find it.

It is privileged (it reads ``Question.evidence`` and the gold answer) but acts only through the
env: it searches for each evidence passage in turn, by its title, and answers only once every
one of them has been shown by a search this episode. So an oracle success proves the answer is
reachable by search, which the tests check (and that a title's search ranks its own passage
first in every corpus size, look-alikes included).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.searchqa.env import SearchQAEnv


class SearchQAOracle:
    """Searches for each passage of the evidence chain, then answers."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, SearchQAEnv):
            raise TypeError(f"SearchQAOracle needs a SearchQAEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        missing = [t for t in env.question.evidence if t not in env.retrieved]
        if not missing:
            return env.answer_format.wrap(f"answer[{env.question.answer}]")
        return env.answer_format.wrap(f"search[{missing[0]}]")
