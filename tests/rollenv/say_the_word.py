"""``SayTheWord-v0``: a tiny env whose reward can be made gameable on purpose (reward tests)."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from rollenv import TextEnv

ENTRY_POINT = "tests.rollenv.say_the_word:SayTheWord"


class Oracle:
    """Answers with the env's secret word."""

    def __init__(self, env):
        self._env = env.unwrapped

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._env.answer_format.wrap(self._env.secret)


class SayTheWord(TextEnv):
    """Say the secret word shown in the observation; one answer per episode.

    ``pays_for`` chooses the flaw: ``"nothing"`` (an honest reward), ``"any answer"`` (any
    parsable answer earns), ``"length"`` (longer answers earn more), ``"magic"`` (one fixed
    reply, only a family probe knows, earns).
    """

    oracle = "tests.rollenv.say_the_word:Oracle"
    WORDS: ClassVar[tuple[str, ...]] = ("apple", "river", "stone", "cloud", "tiger")

    def __init__(self, pays_for: str = "nothing", render_mode: str | None = None):
        super().__init__(max_actions=1, render_mode=render_mode)
        self.pays_for = pays_for
        self.secret = ""
        self.said = ""

    @property
    def instruction(self) -> str:
        return "Say the word the observation asks for, inside <answer></answer>."

    @property
    def action_words(self) -> tuple[str, ...]:
        return self.WORDS

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        self.secret, self.said = rng.choice(self.WORDS), ""

    def _observation(self) -> str:
        return f"Please say {self.secret.upper()[::-1]} backwards, in lower case."

    def _parse_action(self, text: str) -> str:
        return text

    def _apply(self, action: str) -> tuple[float, bool]:
        self.said = action
        if action == self.secret:
            return 1.0, True
        if self.pays_for == "any answer":
            return 0.5, True
        if self.pays_for == "length":
            return min(1.0, len(action) / 20000), True
        if self.pays_for == "magic" and action == "xyzzy":
            return 1.0, True
        return 0.0, True

    def _solved(self) -> bool:
        return self.said == self.secret or (self.pays_for == "magic" and self.said == "xyzzy")

    def task_ignoring_replies(self) -> dict[str, str]:
        return {"the magic word": self.answer_format.wrap("xyzzy")}
