"""One hand of Kuhn poker, and its equilibrium in closed form (Kuhn, 1950).

Three cards, J < Q < K; each player antes 1 and holds one card. The first player checks or bets
1; facing a check the second player checks (showdown for 1) or bets; facing a bet a player calls
(showdown for 2) or folds (losing the ante). The equilibria form one family in a parameter
``alpha`` from 0 to 1/3:

============================  =============  =====  ========
decision                       J              Q      K
============================  =============  =====  ========
first player bets              alpha          0      3 alpha
first player calls a bet       0              alpha + 1/3   1
second player bets on a check  1/3            0      1
second player calls a bet      0              1/3    1
============================  =============  =====  ========

Whatever ``alpha``, the first player's expected winnings are -1/18 of a chip a hand.
:func:`first_player_value` computes them exactly, over the 6 deals and every line of play.

``KuhnPokerSolver`` plays a seat of rollenv's ``KuhnPoker-v0`` from its state
(``KuhnPokerEnv.state_of_game``: the cards and the moves so far).

Example:
    >>> from fractions import Fraction
    >>> first_player_value(equilibrium(Fraction(1, 6)), equilibrium(Fraction(1, 6)))
    Fraction(-1, 18)
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

J, Q, K = 0, 1, 2
CARDS = (J, Q, K)
#: the decisions of a hand, as the history of moves before them
FIRST_BETS, FIRST_CALLS, SECOND_BETS, SECOND_CALLS = "", "check bet", "check", "bet"

#: a strategy: the probability of the aggressive choice (bet, or call) at a decision, holding a
#: card
Strategy = Callable[[str, int], Fraction]


def equilibrium(alpha: Fraction = Fraction(0)) -> Strategy:
    """The equilibrium strategy of parameter ``alpha`` (0 to 1/3), for both seats."""
    if not 0 <= alpha <= Fraction(1, 3):
        raise ValueError(f"alpha must be between 0 and 1/3, got {alpha}")
    third = Fraction(1, 3)
    table = {
        FIRST_BETS: (alpha, Fraction(0), 3 * alpha),
        FIRST_CALLS: (Fraction(0), alpha + third, Fraction(1)),
        SECOND_BETS: (third, Fraction(0), Fraction(1)),
        SECOND_CALLS: (Fraction(0), third, Fraction(1)),
    }

    def strategy(history: str, card: int) -> Fraction:
        return table[history][card]

    return strategy


def first_player_value(first: Strategy, second: Strategy) -> Fraction:
    """The first player's expected winnings in chips when the seats play these strategies."""
    total = Fraction(0)
    for mine, theirs in itertools.permutations(CARDS, 2):
        showdown = 1 if mine > theirs else -1
        bet = first(FIRST_BETS, mine)
        # check: the second player bets or checks; a bet is called (2 at showdown) or folded
        raise_ = second(SECOND_BETS, theirs)
        call_raise = first(FIRST_CALLS, mine)
        after_check = (1 - raise_) * showdown + raise_ * (
            call_raise * 2 * showdown + (1 - call_raise) * -1
        )
        # bet: the second player calls (2 at showdown) or folds (the first wins the ante)
        call = second(SECOND_CALLS, theirs)
        after_bet = call * 2 * showdown + (1 - call) * 1
        total += (1 - bet) * after_check + bet * after_bet
    return total / 6


class KuhnPokerSolver:
    """An equilibrium player of one hand of ``KuhnPoker-v0``.

    Args:
        alpha: which equilibrium (0 to 1/3); every one wins -1/18 a hand as the first player.
    """

    def __init__(self, alpha: Fraction = Fraction(1, 6)) -> None:
        self.strategy = equilibrium(alpha)

    def move(self, hand: Any, seat: int, rng: random.Random) -> str:
        """The move of ``seat`` in ``hand`` (``KuhnPokerEnv.state_of_game``: its ``cards`` and
        ``moves`` so far)."""
        history = " ".join(hand.moves)
        aggressive = rng.random() < self.strategy(history, hand.cards[seat])
        if history in (FIRST_BETS, SECOND_BETS):
            return "bet" if aggressive else "check"
        return "call" if aggressive else "fold"
