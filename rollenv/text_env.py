"""``TextEnv``: the base class of every rollenv environment.

A text env is a ``gymnasium.Env[str, str]``: observations are text, actions are the agent's raw
reply. The base class owns the contract every env shares, so a family only writes its game:

* ``reset(seed=...)`` is deterministic per seed and returns ``info["instruction"]`` (the rules,
  for a system prompt) and ``info["anchor"]`` (the state without history, GiGPO groups on it).
* ``step(reply)`` never raises. The reply is parsed with the env's ``AnswerFormat``; a reply
  with no valid action is a no-op that costs ``format_penalty`` and reports
  ``info["metrics"]["action_is_valid"] = False``. Every step reports ``success``,
  ``action_is_valid`` and ``action_is_effective`` in ``info["metrics"]``.
* ``max_actions`` caps the actions executed in one episode; reaching it truncates the episode.

A family implements ``_new_episode``, ``_observation``, ``_parse_action``, ``_apply``,
``_solved`` and ``instruction``; optionally ``_failed``, ``_anchor`` and ``_reset_info``.

Example:
    >>> import rollenv
    >>> env = rollenv.make("Sokoban-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step("no answer tag here")
    >>> info["metrics"]["action_is_valid"], reward
    (False, -0.1)
"""

from __future__ import annotations

import random
import re
from abc import abstractmethod
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
from gymnasium import spaces

from rollenv.action_tools import ActionTool, choice_tool, text_tool
from rollenv.actions import AnswerFormat
from rollenv.reward_tolerance import RewardTolerance

# Every character an LLM may write, except UTF-16 surrogates (not valid in a Python str that
# came from decoded text). Built once: gymnasium indexes the charset of a Text space.
_ANY_CHARACTER = frozenset(chr(c) for c in range(0x20, 0xD800)) | frozenset("\n\t\r")
#: one character outside that set (control bytes, surrogates, astral planes)
OUTSIDE_TEXT_SPACE = re.compile(r"[^\t\n\r\x20-\ud7ff]")
MAX_TEXT_LENGTH = 1 << 16
# the control bytes outside the space: checked first, as most text is ASCII
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def in_text_space(text: str, replacement: str = "?") -> str:
    """``text`` with every character an observation may not hold replaced by ``replacement``.

    Example:
        >>> in_text_space("ok\\x00 \\U0001f600")
        'ok? ?'
    """
    return OUTSIDE_TEXT_SPACE.sub(replacement, text)


def observable(text: str) -> str:
    """``text`` as an observation: each character outside the space written as its escape
    (``\\U0001f600``), and cut to ``MAX_TEXT_LENGTH``. For text from other libraries' games.

    Example:
        >>> observable("a\\x00b \\U0001f600")
        'a\\\\x00b \\\\U0001f600'
    """
    if not (text.isascii() and _ASCII_CONTROL.search(text) is None):
        text = OUTSIDE_TEXT_SPACE.sub(lambda m: m.group().encode("unicode_escape").decode(), text)
    return text[:MAX_TEXT_LENGTH]


def shortened(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were.

    Example:
        >>> shortened("SELECT name FROM pets", 11)
        'SELECT name... (10 more characters)'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def text_space(max_length: int = MAX_TEXT_LENGTH, min_length: int = 0) -> spaces.Text:
    """A ``spaces.Text`` that accepts any printable text up to ``max_length`` characters."""
    return spaces.Text(max_length=max_length, min_length=min_length, charset=_ANY_CHARACTER)


_SHARED_TEXT_SPACE = text_space()


class TextEnv(gym.Env[str, str]):
    """Base class of rollenv's text environments (see the module docstring for the contract).

    Args:
        answer_format: how actions are read from a reply; defaults to ``<answer>...</answer>``.
            A dict is taken as ``AnswerFormat`` keyword arguments (handy in config files).
        format_penalty: reward of a reply with no valid action.
        max_actions: actions executed per episode before it is truncated; ``None`` for no cap.
        render_mode: ``"ansi"`` or ``None``; ``render()`` always returns the observation text.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    #: False where the same actions from the same start can end differently (slippery ice):
    #: an oracle then maximises the chance of success instead of guaranteeing it.
    deterministic: bool = True
    #: True where any non-empty answer text is an action (a math answer, a program, a move in a
    #: game adapted from another hub): ``action_words`` are then sample replies, not every action.
    free_form: ClassVar[bool] = False
    #: ``"module:Class"`` of the family's oracle policy (see ``rollenv.policies.oracle_for``).
    oracle: ClassVar[str | None] = None
    #: how much a task-ignoring reply may earn (``rollenv.check_reward``); ``None``: the default,
    #: at most 5% of the oracle's return and no success at all.
    reward_tolerance: ClassVar[RewardTolerance | None] = None

    def __init__(
        self,
        *,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        format_penalty: float = -0.1,
        max_actions: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not supported; "
                f"allowed: {self.metadata['render_modes']} or None"
            )
        if max_actions is not None and max_actions < 1:
            raise ValueError(f"max_actions must be >= 1 or None, got {max_actions}")
        if isinstance(answer_format, dict):
            try:
                answer_format = AnswerFormat(**answer_format)
            except TypeError as error:
                raise ValueError(f"bad answer_format {answer_format!r}: {error}") from None
        self.answer_format = answer_format or AnswerFormat()
        self.format_penalty = float(format_penalty)
        self.max_actions = max_actions
        self.render_mode = render_mode
        self.observation_space = _SHARED_TEXT_SPACE
        self.action_space = _SHARED_TEXT_SPACE
        self.actions_taken = 0
        self._last_observation = ""
        self._reward_request: dict[str, Any] | None = None

    # ------------------------------------------------------------------ what a family writes
    @property
    @abstractmethod
    def instruction(self) -> str:
        """The rules of the game and the answer format, for a system prompt."""

    @property
    @abstractmethod
    def action_words(self) -> tuple[str, ...]:
        """The canonical spelling of every action (random policies sample from these)."""

    @abstractmethod
    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        """Sets up a new episode, drawing every random choice from ``rng``."""

    @abstractmethod
    def _observation(self) -> str:
        """The current state as text."""

    @abstractmethod
    def _parse_action(self, text: str) -> Hashable | None:
        """Maps one stripped action string to an action, or ``None`` if it is not one."""

    @abstractmethod
    def _apply(self, action: Any) -> tuple[float, bool]:
        """Executes one action; returns its reward and whether it changed the state."""

    @abstractmethod
    def _solved(self) -> bool:
        """Whether the episode's goal is reached."""

    def _failed(self) -> bool:
        """Whether the episode ended without success (e.g. fell into a hole)."""
        return False

    def _anchor(self) -> str:
        """The state without history; identical anchors mean identical states."""
        return self._last_observation

    def _reset_info(self) -> dict[str, Any]:
        """Extra keys for the ``info`` that ``reset`` returns."""
        return {}

    #: the default tool of ``action_tools``: its name, its argument and what it does
    tool_name: ClassVar[str] = "act"
    tool_argument: ClassVar[str] = "action"
    tool_description: ClassVar[str] = "Takes one action in the environment."

    def action_tools(self) -> Sequence[ActionTool]:
        """The env's actions as tools, for the ``tools`` action format (``rollenv.tool_calls``).

        By default one tool, ``tool_name(tool_argument)``: an ``enum`` of ``action_words``, or
        any text for a ``free_form`` env. A family whose actions have parts (a query, a target,
        a row and a column) offers one tool per kind of action instead.
        """
        if self.free_form:
            return (text_tool(self.tool_name, self.tool_description, self.tool_argument),)
        words = self.action_words
        return (choice_tool(self.tool_name, self.tool_description, self.tool_argument, words),)

    def task_ignoring_replies(self) -> dict[str, str]:
        """Replies a cheater would try in the current state, by name, that must earn nothing.

        ``rollenv.check_reward`` plays each of them, beside its generic battery (empty answers,
        the observation copied back, padding...). A family adds what is particular to it: code
        stubs that return a constant, a math question's expression restated.
        """
        return {}

    # ------------------------------------------------------------------ the shared contract
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self._new_episode(self._episode_random(seed), options)
        self.actions_taken = 0
        self._last_observation = obs = self._observation()
        info = {"instruction": self.instruction, "anchor": self._anchor(), **self._reset_info()}
        return obs, info

    def _episode_random(self, seed: int | None) -> random.Random:
        """The generator a new episode draws from: Gymnasium's seeding of ``np_random`` from
        ``seed`` (``None``: go on from its state), then a Python ``Random`` seeded from it."""
        super().reset(seed=seed)
        # Python's Random is several times faster than numpy for the scalar draws of a
        # generator; seeding it from np_random keeps Gymnasium's seeding semantics.
        return random.Random(int(self.np_random.integers(1 << 62)))

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        actions = self._parse_reply(action)
        if actions is None:
            reward, valid, effective = self.format_penalty, False, False
        else:
            reward, valid, effective = 0.0, True, False
            for parsed in actions:
                step_reward, changed = self._apply(parsed)
                reward += step_reward
                effective = effective or changed
                self.actions_taken += 1
                if self._solved() or self._failed() or self._out_of_actions():
                    break
        success = self._solved()
        terminated = success or self._failed()
        truncated = not terminated and self._out_of_actions()
        self._last_observation = obs = self._observation()
        info = {
            "metrics": {
                "success": success,
                "action_is_valid": valid,
                "action_is_effective": effective,
            },
            "anchor": self._anchor(),
        }
        request, self._reward_request = self._reward_request, None
        if request is not None:
            info["reward_request"] = request
        return obs, reward, terminated, truncated, info

    def defer_scoring(self, request: dict[str, Any]) -> None:
        """Hands the current answer's scoring to reward workers: called from ``_apply`` (which
        then returns the answer's inline reward, usually 0) by an env made with
        ``defer_reward=True``; this step's ``info["reward_request"]`` is ``request``.

        ``request`` is plain data: ``{"kind": "rule", "rule": "module:function", "response":
        answer, "data": {...}}`` (a reward worker calls ``function(answer, **data)``) or
        ``{"kind": "judge", "question": ..., "response": answer, "reference": ...}``, with an
        optional ``success_at`` (the score that counts as success; 1 by default).
        """
        self._reward_request = dict(request)

    def render(self) -> str:
        """Returns the current observation text (Gymnasium's ``ansi`` mode)."""
        return self._last_observation

    def _out_of_actions(self) -> bool:
        return self.max_actions is not None and self.actions_taken >= self.max_actions

    def _parse_reply(self, reply: Any) -> list[Hashable] | None:
        if not isinstance(reply, str):
            return None
        texts = self.answer_format.extract(reply)
        if texts is None:
            return None
        actions = []
        for text in texts:
            parsed = self._parse_action(text)
            if parsed is None:
                return None
            actions.append(parsed)
        return actions[: self.answer_format.max_actions]
