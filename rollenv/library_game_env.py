"""``LibraryGameEnv``: the base of envs that play another library's games (TextArena, GEM).

An adapter writes one method for a turn, ``_play_move``: it hands the answer to the library's
game and returns a ``MoveOutcome`` (the game's reward, whether it took the move); it calls
``_end_episode`` when the game is over. The base class builds the step from it, so every
adapted game keeps ``TextEnv``'s contract the same way:

* a reply without an answer is a penalised no-op, and so is any step after the episode ended
  (with ``info[error_key]`` saying so);
* an exception inside the library ends the episode as truncated, with the reason in
  ``info[error_key]`` (``_library_raised`` decides the move's reward and validity);
* a reward that is not a finite number (a game's bug: one passes its message as the reward) makes
  the move invalid, with the ``format_penalty``, and ends the episode; ``step`` never raises.

Seeding
-------

Such an env needs one number from its reset seed, the seed it hands the library, and its cost
is measured against calling the library directly (``benchmarks/gem_throughput.py``):
``TextEnv``'s seeding (Gymnasium's ``np_random`` from the seed, then a Python ``Random`` from
that) costs more than a whole reset of a cheap guessing game. Here a reset seeds a
``SplitMixRandom`` instead (one assignment), and ``np_random`` is still Gymnasium's, seeded from
the reset seed, but built only when something reads it (``check_env`` does; the game never
does).

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

import math
from abc import abstractmethod
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from gymnasium import error
from gymnasium.utils import seeding

from rollenv.splitmix_random import SplitMixRandom
from rollenv.text_env import TextEnv


@dataclass
class MoveOutcome:
    """What one of the agent's moves did in the library's game, as its adapter read it.

    Attributes:
        reward: the game's reward for the move, as the game gave it; the base class checks
            that it is a finite number.
        valid: whether the game took the move (``False``: it refused it).
        effective: whether the move changed the game's state.
        info: keys the adapter adds to the step's ``info`` (a refusal's reason, ...).
    """

    reward: Any = 0.0
    valid: bool = True
    effective: bool = True
    info: dict[str, Any] = field(default_factory=dict)


def finite_reward(value: Any) -> float | None:
    """``value`` as a float when it is a finite real number (a bool is not one), else ``None``.

    Example:
        >>> finite_reward(1), finite_reward(np.float32(0.5)), finite_reward("Bad format")
        (1.0, 0.5, None)
        >>> finite_reward(float("nan")), finite_reward(True)
        (None, None)
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


class LibraryGameEnv(TextEnv):
    """A ``TextEnv`` that plays another library's game (see the module docstring).

    An adapter implements ``_play_move`` (and ``TextEnv``'s ``instruction``, ``action_words``,
    ``_new_episode`` and ``_observation``); it may override ``_library_raised``.
    """

    #: the ``info`` key that says why the library's game ended the episode early or a step did
    #: nothing (an adapter may keep the name its users know)
    error_key: ClassVar[str] = "error"
    #: the library's name in those messages
    library: ClassVar[str] = "the game's library"

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

    # ------------------------------------------------------------------ an episode's end
    _over = False
    _success = False
    _cut_short = False
    _error: str | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self._over = self._success = self._cut_short = False
        self._error = None
        return super().reset(seed=seed, options=options)

    def _end_episode(self, *, success: bool, cut_short: bool = False) -> None:
        """Called by the adapter when the game is over: ``success`` the agent's; ``cut_short``
        when the library stopped it without a verdict (its own time limit, an error): the step
        is then ``truncated`` rather than ``terminated``."""
        self._over, self._success, self._cut_short = True, success, cut_short

    def _solved(self) -> bool:
        return self._success

    def _failed(self) -> bool:
        return self._over and not self._success and not self._cut_short

    # ------------------------------------------------------------------ a turn
    @abstractmethod
    def _play_move(self, move: str) -> MoveOutcome:
        """Plays the agent's ``move`` (the answer's text) in the game, and whatever the game
        does until the agent's next turn; calls ``_end_episode`` if the game ends."""

    def _library_raised(self, error: Exception) -> MoveOutcome:
        """The step's outcome when ``_play_move`` raised ``error``: the episode ends cut short,
        the move counts as valid (the library failed, not the agent) and earns nothing."""
        self._error = f"{self.library} raised {type(error).__name__}: {error}"
        self._end_episode(success=False, cut_short=True)
        return MoveOutcome(0.0, valid=True, effective=False, info={self.error_key: self._error})

    def _parse_action(self, text: str) -> str:
        return text  # any answer is a move: the game judges it

    def _apply(self, action: Any) -> tuple[float, bool]:
        """``TextEnv``'s one-action hook, for callers that use it: ``_play_move``'s reward (0
        when it is not a number) and effect."""
        outcome = self._play_move(str(action))
        return finite_reward(outcome.reward) or 0.0, outcome.effective

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        moves = self._parse_reply(action)
        if moves is None:
            return self._step_result(self.format_penalty, MoveOutcome(valid=False, effective=False))
        if self._over:
            why = self._error or "the episode is over: call reset()"
            return self._step_result(
                0.0, MoveOutcome(valid=False, effective=False, info={self.error_key: why})
            )
        self.actions_taken += 1
        try:
            outcome = self._play_move(str(moves[0]))
        except Exception as raised:  # noqa: BLE001 - a library's bug must not stop training
            outcome = self._library_raised(raised)
        reward = finite_reward(outcome.reward)
        if reward is None:
            self._error = (
                f"{self.library} gave the reward {outcome.reward!r}, not a number: "
                "the move counts as invalid and the episode ends"
            )
            self._end_episode(success=False, cut_short=not self._over)
            reward = self.format_penalty
            info = {**outcome.info, self.error_key: self._error}
            outcome = MoveOutcome(reward, valid=False, effective=False, info=info)
        return self._step_result(reward, outcome)

    def _step_result(
        self, reward: float, outcome: MoveOutcome
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        terminated = self._over and not self._cut_short
        truncated = (self._over and self._cut_short) or (not self._over and self._out_of_actions())
        self._last_observation = observation = self._observation()
        info = dict(outcome.info)
        info["metrics"] = {
            "success": self._success,
            "action_is_valid": outcome.valid,
            "action_is_effective": outcome.effective,
        }
        info["anchor"] = self._anchor()
        return observation, float(reward), terminated, truncated, info
