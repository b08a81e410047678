"""Every multi-agent id under PettingZoo's own API test, and played to its end."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test  # noqa: E402

import rollenv  # noqa: E402
from rollenv.seat_policies import RandomSeatPolicy, play_game  # noqa: E402

MULTI_AGENT_IDS = rollenv.multi_agent_ids()


def test_the_multi_agent_ids_cover_every_runnable_textarena_game_of_two_or_more_players():
    from environments.textarena.games import GAMES, unmet_requirement

    wanted = {g.rollenv_id for g in GAMES if g.players > 1 and unmet_requirement(g) is None}
    assert wanted and wanted <= set(MULTI_AGENT_IDS)
    assert "KuhnPoker-v0" in MULTI_AGENT_IDS


@pytest.mark.parametrize("env_id", MULTI_AGENT_IDS)
def test_pettingzoo_api_test_passes(env_id):
    env = rollenv.make_multi(env_id)
    with warnings.catch_warnings():
        # its advice for numeric games: observations and actions here are text
        warnings.filterwarnings("ignore", message=".*(NumPy array|spaces.box).*")
        api_test(env, num_cycles=20)


@pytest.mark.parametrize("env_id", MULTI_AGENT_IDS)
def test_random_players_play_every_game_to_its_end_the_same_way_from_the_same_seed(env_id):
    env = rollenv.make_multi(env_id)
    players = {agent: RandomSeatPolicy(seed=i) for i, agent in enumerate(env.possible_agents)}
    record = play_game(env, players, seed=3)
    assert env.agents == []  # every seat was told the end, and took its last step
    assert record.turns and set(record.results) == set(env.possible_agents)
    for agent in env.possible_agents:
        # each seat's summed reward: a result within the game's range, less any penalties
        low = -2.0 + env.format_penalty * env.max_actions
        assert low <= record.results[agent] <= 2.0
    again = rollenv.make_multi(env_id)
    players = {agent: RandomSeatPolicy(seed=i) for i, agent in enumerate(env.possible_agents)}
    assert play_game(again, players, seed=3) == record


@pytest.mark.parametrize("env_id", MULTI_AGENT_IDS)
def test_a_seat_that_stalls_resigns_or_plays_illegal_moves_earns_nothing(env_id):
    from rollenv.seat_reward_checker import check_seat_rewards

    report = check_seat_rewards(rollenv.make_multi(env_id), games=4)
    assert report.passed, report.table()


def test_where_a_passive_seat_can_win_a_probe_is_measured_against_a_random_player():
    from rollenv.seat_reward_checker import SeatProbeResult, check_seat_rewards

    # the rule: at most 0, or at most the random player's mean return; wins are not judged
    assert SeatProbeResult("p", "player_0", (0.4, 0.4), 2, ((0.5, 0.5), 0)).passed
    assert not SeatProbeResult("p", "player_0", (0.6, 0.6), 2, ((0.5, 0.5), 2)).passed
    assert not SeatProbeResult("p", "player_0", (0.1, 0.1), 1, ((-0.5, -0.5), 1)).passed
    assert not SeatProbeResult("p", "player_0", (-0.1, -0.1), 1).passed  # elsewhere: no win
    snake = check_seat_rewards(rollenv.make_multi("textarena/Snake-v0"), games=2)
    assert all(probe.baseline is not None for probe in snake.probes)
    assert "random player" in snake.table()
    tic_tac_toe = check_seat_rewards(rollenv.make_multi("textarena/TicTacToe-v0"), games=2)
    assert all(probe.baseline is None for probe in tic_tac_toe.probes)
