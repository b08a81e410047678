"""``TurnBasedTextEnv``: a game of several seats, each played by text replies, under PettingZoo's
AEC API.

PettingZoo's agent-environment cycle (AEC) is the Gymnasium ecosystem's form for turn-based games
of several agents: ``agent_selection`` names the seat to move, ``last()`` gives it its
observation and the reward it gathered since it last moved, ``step(action)`` plays its move.
Here the seats are ``player_0``, ``player_1``, ... and every seat is played the way a
single-agent ``TextEnv`` is:

* an **action** is a reply; its answer (``<answer>...</answer>`` by default, ``answer_format``)
  is the move. A reply without one is a penalised no-op (``format_penalty``, the same seat moves
  again), and so is a move the game refuses (its reason in ``infos[agent]
  ["illegal_move_reason"]``); any value that is not a string counts as a reply without an answer,
  so ``step`` never raises on an action;
* an **observation** is a dict: ``instruction``, the seat's rules and how to write a move, and
  ``text``, everything the seat was told since it last moved (the other seats' moves, the board);
* **rewards** are 0 until the game ends, then each seat's result (1 a win, -1 a loss, 0 a draw,
  unless the game scores otherwise), plus the penalties above when they happen;
* after ``max_actions`` moves in all the game is cut short: every seat ``truncated``; an
  exception inside the game does the same, with ``infos[agent]["error"]``.

A game subclasses this and writes six methods: ``_start`` (a new game from a seed),
``_seat_to_move``, ``_instruction``, ``_take_text`` (what a seat was told since last asked),
``_play`` (one move; the refusal's reason, or ``None``) and ``_results`` (each seat's reward
once the game is over); where it can, ``candidate_moves`` (for random players), and
``state_of_game`` with ``solver`` (for a perfect player). PettingZoo's bookkeeping (``agents``,
the reward sums, the steps of finished seats) lives here.

Example:
    >>> import rollenv
    >>> env = rollenv.make_multi("textarena/TicTacToe-v0")
    >>> env.reset(seed=0)
    >>> env.agent_selection
    'player_0'
    >>> observation, reward, terminated, truncated, info = env.last()
    >>> "Tic Tac Toe" in observation["instruction"]
    True
    >>> env.step("<answer>[4]</answer>")
    >>> env.agent_selection, "cell 4" in env.observe("player_1")["text"]
    ('player_1', True)
"""

from __future__ import annotations

import random
from abc import abstractmethod
from typing import Any, ClassVar

from gymnasium import spaces
from pettingzoo import AECEnv

from rollenv.actions import AnswerFormat
from rollenv.text_env import text_space

#: what a reply without an answer is told
NO_ANSWER = "Your reply had no move: write it as the instructions say."


def seat_name(seat: int) -> str:
    """The AEC agent name of a seat.

    Example:
        >>> seat_name(1)
        'player_1'
    """
    return f"player_{seat}"


class TurnBasedTextEnv(AECEnv):
    """Base class of rollenv's multi-agent text games (see the module docstring).

    Args:
        players: how many seats the game has.
        answer_format: how a move is read from a reply; ``<answer>...</answer>`` by default.
        format_penalty: reward of a reply without a move, or with a move the game refuses.
        max_actions: moves of all seats together (penalised no-ops included) before the game
            is cut short.
        render_mode: ``"ansi"`` or ``None``; ``render()`` returns the text the seat to move
            was last told.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "rollenv_turn_based_text",
        "render_modes": ["ansi"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        players: int,
        *,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        format_penalty: float = -0.1,
        max_actions: int = 200,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not supported; allowed: "
                f"{self.metadata['render_modes']} or None"
            )
        if max_actions < 1:
            raise ValueError(f"max_actions must be >= 1, got {max_actions}")
        if isinstance(answer_format, dict):
            answer_format = AnswerFormat(**answer_format)
        self.answer_format = answer_format or AnswerFormat(separator=None)
        self.format_penalty = float(format_penalty)
        self.max_actions = max_actions
        self.render_mode = render_mode
        self.possible_agents = [seat_name(seat) for seat in range(players)]
        self.agents = list(self.possible_agents)
        text = text_space()
        self._observation_space = spaces.Dict({"instruction": text, "text": text})
        self._action_space = text
        self._rng = random.Random()
        self._texts: dict[str, str] = {}  # what each seat was told since it last moved
        self._notes: dict[str, str] = {}  # why a seat's last reply was a no-op
        self._instructions: dict[str, str] = {}
        self.actions_taken = 0
        self.game_seed = 0
        #: each seat's result once the game is over (empty before, and when it was cut short)
        self.final_results: dict[str, float] = {}
        self._clear_bookkeeping()

    # ------------------------------------------------------------------ what a game writes
    @abstractmethod
    def _start(self, seed: int) -> None:
        """Starts a new game, all its randomness drawn from ``seed``."""

    @abstractmethod
    def _seat_to_move(self) -> int:
        """The seat whose move the game waits for."""

    @abstractmethod
    def _instruction(self, seat: int) -> str:
        """The seat's rules of the game and how to write a move (asked after ``_start`` and
        the first ``_take_text`` of every seat)."""

    @abstractmethod
    def _take_text(self, seat: int) -> str:
        """What the game told ``seat`` since this was last asked for it (``""``: nothing)."""

    @abstractmethod
    def _play(self, seat: int, move: str) -> str | None:
        """Plays ``seat``'s ``move``; returns why the game refused it, or ``None``."""

    @abstractmethod
    def _results(self) -> list[float] | None:
        """Each seat's reward once the game is over; ``None`` while it goes on."""

    # ------------------------------------------------------------------ for other players
    def candidate_moves(self, agent: str) -> list[str]:
        """Moves ``agent`` might make now (the game may refuse some): what a random player
        picks from. A game lists them where it can."""
        return []

    @property
    def state_of_game(self) -> Any:
        """The game's own state, for a solver (``solver``) to read."""
        raise NotImplementedError(f"{type(self).__name__} does not show its state")

    def solver(self) -> Any | None:
        """A perfect player of this game, or ``None``: an object whose ``move(state_of_game,
        seat, rng)`` returns a move (``rollenv.seat_policies.SolverPolicy`` plays it)."""
        return None

    def won(self, agent: str) -> bool:
        """Whether ``agent`` won the game that ended: the best result, above another seat's."""
        mine = self.final_results.get(agent)
        results = self.final_results.values()
        return mine is not None and mine == max(results) > min(results)

    # ------------------------------------------------------------------ PettingZoo's API
    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    def observe(self, agent: str) -> dict[str, str]:
        note = self._notes.get(agent)
        text = f"{note}\n{self._texts[agent]}" if note else self._texts[agent]
        return {"instruction": self._instructions[agent], "text": text}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Starts a new game; the same ``seed`` gives the same game, and ``None`` continues
        the stream of the last seeded reset."""
        if seed is not None:
            self._rng = random.Random(seed)
        self.game_seed = self._rng.randrange(1 << 31)
        self.agents = list(self.possible_agents)
        self._clear_bookkeeping()
        self.actions_taken = 0
        self.final_results = {}
        self._start(self.game_seed)
        self._texts = {agent: "" for agent in self.possible_agents}
        self._notes = {}
        self._gather_texts()
        self._instructions = {
            agent: self._instruction(seat) for seat, agent in enumerate(self.possible_agents)
        }
        self.agent_selection = seat_name(self._seat_to_move())

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        seat = self.possible_agents.index(agent)
        self._cumulative_rewards[agent] = 0
        self._clear_rewards()
        self.actions_taken += 1
        reply = action if isinstance(action, str) else ""
        move = self.answer_format.answer_text(reply)
        move = move.strip() if move is not None else ""
        seen, self._texts[agent] = self._texts[agent], ""
        self._notes.pop(agent, None)
        self.infos = {a: {} for a in self.agents}
        try:
            refusal = self._play(seat, move) if move else NO_ANSWER
        except Exception as error:  # a game's bug ends the game, and step never raises
            self._cut_short(f"the game raised on {agent}'s move: {type(error).__name__}: {error}")
            return
        if refusal is not None:
            self.rewards[agent] = self.format_penalty
            self.infos[agent] = {"action_is_valid": False, "illegal_move_reason": refusal}
        else:
            self.infos[agent] = {"action_is_valid": True}
        self._gather_texts()
        results = self._results()
        if refusal is not None and results is None:
            # a no-op: the seat is told why, above what it had been told before
            self._texts[agent], self._notes[agent] = seen, refusal
        if results is not None:
            self.final_results = dict(zip(self.possible_agents, map(float, results), strict=True))
            for other, result in zip(self.possible_agents, results, strict=True):
                self.rewards[other] += float(result)
                self.terminations[other] = True
                self.infos[other]["result"] = float(result)
            self.agent_selection = self._next_after(agent)
        elif self.actions_taken >= self.max_actions:
            self._cut_short(f"no result after {self.max_actions} moves")
            return
        else:
            self.agent_selection = seat_name(self._seat_to_move())
        self._accumulate_rewards()

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        return self._texts.get(self.agent_selection, "")

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ helpers
    def _clear_bookkeeping(self) -> None:
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos = {agent: {} for agent in self.agents}

    def _gather_texts(self) -> None:
        for seat, agent in enumerate(self.possible_agents):
            told = self._take_text(seat)
            if told:
                self._texts[agent] = f"{self._texts[agent]}\n{told}".strip()

    def _next_after(self, agent: str) -> str:
        """The seat after ``agent`` in seat order, to take the finished seats' steps."""
        order = self.possible_agents
        return order[(order.index(agent) + 1) % len(order)]

    def _cut_short(self, reason: str) -> None:
        agent = self.agent_selection
        for other in self.agents:
            self.truncations[other] = True
            self.infos[other] = {**self.infos.get(other, {}), "error": reason}
        self.agent_selection = self._next_after(agent)
        self._accumulate_rewards()
