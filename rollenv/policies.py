"""Reference policies: a random policy and each env family's oracle, and a loop to run them.

A policy maps an observation (and the step's info) to a reply string, exactly what an LLM would
write. Oracles are privileged: they read the env's state (a Sokoban solver plans on the real
board), so tests can prove an env is solvable and its reward reachable, and the trainer can build
supervised warm-start data from their episodes.

Example:
    >>> import rollenv
    >>> from rollenv.policies import oracle_for, run_episode
    >>> env = rollenv.make("Sokoban-v0")
    >>> run_episode(env, oracle_for(env), seed=3).success
    True
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import gymnasium as gym

from rollenv.text_env import TextEnv
from rollenv.tool_calls import ToolCallEnv, reply_as_message, tool_env_of

if TYPE_CHECKING:
    from rollenv.registration import EnvSpec


class Policy(Protocol):
    """Anything that answers an observation with a reply."""

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


def text_env_of(env: gym.Env) -> TextEnv:
    """The ``TextEnv`` beneath any wrappers (in the ``tools`` format, the text env it plays), or
    a clear error if there is none."""
    inner = env.unwrapped
    if isinstance(inner, ToolCallEnv):
        return inner.text_env
    if not isinstance(inner, TextEnv):
        raise TypeError(f"{type(inner).__name__} is not a rollenv TextEnv")
    return inner


class RandomPolicy:
    """Replies with uniformly random valid actions, in the env's answer format.

    Args:
        env: the env (possibly wrapped) whose action words and answer format to use.
        seed: seeds the choices.
        actions_per_turn: how many actions per reply (capped by the env's format).
    """

    def __init__(self, env: gym.Env, seed: int | None = None, actions_per_turn: int = 1):
        self._env = text_env_of(env)
        self._tool_env = tool_env_of(env)
        self._rng = random.Random(seed)
        self._count = max(1, min(actions_per_turn, self._env.answer_format.max_actions))
        self._turn = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """A reply of random action words; for an env in the ``tools`` format, the assistant
        message that makes the same moves.

        Example:
            >>> import json, rollenv
            >>> env = rollenv.make("FrozenLake-v0", action_format="tools")
            >>> _ = env.reset(seed=0)
            >>> (call,) = json.loads(RandomPolicy(env, seed=1).act("", {}))["tool_calls"]
            >>> call["function"].get("name")
            'move'
        """
        words = self._env.action_words
        reply = self._env.answer_format.wrap([self._rng.choice(words) for _ in range(self._count)])
        if self._tool_env is None:
            return reply
        self._turn += 1
        return reply_as_message(self._tool_env, reply, call_prefix=f"call_{self._turn}")


class ToolCallingPolicy:
    """A text policy made to speak the ``tools`` action format: it reads the text env's
    observation (not the JSON of tool messages) and its reply becomes the assistant message
    that makes the same move (``rollenv.tool_calls.reply_as_message``).

    ``oracle_for`` returns one for an env made with ``action_format="tools"``
    (``RandomPolicy`` speaks both formats itself).
    """

    def __init__(self, policy: Policy, env: gym.Env) -> None:
        self.policy = policy
        self._env = env
        self._text_env = text_env_of(env)
        self._turn = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self._turn += 1
        reply = self.policy.act(self._text_env.render(), info)
        return reply_as_message(self._env, reply, call_prefix=f"call_{self._turn}")


def has_oracle(spec: EnvSpec) -> bool:
    """Whether the env that ``spec`` builds has an oracle, read off its class without building it.

    Example:
        >>> import rollenv
        >>> has_oracle(rollenv.spec("Sokoban-v0"))
        True
    """
    from gymnasium.envs.registration import load_env_creator

    entry = spec.entry_point
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    return getattr(creator, "oracle", None) is not None


def oracle_for(env: gym.Env) -> Policy:
    """Builds the oracle policy of the env's family (``TextEnv.oracle``), bound to ``env``.

    Raises:
        NotImplementedError: the env's family ships no oracle.
    """
    inner = text_env_of(env)
    target = type(inner).oracle
    if target is None:
        raise NotImplementedError(f"{type(inner).__name__} has no oracle policy")
    module_name, _, attribute = target.partition(":")
    oracle_class = getattr(importlib.import_module(module_name), attribute)
    tool_env = tool_env_of(env)
    if tool_env is None:
        return oracle_class(env)
    # the oracle reads the state of the text env the tools format plays
    return ToolCallingPolicy(oracle_class(tool_env.env), env)


@dataclass(frozen=True)
class EpisodeResult:
    """What one episode of a policy gave."""

    seed: int | None
    total_reward: float
    turns: int
    success: bool
    valid_turns: int
    effective_turns: int
    terminated: bool
    truncated: bool


def run_episode(
    env: gym.Env,
    policy: Policy,
    seed: int | None = None,
    max_turns: int = 1000,
    options: dict[str, Any] | None = None,
) -> EpisodeResult:
    """Runs one episode of ``policy`` in ``env`` from ``reset(seed=seed, options=options)``."""
    observation, info = env.reset(seed=seed, options=options)
    total, turns, valid, effective = 0.0, 0, 0, 0
    terminated = truncated = success = False
    while not (terminated or truncated) and turns < max_turns:
        observation, reward, terminated, truncated, info = env.step(policy.act(observation, info))
        metrics = info["metrics"]
        total += reward
        turns += 1
        valid += metrics["action_is_valid"]
        effective += metrics["action_is_effective"]
        success = metrics["success"]
    return EpisodeResult(seed, total, turns, success, valid, effective, terminated, truncated)
