"""``MixtureEnv``: one env that plays a weighted mix of registered envs, one member per episode.

ROLL trains on a mix of tasks (40% math, 30% code, 30% general). ``MixtureEnv`` makes that a
single Gymnasium env, so a trainer that knows one env id trains on the mix unchanged:

* ``reset(seed=s)`` picks one member from ``s`` alone (every env of a GRPO group, which share a
  seed, plays the same member; over many seeds each member's share tends to its ratio) and
  resets that member with the same seed, so it starts exactly where ``make(member).reset(seed=s)``
  does. ``reset()`` without a seed draws the next episode's seed from the mixture's own
  generator (Gymnasium's semantics: deterministic after one seeded reset).
* ``step`` and ``render`` go to the episode's member; its reward, ``info["metrics"]``,
  ``info["anchor"]`` and reset ``info["instruction"]`` (the member's own rules) pass unchanged.
  Every ``reset`` and ``step`` adds ``info["env_id"]``, the member's id.
* Each member is made once, with ``rollenv.make`` (its own time limit and wrappers), the first
  time a seed picks it, and reused.

A mix maps env ids to ratios (positive; normalised to sum to 1), or to
``{"ratio": r, "kwargs": {...}}`` to give a member keyword arguments for ``rollenv.make``.
Members are kept sorted by id, so a mix written in any order picks the same member per seed.

Example:
    >>> import rollenv
    >>> env = rollenv.make_mixture({"SimpleSokoban-v0": 0.5, "FrozenLake-v0": 0.5})
    >>> obs, info = env.reset(seed=0)
    >>> info["env_id"] in ("SimpleSokoban-v0", "FrozenLake-v0")
    True
    >>> info["env_id"] == env.unwrapped.member_for_seed(0)
    True
    >>> obs, reward, terminated, truncated, info = env.step("<answer>Up</answer>")
    >>> sorted(info["metrics"])
    ['action_is_effective', 'action_is_valid', 'success']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rollenv.actions import AnswerFormat
from rollenv.registration import make, register, spec
from rollenv.text_env import _SHARED_TEXT_SPACE, TextEnv

MIXTURE_ID = "Mixture-v0"
#: the mix of ``rollenv.make("Mixture-v0")`` without ``mix``: two envs that need no extras
DEFAULT_MIX: dict[str, float] = {"SimpleSokoban-v0": 0.5, "FrozenLake-v0": 0.5}
# salts the member choice, so it is independent of the draws the member makes from the same seed
_CHOICE_SALT = 0x6D6978


@dataclass(frozen=True)
class MixMember:
    """One member of a mix: its canonical id, its probability and its ``make`` kwargs."""

    env_id: str
    probability: float
    kwargs: dict[str, Any] = field(default_factory=dict)


def parse_mix(mix: Mapping[str, float | Mapping[str, Any]]) -> list[MixMember]:
    """Checks a mix and returns its members, sorted by id, with probabilities summing to 1.

    Args:
        mix: ``{env_id: ratio}`` or ``{env_id: {"ratio": ratio, "kwargs": {...}}}`` (the two
            forms can be mixed). Ids resolve as in ``rollenv.make`` (any case, short names).

    Raises:
        ValueError: the mix is empty, a ratio is not a positive finite number, a value has
            another shape, or two keys name the same env.
        rollenv.UnknownEnvError: an id is not registered (the message lists the closest ids).

    Example:
        >>> [(m.env_id, m.probability) for m in parse_mix({"sokoban": 3, "FrozenLake-v0": 1})]
        [('FrozenLake-v0', 0.25), ('Sokoban-v0', 0.75)]
    """
    if not isinstance(mix, Mapping) or not mix:
        raise ValueError(
            f"mix must name at least one env as {{env_id: ratio}}, e.g. {DEFAULT_MIX}; got {mix!r}"
        )
    members: dict[str, tuple[float, dict[str, Any]]] = {}
    for key, value in mix.items():
        if isinstance(value, Mapping):
            unknown = set(value) - {"ratio", "kwargs"}
            if "ratio" not in value or unknown:
                raise ValueError(
                    f"mix[{key!r}] must be a ratio or {{'ratio': r, 'kwargs': {{...}}}}, "
                    f"got {dict(value)!r}"
                )
            ratio, kwargs = value["ratio"], value.get("kwargs") or {}
            if not isinstance(kwargs, Mapping):
                raise ValueError(f"mix[{key!r}]['kwargs'] must be a dict, got {kwargs!r}")
        else:
            ratio, kwargs = value, {}
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
            raise ValueError(f"mix[{key!r}] ratio must be a number > 0, got {ratio!r}")
        if not math.isfinite(ratio):
            raise ValueError(f"mix[{key!r}] ratio must be finite, got {ratio!r}")
        env_id = spec(key).id  # UnknownEnvError, with the closest ids, for a bad one
        if env_id in members:
            raise ValueError(f"mix names {env_id!r} twice (as {key!r} too)")
        members[env_id] = (float(ratio), dict(kwargs))
    total = sum(ratio for ratio, _ in members.values())
    return [
        MixMember(env_id, ratio / total, kwargs)
        for env_id, (ratio, kwargs) in sorted(members.items())
    ]


class MixtureEnv(TextEnv):
    """Plays a weighted mix of registered envs, one member per episode (see the module docstring).

    It is a ``TextEnv`` by contract, not by implementation: ``reset``/``step`` and the episode's
    ``instruction``, ``action_words``, ``answer_format``, ``format_penalty`` and ``actions_taken``
    are its member's (before the first reset, the first member's, by id); the family hooks of
    ``TextEnv`` are not used.

    Args:
        mix: ``{env_id: ratio}`` or ``{env_id: {"ratio": r, "kwargs": {...}}}``; see
            :func:`parse_mix`. ``None`` is ``DEFAULT_MIX``.
        render_mode: ``"ansi"`` or ``None``, passed to every member.
        defer_reward: passed on to the members that take it (their answers are then scored
            by the trainer's reward workers, from ``info["reward_request"]``); the others score
            inside ``step`` as usual.

    Raises:
        ValueError: a bad mix (see :func:`parse_mix`) or render mode.
        rollenv.UnknownEnvError: a member id is not registered.
    """

    oracle: ClassVar[str | None] = "rollenv.mixture:MixtureOracle"

    def __init__(
        self,
        mix: Mapping[str, float | Mapping[str, Any]] | None = None,
        *,
        render_mode: str | None = None,
        defer_reward: bool = False,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not supported; "
                f"allowed: {self.metadata['render_modes']} or None"
            )
        self.render_mode = render_mode
        self.members = parse_mix(DEFAULT_MIX if mix is None else mix)
        self.defer_reward = defer_reward
        self._cumulative = np.cumsum([m.probability for m in self.members])
        self.observation_space = _SHARED_TEXT_SPACE
        self.action_space = _SHARED_TEXT_SPACE
        self._envs: dict[int, gym.Env] = {}
        self._active = 0
        self._started = False

    # ------------------------------------------------------------------ choosing a member
    def member_index_for_seed(self, seed: int) -> int:
        """Index in :attr:`members` of the member that ``reset(seed=seed)`` plays."""
        draw = np.random.default_rng([_CHOICE_SALT, int(seed)]).random()
        index = int(np.searchsorted(self._cumulative, draw * self._cumulative[-1], side="right"))
        return min(index, len(self.members) - 1)

    def member_for_seed(self, seed: int) -> str:
        """Id of the member that ``reset(seed=seed)`` plays (no env is made or reset)."""
        return self.members[self.member_index_for_seed(seed)].env_id

    def member_env(self, index: int) -> gym.Env:
        """Member ``index``'s env (made on first use with ``rollenv.make``, then reused)."""
        if index not in self._envs:
            member = self.members[index]
            kwargs = dict(member.kwargs)
            if self.render_mode is not None:
                kwargs.setdefault("render_mode", self.render_mode)
            if self.defer_reward and spec(member.env_id).takes("defer_reward"):
                kwargs["defer_reward"] = True
            self._envs[index] = make(member.env_id, **kwargs)
        return self._envs[index]

    @property
    def active_env(self) -> gym.Env:
        """The env of the current episode (the first member's before the first reset)."""
        return self.member_env(self._active)

    @property
    def active_id(self) -> str:
        """The id of the current episode's member (the first member's before the first reset)."""
        return self.members[self._active].env_id

    @property
    def _inner(self) -> Any:
        return self.active_env.unwrapped

    # ------------------------------------------------------------------ the episode's member's
    @property
    def instruction(self) -> str:
        return self._inner.instruction

    @property
    def action_words(self) -> tuple[str, ...]:
        return self._inner.action_words

    @property
    def answer_format(self) -> AnswerFormat:
        return self._inner.answer_format

    @property
    def format_penalty(self) -> float:
        return self._inner.format_penalty

    @property
    def max_actions(self) -> int | None:
        return self._inner.max_actions

    @property
    def actions_taken(self) -> int:
        return self._inner.actions_taken

    @property
    def deterministic(self) -> bool:  # type: ignore[override]
        return getattr(self._inner, "deterministic", True)

    def task_ignoring_replies(self) -> dict[str, str]:
        return self._inner.task_ignoring_replies()

    # ------------------------------------------------------------------ the Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        gym.Env.reset(self, seed=seed)
        if seed is None:  # the next episode's seed, from the stream the last seeded reset set
            seed = int(self.np_random.integers(1 << 62))
        self._active = self.member_index_for_seed(seed)
        self._started = True
        obs, info = self.active_env.reset(seed=seed, options=options)
        return obs, {**info, "env_id": self.active_id}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise gym.error.ResetNeeded("MixtureEnv: call reset() before step()")
        obs, reward, terminated, truncated, info = self.active_env.step(action)
        return obs, reward, terminated, truncated, {**info, "env_id": self.active_id}

    def render(self) -> str:
        """The current episode's observation text (``""`` before the first reset)."""
        return self.active_env.render() if self._started else ""

    def close(self) -> None:
        """Closes every member made so far."""
        envs, self._envs = list(self._envs.values()), {}
        self._started = False
        for env in envs:
            env.close()
        super().close()

    # TextEnv's family hooks: never called, reset and step go to the member
    def _new_episode(self, rng: Any, options: dict[str, Any] | None) -> None:
        raise NotImplementedError("MixtureEnv delegates reset to its member")

    def _observation(self) -> str:
        return self.render()

    def _parse_action(self, text: str) -> None:
        raise NotImplementedError("MixtureEnv delegates step to its member")

    def _apply(self, action: Any) -> tuple[float, bool]:
        raise NotImplementedError("MixtureEnv delegates step to its member")

    def _solved(self) -> bool:
        raise NotImplementedError("MixtureEnv delegates step to its member")


class MixtureOracle:
    """The oracle of each episode's member (``rollenv.policies.oracle_for`` of a mixture).

    Each member's oracle is built the first time that member plays, and reused.
    """

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, MixtureEnv):
            raise TypeError(f"MixtureOracle needs a MixtureEnv, got {type(inner).__name__}")
        self._env = inner
        self._oracles: dict[int, Any] = {}

    def act(self, observation: str, info: dict[str, Any]) -> str:
        from rollenv.policies import oracle_for  # policies imports text_env, not this module

        index = self._env._active
        if index not in self._oracles:
            self._oracles[index] = oracle_for(self._env.member_env(index))
        return self._oracles[index].act(observation, info)


def make_mixture(mix: Mapping[str, float | Mapping[str, Any]], **kwargs: Any) -> gym.Env:
    """``rollenv.make("Mixture-v0", mix=mix, **kwargs)``: one env over a weighted mix of envs.

    Args:
        mix: ``{env_id: ratio}`` or ``{env_id: {"ratio": r, "kwargs": {...}}}``.
        **kwargs: more ``MixtureEnv`` or Gymnasium ``make`` arguments (``render_mode``,
            ``max_episode_steps``, ...).

    Example:
        >>> import rollenv
        >>> env = rollenv.make_mixture({"FrozenLake-v0": 1, "SimpleSokoban-v0": 1})
        >>> [m.env_id for m in env.unwrapped.members]
        ['FrozenLake-v0', 'SimpleSokoban-v0']
    """
    return make(MIXTURE_ID, mix=mix, **kwargs)


def register_mixture() -> None:
    """Registers ``Mixture-v0`` (rollenv's own id, named in its ``rollenv.envs`` entry points)."""
    register(
        MIXTURE_ID,
        "rollenv.mixture:MixtureEnv",
        # no time limit: each member truncates its own episodes
        kwargs={"mix": dict(DEFAULT_MIX)},
        description="a weighted mix of envs, one per episode (mix={env_id: ratio})",
    )
