"""One hand of Kuhn poker: its rules, and its equilibrium's value of -1/18 for the first seat."""

from __future__ import annotations

import statistics
from fractions import Fraction

import pytest

pytest.importorskip("pettingzoo")

import rollenv  # noqa: E402
from environments.kuhn_poker.solver import (  # noqa: E402
    FIRST_BETS,
    FIRST_CALLS,
    SECOND_BETS,
    SECOND_CALLS,
    equilibrium,
    first_player_value,
)
from rollenv.seat_policies import SolverPolicy, play_game  # noqa: E402


def _hand(cards: tuple[int, int], moves: list[str]):
    env = rollenv.make_multi("KuhnPoker-v0")
    env.reset(seed=0)
    env.unwrapped.hand.cards = cards
    for move in moves:
        env.step(f"<answer>{move}</answer>")
    return env


@pytest.mark.parametrize(
    ("cards", "moves", "rewards"),
    [
        ((2, 0), ["check", "check"], (1.0, -1.0)),  # K beats J for the antes
        ((0, 1), ["bet", "call"], (-2.0, 2.0)),  # Q beats J for the bet too
        ((0, 2), ["bet", "fold"], (1.0, -1.0)),  # the folder loses its ante
        ((2, 1), ["check", "bet", "fold"], (-1.0, 1.0)),  # a K that folds still loses
        ((1, 0), ["check", "bet", "call"], (2.0, -2.0)),
    ],
)
def test_a_hand_pays_the_chips_kuhns_rules_say(cards, moves, rewards):
    env = _hand(cards, moves)
    assert tuple(env.rewards.values()) == rewards
    assert all(env.terminations.values())


def test_a_move_the_hand_does_not_allow_is_a_penalised_no_op_with_the_open_moves():
    env = _hand((0, 1), ["call"])  # nothing to call yet
    assert env.agent_selection == "player_0"
    assert env.rewards["player_0"] == env.unwrapped.format_penalty
    reason = env.infos["player_0"]["illegal_move_reason"]
    assert "check or bet" in reason and reason in env.observe("player_0")["text"]
    env.step("<answer>check</answer>")
    assert env.agent_selection == "player_1"


def test_the_cards_of_every_deal_come_up_and_each_seat_is_told_only_its_own():
    env = rollenv.make_multi("KuhnPoker-v0")
    deals = set()
    for seed in range(200):
        env.reset(seed=seed)
        cards = env.unwrapped.hand.cards
        deals.add(cards)
        names = "JQK"
        for seat, agent in enumerate(env.possible_agents):
            instruction = env.observe(agent)["instruction"]
            assert f"Your card is {names[cards[seat]]}." in instruction
            assert f"Your card is {names[cards[1 - seat]]}." not in instruction
    assert len(deals) == 6


@pytest.mark.parametrize("alpha", [Fraction(0), Fraction(1, 6), Fraction(1, 3)])
def test_every_equilibrium_is_worth_minus_one_eighteenth_to_the_first_seat(alpha):
    assert first_player_value(equilibrium(alpha), equilibrium(alpha)) == Fraction(-1, 18)


def test_the_value_of_a_hand_worked_pair_of_strategies():
    # the first seat always checks and folds to a bet; the second always bets: -1 every deal
    def timid(history, card):
        return Fraction(0)

    def pushy(history, card):
        return Fraction(1)

    assert first_player_value(timid, pushy) == -1
    # both always check: the higher card takes the antes, which evens out over the deals
    assert first_player_value(timid, timid) == 0


def test_the_equilibrium_cannot_be_exploited_by_a_pure_deviation_of_the_second_seat():
    eq = equilibrium(Fraction(1, 6))
    decisions = (SECOND_BETS, SECOND_CALLS)
    for decision in decisions:
        for card in range(3):
            for choice in (Fraction(0), Fraction(1)):

                def deviation(history, c, decision=decision, card=card, choice=choice):
                    return choice if (history, c) == (decision, card) else eq(history, c)

                # the second seat gains nothing: the first seat keeps at least -1/18
                assert first_player_value(eq, deviation) >= Fraction(-1, 18)
    assert {FIRST_BETS, FIRST_CALLS}.isdisjoint(decisions)


def test_the_solver_playing_itself_in_the_env_wins_the_first_seat_minus_one_eighteenth():
    env = rollenv.make_multi("KuhnPoker-v0")
    solver = SolverPolicy(seed=0)
    hands = 20_000
    won = [
        play_game(env, {"player_0": solver, "player_1": solver}, seed=seed).results["player_0"]
        for seed in range(hands)
    ]
    mean = statistics.fmean(won)
    error = statistics.stdev(won) / hands**0.5
    assert abs(mean - (-1 / 18)) < 4 * error
    assert mean < 0 and error < 0.01  # telling -1/18 from 0
