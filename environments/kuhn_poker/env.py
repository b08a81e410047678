"""``KuhnPokerEnv``: one hand of Kuhn poker between two seats, with the real stakes.

Three cards, J < Q < K, one dealt to each seat; each antes 1 chip. ``player_0`` moves first:
``check`` or ``bet`` (1 more chip). Facing a check, ``player_1`` checks (the higher card wins
the antes) or bets; facing a bet, a seat ``call``s (the higher card wins 2 chips) or ``fold``s
(and loses its ante). A reward is the chips a seat won or lost: 1 or 2, -1 or -2.

This is a game of our own rather than TextArena's ``KuhnPoker-v0``: TextArena plays several
hands and keeps the pot at the antes whatever is bet, so a bet changes nothing but the chance
of a fold, and the game's equilibrium is not Kuhn's. Here a solver reads the hand
(``state_of_game``), and the equilibrium wins the first seat -1/18 of a chip a hand
(``environments.kuhn_poker.solver``).

Example:
    >>> import rollenv
    >>> env = rollenv.make_multi("KuhnPoker-v0")
    >>> env.reset(seed=0)
    >>> env.state_of_game.cards, env.candidate_moves("player_0")  # J against K
    ((0, 2), ['check', 'bet'])
    >>> env.step("<answer>bet</answer>")  # a bluff
    >>> env.step("<answer>fold</answer>")  # that works
    >>> env.rewards
    {'player_0': 1.0, 'player_1': -1.0}
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from environments.kuhn_poker.solver import CARDS, KuhnPokerSolver
from rollenv.actions import AnswerFormat
from rollenv.turn_based_env import TurnBasedTextEnv

CARD_NAMES = ("J", "Q", "K")
#: the moves open after each history of moves; a history missing here has ended the hand
OPEN_MOVES = {"": ("check", "bet"), "check": ("check", "bet"), "bet": ("call", "fold")}
OPEN_MOVES["check bet"] = ("call", "fold")

RULES = """You are {seat} in one hand of Kuhn poker against one opponent.
The deck has three cards: J < Q < K. Each player holds one card and has put 1 chip in the pot.
Player 0 acts first: "check" or "bet" (1 more chip). Facing a check, Player 1 may "check" (the \
higher card wins the pot) or "bet". Facing a bet, a player may "call" (match it; the higher card \
wins the pot of 4) or "fold" (give up the pot).
Your card is {card}. Your reward is the chips you win or lose."""


@dataclass
class Hand:
    """The state of one hand: the cards (by seat: 0 J, 1 Q, 2 K) and the moves so far."""

    cards: tuple[int, int]
    moves: list[str] = field(default_factory=list)

    @property
    def history(self) -> str:
        return " ".join(self.moves)

    def winnings(self) -> tuple[int, int] | None:
        """Each seat's chips won (negative: lost) once the hand is over, else ``None``."""
        history = self.history
        if history in OPEN_MOVES:
            return None
        if history.endswith("fold"):  # the seat that folded loses its ante
            folder = (len(self.moves) - 1) % 2
            return (-1, 1) if folder == 0 else (1, -1)
        stake = 2 if "bet" in history else 1
        return (stake, -stake) if self.cards[0] > self.cards[1] else (-stake, stake)


class KuhnPokerEnv(TurnBasedTextEnv):
    """One hand of Kuhn poker, both seats open (see the module docstring).

    Args:
        answer_format, format_penalty, max_actions, render_mode: as ``TurnBasedTextEnv``'s.
    """

    def __init__(
        self,
        *,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        format_penalty: float = -0.1,
        max_actions: int = 20,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            2,
            answer_format=answer_format,
            format_penalty=format_penalty,
            max_actions=max_actions,
            render_mode=render_mode,
        )
        self.metadata = {**self.metadata, "name": "kuhn_poker"}
        self.hand = Hand((0, 1))
        self._told: dict[int, list[str]] = {}

    @property
    def state_of_game(self) -> Hand:
        return self.hand

    def solver(self) -> KuhnPokerSolver:
        return KuhnPokerSolver()

    def candidate_moves(self, agent: str) -> list[str]:
        return list(OPEN_MOVES.get(self.hand.history, ()))

    def _start(self, seed: int) -> None:
        first, second = random.Random(seed).sample(CARDS, 2)
        self.hand = Hand((first, second))
        self._told = {
            seat: [f"Your card is {CARD_NAMES[card]}."] for seat, card in enumerate(self.hand.cards)
        }
        self._told[0].append("Your move: check or bet.")

    def _seat_to_move(self) -> int:
        return len(self.hand.moves) % 2

    def _instruction(self, seat: int) -> str:
        rules = RULES.format(seat=f"Player {seat}", card=CARD_NAMES[self.hand.cards[seat]])
        example = self.answer_format.wrap("check")
        return f"{rules}\n\n{self.answer_format.describe()} For example: {example}"

    def _take_text(self, seat: int) -> str:
        told, self._told[seat] = self._told.get(seat, []), []
        return "\n".join(told)

    def _play(self, seat: int, move: str) -> str | None:
        move = move.strip().strip("[]").strip().lower()
        open_moves = OPEN_MOVES[self.hand.history]
        if move not in open_moves:
            return f"{move!r} is not a move here; you may: {' or '.join(open_moves)}."
        self.hand.moves.append(move)
        other = 1 - seat
        self._told[other].append(f"Player {seat}: {move}.")
        winnings = self.hand.winnings()
        if winnings is None:
            open_now = " or ".join(OPEN_MOVES[self.hand.history])
            self._told[other].append(f"Your move: {open_now}.")
            return None
        held = enumerate(self.hand.cards)
        cards = ", ".join(f"Player {s} holds {CARD_NAMES[c]}" for s, c in held)
        for s in (0, 1):
            end = f"The hand is over ({cards}): you {'won' if winnings[s] > 0 else 'lost'} "
            self._told[s].append(f"{end}{abs(winnings[s])} chip{'s' * (abs(winnings[s]) > 1)}.")
        return None

    def _results(self) -> list[float] | None:
        winnings = self.hand.winnings()
        return None if winnings is None else [float(w) for w in winnings]
