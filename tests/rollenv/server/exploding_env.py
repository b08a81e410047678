"""Test-only envs of the server tests: one that raises in step, one whose data is missing."""

from __future__ import annotations

import random
from typing import Any

from rollenv import TextEnv

#: A registered env whose step raises when the reply says "boom" (an env's bug, on purpose).
EXPLODING_ID = "ServerTestExploding-v0"
#: An id its family declares unavailable here (its data is missing).
UNAVAILABLE_ID = "ServerTestNeedsCorpus-v0"
UNAVAILABLE_REASON = "needs the nltk corpus 'words' (python -m nltk.downloader words)"


class ExplodingEnv(TextEnv):
    """Count up with ``<answer>up</answer>``; the reply ``<answer>boom</answer>`` raises."""

    @property
    def instruction(self) -> str:
        return "Reply <answer>up</answer> to count up; never say boom."

    @property
    def action_words(self) -> tuple[str, ...]:
        return ("up", "boom")

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        self.count = rng.randrange(3)

    def _observation(self) -> str:
        return f"count: {self.count}"

    def _parse_action(self, text: str) -> str | None:
        return text if text in self.action_words else None

    def _apply(self, action: str) -> tuple[float, bool]:
        if action == "boom":
            raise RuntimeError("the counter exploded")
        self.count += 1
        return 0.0, True

    def _solved(self) -> bool:
        return self.count >= 5


#: A registered env whose constructor fails (a bug, not the client's kwargs).
BROKEN_ID = "ServerTestBroken-v0"


def broken_env(**kwargs: Any) -> TextEnv:
    """An entry point that raises instead of building an env."""
    raise RuntimeError("the level file is corrupt")
