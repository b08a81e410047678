"""``WordleEnv``: guess a secret word in six tries, told green/yellow/grey for each letter.

Secrets and the guess dictionary come from the ``english-words`` package (``words.py``). A guess
that is not a dictionary word of the right length is an invalid reply: it costs the format
penalty, uses no guess and changes nothing. Solving pays 1, running out of guesses ends the
episode with 0.

The english-words lists carry no puzzle number, so each game gets one, drawn from the seed like
the secret but independent of it (it tells nothing about the word): NYT Wordle numbers its
puzzles the same way, and it makes starts of different seeds distinguishable in logs.

Example:
    >>> env = WordleEnv()
    >>> obs, info = env.reset(options={"secret": "crane"})
    >>> obs, reward, terminated, truncated, info = env.step("<answer>trace</answer>")
    >>> print(obs)
    Wordle game #0: guess the secret 5-letter word. 5 guesses left.
    1. trace: t grey, r green, a green, c yellow, e green
    >>> env.step("<answer>crane</answer>")[1:3]
    (1.0, True)
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from environments.wordle import words as word_lists
from environments.wordle.feedback import GREEN, describe, feedback
from rollenv.action_tools import ActionTool, text_tool
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

#: games are numbered from 1 to this (0 is a secret given by ``reset(options={"secret": ...})``)
GAME_NUMBERS = 99_999


class WordleEnv(TextEnv):
    """A Wordle-like word game.

    Args:
        word_length: letters per word (4, 5 or 6).
        secret_pool: the difficulty knob: ``"common"`` draws secrets from words both of
            english-words' dictionaries list, ``"all"`` from every allowed guess (rare words).
        max_guesses: guesses before the game is lost.
        solved_reward: reward for guessing the word.
        format_penalty: reward of a reply that is no dictionary word (no guess is used).
        answer_format: overrides how guesses are read from a reply (an ``AnswerFormat`` or its
            keyword arguments as a dict).
        render_mode: ``"ansi"`` or ``None``.

    ``reset(options={"secret": "crane"})`` plays a given secret (any dictionary word).
    """

    oracle: ClassVar[str] = "environments.wordle.oracle:WordleOracle"

    def __init__(
        self,
        word_length: int = 5,
        secret_pool: str = "common",
        *,
        max_guesses: int = 6,
        solved_reward: float = 1.0,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if max_guesses < 1:
            raise ValueError(f"max_guesses must be >= 1, got {max_guesses}")
        super().__init__(
            answer_format=answer_format or {"max_actions": 1},
            format_penalty=format_penalty,
            max_actions=max_guesses,
            render_mode=render_mode,
        )
        self.word_length = word_length
        self.secret_pool = secret_pool
        self.secrets = word_lists.secret_pool(word_length, secret_pool)
        self.words = word_lists.dictionary(word_length)
        self._allowed = frozenset(self.words)
        self.max_guesses = max_guesses
        self.solved_reward = solved_reward
        self.secret = ""
        self.game_number = 0
        self.guesses: list[tuple[str, tuple[int, ...]]] = []
        self._instruction = self._write_instruction()

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        return self._instruction

    def _write_instruction(self) -> str:
        n = self.word_length
        return (
            f"You are playing a Wordle-like game. Guess the secret {n}-letter English word in "
            f"at most {self.max_guesses} guesses. Each guess must be a real {n}-letter word; a "
            "word the dictionary does not know is rejected and costs a penalty, but uses no "
            "guess. After each guess every letter is marked: green (right letter, right place), "
            "yellow (in the word, elsewhere) or grey (not in the word, or not as many times as "
            "you guessed it: of two e's one may be yellow and the other grey). "
            f"{self.answer_format.describe()} Example: {self.answer_format.wrap('crane'[:n])}"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return self.words

    def action_tools(self) -> tuple[ActionTool, ...]:
        # the dictionary has about 10,000 words: a pattern, where an enum would fill a prompt
        pattern = f"^[A-Za-z]{{{self.word_length}}}$"
        return (text_tool("guess", "Guesses a word of the dictionary.", "word", pattern=pattern),)

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if options and "secret" in options:
            secret = str(options["secret"]).lower()
            if secret not in self._allowed:
                raise ValueError(
                    f"secret {options['secret']!r} is not a {self.word_length}-letter word of "
                    "the dictionary"
                )
            self.secret, self.game_number = secret, 0
        else:
            self.secret = rng.choice(self.secrets)
            self.game_number = rng.randint(1, GAME_NUMBERS)
        self.guesses = []

    def _observation(self) -> str:
        left = self.max_guesses - len(self.guesses)
        lines = [
            f"Wordle game #{self.game_number}: guess the secret {self.word_length}-letter word. "
            f"{left} guess{'' if left == 1 else 'es'} left."
        ]
        lines += [
            f"{i}. {guess}: {describe(guess, colours)}"
            for i, (guess, colours) in enumerate(self.guesses, start=1)
        ]
        return "\n".join(lines)

    def _parse_action(self, text: str) -> str | None:
        # ASCII first: str.lower maps some non-ASCII letters (the Kelvin sign) onto ASCII ones
        if not text.isascii():
            return None
        word = text.lower()
        return word if word in self._allowed else None

    def _apply(self, action: str) -> tuple[float, bool]:
        self.guesses.append((action, feedback(action, self.secret)))
        return (self.solved_reward if self._solved() else 0.0), True

    def _solved(self) -> bool:
        return bool(self.guesses) and all(c == GREEN for c in self.guesses[-1][1])

    def _failed(self) -> bool:
        return len(self.guesses) >= self.max_guesses and not self._solved()

    def task_ignoring_replies(self) -> dict[str, str]:
        """The same word every turn, and the last guess repeated: neither reads the feedback."""
        last = self.guesses[-1][0] if self.guesses else self.words[0]
        return {
            "first dictionary word": self.answer_format.wrap(self.words[0]),
            "last guess repeated": self.answer_format.wrap(last),
        }
