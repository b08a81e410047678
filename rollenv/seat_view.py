"""``SeatView``: one seat of a multi-agent game as a single-agent ``TextEnv``.

The other seats are played by a fixed player (``opponent``: ``"random"``, or ``"solver"`` where
the game has one) inside ``step``, until the game waits on the agent's seat again or is over,
so the agent sees a Gymnasium env like every other: its observation is what its seat was told
since its last move, its reward what its seat gathered (the result at the end, the penalties of
refused moves), ``success`` a won game.

Example:
    >>> import rollenv
    >>> env = rollenv.make("KuhnPoker-v0")  # one hand against the equilibrium player
    >>> obs, info = env.reset(seed=0)
    >>> "Your card is" in info["instruction"], obs.splitlines()[-1]
    (True, 'Your move: check or bet.')
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from rollenv.actions import AnswerFormat
from rollenv.library_game_env import LibraryGameEnv, MoveOutcome
from rollenv.multi_agent_registration import make_multi
from rollenv.seat_policies import RandomSeatPolicy, SeatPolicy, SolverPolicy
from rollenv.turn_based_env import seat_name

OPPONENTS = ("random", "solver")


class SeatView(LibraryGameEnv):
    """One seat of ``rollenv.make_multi(game)``, the other seats played by ``opponent``.

    Args:
        game: a multi-agent id (``rollenv.multi_agent_ids()``).
        agent_seat: the agent's seat, 0 to the game's seats - 1.
        opponent: who plays the other seats: ``"random"`` (one of the game's candidate moves)
            or ``"solver"`` (the game's perfect player).
        game_kwargs: keyword arguments of ``rollenv.make_multi``.
        answer_format, format_penalty, max_actions, render_mode: as ``TextEnv``'s.
    """

    free_form: ClassVar[bool] = True
    library: ClassVar[str] = "the multi-agent game"
    tool_name = "move"
    tool_argument = "move"
    tool_description = "Makes a move in the game, written as the rules say."

    def __init__(
        self,
        game: str,
        *,
        agent_seat: int = 0,
        opponent: str = "random",
        game_kwargs: dict[str, Any] | None = None,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        format_penalty: float = -0.1,
        max_actions: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or AnswerFormat(separator=None),
            format_penalty=format_penalty,
            max_actions=max_actions,
            render_mode=render_mode,
        )
        self.game = make_multi(
            game,
            **{**(game_kwargs or {}), "answer_format": self.answer_format},
            format_penalty=format_penalty,
        )
        seats = range(len(self.game.possible_agents))
        if not isinstance(agent_seat, int) or agent_seat not in seats:
            raise ValueError(
                f"agent_seat={agent_seat!r} is not a seat of {game}; allowed: "
                + ", ".join(str(s) for s in seats)
            )
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent={opponent!r}; allowed: {', '.join(OPPONENTS)}")
        if opponent == "solver" and self.game.solver() is None:
            raise ValueError(f"{game} has no solver: use opponent='random'")
        self.agent = seat_name(agent_seat)
        self.opponent = opponent
        self._others: SeatPolicy = RandomSeatPolicy() if opponent == "random" else SolverPolicy()
        self._reward = 0.0  # the agent's seat's reward since its last move
        self._refused = False  # the game refused the agent's last move

    @property
    def instruction(self) -> str:
        return self.game.observe(self.agent)["instruction"]

    @property
    def action_words(self) -> tuple[str, ...]:
        return tuple(self.game.candidate_moves(self.agent))

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        seed = rng.randrange(1 << 31)
        self._others.rng.seed(seed + 1)
        self.game.reset(seed=seed)
        self._refused = False
        self._play_others()

    def _observation(self) -> str:
        if self._refused:  # a refused move is a no-op: the reason is in the step's info
            return self._last_observation
        return self.game.observe(self.agent)["text"] or "(nothing yet)"

    def _play_move(self, move: str) -> MoveOutcome:
        self.game.step(self.answer_format.wrap(move))
        info = self.game.infos.get(self.agent, {})
        valid = bool(info.get("action_is_valid", True))
        self._refused = not valid
        self._play_others()
        reason = {"illegal_move_reason": info["illegal_move_reason"]} if not valid else {}
        return MoveOutcome(self._reward, valid=valid, effective=valid, info=reason)

    def _reset_info(self) -> dict[str, Any]:
        return {"agent_seat": self.agent, "game_seed": self.game.game_seed}

    def _play_others(self) -> None:
        """Plays the other seats and the finished seats' steps until the agent's seat is to
        move or the game is over; ``_reward`` is what the agent's seat gathered meanwhile."""
        self._reward = 0.0
        game = self.game
        while game.agents:
            agent = game.agent_selection
            _, reward, terminated, truncated, _ = game.last()
            if agent == self.agent:
                self._reward += float(reward)
            if terminated or truncated:
                game.step(None)
                continue
            if agent == self.agent:
                return
            game.step(self._others.reply(game, agent))
        self._end_episode(success=game.won(self.agent), cut_short=not game.final_results)
