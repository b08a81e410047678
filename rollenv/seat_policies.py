"""Players for the seats of a multi-agent game, and a loop that plays a game with them.

A seat policy answers ``reply(env, agent)`` with the reply ``agent`` sends, exactly what a
language model would write: ``RandomSeatPolicy`` picks one of the game's candidate moves,
``SolverPolicy`` asks the game's solver (a perfect player reading the game's state).
``play_game`` runs one game with a policy in every seat; ``play_games`` runs many side by side,
each on its own env, and a policy that also answers ``replies([(env, agent), ...])`` (a model,
which generates for a batch of prompts at about the cost of one) gets every turn that waits for
it in one call.

Example:
    >>> import rollenv
    >>> env = rollenv.make_multi("textarena/TicTacToe-v0")
    >>> perfect = SolverPolicy(seed=0)
    >>> play_game(env, {"player_0": perfect, "player_1": perfect}, seed=0).results
    {'player_0': 0.0, 'player_1': 0.0}
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Sequence
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
    record = GameRecord({})
    turns = _turns(env, policies, seed, record)
    agent = next(turns, None)
    while agent is not None:
        agent = _answer(turns, policies[agent].reply(env, agent))
    return record


def play_games(
    games: Sequence[tuple[Any, dict[str, Any], int | None]],
    on_end: Callable[[int, GameRecord], None] | None = None,
) -> list[GameRecord]:
    """Plays several games side by side, each ``(env, policies, seed)`` as ``play_game`` would.

    Each round, every game whose seat waits for a reply is answered: a policy with a
    ``replies(turns)`` method answers all its waiting ``(env, agent)`` turns in one call (the
    same object playing in several games), any other policy one ``reply`` at a time.

    Args:
        games: an env of its own for each game (an env is one game's state), the policy of
            every seat, the reset's seed.
        on_end: called with a game's index and record as it ends, its env still at the final
            position (``final_results``, ``won``).

    Returns:
        The games' records, in the order given.

    Example:
        >>> import rollenv
        >>> perfect, rand = SolverPolicy(seed=0), RandomSeatPolicy(seed=0)
        >>> games = [(rollenv.make_multi("textarena/TicTacToe-v0"),
        ...           {"player_0": perfect, "player_1": rand}, seed) for seed in range(3)]
        >>> [record.results["player_0"] for record in play_games(games)]  # the solver wins all
        [1.0, 1.0, 1.0]
    """
    envs = [env for env, _, _ in games]
    if len({id(env) for env in envs}) < len(envs):
        raise ValueError("play_games needs an env of its own for each game")
    records = [GameRecord({}) for _ in games]
    turns = [
        _turns(env, policies, seed, record)
        for (env, policies, seed), record in zip(games, records, strict=True)
    ]
    waiting = {index: next(turns[index], None) for index in range(len(games))}

    def advance(index: int, reply: str) -> None:
        waiting[index] = _answer(turns[index], reply)

    while True:
        for index in [i for i, agent in waiting.items() if agent is None]:
            del waiting[index]
            if on_end is not None:
                on_end(index, records[index])
        if not waiting:
            return records
        by_policy: dict[int, list[int]] = {}
        for index, agent in waiting.items():
            by_policy.setdefault(id(games[index][1][agent]), []).append(index)
        for indices in by_policy.values():
            policy = games[indices[0]][1][waiting[indices[0]]]
            asked = [(envs[index], waiting[index]) for index in indices]
            if hasattr(policy, "replies"):
                replies = policy.replies(asked)
            else:
                replies = [policy.reply(env, agent) for env, agent in asked]
            for index, reply in zip(indices, replies, strict=True):
                advance(index, reply)


def _turns(
    env: Any, policies: dict[str, Any], seed: int | None, record: GameRecord
) -> Generator[str, str, None]:
    """One game: yields each seat whose reply is awaited, and is sent that reply."""
    missing = [agent for agent in env.possible_agents if agent not in policies]
    if missing:
        raise ValueError(f"no policy for {', '.join(missing)}")
    env.reset(seed=seed)
    record.results.update(dict.fromkeys(env.possible_agents, 0.0))
    for agent in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        record.results[agent] += float(reward)
        if terminated or truncated:
            record.truncated |= truncated
            env.step(None)
            continue
        record.told.append(env.observe(agent)["text"])
        reply = yield agent
        record.turns.append((agent, reply))
        env.step(reply)


def _answer(turns: Generator[str, str, None], reply: str) -> str | None:
    """Sends a game its awaited reply; the next seat awaited, or None at the game's end."""
    try:
        return turns.send(reply)
    except StopIteration:
        return None
