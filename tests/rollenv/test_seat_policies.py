"""Games played side by side (``play_games``) are the games ``play_game`` plays one at a time,
and a policy that answers a batch gets every turn waiting for it in one call."""

from __future__ import annotations

from typing import Any

import pytest

import rollenv
from rollenv.seat_policies import RandomSeatPolicy, play_game, play_games

pytest.importorskip("pettingzoo")
pytest.importorskip("textarena")

TTT = "textarena/TicTacToe-v0"


class Corner:
    """Takes the first (or last) free cell; with ``replies``, counts the batches it is asked."""

    def __init__(self, last: bool = False) -> None:
        self.last = last
        self.batches: list[int] = []

    def reply(self, env: Any, agent: str) -> str:
        game = env.unwrapped
        moves = game.candidate_moves(agent)
        return game.answer_format.wrap(moves[-1] if self.last else moves[0])


class BatchCorner(Corner):
    def replies(self, turns: list[tuple[Any, str]]) -> list[str]:
        self.batches.append(len(turns))
        return [self.reply(env, agent) for env, agent in turns]


def test_games_side_by_side_are_the_games_played_one_at_a_time_and_batch_each_round():
    seeds = range(6)
    one_by_one = [
        play_game(
            rollenv.make_multi(TTT),
            {"player_0": Corner(), "player_1": RandomSeatPolicy(seed=seed)},
            seed,
        )
        for seed in seeds
    ]
    batcher = BatchCorner()
    ended = []
    side_by_side = play_games(
        [
            (
                rollenv.make_multi(TTT),
                {"player_0": batcher, "player_1": RandomSeatPolicy(seed)},
                seed,
            )
            for seed in seeds
        ],
        on_end=lambda index, record: ended.append(index),
    )
    for alone, together in zip(one_by_one, side_by_side, strict=True):
        assert together.turns == alone.turns
        assert together.told == alone.told
        assert together.results == alone.results
    assert sorted(ended) == list(seeds)
    # the first player moves at most 5 times a game (a refused move would add one): its turns in
    # the six games arrive as one batch a round, six while every game goes on
    assert batcher.batches[0] == 6
    assert len(batcher.batches) == max(
        sum(agent == "player_0" for agent, _ in record.turns) for record in side_by_side
    )
    assert sum(batcher.batches) == sum(
        sum(agent == "player_0" for agent, _ in record.turns) for record in side_by_side
    )


def test_a_game_ends_in_its_own_env_and_one_env_cannot_hold_two_games():
    first, last = BatchCorner(), BatchCorner(last=True)
    envs = [rollenv.make_multi(TTT) for _ in range(2)]
    finals = {}
    play_games(
        [
            (envs[0], {"player_0": first, "player_1": last}, 0),
            (envs[1], {"player_0": last, "player_1": first}, 0),
        ],
        on_end=lambda index, record: finals.update({index: envs[index].unwrapped.final_results}),
    )
    # first-free against last-free: the first player takes 0, 1, 2 along the top row and wins
    assert finals[0] == {"player_0": 1, "player_1": -1}
    assert set(finals) == {0, 1}
    env = rollenv.make_multi(TTT)
    with pytest.raises(ValueError, match="an env of its own"):
        play_games([(env, {"player_0": first, "player_1": last}, 0)] * 2)
