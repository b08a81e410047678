"""``BabyAIEnv``: a BabyAI mission from the ``minigrid`` package, played in text.

Each reset builds the level's grid with MiniGrid's own generator (seeded from the episode's
seed), and each turn the agent's partial view (MiniGrid's symbolic observation, 7x7 cells in
front of it) is written out as text with the mission (``view.py``). Text actions map onto
MiniGrid's seven actions. Success is MiniGrid's: the mission's verifier says so. Its reward is
BabyAI's, ``1 - 0.9 * actions / max_actions``, so a shorter path earns more; a mission failed
(say, the wrong door opened where that fails it) ends with 0.

Example:
    >>> env = BabyAIEnv("GoToObj")
    >>> obs, info = env.reset(seed=1)
    >>> print(obs)  # doctest: +ELLIPSIS
    Mission: go to the grey box
    You face ... You carry nothing. In front of you: ...
    You see:
    ...
    >>> obs, reward, terminated, truncated, info = env.step("<answer>turn left</answer>")
    >>> info["metrics"]["action_is_effective"]
    True
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import io
import random
from typing import Any, ClassVar

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel

from environments.babyai.view import describe_view, name_of
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

#: the text of each MiniGrid action, in MiniGrid's order (``minigrid.core.actions.Actions``)
ACTION_NAMES = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle", "done")
_ACTION_BY_NAME = {name: index for index, name in enumerate(ACTION_NAMES)}
_COMPASS = ("east", "south", "west", "north")


def babyai_levels() -> tuple[str, ...]:
    """Every BabyAI level MiniGrid registers, without the ``BabyAI-`` prefix and version."""
    import minigrid  # noqa: F401 - registers MiniGrid's ids with Gymnasium

    return tuple(
        sorted(
            env_id.removeprefix("BabyAI-").rsplit("-v", 1)[0]
            for env_id in gym.registry
            if env_id.startswith("BabyAI-")
        )
    )


def make_level(level: str, **level_kwargs: Any) -> RoomGridLevel:
    """MiniGrid's BabyAI ``level`` (e.g. ``"GoToLocal"``), without Gymnasium's wrappers.

    Raises:
        ValueError: an unknown level (with the closest names) or a setting it does not take.
    """
    levels = babyai_levels()
    if level not in levels:
        close = difflib.get_close_matches(level, levels, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown BabyAI level {level!r}{hint} (levels: {', '.join(levels)})")
    spec = next(gym.spec(i) for i in gym.registry if i.startswith(f"BabyAI-{level}-v"))
    creator = load_env_creator(spec.entry_point)
    allowed = sorted(
        name
        for name, p in inspect.signature(creator.__init__).parameters.items()
        if name not in ("self", "kwargs") and p.kind is not p.VAR_POSITIONAL
    )
    unknown = sorted(set(level_kwargs) - set(allowed) - {"max_steps"})
    if unknown:
        raise ValueError(
            f"BabyAI level {level!r} takes no {', '.join(unknown)}; "
            f"its settings: {', '.join(allowed) or 'none'}"
        )
    return creator(**{**spec.kwargs, **level_kwargs})


class BabyAIEnv(TextEnv):
    """A BabyAI mission in text.

    Args:
        level: MiniGrid's BabyAI level, the difficulty knob with its settings (``"GoToObj"``,
            ``"GoToLocal"``, ``"PickupLoc"``, ``"OpenDoor"``, ``"UnlockLocal"``...; every level
            ``babyai_levels()`` lists).
        level_kwargs: the level's own settings, e.g. ``{"room_size": 6, "num_dists": 3}``.
        max_actions: actions per episode before it is truncated (and BabyAI's reward scale).
        max_actions_per_turn: actions one reply may carry, separated by ``||``.
        format_penalty: reward of a reply with no valid action.
        answer_format: overrides how actions are read from a reply (an ``AnswerFormat`` or its
            keyword arguments as a dict).
        render_mode: ``"ansi"`` or ``None``.
    """

    tool_description = "Takes one action: turn, go forward, pick up, drop or toggle."

    oracle: ClassVar[str] = "environments.babyai.oracle:BabyAIOracle"

    def __init__(
        self,
        level: str = "GoToLocal",
        level_kwargs: dict[str, Any] | None = None,
        *,
        max_actions: int = 40,
        max_actions_per_turn: int = 1,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or {"max_actions": max_actions_per_turn},
            format_penalty=format_penalty,
            max_actions=max_actions,
            render_mode=render_mode,
        )
        self.level = level
        # BabyAI's reward counts steps against max_steps: ours is the episode's action budget
        self.minigrid = make_level(level, **(level_kwargs or {}), max_steps=max_actions)
        #: counts resets, so an oracle knows when a new episode began
        self.episode_index = 0
        #: the last MiniGrid action executed, or ``None`` at the start of an episode
        self.last_action: int | None = None
        self._status = "playing"
        self._text = ""
        self._instruction = self._write_instruction()

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        return self._instruction

    def _write_instruction(self) -> str:
        actions = ", ".join(ACTION_NAMES)
        return (
            "You are an agent in a grid world of rooms (BabyAI). Carry out the mission written "
            "at the top of each observation. You see only the cells in front of you (7x7, "
            "walls and closed doors block the view); positions are given relative to you, in "
            "steps forward and to your left or right. Each action: turn left or turn right "
            "(turn 90 degrees in place), go forward (one cell, if it is free), pick up (the "
            "object in front of you; you carry at most one), drop (what you carry, in front of "
            "you), toggle (open or close the door in front of you; a locked door opens only "
            "while you carry a key of its colour; a box opens), done (does nothing). A 'go to' "
            "mission is done when you face the object from the cell next to it. The sooner "
            f"you finish, the higher the reward. Actions: {actions}. "
            f"{self.answer_format.describe()} Example: {self.answer_format.wrap('go forward')}"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return ACTION_NAMES

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        # BabyAI's generator prints each layout it rejects: keep that out of the agent's output
        with contextlib.redirect_stdout(io.StringIO()):
            self.minigrid.reset(seed=rng.getrandbits(32))
        self.episode_index += 1
        self.last_action = None
        self._status = "playing"
        self._text = self._describe()

    def _observation(self) -> str:
        return self._text

    def _parse_action(self, text: str) -> int | None:
        if not text.isascii():
            return None
        return _ACTION_BY_NAME.get(text.lower())

    def _apply(self, action: int) -> tuple[float, bool]:
        before = self._text
        _, reward, terminated, _, _ = self.minigrid.step(action)
        self.last_action = action
        if terminated:
            self._status = "success" if reward > 0 else "failure"
        self._text = self._describe()
        return float(reward), self._text != before or terminated

    def _solved(self) -> bool:
        return self._status == "success"

    def _failed(self) -> bool:
        return self._status == "failure"

    # ------------------------------------------------------------------ the text
    @property
    def mission(self) -> str:
        """The mission, in BabyAI's words (``go to the red ball``)."""
        return self.minigrid.mission

    def _describe(self) -> str:
        grid = self.minigrid
        view = grid.gen_obs()["image"]
        carrying = grid.carrying
        carried = name_of(carrying.encode()) if carrying is not None else "nothing"
        ahead = view[view.shape[0] // 2, view.shape[1] - 2]
        lines = [
            f"Mission: {grid.mission}",
            f"You face {_COMPASS[grid.agent_dir]}. You carry {carried}. "
            f"In front of you: {name_of(ahead)}.",
            "You see:",
        ]
        seen = describe_view(view)
        lines += [f"- {line}" for line in seen] if seen else ["- nothing"]
        return "\n".join(lines)
