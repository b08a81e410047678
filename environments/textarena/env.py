"""``TextArenaEnv``: one TextArena game as a rollenv env, the agent in one seat.

The reply's ``<answer>`` text is the agent's move, passed to the game as TextArena's default
wrappers would pass it (bracketed when it has no brackets, clipped to 1000 characters in the chat
games); any non-empty answer is an action (``free_form``), and the game judges it.

Turns and outcomes, mapped from TextArena's rules:

* A reply without an answer is a penalised no-op (``format_penalty``), as in every rollenv env.
* A move the game refuses is a penalised no-op too: observation unchanged, ``format_penalty``,
  ``action_is_valid`` False, the game's reason in ``info["illegal_move_reason"]``. TextArena
  gives a player one retry (its ``error_allowance``): a second refused move in a row ends the
  game as TextArena ends it (the agent loses, or is eliminated), ``terminated`` with
  ``action_is_valid`` False.
* The opponents (``opponent=``) then play until it is the agent's turn or the game is over.
* Reward: 0 until the game ends, then the agent's TextArena reward clipped to [-1, 1]: 1 a win,
  -1 a loss, 0 a draw in two- and multi-player games; single-player games give their own score
  in [-1, 1] (1 solved; some give partial credit, a loss by refused moves is -1).
* ``success``: a single-player game scored 1, or a game the agent won (its reward the highest,
  above 0).
* An exception inside TextArena ends the episode (``truncated``), with ``info["error"]``.

The observation is what the agent's seat was told since its last move: the game's messages and
the other players' moves, with only the latest board of those shown; the game's prompt is the
instruction. It is also the anchor.

Example:
    >>> import rollenv
    >>> env = rollenv.make("textarena/TicTacToe-v0")
    >>> obs, info = env.reset(seed=0)
    >>> "Available Moves" in obs
    True
    >>> obs, reward, terminated, truncated, info = env.step("<answer>[4]</answer>")
    >>> info["metrics"]["action_is_valid"], terminated
    (True, False)
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import pickle
import random
import sys
import zlib
from collections.abc import Callable
from typing import Any, ClassVar

from environments.textarena.games import GAMES_BY_ID, Game, unmet_requirement
from environments.textarena.moves import bracketed_tokens, candidate_moves, expand_template
from environments.textarena.opponents import make_opponent
from rollenv.actions import AnswerFormat
from rollenv.global_random import GlobalRandomState
from rollenv.library_game_env import LibraryGameEnv, MoveOutcome, finite_reward
from rollenv.text_env import observable

GAME_ID = -1  # TextArena's sender id of the game's own messages
#: a reply a chat game accepts when its candidates hold no move it takes
CHAT_REPLY = "I would like to hear your proposal first."
#: how many accepted moves ``action_words`` looks for, and how many candidates it tries at most
WORDS_WANTED, WORDS_TRIED = 8, 300
#: opponent moves in one step after which the game counts as stuck
MAX_OPPONENT_MOVES = 500
CHAT_CHARACTERS = 1000  # TextArena's ClipCharactersActionWrapper keeps the last 1000


class _Discard:
    """A text stream that drops everything: TextArena's games print while they play."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


_DISCARD = _Discard()


class _Quiet:
    """Sends stdout and stderr to ``_DISCARD`` inside ``with`` (cheaper than contextlib's).

    With ``rng``, that env's private random state is active inside too: one ``with`` around
    each call into the game (this is on every step's path, where a microsecond is 5-10% of a
    cheap game's own step).
    """

    def __init__(self, rng: GlobalRandomState | None = None) -> None:
        self._rng = rng
        self._saved: list[tuple[Any, Any]] = []

    def __enter__(self) -> None:
        self._saved.append((sys.stdout, sys.stderr))
        sys.stdout = sys.stderr = _DISCARD  # type: ignore[assignment]
        if self._rng is not None:
            self._rng.__enter__()

    def __exit__(self, *exc_info: object) -> None:
        try:
            if self._rng is not None:
                self._rng.__exit__(None, None, None)
        finally:
            sys.stdout, sys.stderr = self._saved.pop()


def _quiet() -> _Quiet:
    return _Quiet()


def _game_factory(
    game_id: str, options: dict[str, Any] | None = None
) -> tuple[Callable[[], Any], bool, bool]:
    """Builds TextArena's env of ``game_id`` without its wrappers (``options`` over its
    registered keyword arguments); whether the wrappers bracket, clip."""
    from textarena.envs.registration import ENV_REGISTRY

    spec = ENV_REGISTRY[game_id]
    module_name, _, class_name = spec.entry_point.partition(":")
    with _quiet():
        game_class = getattr(importlib.import_module(module_name), class_name)
    wrappers = {w.__name__ for w in spec.default_wrappers or []}
    return (
        functools.partial(game_class, **{**spec.kwargs, **(options or {})}),
        "ActionFormattingWrapper" in wrappers,
        "ClipCharactersActionWrapper" in wrappers,
    )


#: TextArena's message kinds (``ObservationType`` members) by their names, filled as met
_KIND_NAMES: dict[Any, str] = {}


def _kind_name(kind: Any) -> str:
    """The name of a kind ``_KIND_NAMES`` does not hold yet, which it then holds."""
    name = getattr(kind, "name", None) or str(kind)
    with contextlib.suppress(TypeError):  # an unhashable kind is named each time
        _KIND_NAMES[kind] = name
    return name


def _messages(raw: list[Any]) -> list[tuple[int, str, str]]:
    """TextArena's messages as (sender, text, kind name); a few games file bare strings."""
    messages = []
    for message in raw:
        if type(message) is tuple and len(message) == 3:
            sender, text, kind = message
            try:
                name = _KIND_NAMES[kind]
            except (KeyError, TypeError):
                name = _kind_name(kind)
            messages.append((sender, text if type(text) is str else str(text), name))
        else:
            messages.append((GAME_ID, str(message), "GAME_MESSAGE"))
    return messages


def _snapshot(game: Any) -> Any:
    try:
        return pickle.loads(pickle.dumps(game))
    except Exception:  # some games hold closures or generators
        return copy.deepcopy(game)


class TextArenaEnv(LibraryGameEnv):
    """A TextArena game with the agent in ``agent_seat`` and pinned opponents in the others.

    Args:
        game: TextArena's id of the game (``"TicTacToe-v0"``), one listed in
            ``environments.textarena.games``.
        agent_seat: the agent's seat, from 0 to the game's players - 1.
        opponent: who plays the other seats: ``"random"`` or ``"openai:<base_url>:<model>"``
            (see ``environments.textarena.opponents``).
        game_options: keyword arguments for TextArena's game over those its id registers
            (``{"max_rounds": 1}``: one hand of ``KuhnPoker-v0``); a name the game does not
            take is refused with the ones it does.
        answer_format, format_penalty, max_actions, render_mode: as ``TextEnv``'s.
    """

    free_form: ClassVar[bool] = True
    tool_name = "move"
    tool_argument = "move"
    tool_description = "Makes a move in the game, written as the rules say."
    library: ClassVar[str] = "TextArena"
    # No oracle: TextArena ships no solvers, and a two-player game's outcome depends on the
    # opponent; the random policy's success is measured instead (see the package docstring).
    oracle: ClassVar[str | None] = None

    def __init__(
        self,
        game: str,
        *,
        agent_seat: int = 0,
        opponent: str = "random",
        game_options: dict[str, Any] | None = None,
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
        if game not in GAMES_BY_ID:
            import difflib

            close = difflib.get_close_matches(game, list(GAMES_BY_ID), n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise ValueError(f"unknown TextArena game {game!r}.{hint}")
        self.game: Game = GAMES_BY_ID[game]
        unmet = unmet_requirement(self.game)
        if unmet is not None:
            raise ValueError(f"TextArena game {game!r} cannot run here: {unmet}")
        seats = range(self.game.players)
        if not isinstance(agent_seat, int) or agent_seat not in seats:
            raise ValueError(
                f"agent_seat={agent_seat!r} is not a seat of {game}; allowed: "
                + ", ".join(str(s) for s in seats)
            )
        self.agent_seat = agent_seat
        self.opponent = make_opponent(opponent)
        self._new_game, self._bracket, self._clip = _game_factory(game, game_options)
        with _quiet():
            try:
                self._game = self._new_game()
            except TypeError as error:
                if not game_options:
                    raise
                raise ValueError(f"bad game_options for {game}: {error}") from None
        self._rng = GlobalRandomState(numpy=self.game.numpy_random)
        self._in_game = _Quiet(self._rng)  # stdout silenced and the private random state on
        self._prompts: dict[int, str] = {}
        self._views: dict[int, list[str]] = {}
        self._recent: dict[int, list[tuple[int, str, str]]] = {}
        self._done = False  # the game says it is over (also on the copies action_words tries)
        self._mover = "agent"  # whose move is being played: an exception blames the opponent's
        self._words: tuple[str, ...] | None = None
        #: every (seat, move, retry) sent to TextArena this episode, refused ones included;
        #: ``retry``: the opponent's retry count was reset before it (see _play_opponents)
        self.moves_sent: list[tuple[int, str, bool]] = []
        self.textarena_seed = 0

    # ------------------------------------------------------------------ TextEnv's parts
    @property
    def instruction(self) -> str:
        return self.instruction_of(self.agent_seat)

    def instruction_of(self, seat: int) -> str:
        """The game's prompt to ``seat`` and how to write a move in the answer format."""
        prompt = self._prompts.get(seat, "")
        examples = bracketed_tokens(prompt) or [
            move for template in self.game.moves[:1] for move in expand_template(template)[:1]
        ]
        example = self.answer_format.wrap(examples[0]) if examples else ""
        return (
            f"{prompt.strip()}\n\n"
            f"{self.answer_format.describe()} Inside it, write your move as the game asks"
            + (f", e.g. {example}." if example else ".")
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        """Moves the game accepts now (up to 8, tried on a copy of the game), else candidates.

        Untried candidates where the game refuses moves on hidden grounds (``hidden_refusals``).
        """
        if self._words is None:
            self._words = self.accepted_moves(
                self.agent_seat, self._last_observation, self.actions_taken
            )
        return self._words

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        self.start_game(rng.randrange(1 << 31))
        self.opponent.reset(self.textarena_seed + 1)
        with self._in_game:
            self._play_opponents()
            messages = self._take_messages(self.agent_seat)
        self._last_observation = self._render(messages, self.agent_seat)

    def start_game(self, seed: int) -> None:
        """A new game of TextArena's from ``seed``, no seat's move played yet."""
        self.textarena_seed = seed
        self._rng.seed(seed)
        self._prompts, self._views, self._recent = {}, {}, {}
        self._done = False
        self._words = None
        self.moves_sent = []
        with self._in_game:
            # a new game each episode: some keep state across resets (SpiteAndMalice's deck)
            self._game = self._new_game()
            self._game.reset(num_players=self.game.players, seed=seed)

    def _observation(self) -> str:
        return self._last_observation

    def _reset_info(self) -> dict[str, Any]:
        return {"textarena_seed": self.textarena_seed, "agent_seat": self.agent_seat}

    # ------------------------------------------------------------------ a turn
    def _play_move(self, move: str) -> MoveOutcome:
        self._words = None
        self._mover = "agent"
        with self._in_game:
            refused, done = self._play(self.agent_seat, move)
            if refused and not done:
                reason = self._reason_of(self._take_messages(self.agent_seat))
                return MoveOutcome(
                    self.format_penalty, False, False, {"illegal_move_reason": reason}
                )
            self._mover = "opponent"
            self._play_opponents()
            messages = self._take_messages(self.agent_seat)
        self._last_observation = self._render(messages, self.agent_seat)
        reward = self._final_reward() if self._done else 0.0
        return MoveOutcome(reward, valid=not refused, effective=not refused)

    def _library_raised(self, error: Exception) -> MoveOutcome:
        self._error = f"TextArena's {self.game.textarena_id} raised during the {self._mover}'s "
        self._error += f"move: {type(error).__name__}: {error}"
        self._done = True
        self._end_episode(success=False, cut_short=True)
        valid = self._mover == "opponent"  # the agent's move is not to blame for the opponent's
        reward = 0.0 if valid else self.format_penalty
        return MoveOutcome(reward, valid, valid, {self.error_key: self._error})

    def _final_reward(self) -> Any:
        """The agent's reward at the game's end, clipped to [-1, 1], and the episode's end;
        a reward that is not a number is returned as it is (the base class refuses it)."""
        rewards = self._rewards()
        raw = rewards.get(self.agent_seat, 0.0)
        unreadable = [v for v in (raw, *rewards.values()) if finite_reward(v) is None]
        if unreadable:
            self._end_episode(success=False)
            return unreadable[0]
        mine = max(-1.0, min(1.0, float(raw)))
        values = [float(v) for v in rewards.values()]
        if self.game.players == 1:
            success = mine >= 1.0
        else:
            success = mine > 0 and mine == max(values) and min(values) < mine
        self._end_episode(success=success)
        return mine

    def _rewards(self) -> dict[int, float]:
        rewards = self._game.state.rewards
        return dict(rewards) if rewards else {}

    # ------------------------------------------------------------------ talking to the game
    def _play(self, seat: int, move: str, retry: bool = False) -> tuple[bool, bool]:
        """Sends one move of ``seat``; returns whether the game refused it and whether it ended.

        ``retry``: an opponent's search for an accepted move (its retry count was reset).
        """
        if self._clip and len(move) > CHAT_CHARACTERS:
            move = move[-CHAT_CHARACTERS:]
        if self._bracket and "[" not in move and "]" not in move:
            move = f"[{move}]"
        state = self._game.state
        errors_before = getattr(state, "error_count", 0)
        flagged_before = state.game_info.get(seat, {}).get("invalid_move", False)
        self.moves_sent.append((seat, move, retry))
        done, _ = self._game.step(move)
        state = self._game.state
        flagged = state.game_info.get(seat, {}).get("invalid_move", False)
        refused = getattr(state, "error_count", 0) > errors_before or flagged > flagged_before
        self._done = bool(done or state.done)
        return refused, self._done

    def _play_opponents(self) -> None:
        moves, refused_in_a_row = 0, 0
        while not self._done and self._game.state.current_player_id != self.agent_seat:
            moves += 1
            if moves > MAX_OPPONENT_MOVES:
                raise RuntimeError(f"the opponents made {MAX_OPPONENT_MOVES} moves in one turn")
            if refused_in_a_row > 2:
                raise RuntimeError("the game refused every move the opponent tried, three times")
            seat = self._game.state.current_player_id
            self._take_messages(seat)
            candidates = self._candidates(seat)
            transcript = "\n".join(self._views.get(seat, []))
            tries = self.opponent.moves(seat, self._prompts.get(seat, ""), transcript, candidates)
            tries = tries or [CHAT_REPLY]
            for index, move in enumerate(tries):
                final = index == len(tries) - 1
                # TextArena's retry allowance counts only for the last try: the earlier ones
                # are the opponent looking for a move the game takes, and leave no trace
                state = self._game.state
                told = {s: len(queue) for s, queue in state.observations.items()}
                if not final and hasattr(state, "error_count"):
                    state.error_count = 0
                refused, done = self._play(seat, move, retry=not final)
                refused_in_a_row = refused_in_a_row + 1 if refused else 0
                if done or not refused:
                    break
                if not final:
                    for other, count in told.items():
                        del state.observations[other][count:]

    def _take_messages(self, seat: int) -> list[tuple[int, str, str]]:
        """Everything told to ``seat`` since it was last asked (its prompt filed apart)."""
        state = self._game.state
        if state.current_player_id == seat and not self._done:
            _, raw = self._game.get_observation()
        else:
            raw, state.observations[seat] = state.observations.get(seat, []), []
        messages = _messages(raw)
        prompts = [text for _, text, kind in messages if kind == "PROMPT"]
        if prompts:
            self._prompts[seat] = self._prompts.get(seat, "") + "".join(prompts)
            messages = [m for m in messages if m[2] != "PROMPT"]
        if messages:
            self._recent[seat] = messages
            if seat != self.agent_seat and self.opponent.reads_transcript:
                self._views.setdefault(seat, []).extend(self._line(*m) for m in messages)
        return messages

    def _line(self, sender: int, text: str, kind: str) -> str:
        if kind == "GAME_BOARD":
            return text.strip("\n")
        if sender == GAME_ID:
            return f"[GAME] {text}"
        role = self._game.state.role_mapping.get(sender, f"Player {sender}")
        return f"[{role}] {text}"

    def _render(self, messages: list[tuple[int, str, str]], seat: int) -> str:
        last_board = -1
        for index, message in enumerate(messages):
            if message[2] == "GAME_BOARD":
                last_board = index
        lines = []
        for index, (sender, text, kind) in enumerate(messages):
            if kind == "PROMPT" or (kind == "PLAYER_ACTION" and sender == seat):
                continue
            if kind == "GAME_BOARD" and index != last_board:
                continue
            lines.append(self._line(sender, text, kind))
        if self._done:
            reason = self._game.state.game_info.get(seat, {}).get("reason")
            lines.append(f"[GAME] Game over. {reason}" if reason else "[GAME] Game over.")
        # some games write emoji (Secretary's "🎉"): escaped, as the observation space has none
        return observable("\n".join(lines).strip() or f"[GAME] Your move, Player {seat}.")

    @staticmethod
    def _reason_of(messages: list[tuple[int, str, str]]) -> str:
        admin = [text for _, text, kind in messages if kind == "GAME_ADMIN"]
        return admin[-1] if admin else "the game refused the move"

    # ------------------------------------------------------------------ candidate moves
    def _candidates(self, seat: int) -> list[str]:
        recent = "\n".join(self._line(*m) for m in self._recent.get(seat, []))
        candidates = candidate_moves(recent, self.game.moves, self._prompts.get(seat, ""))
        return candidates + [CHAT_REPLY]

    def accepted_moves(self, seat: int, observation: str, moves_made: int) -> tuple[str, ...]:
        """Moves the game accepts from ``seat`` now (up to 8, tried on a copy), else its
        candidates; shuffled by ``observation`` and ``moves_made`` alone, so the same state
        gives the same moves however often asked."""
        candidates = self._candidates(seat)
        order = random.Random(zlib.crc32(observation.encode()) + moves_made)
        order.shuffle(candidates)
        if self._done or self.game.hidden_refusals:
            return tuple(candidates[:WORDS_WANTED])
        accepted = []
        saved_rng = self._rng.snapshot()
        real_game, real_done, real_log = self._game, self._done, self.moves_sent
        try:
            with _quiet():
                for move in candidates[:WORDS_TRIED]:
                    self._game, self._done, self.moves_sent = _snapshot(real_game), False, []
                    with self._rng:
                        try:
                            refused, _ = self._play(seat, move)
                        except Exception:
                            refused = True
                    self._rng.restore(saved_rng)
                    if not refused:
                        accepted.append(move)
                        if len(accepted) == WORDS_WANTED:
                            break
        finally:
            self._game, self._done, self.moves_sent = real_game, real_done, real_log
            self._rng.restore(saved_rng)
        return tuple(accepted) or tuple(candidates[:WORDS_WANTED])
