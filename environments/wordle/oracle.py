"""``WordleOracle``: an information-maximising Wordle solver.

It keeps the secrets still consistent with every feedback so far (privileged only in knowing
which pool secrets are drawn from, as human solvers know the answer list) and guesses the word
whose feedback splits them into the most even groups: the one with the highest entropy of the
feedback pattern over the remaining candidates. A candidate wins ties and gets a bonus of its
chance of being the secret, so with few candidates left it guesses one of them.

Scoring every dictionary word against every candidate each turn is too slow in Python, so the
guesses scored are the candidates (at most ``MAX_SCORED_CANDIDATES``, by letter coverage) plus
the ``SHORTLIST`` dictionary words that cover the candidates' most frequent letters. Feedback
patterns are computed for all of them at once with numpy (``pattern_matrix``), and the opening
guess, the same every game of a pool, is computed once per process.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from environments.wordle import words as word_lists
from environments.wordle.env import WordleEnv
from environments.wordle.feedback import GREEN, YELLOW

SHORTLIST = 120
MAX_SCORED_CANDIDATES = 400


def encode(words: tuple[str, ...] | list[str]) -> np.ndarray:
    """Words as a ``(len(words), length)`` array of letter codes 0..25."""
    return (np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8) - ord("a")).reshape(
        len(words), -1
    )


def pattern_matrix(guesses: np.ndarray, secrets: np.ndarray) -> np.ndarray:
    """Feedback of every guess against every secret, as base-3 codes ``(G, S)``.

    Digit ``i`` (weight ``3**i``) is letter ``i``'s colour, ``feedback.GREY/YELLOW/GREEN``;
    the rules are those of ``feedback.feedback`` (greens first, then the unclaimed letters
    handed out left to right).
    """
    g = guesses[:, None, :]
    s = secrets[None, :, :]
    length = guesses.shape[1]
    green = g == s
    yellow = np.zeros_like(green)
    for i in range(length):
        letter = g[:, :, i : i + 1]
        # the secret's copies of this letter not matched green
        unclaimed = ((s == letter) & ~green).sum(axis=2)
        # the copies already handed to earlier guess positions as yellow
        claimed = ((g[:, :, :i] == letter) & yellow[:, :, :i]).sum(axis=2)
        yellow[:, :, i] = ~green[:, :, i] & (unclaimed > claimed)
    colours = np.where(green, GREEN, np.where(yellow, YELLOW, 0)).astype(np.int32)
    return (colours * (3 ** np.arange(length, dtype=np.int32))).sum(axis=2)


def letter_presence(coded: np.ndarray) -> np.ndarray:
    """Which of the 26 letters each encoded word contains, ``(N, 26)`` booleans."""
    present = np.zeros((len(coded), 26), dtype=bool)
    np.put_along_axis(present, coded.astype(np.intp), True, axis=1)
    return present


@functools.cache
def _dictionary_presence(words: tuple[str, ...]) -> np.ndarray:
    return letter_presence(encode(words))


@functools.cache
def _encoded(words: tuple[str, ...]) -> np.ndarray:
    return encode(words)


def code_of(colours: tuple[int, ...]) -> int:
    """A feedback tuple as the base-3 code ``pattern_matrix`` uses."""
    return sum(c * 3**i for i, c in enumerate(colours))


@functools.lru_cache(maxsize=4096)
def best_guess(candidates: tuple[str, ...], words: tuple[str, ...], guesses_left: int = 6) -> str:
    """The guess (from ``words`` or ``candidates``) whose feedback best splits ``candidates``.

    With two guesses left it maximises the chance to win within them instead (a candidate now,
    or a guess after which one candidate is left); with one left it guesses a candidate.
    Remembered: every game opens with the same guess, so the second guess's candidates are one
    of the opening's few hundred feedback groups, and games share them.
    """
    if len(candidates) <= 2 or guesses_left <= 1:
        return candidates[0]
    coded = encode(candidates)
    candidate_presence = letter_presence(coded)
    # a letter that half the candidates contain splits them best; one all or none contain
    # tells nothing (the "_erry" words share e, r and y)
    count = candidate_presence.sum(axis=0)
    informative = np.minimum(count, len(candidates) - count)
    coverage = _dictionary_presence(words) @ informative
    shortlist = [words[i] for i in np.argsort(-coverage, kind="stable")[:SHORTLIST]]
    if len(candidates) > MAX_SCORED_CANDIDATES:
        order = np.argsort(-(candidate_presence @ informative), kind="stable")
        scored_candidates = [candidates[i] for i in order[:MAX_SCORED_CANDIDATES]]
    else:
        scored_candidates = list(candidates)
    pool = list(dict.fromkeys(scored_candidates + shortlist))
    patterns = pattern_matrix(encode(pool), coded)
    is_candidate = np.isin(pool, candidates)
    entropy = np.array([_entropy(row) for row in patterns])
    if guesses_left == 2:
        scores = [
            (_chance_to_win_in_two(row), candidate, e)
            for row, candidate, e in zip(patterns, is_candidate, entropy, strict=True)
        ]
        return pool[max(range(len(pool)), key=scores.__getitem__)]
    scores = entropy + is_candidate / len(candidates)
    return pool[int(np.argmax(scores))]  # argmax takes the first: candidates come first


def _chance_to_win_in_two(patterns: np.ndarray) -> float:
    """The chance a guess with these feedback patterns (one per candidate) wins within two.

    A candidate alone in its feedback group is known after the guess and guessed next; the
    guess itself, if a candidate, is alone in the all-green group: a win now.
    """
    counts = np.unique(patterns, return_counts=True)[1]
    return float((counts == 1).sum()) / len(patterns)


def _entropy(patterns: np.ndarray) -> float:
    counts = np.unique(patterns, return_counts=True)[1]
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


#: ``opening_guess`` of the registered games, stored: computing one takes a second or two
#: (tests/environments/wordle checks they are still what the solver computes)
STORED_OPENING_GUESSES = {
    (5, "common"): "tarse",
    (5, "all"): "tarie",
    (4, "common"): "lare",
    (4, "all"): "tare",
}


@functools.cache
def opening_guess(length: int, pool: str, *, stored: bool = True) -> str:
    """The first guess of every game with secrets from ``pool`` (computed once per process)."""
    if stored and (length, pool) in STORED_OPENING_GUESSES:
        return STORED_OPENING_GUESSES[length, pool]
    return best_guess(word_lists.secret_pool(length, pool), word_lists.dictionary(length))


class WordleOracle:
    """Filters the secret pool by each feedback and plays ``best_guess`` of what is left."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, WordleEnv):
            raise TypeError(f"WordleOracle needs a WordleEnv, got {type(inner).__name__}")
        self._env = inner

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        if not env.guesses:
            return env.answer_format.wrap(opening_guess(env.word_length, env.secret_pool))
        left = env.max_guesses - len(env.guesses)
        return env.answer_format.wrap(best_guess(self.candidates(), env.words, left))

    def candidates(self) -> tuple[str, ...]:
        """The pool's secrets consistent with every feedback of the game so far."""
        env = self._env
        # a secret given by reset(options=...) may lie outside the pool: then the dictionary
        return consistent(env.secrets, env.guesses) or consistent(env.words, env.guesses)


def consistent(
    words: tuple[str, ...], guesses: list[tuple[str, tuple[int, ...]]]
) -> tuple[str, ...]:
    """The ``words`` that would have given every ``(guess, colours)`` of ``guesses``."""
    coded = _encoded(words)
    keep = np.ones(len(words), dtype=bool)
    for guess, colours in guesses:
        keep &= pattern_matrix(encode([guess]), coded)[0] == code_of(colours)
    return tuple(words[i] for i in np.flatnonzero(keep))
