"""``LibraryGameEnv``: the base of envs that play another library's games (TextArena, GEM).

Such an env needs one number from its reset seed, the seed it hands the library, and its cost
is measured against calling the library directly: ``TextEnv``'s seeding (Gymnasium's
``np_random`` from the seed, then a Python ``Random`` from that) took 30 µs of a reset, where
GEM resets a guessing game in 15. Here a reset seeds a ``SplitMixRandom`` instead (under a
microsecond), and ``np_random`` is still Gymnasium's, seeded from the reset seed, but built
only when something reads it (``check_env`` does; the game never does).

Semantics kept from Gymnasium: the same seed gives the same episode and the same
``np_random``; ``reset()`` without a seed continues the stream of the last seeded reset (or
starts from fresh entropy); a seed must be a non-negative int.

Example:
    >>> import rollenv
    >>> env = rollenv.make("gem/GuessTheNumberEasy-v0").unwrapped
    >>> first, _ = env.reset(seed=3)
    >>> second, _ = env.reset(seed=3)
    >>> first == second, env.np_random_seed
    (True, 3)
"""

from __future__ import annotations

import numpy as np
from gymnasium import error
from gymnasium.utils import seeding

from rollenv.splitmix_random import SplitMixRandom
from rollenv.text_env import TextEnv


class LibraryGameEnv(TextEnv):
    """A ``TextEnv`` whose episodes draw from a ``SplitMixRandom`` (see the module docstring)."""

    _episode_stream: SplitMixRandom | None = None
    #: the reset seed ``np_random`` is built from at its next read (``None``: built already)
    _np_random_due: int | None = None
    _np_random_built: np.random.Generator | None = None

    def _episode_random(self, seed: int | None) -> SplitMixRandom:
        if seed is not None:
            if not (isinstance(seed, int) and seed >= 0):
                raise error.Error(f"Seed must be a python integer >= 0, got {seed!r}")
            self._np_random_due, self._np_random_seed = seed, seed
            self._episode_stream = SplitMixRandom(seed)
        elif self._episode_stream is None:
            self._episode_stream = SplitMixRandom()
        return self._episode_stream

    # Gymnasium's Env keeps its generator in ``_np_random`` (``check_env`` reads it there)
    @property  # type: ignore[override]
    def _np_random(self) -> np.random.Generator | None:
        if self._np_random_due is not None:
            self._np_random_built, _ = seeding.np_random(self._np_random_due)
            self._np_random_due = None
        return self._np_random_built

    @_np_random.setter
    def _np_random(self, value: np.random.Generator | None) -> None:
        self._np_random_built, self._np_random_due = value, None
