"""The pinned opponents of a TextArena env: ``"random"`` or ``"openai:<base_url>:<model>"``.

An opponent answers its seat's view of the game with the moves to try, best first; the env plays
them in order until the game accepts one (see ``TextArenaEnv``). TextArena 0.7.4 ships no rule
bots (its ``agents`` are LLM clients), so there is none here.

* ``random`` picks uniformly among the candidate moves (``environments.textarena.moves``), from a
  generator seeded by the episode's seed.
* ``openai:<base_url>:<model>`` asks any OpenAI-compatible chat server (``roll-agent serve``,
  vLLM, ...) with the game's prompt as the system message and the seat's transcript as the user
  message; its reply is the move (TextArena reads the bracketed token out of it). The model is
  the text after the last ``:``. ``OPENAI_API_KEY`` is sent if set.

Example:
    >>> opponent = make_opponent("random")
    >>> opponent.reset(seed=3)
    >>> len(opponent.moves(seat=1, prompt="", transcript="", candidates=["[0]", "[1]"]))
    2
    >>> make_opponent("openai:http://127.0.0.1:8000/v1:tiny").model
    'tiny'
"""

from __future__ import annotations

import os
import random
import re
from typing import Protocol

OPPONENT_FORMS = (
    "'random' or 'openai:<base_url>:<model>' (e.g. 'openai:http://127.0.0.1:8000/v1:qwen')"
)


class Opponent(Protocol):
    """What plays the seats the agent does not."""

    #: whether ``moves`` reads its seat's transcript (the env only writes one for those that do)
    reads_transcript: bool

    def reset(self, seed: int) -> None:
        """Starts an episode; every choice of the episode follows from ``seed``."""

    def moves(self, seat: int, prompt: str, transcript: str, candidates: list[str]) -> list[str]:
        """The moves to try for ``seat``, best first (the env stops at the first accepted)."""


class RandomOpponent:
    """Tries the candidate moves in a random order (at most ``max_tries`` of them)."""

    reads_transcript = False

    def __init__(self, max_tries: int = 200) -> None:
        self.max_tries = max_tries
        self._rng = random.Random(0)

    def reset(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def moves(self, seat: int, prompt: str, transcript: str, candidates: list[str]) -> list[str]:
        return self._rng.sample(candidates, min(len(candidates), self.max_tries))


class OpenAIOpponent:
    """Asks an OpenAI-compatible chat server for each move.

    Args:
        base_url: the server's API root (``http://127.0.0.1:8000/v1``).
        model: the model name to ask for.
        timeout: seconds per request.
        max_tokens: the reply's length cap.
    """

    reads_transcript = True

    def __init__(
        self, base_url: str, model: str, timeout: float = 60.0, max_tokens: int = 256
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self.max_tokens = max_tokens
        self._seed = 0
        self._client = None  # built on first use: importing openai costs a few hundred ms

    def reset(self, seed: int) -> None:
        self._seed = seed

    def moves(self, seat: int, prompt: str, transcript: str, candidates: list[str]) -> list[str]:
        if self._client is None:
            import openai

            api_key = os.environ.get("OPENAI_API_KEY", "EMPTY")
            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=api_key, timeout=self.timeout, max_retries=0
            )
        response = self._client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": prompt},
                {"role": "user", "content": transcript or "Make your move."},
            ],
            max_tokens=self.max_tokens,
            temperature=0.0,
            seed=self._seed,
        )
        self._seed += 1
        return [response.choices[0].message.content or ""]


def make_opponent(spec: str) -> RandomOpponent | OpenAIOpponent:
    """Builds an opponent from its spec string.

    Raises:
        ValueError: the spec is neither form (the message shows both).
    """
    if not isinstance(spec, str):
        raise ValueError(f"opponent must be a str, {OPPONENT_FORMS}; got {spec!r}")
    if spec == "random":
        return RandomOpponent()
    if spec.startswith("openai:"):
        base_url, _, model = spec[len("openai:") :].rpartition(":")
        port_and_path = re.fullmatch(r"\d+(/.*)?", model) is not None  # the model was left out
        if not base_url.startswith(("http://", "https://")) or not model or port_and_path:
            raise ValueError(
                f"bad opponent {spec!r}: expected 'openai:<base_url>:<model>' with an http(s) "
                "base URL and a model name after the last ':'"
            )
        return OpenAIOpponent(base_url, model)
    raise ValueError(f"unknown opponent {spec!r}; allowed: {OPPONENT_FORMS}")
