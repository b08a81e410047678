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


#: where a probe's seat won some games against random players in the other seats; why (the
#: random players' own losses, or a reward that pays the probe) is not yet worked out
PROBE_SEAT_WINS = {
    "textarena/SecretMafia-v0",
    "textarena/SimpleBlindAuction-v0",
    "textarena/Snake-v0",
    "textarena/TruthAndDeception-v0",
}


@pytest.mark.parametrize(
    "env_id",
    [
        pytest.param(
            env_id,
            marks=pytest.mark.xfail(env_id in PROBE_SEAT_WINS, reason="open: see PROBE_SEAT_WINS"),
        )
        for env_id in MULTI_AGENT_IDS
    ],
)
def test_a_seat_that_stalls_resigns_or_plays_illegal_moves_earns_nothing(env_id):
    from rollenv.seat_reward_checker import check_seat_rewards

    report = check_seat_rewards(rollenv.make_multi(env_id), games=4)
    assert report.passed, report.table()
