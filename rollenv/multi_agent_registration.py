"""The registry of multi-agent ids: ``register_multi`` and ``make_multi``.

A game of several seats is registered twice under one id: with ``rollenv.register`` as a
single-agent env (the agent in one seat, opponents in the others) and here, with every seat
open, as a PettingZoo ``AECEnv``. A family registers both from its ``rollenv.envs`` hook;
registering here imports nothing (the entry point is a ``"module:Class"`` string), and
PettingZoo, the ``[multiagent]`` extra, is imported only by ``make_multi``.

Example:
    >>> import rollenv
    >>> "textarena/TicTacToe-v0" in rollenv.multi_agent_ids()
    True
    >>> env = rollenv.make_multi("textarena/TicTacToe-v0")
    >>> env.possible_agents
    ['player_0', 'player_1']
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rollenv.extras import require_extra
from rollenv.registration import UnknownEnvError, registry

if TYPE_CHECKING:
    from pettingzoo import AECEnv


@dataclass(frozen=True)
class MultiAgentSpec:
    """How to build one multi-agent id.

    Attributes:
        id: the id, the same as the game's single-agent id.
        entry_point: ``"module:Class"`` or a callable returning an ``AECEnv``.
        kwargs: default keyword arguments of the entry point.
        players: how many seats the game has.
        description: one line for listings.
    """

    id: str
    entry_point: str | Callable[..., Any]
    players: int
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def load_entry_point(self) -> Callable[..., Any]:
        if callable(self.entry_point):
            return self.entry_point
        module, _, name = self.entry_point.partition(":")
        return getattr(importlib.import_module(module), name)


_SPECS: dict[str, MultiAgentSpec] = {}


def register_multi(
    id: str,  # noqa: A002 - as rollenv.register's
    entry_point: str | Callable[..., Any],
    *,
    players: int,
    kwargs: dict[str, Any] | None = None,
    description: str = "",
) -> None:
    """Registers a multi-agent game under ``id`` (built by ``make_multi``).

    Args:
        id: the game's id (``"textarena/TicTacToe-v0"``).
        entry_point: ``"module:Class"`` (imported on first ``make_multi``) or a callable.
        players: how many seats the game has (2 or more).
        kwargs: default keyword arguments passed to the entry point.
        description: one line for listings.
    """
    if players < 2:
        raise ValueError(f"a multi-agent game has 2 or more seats, {id!r} was given {players}")
    _SPECS[id] = MultiAgentSpec(id, entry_point, players, dict(kwargs or {}), description)


def multi_agent_ids() -> list[str]:
    """Every registered multi-agent id, sorted."""
    registry.load_plugins()
    return sorted(_SPECS)


def multi_agent_spec(env_id: str) -> MultiAgentSpec:
    """The spec of a multi-agent id (exact, or in any case).

    Raises:
        UnknownEnvError: no multi-agent game has that id; the message says whether it is a
            single-agent env, or lists the closest multi-agent ids.
    """
    registry.load_plugins()
    if env_id in _SPECS:
        return _SPECS[env_id]
    by_lower = {key.lower(): spec for key, spec in _SPECS.items()}
    if env_id.lower() in by_lower:
        return by_lower[env_id.lower()]
    try:
        single = registry.resolve(env_id)
    except Exception:  # unknown or unavailable: the multi-agent close matches say more
        single = None
    if single is not None:
        message = (
            f"{single.id!r} is a single-agent env: build it with rollenv.make({single.id!r}); "
            "rollenv.multi_agent_ids() lists the games of several seats"
        )
        raise UnknownEnvError(message, [])
    close = difflib.get_close_matches(env_id, list(_SPECS), n=5, cutoff=0.5)
    message = f"No multi-agent game with id {env_id!r}."
    message += (
        " Did you mean: " + ", ".join(repr(c) for c in close) + "?"
        if close
        else " rollenv.multi_agent_ids() lists them."
    )
    raise UnknownEnvError(message, close)


def make_multi(env_id: str, **kwargs: Any) -> AECEnv:
    """Builds a registered game with every seat open, as a PettingZoo ``AECEnv``.

    Args:
        env_id: a multi-agent id (``"textarena/TicTacToe-v0"``), in any case.
        **kwargs: override the spec's keyword arguments.

    Raises:
        UnknownEnvError: no multi-agent game has that id.
        MissingExtraError: PettingZoo is not installed (``pip install 'rollenv[multiagent]'``).
    """
    spec = multi_agent_spec(env_id)
    require_extra("pettingzoo", "multiagent")
    return spec.load_entry_point()(**{**spec.kwargs, **kwargs})
