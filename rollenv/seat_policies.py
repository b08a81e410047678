"""Players for the seats of a multi-agent game, and a loop that plays a game with them.

A seat policy answers ``reply(env, agent)`` with the reply ``agent`` sends, exactly what a
language model would write: ``RandomSeatPolicy`` picks one of the game's candidate moves,
``SolverPolicy`` asks the game's solver (a perfect player reading the game's state).
``play_game`` runs one game with a policy in every seat.

Example:
    >>> import rollenv
    >>> env = rollenv.make_multi("textarena/TicTacToe-v0")
    >>> perfect = SolverPolicy(seed=0)
    >>> play_game(env, {"player_0": perfect, "player_1": perfect}, seed=0).results
    {'player_0': 0.0, 'player_1': 0.0}
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol


class SeatPolicy(Protocol):
    """Anything that answers a seat's turn with a reply."""

    def reply(self, env: Any, agent: str) -> str: ...


class RandomSeatPolicy:
    """Replies with one of the game's candidate moves, uniformly at random.

    Args:
        seed: seeds the choices.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def reply(self, env: Any, agent: str) -> str:
        game = env.unwrapped
        moves = game.candidate_moves(agent)
        return game.answer_format.wrap(self.rng.choice(moves)) if moves else ""


class SolverPolicy:
    """Replies with the move of the game's solver (``TurnBasedTextEnv.solver``).

    Args:
        seed: seeds the choice among equally good moves, and mixed strategies.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)
        self._solvers: dict[int, Any] = {}

    def reply(self, env: Any, agent: str) -> str:
        game = env.unwrapped
        solver = self._solvers.get(id(game))
        if solver is None:
            solver = game.solver()
            if solver is None:
                raise ValueError(f"{type(game).__name__} has no solver")
            self._solvers[id(game)] = solver
        seat = game.possible_agents.index(agent)
        return game.answer_format.wrap(solver.move(game.state_of_game, seat, self.rng))


@dataclass
class GameRecord:
    """One game: each seat's summed reward and every reply, in order.

    Attributes:
        results: each seat's rewards over the game, summed (penalties included).
        turns: ``(agent, reply)`` for every move made.
        told: what the mover had been told before each of ``turns``.
        truncated: the game was cut short (``max_actions``, or the game raised).
    """

    results: dict[str, float]
    turns: list[tuple[str, str]] = field(default_factory=list)
    told: list[str] = field(default_factory=list)
    truncated: bool = False


def play_game(env: Any, policies: dict[str, SeatPolicy], seed: int | None = None) -> GameRecord:
    """Plays one game of ``env`` from ``reset(seed=seed)``, each seat by its policy.

    Args:
        env: a ``rollenv.make_multi`` game.
        policies: a policy for every seat (``env.possible_agents``).
        seed: the reset's seed.
    """
    missing = [agent for agent in env.possible_agents if agent not in policies]
    if missing:
        raise ValueError(f"no policy for {', '.join(missing)}")
    env.reset(seed=seed)
    results = dict.fromkeys(env.possible_agents, 0.0)
    record = GameRecord(results)
    for agent in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        results[agent] += float(reward)
        if terminated or truncated:
            record.truncated |= truncated
            env.step(None)
            continue
        record.told.append(env.observe(agent)["text"])
        reply = policies[agent].reply(env, agent)
        record.turns.append((agent, reply))
        env.step(reply)
    return record
