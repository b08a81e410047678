"""``TextArenaTurnBased``: a TextArena game of two or more players with every seat open, under
PettingZoo's AEC API (``rollenv.make_multi("textarena/<Game>-v0")``).

The game is played through the same table as the single-agent ``TextArenaEnv`` (an instance of
it holds TextArena's game, sends the moves, reads the refusals and renders what each seat is
told), but no seat is played by an opponent: the caller moves each seat in turn.

Rewards at the game's end are TextArena's, clipped to [-1, 1] (1 a win, -1 a loss, 0 a draw);
a move the game refuses is a penalised no-op and TextArena's retry rule holds: a second refused
move in a row ends the game as TextArena ends it.

Example:
    >>> import rollenv
    >>> env = rollenv.make_multi("textarena/Nim-v0")
    >>> env.reset(seed=0)
    >>> env.step("<answer>[0 3]</answer>")  # player_0 empties the first pile
    >>> env.agent_selection, "Player 0" in env.observe("player_1")["text"]
    ('player_1', True)
"""

from __future__ import annotations

from typing import Any

from environments.textarena.env import TextArenaEnv, _messages
from rollenv.actions import AnswerFormat
from rollenv.library_game_env import finite_reward
from rollenv.turn_based_env import TurnBasedTextEnv

#: games where a seat can win on the other seats' play alone, whatever it replies: its team
#: wins (SecretMafia), the guesser guesses wrong (TruthAndDeception), the other snakes crash
#: (Snake), or the rivals overpay while it bids nothing (SimpleBlindAuction). Their reward
#: check compares a seat that ignores the game with a random player in that seat.
PASSIVE_SEAT_CAN_WIN = frozenset(
    {"SecretMafia-v0", "SimpleBlindAuction-v0", "Snake-v0", "TruthAndDeception-v0"}
)


class TextArenaTurnBased(TurnBasedTextEnv):
    """A TextArena game of two or more players, every seat played through ``step``.

    Args:
        game: TextArena's id of the game (``"TicTacToe-v0"``).
        game_options: keyword arguments for TextArena's game over those its id registers
            (``{"max_rounds": 1}``: one hand of Kuhn poker).
        answer_format, format_penalty, render_mode: as ``TurnBasedTextEnv``'s.
        max_actions: moves of all seats before the game is cut short; ``None``: the game's
            turn limit for one seat (``environments.textarena.games``) times the seats.
    """

    def __init__(
        self,
        game: str,
        *,
        game_options: dict[str, Any] | None = None,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        format_penalty: float = -0.1,
        max_actions: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.table = TextArenaEnv(game, game_options=game_options, answer_format=answer_format)
        players = self.table.game.players
        if players < 2:
            raise ValueError(
                f"{game} is a game of one player: play it with rollenv.make("
                f"{self.table.game.rollenv_id!r})"
            )
        super().__init__(
            players,
            answer_format=self.table.answer_format,
            format_penalty=format_penalty,
            max_actions=max_actions or self.table.game.max_turns * players,
            render_mode=render_mode,
        )
        self.metadata = {
            **self.metadata,
            "name": f"textarena_{game}",
            "passive_seat_can_win": game in PASSIVE_SEAT_CAN_WIN,
        }
        self._told_the_end: set[int] = set()  # the seats whose text said the game is over

    @property
    def state_of_game(self) -> Any:
        """TextArena's ``game_state`` (the board, the piles), for solvers."""
        return self.table._game.state.game_state

    def solver(self) -> Any | None:
        from environments.textarena.solvers import SOLVERS

        solver = SOLVERS.get(self.table.game.textarena_id)
        return solver() if solver is not None else None

    def candidate_moves(self, agent: str) -> list[str]:
        """Moves ``agent`` might make now: those the game accepts, tried on a copy of it (up to
        8), as the single-agent env's ``action_words`` are; where the game refuses moves on
        hidden grounds, or accepts none tried, its untried candidates. What a random player
        picks from."""
        seat = self.possible_agents.index(agent)
        observed = self.observe(agent)["text"]
        # the seat's text keys the order (the table's own move count, 0 here, as before)
        return list(self.table.accepted_moves(seat, observed, self.table.actions_taken))

    def _start(self, seed: int) -> None:
        self._told_the_end = set()
        self.table.start_game(seed)

    def _seat_to_move(self) -> int:
        return int(self.table._game.state.current_player_id)

    def _instruction(self, seat: int) -> str:
        return self.table.instruction_of(seat)  # the prompt the first _take_text filed

    def _take_text(self, seat: int) -> str:
        with self.table._in_game:
            messages = self.table._take_messages(seat)
        ending = self.table._done and seat not in self._told_the_end
        if not messages and not ending:
            return ""
        if ending:
            self._told_the_end.add(seat)
        return self.table._render(messages, seat)

    def _play(self, seat: int, move: str) -> str | None:
        with self.table._in_game:
            refused, _ = self.table._play(seat, move)
        if not refused:
            return None
        told = _messages(self.table._game.state.observations.get(seat, []))
        return self.table._reason_of(told)

    def _results(self) -> list[float] | None:
        if not self.table._done:
            return None
        rewards = self.table._rewards()
        results = []
        for seat in range(self.table.game.players):
            value = finite_reward(rewards.get(seat, 0.0))
            results.append(0.0 if value is None else max(-1.0, min(1.0, value)))
        return results
