"""``CountdownOracle``: solves the puzzle on the screen with the search solver.

Example:
    >>> import rollenv
    >>> from rollenv.policies import oracle_for
    >>> env = rollenv.make("Countdown-v0")
    >>> obs, info = env.reset(options={"numbers": [3, 3, 8, 8], "target": 24})
    >>> oracle_for(env).act(obs, info)
    '<answer>8 / (3 - (8 / 3))</answer>'
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from environments.countdown.env import CountdownEnv
from environments.countdown.solver import solve


class CountdownOracle:
    """Searches for an expression over the env's numbers (it does not read the generator's).

    On a puzzle with no solution (only a given one can lack it) it answers the plain sum, a
    well-formed attempt.
    """

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, CountdownEnv):
            raise TypeError(f"CountdownOracle needs a CountdownEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        found = solve(env.numbers, env.target)
        return env.answer_format.wrap(found or " + ".join(map(str, env.numbers)))
