"""Round-robin matches among the players of a game of several seats, for the leaderboard's
ratings (``roll-agent leaderboard rate``).

A player is named by a string:

* ``random``: one of the game's candidate moves, at random;
* ``solver``: the game's perfect player, where it has one;
* a model folder (a checkpoint's ``model/``) or a model name (``tiny-random``,
  ``smollm2-135m``): the model, greedy, in its own chat with the game (its instruction, what its
  seat was told, its replies);
* ``openai:http://HOST:PORT/v1#MODEL_ID``: the same, the model served by an OpenAI-compatible
  server (``roll-agent serve``, vLLM), its tokenizer the served model id's unless given.

Every ordered pair of players meets ``games`` times (seeds ``0 .. games - 1``), each taking the
first seat in its half, so each seat's advantage evens out. All the games are played side by
side, so a model player generates its moves in every game waiting for it as one batch. Each game
is a ``leaderboard.records.MatchRecord`` with every move and what the mover had been told.

Example:
    >>> records = round_robin("textarena/TicTacToe-v0", ["random", "solver"], games=2)
    >>> len(records), sorted({r.players for r in records})
    (4, [('random', 'solver'), ('solver', 'random')])
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import rollenv
from leaderboard.records import MatchMove, MatchRecord
from rollenv.seat_policies import (
    GameRecord,
    RandomSeatPolicy,
    SeatPolicy,
    SolverPolicy,
    play_games,
)

__all__ = ["ModelSeatPolicy", "round_robin", "seat_policy"]


class ModelSeatPolicy:
    """A model playing a seat greedily, in a chat of its own per game.

    Args:
        name: a model folder or name (``trainer.models.load_model``), or a served model,
            ``openai:http://HOST:PORT/v1#MODEL_ID``.
        max_new_tokens: the most tokens of a reply.
        seed: the model's seed (a random model's weights).
        tokenizer: a served model's tokenizer, a model name or folder (default: the served
            model id).
        max_context_tokens: the prompt and the reply are kept within this many tokens: where
            a long game's chat would outgrow it, its oldest exchanges (after the instruction)
            leave first.

    Raises:
        ValueError: an ``openai:`` name not written as above, or its server not answering.
    """

    def __init__(
        self,
        name: str,
        max_new_tokens: int = 64,
        seed: int = 0,
        tokenizer: str | None = None,
        max_context_tokens: int = 2048,
    ) -> None:
        from trainer.generation import SamplingParams, make_generator
        from trainer.generation.openai_client import parse_address
        from trainer.models import load_model, load_tokenizer
        from trainer.rollout.chat_tokens import ChatTokens

        self.generator: Any
        if name.startswith("openai:"):
            address = parse_address(name)
            if address is None:
                raise ValueError(
                    f"player {name!r}: write a served model as openai:http://HOST:PORT/v1#MODEL_ID"
                )
            url, served = address
            self.tokenizer = load_tokenizer(tokenizer or served)
            self.generator = make_generator("openai", served, self.tokenizer, base_url=url)
            try:  # before any game: a server that does not answer is the player's fault
                self.generator.client.models.list()
            except Exception as error:  # the openai client's connection and status errors
                raise ValueError(f"player {name!r}: {url} does not answer ({error})") from None
        else:
            model, self.tokenizer = load_model(name, seed=seed)
            self.generator = _SharedEngine(model, self.tokenizer)
        self.chat = ChatTokens(self.tokenizer)
        self.sampling = SamplingParams(
            max_new_tokens=max_new_tokens,
            temperature=0.0,
            stop_token_ids=(self.tokenizer.eos_token_id,),
        )
        self.max_context_tokens = max_context_tokens
        self._chats: dict[tuple[int, str], list[dict[str, str]]] = {}

    def new_game(self) -> None:
        """Forgets the chats of the games played before."""
        self._chats = {}

    def reply(self, env: Any, agent: str) -> str:
        [reply] = self.replies([(env, agent)])
        return reply

    def replies(self, turns: Sequence[tuple[Any, str]]) -> list[str]:
        """The replies to several games' turns, generated as one batch."""
        prompts = [self._prompt(env, agent) for env, agent in turns]
        outputs = self.generator.generate(prompts, self.sampling)
        replies = []
        for (env, agent), output in zip(turns, outputs, strict=True):
            reply = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            self._chats[(id(env), agent)].append({"role": "assistant", "content": reply})
            replies.append(reply)
        return replies

    def _prompt(self, env: Any, agent: str) -> list[int]:
        told = env.observe(agent)
        chat = self._chats.setdefault(
            (id(env), agent), [{"role": "system", "content": told["instruction"]}]
        )
        chat.append({"role": "user", "content": told["text"]})
        prompt = self.chat.prompt(chat)
        room = self.max_context_tokens - self.sampling.max_new_tokens
        while len(prompt) > room and len(chat) > 2:
            del chat[1:3]  # the oldest exchange: what the seat was told, and its reply
            prompt = self.chat.prompt(chat)
        return prompt


class _SharedEngine:
    """A model player's generator: the fast in-process engine (as the evaluations use), one
    per architecture for all the players in this process, each player's weights loaded into
    it before its batch. Nine engines of their own, each with its cache and packed weights,
    outgrew 24 GB in a round robin of nine checkpoints; a load costs a fraction of a batch."""

    _engines: ClassVar[dict[str, tuple[Any, list[Any]]]] = {}  # architecture -> engine, owner

    def __init__(self, model: Any, tokenizer: Any) -> None:
        from trainer.generation import make_generator

        self.weights = {key: value.detach().clone() for key, value in model.state_dict().items()}
        shape = model.config.to_dict()
        shape.pop("_name_or_path", None)
        self.architecture = json.dumps(shape, sort_keys=True, default=str)
        if self.architecture not in self._engines:
            engine = make_generator("continuous", model, tokenizer, max_batch_size=64)
            self._engines[self.architecture] = (engine, [self])
        self.engine, self._owner = self._engines[self.architecture]

    def generate(self, prompts: Sequence[Sequence[int]], params: Any) -> list[Any]:
        if self._owner[0] is not self:
            self.engine.update_weights(self.weights)
            self._owner[0] = self
        return self.engine.generate(prompts, params)


def seat_policy(name: str, seed: int = 0, tokenizer: str | None = None) -> SeatPolicy:
    """The player ``name`` stands for (see the module docstring); ``tokenizer`` is a served
    model's."""
    if name == "random":
        return RandomSeatPolicy(seed=seed)
    if name == "solver":
        return SolverPolicy(seed=seed)
    return ModelSeatPolicy(name, seed=seed, tokenizer=tokenizer)


def round_robin(
    game: str,
    players: Sequence[str],
    games: int,
    *,
    env_kwargs: dict[str, Any] | None = None,
    make_player: Callable[[str], SeatPolicy] = seat_policy,
    on_match: Callable[[MatchRecord], None] | None = None,
) -> list[MatchRecord]:
    """Plays every ordered pair of ``players`` ``games`` times in a two-seat ``game``.

    Args:
        game: a multi-agent id of two seats.
        players: the players' names (see the module docstring), at least two, all different.
        games: games per ordered pair.
        env_kwargs: the game's keyword arguments (``rollenv.make_multi``), e.g. the answer
            format the models were trained with.
        make_player: builds a player from its name (each player is built once).
        on_match: called with each match as it ends.

    Raises:
        ValueError: fewer than two players, a name given twice, or a game of more seats.
    """
    if len(players) < 2 or len(set(players)) < len(players):
        raise ValueError(f"a round robin needs two or more different players, got {players}")
    env = rollenv.make_multi(game, **(env_kwargs or {}))
    if len(env.possible_agents) != 2:
        raise ValueError(f"{game} has {len(env.possible_agents)} seats; a round robin plays two")
    if "solver" in players and env.unwrapped.solver() is None:
        raise ValueError(f"{game} has no solver: leave 'solver' out of the players")
    built = {name: make_player(name) for name in players}
    for player in built.values():
        getattr(player, "new_game", lambda: None)()
    matches = [
        pair + (seed,) for pair in itertools.permutations(players, 2) for seed in range(games)
    ]
    seats = env.possible_agents
    env.close()
    envs = [rollenv.make_multi(game, **(env_kwargs or {})) for _ in matches]
    records: list[MatchRecord | None] = [None] * len(matches)

    def ended(index: int, played: GameRecord) -> None:
        *names, seed = matches[index]
        final = envs[index].unwrapped.final_results
        results = tuple(None if played.truncated or not final else final[a] for a in seats)
        moves = tuple(
            MatchMove(seats.index(agent), told, reply)
            for (agent, reply), told in zip(played.turns, played.told, strict=True)
        )
        records[index] = MatchRecord(game, seed, tuple(names), results, moves, time.time())
        envs[index].close()
        if on_match is not None:
            on_match(records[index])

    play_games(
        [
            (
                env,
                {seat: built[name] for seat, name in zip(seats, (first, second), strict=True)},
                seed,
            )
            for env, (first, second, seed) in zip(envs, matches, strict=True)
        ],
        on_end=ended,
    )
    return [record for record in records if record is not None]
