"""Ratings of the players of two-player games: OpenSkill from the matches, stored with every
game, and the round robin that plays them."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("openskill")
pytest.importorskip("sqlalchemy")

from leaderboard.ratings import rate  # noqa: E402
from leaderboard.records import MatchMove, MatchRecord  # noqa: E402
from leaderboard.store import ResultStore  # noqa: E402

TTT = "textarena/TicTacToe-v0"


def _match(players, results, seed=0):
    return MatchRecord(TTT, seed, tuple(players), tuple(results), (MatchMove(0, "", "x"),), 1.0)


def test_a_player_who_always_wins_is_rated_above_one_who_always_loses_and_surer_with_games():
    few = rate([_match(("a", "b"), (1.0, -1.0), s) for s in range(2)])
    many = rate([_match(("a", "b"), (1.0, -1.0), s) for s in range(30)])
    assert many["a"].mu > many["b"].mu and few["a"].mu > few["b"].mu
    assert many["a"].sigma < few["a"].sigma  # more games, a narrower interval
    assert many["a"].games == 30
    low, high = many["a"].interval
    assert low < many["a"].mu < high and many["a"].conservative < low


def test_draws_between_two_players_leave_them_level_and_games_cut_short_rate_nobody():
    table = rate([_match(("a", "b"), (0.0, 0.0), s) for s in range(10)])
    assert table["a"].mu == pytest.approx(table["b"].mu)
    cut = rate([_match(("a", "b"), (None, None)), _match(("a", "a"), (1.0, -1.0))])
    assert cut == {}  # a game cut short, and a player against itself, rate nobody


def test_the_store_keeps_every_match_and_rates_the_games_players_from_all_of_them(tmp_path):
    with ResultStore(tmp_path / "results.db") as store:
        first = store.add_matches([_match(("solver", "random"), (1.0, -1.0), s) for s in range(3)])
        assert [r.player for r in first] == ["solver", "random"]
        store.add_matches([_match(("random", "solver"), (-1.0, 1.0), s) for s in range(3)])
        table = store.ratings(TTT)
        assert [r.player for r in table] == ["solver", "random"]
        assert table[0].games == 6  # rated again from all six matches
        assert store.rated_games() == [TTT]
        played = store.matches(TTT, player="solver")
        assert len(played) == 6
        match_id, record = played[-1]
        assert store.match(match_id) == record and record.players == ("random", "solver")


def test_a_round_robin_of_random_play_and_the_solver_rates_the_solver_first(tmp_path: Path):
    pytest.importorskip("pettingzoo")
    pytest.importorskip("textarena")
    from trainer.cli.main import main
    from trainer.evaluation.tournament import round_robin

    records = round_robin(TTT, ["random", "solver"], games=3)
    assert len(records) == 6
    for record in records:
        solver_seat = record.players.index("solver")
        assert record.results[solver_seat] >= 0  # the solver never loses
        # the first seat opens; a seat whose move was refused moves again
        assert record.moves[0].seat == 0 and {m.seat for m in record.moves} == {0, 1}
    with pytest.raises(ValueError, match="two or more different players"):
        round_robin(TTT, ["random", "random"], games=1)
    db = tmp_path / "results.db"
    assert (
        main(["leaderboard", "rate", TTT, "random", "solver", "--games", "3", "--db", str(db)]) == 0
    )
    with ResultStore(db) as store:
        assert [r.player for r in store.ratings(TTT)] == ["solver", "random"]


def test_rate_plays_the_game_with_the_kwargs_given_and_refuses_what_is_no_json_object(
    tmp_path: Path, capsys
):
    pytest.importorskip("pettingzoo")
    pytest.importorskip("textarena")
    from trainer.cli.main import main

    db = tmp_path / "results.db"
    bare = '{"answer_format": {"tag": null}}'
    args = ["leaderboard", "rate", TTT, "random", "solver", "--games", "1", "--db", str(db)]
    assert main([*args, "--kwargs", bare]) == 0
    with ResultStore(db) as store:
        matches = [record for _, record in store.matches(TTT)]
    assert len(matches) == 2
    for record in matches:
        assert all(not move.reply.startswith("<answer>") for move in record.moves)
        assert all(move.reply.startswith("[") for move in record.moves)
    for bad, said in (("[1, 2]", "JSON object"), ("{answer", "not JSON")):
        assert main([*args, "--kwargs", bad]) == 2
        assert said in capsys.readouterr().err


def test_a_served_model_plays_the_round_robin_through_openai(tmp_path: Path, capsys):
    """tiny-random behind ``roll-agent serve`` is a player: its games are stored, move for move
    those of the same model in this process; a server that does not answer is named before
    any game."""
    pytest.importorskip("pettingzoo")
    pytest.importorskip("textarena")
    pytest.importorskip("openai")
    from tests.served_tiny_random import free_port, served_tiny_random
    from trainer.cli.main import main
    from trainer.evaluation.tournament import round_robin

    port = free_port()
    served = f"openai:http://127.0.0.1:{port}/v1#tiny-random"
    db = tmp_path / "results.db"
    args = ["leaderboard", "rate", TTT, "solver", served, "--games", "1", "--db", str(db)]
    assert main(args) == 2  # nothing listens yet
    assert "does not answer" in capsys.readouterr().err
    with served_tiny_random(port) as endpoint:
        assert endpoint == served
        assert main(args) == 0
    with ResultStore(db) as store:
        matches = [record for _, record in store.matches(TTT)]
    assert sorted(record.players for record in matches) == [(served, "solver"), ("solver", served)]
    local = {r.players: r for r in round_robin(TTT, ["solver", "tiny-random"], games=1)}
    for record in matches:
        seat = record.players.index(served)
        assert any(move.seat == seat for move in record.moves)  # the served model moved
        twin = local[tuple("tiny-random" if p == served else p for p in record.players)]
        assert [m.reply for m in record.moves] == [m.reply for m in twin.moves]
        assert record.results == twin.results


def test_model_players_of_one_architecture_share_an_engine_and_each_plays_its_own_weights():
    pytest.importorskip("pettingzoo")
    pytest.importorskip("textarena")
    import rollenv
    from trainer.evaluation.tournament import ModelSeatPolicy
    from trainer.generation import make_generator
    from trainer.models import load_model

    players = [ModelSeatPolicy("tiny-random", seed=seed, max_new_tokens=8) for seed in (0, 1)]
    assert players[0].generator.engine is players[1].generator.engine
    env = rollenv.make_multi(TTT)
    env.reset(seed=0)
    prompt = players[0]._prompt(env, "player_0")
    greedy = players[0].sampling
    alone = []  # each player's reply on an engine of its own
    for seed in (0, 1):
        model, tokenizer = load_model("tiny-random", seed=seed)
        [output] = make_generator("continuous", model, tokenizer).generate([prompt], greedy)
        alone.append(output)
    assert alone[0].logprobs != pytest.approx(alone[1].logprobs, abs=1e-3)  # other weights
    # taking turns on the shared engine, each replies as it does alone
    for _ in range(2):
        for seed in (0, 1):
            [output] = players[seed].generator.generate([prompt], greedy)
            assert output.token_ids == alone[seed].token_ids
            assert output.logprobs == pytest.approx(alone[seed].logprobs, abs=1e-5)


def test_an_interrupted_round_robin_keeps_the_games_that_ended(tmp_path: Path, monkeypatch, capsys):
    pytest.importorskip("pettingzoo")
    pytest.importorskip("textarena")
    from trainer.cli import leaderboard_command
    from trainer.cli.main import INTERRUPTED, main
    from trainer.evaluation import tournament

    real_round_robin = tournament.round_robin

    def interrupted_after_two(*args, on_match, **kwargs):
        ended = []

        def on_match_then_stop(record):
            on_match(record)
            ended.append(record)
            if len(ended) == 2:
                raise KeyboardInterrupt  # Ctrl-C as the second game ends

        return real_round_robin(*args, on_match=on_match_then_stop, **kwargs)

    monkeypatch.setattr(tournament, "round_robin", interrupted_after_two)
    monkeypatch.setattr(leaderboard_command, "STORE_EVERY_S", 3600.0)  # nothing stored on time
    db = tmp_path / "results.db"
    args = ["leaderboard", "rate", TTT, "random", "solver", "--games", "3", "--db", str(db)]
    assert main(args) == INTERRUPTED
    assert "2 of 6 games" in capsys.readouterr().err
    with ResultStore(db) as store:
        assert len(store.matches(TTT)) == 2
        assert sum(r.games for r in store.ratings(TTT)) == 4  # two players in each of 2 games
