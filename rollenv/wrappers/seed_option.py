"""``SeedAsResetOption``: passes the reset seed on as a reset option too.

Some envs pick their task from an option rather than the seed: ``CodeSandbox-v0`` plays problem
``i`` with ``reset(options={"index": i})``, and draws a problem at random from a seed. An eval
suite that names problems by seed wraps the env so that ``reset(seed=i)`` plays problem ``i``.

Example:
    >>> import rollenv
    >>> from rollenv.wrappers import SeedAsResetOption
    >>> env = SeedAsResetOption(rollenv.make("FrozenLake-v0"), "unused")
    >>> env.reset(seed=3)[0] == rollenv.make("FrozenLake-v0").reset(seed=3)[0]
    True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class SeedAsResetOption(gym.Wrapper[str, str, str, str]):
    """Calls ``reset(seed=s, options={key: s, ...})`` for every ``reset(seed=s)``.

    Args:
        env: the env to wrap.
        key: the option the seed is passed as (``"index"``).
    """

    def __init__(self, env: gym.Env[str, str], key: str):
        super().__init__(env)
        self.key = key

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if seed is not None:
            options = {**(options or {}), self.key: seed}
        return self.env.reset(seed=seed, options=options)
