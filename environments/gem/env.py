"""``GemEnv``: a GEM game or reasoning-gym task played through rollenv's contract.

The agent writes its move (or answer) inside ``<answer>...</answer>``; the adapter hands GEM the
text it expects, ``\\boxed{<move>}`` (an answer that already holds a ``\\boxed{}`` is passed as
it is). A reply with no answer is a penalised no-op that never reaches GEM.

Observations are GEM's own text: its last message followed by its ``suffix`` (the board, for the
games that have one), as GEM's ``concat`` observation wrapper shows it; characters outside the
observation space (emoji, variation selectors) are written as ``\\U0001f600``-style escapes.

Rewards are GEM's, unchanged:

* games: GEM's shaped rewards (1 for a win; a share of the progress for some games, e.g. each
  correct Sudoku cell; 0 for a move the game rejects; -0.1 and the end of the episode for a
  move GEM cannot read at all, reported as ``action_is_valid = False``);
* reasoning-gym tasks: ``score_answer`` of the dataset (1 for the reference answer, partial
  credit where reasoning-gym gives it), and the episode ends.

``success`` is GEM's win (a game ends with its "Congratulations!" message) or a task's full
score. A GEM exception ends the episode as truncated, with ``info["gem_error"]`` saying why.

Example:
    >>> import rollenv
    >>> env = rollenv.make("gem/GuessTheNumberEasy-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step("<answer>5</answer>")
    >>> "you guessed 5" in obs or "Congratulations" in obs
    True
"""

from __future__ import annotations

import copy
import difflib
import random
import re
import warnings
from typing import Any, ClassVar

from environments.gem.catalog import BY_GEM_ID, NUMBER_ALONE_TASKS, GemEntry
from environments.gem.runtime import import_gem
from rollenv.actions import AnswerFormat
from rollenv.global_random import GlobalRandomState, global_state_restored
from rollenv.library_game_env import LibraryGameEnv, MoveOutcome, finite_reward
from rollenv.text_env import observable

# GEM's reward for a move it cannot parse (gem.utils.constants.LanguageGameReward)
GEM_FORMAT_ERROR_REWARD = -0.1
RESET_ATTEMPTS = 5
#: the answer a ``NUMBER_ALONE_TASKS`` task scores: one unsigned number, nothing else
#: (reasoning-gym's pattern, ``\b-?\d+``, reads "-4" as 4; GSM's answers are never negative)
NUMBER_ALONE = re.compile(r"\d+(?:\.\d+)?")

# one prototype GEM env per id: construction can load a word list or a dataset, or run a whole
# unseeded reset (a Sokoban room takes seconds); instances start from a copy of it
_PROTOTYPES: dict[str, Any] = {}


def gem_move(answer: str) -> str:
    """The text GEM reads for an answer: ``\\boxed{answer}``, unless it already has a box.

    Example:
        >>> gem_move("reveal 1 2"), gem_move("\\\\boxed{up}")
        ('\\\\boxed{reveal 1 2}', '\\\\boxed{up}')
    """
    return answer if "\\boxed" in answer or "\\fbox" in answer else f"\\boxed{{{answer}}}"


class RememberedItems:
    """A reasoning-gym dataset whose items are generated once each, then remembered.

    An item is a function of its index alone (reasoning-gym seeds each from ``seed + index``),
    and some take long to generate (a Futoshiki puzzle about 0.2 s): every env of an id in the
    process shares the one dataset, so a question asked again (an evaluation's seeds, a training
    run's 500 questions) costs nothing the second time. GEM reads the dataset with
    ``random.choice``, which needs only ``len`` and indexing.
    """

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset
        self._items: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        item = self._items.get(index)
        if item is None:
            item = self._items[index] = self.dataset[index]
        return item


def _new_gem_env(entry: GemEntry) -> Any:
    prototype = _PROTOTYPES.get(entry.gem_id)
    if prototype is None:
        registration = import_gem()
        # GEM's constructors play an unseeded reset; reasoning-gym's arc_agi opens a data file
        # it never closes (a ResourceWarning, raised as the constructor drops it, that is none
        # of the caller's)
        with global_state_restored(), warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            prototype = registration.make(entry.gem_id)
        if entry.kind == "task":
            prototype.ds = RememberedItems(prototype.ds)
        _PROTOTYPES[entry.gem_id] = prototype
    # a task's dataset is read-only and may be large: shared; a game's state is copied
    return copy.copy(prototype) if entry.kind == "task" else copy.deepcopy(prototype)


class GemEnv(LibraryGameEnv):
    """One GEM id, adapted (see the module docstring).

    Args:
        gem_id: GEM's id, e.g. ``"game:Sudoku-v0-easy"`` or ``"rg:basic_arithmetic"``.
        answer_format: how the move is read from a reply; defaults to one ``<answer>`` holding
            the whole move (no ``||`` splitting: answers may contain it).
        format_penalty: reward of a reply with no answer.
        render_mode: ``"ansi"`` or ``None``.
    """

    free_form: ClassVar[bool] = True
    tool_name = "move"
    tool_argument = "move"
    tool_description = "Makes a move in the game, written as the rules say."
    library: ClassVar[str] = "GEM"
    error_key: ClassVar[str] = "gem_error"

    def __init__(
        self,
        gem_id: str,
        *,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        format_penalty: float = -0.1,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or AnswerFormat(separator=None),
            format_penalty=format_penalty,
            render_mode=render_mode,
        )
        entry = BY_GEM_ID.get(gem_id)
        if entry is None:
            close = difflib.get_close_matches(gem_id, list(BY_GEM_ID), n=5, cutoff=0.5)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise ValueError(f"gem_id={gem_id!r} is not in GEM's catalog.{hint}")
        if entry.kind == "dataset":
            raise ValueError(f"gem_id={gem_id!r} cannot run offline: {entry.unavailable}")
        self.entry = entry
        rules = entry.rules
        self._number_alone = entry.name in NUMBER_ALONE_TASKS
        self._draws_in_step = rules is not None and rules.draws_in_step
        self._seeds_itself = rules is not None and not rules.reset_uses_seed
        # a reset with a seed reseeds numpy's global generator too: a game's is kept apart (a
        # task's is left reseeded as GEM's own reset leaves it; no GEM step draws from numpy)
        self._random = GlobalRandomState(numpy=entry.kind == "game" and not self._seeds_itself)
        self._gem: Any = None
        #: the seed GEM's ``reset`` got (or that seeded the game's draws): GEM's own env,
        #: ``reset(seed=gem_seed)``, starts the same episode
        self.gem_seed: int | None = None
        self._rules = ""
        self._text = ""
        self._state_key: Any = None

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        example = self.action_words[0]
        if self.entry.kind == "task":
            alone = ", a number alone," if self._number_alone else ""
            return (
                f"Solve the task (reasoning-gym's {self.entry.name}, served by GEM). Give only "
                f"the final answer{alone} inside <answer></answer>, optionally after reasoning "
                "inside <think></think>; it is scored against the reference answer and the "
                f"episode ends. Example: <answer>{example}</answer>"
            )
        return (
            f"You are playing GEM's {self.entry.name}. The game asks for each move in "
            "\\boxed{}: write the move inside <answer></answer> instead, one move per reply, "
            f"optionally after reasoning inside <think></think> (e.g. <answer>{example}</answer>)."
            f" The game's rules:\n\n{self._rules}"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        rules = self.entry.rules
        return rules.moves if rules is not None else ("0", "1", "yes")

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if self._gem is None:
            self._gem = _new_gem_env(self.entry)
        if self.entry.kind == "task":
            # GEM's task env draws a new dataset every 500 resets (its ``idx``), so a seed would
            # give another question on an env that has reset often: keep to the first dataset
            self._gem.idx = 0
        for attempt in range(RESET_ATTEMPTS):
            seed = rng.getrandbits(31)
            try:
                if self._seeds_itself:
                    self._random.seed(seed)
                    with self._random:
                        observation, info = self._gem.reset(seed=None)
                else:  # reasoning-gym picks its question by the seed; Sokoban passes it on
                    with self._random:
                        observation, info = self._gem.reset(seed=seed)
                break
            except Exception as error:  # noqa: BLE001 - GEM may fail on one seed; try another
                if attempt == RESET_ATTEMPTS - 1:
                    raise RuntimeError(
                        f"GEM could not reset {self.entry.gem_id} in {RESET_ATTEMPTS} tries: "
                        f"{type(error).__name__}: {error}"
                    ) from error
        self.gem_seed = seed
        self._rules = observation
        self._text = self._compose(observation, info)
        self._state_key = self._gem_state_key(info)

    def _observation(self) -> str:
        return self._text

    def _reset_info(self) -> dict[str, Any]:
        # GEM itself, reset with this seed, starts the same episode (see tests/.../test_env.py)
        return {"gem_seed": self.gem_seed}

    # ------------------------------------------------------------------ GEM
    def _play_move(self, move: str) -> MoveOutcome:
        """One move (or answer) into GEM: its reward, and whether it was valid and effective."""
        if self._number_alone and NUMBER_ALONE.fullmatch(move) is None:
            return self._answered(0.0)  # GEM would score the first number anywhere in it
        boxed = gem_move(move)
        if self._draws_in_step:
            with self._random:
                observation, reward, terminated, truncated, gem_info = self._gem.step(boxed)
        else:  # the step draws nothing from the global generators: no state to swap
            observation, reward, terminated, truncated, gem_info = self._gem.step(boxed)
        if self.entry.kind == "task":
            return self._answered(reward)
        self._text = self._compose(observation, gem_info)
        key, self._state_key = self._state_key, self._gem_state_key(gem_info)
        over = bool(terminated or truncated)
        if over:
            won = not truncated and observation.startswith("Congratulations")
            self._end_episode(success=won, cut_short=bool(truncated))
        valid = not (terminated and reward == GEM_FORMAT_ERROR_REWARD)
        return MoveOutcome(reward, valid, valid and (over or key != self._state_key))

    def _answered(self, reward: Any) -> MoveOutcome:
        """Ends a task's episode on its answer's score (a valid, effective answer)."""
        score = finite_reward(reward)
        self._end_episode(success=score is not None and score >= 1.0)
        shown = f"{score:g}" if score is not None else repr(reward)
        self._text = observable(f"{self._rules}\n\n(Answered; the score is {shown}.)")
        return MoveOutcome(reward)

    def _compose(self, observation: str, info: dict[str, Any]) -> str:
        suffix = info.get("suffix") or ""
        if suffix and not observation.endswith("\n"):
            observation += "\n"
        return observable(observation + suffix)

    def _gem_state_key(self, info: dict[str, Any]) -> tuple[str, int]:
        # the suffix renders the board; guessing games keep their state in their past guesses
        return info.get("suffix") or "", len(getattr(self._gem, "previous_guesses", ()))


class GemReasoningEnv(GemEnv):
    """A reasoning-gym task whose entries carry their reference answer: it has an oracle."""

    oracle: ClassVar[str | None] = "environments.gem.oracle:GoldAnswerOracle"

    def gold_answer(self) -> str:
        """The reference answer of the current question (for the oracle)."""
        answer = self._gem.data["answer"]
        return answer if isinstance(answer, str) else str(answer)
