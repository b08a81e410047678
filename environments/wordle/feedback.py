"""Wordle's feedback on a guess: green, yellow or grey per letter, with the standard duplicate rule.

A letter is green where it matches the secret's letter in place. The secret's remaining letters
(those not matched green) are then handed out left to right: a guess letter is yellow if one of
the same letter is still unclaimed, else grey. So guessing ``speed`` against ``abide`` gives one
yellow ``e`` and one grey ``e``: the secret has only one.

Example:
    >>> feedback("speed", "abide")
    (0, 0, 1, 0, 1)
    >>> describe("speed", feedback("speed", "abide"))
    's grey, p grey, e yellow, e grey, d yellow'
"""

from __future__ import annotations

from collections import Counter

GREY, YELLOW, GREEN = 0, 1, 2
COLOUR_NAMES = ("grey", "yellow", "green")


def feedback(guess: str, secret: str) -> tuple[int, ...]:
    """Each letter of ``guess`` as ``GREY``, ``YELLOW`` or ``GREEN`` against ``secret``."""
    if len(guess) != len(secret):
        raise ValueError(f"guess {guess!r} and secret {secret!r} differ in length")
    colours = [GREEN if g == s else GREY for g, s in zip(guess, secret, strict=True)]
    unclaimed = Counter(s for s, c in zip(secret, colours, strict=True) if c != GREEN)
    for index, letter in enumerate(guess):
        if colours[index] != GREEN and unclaimed[letter] > 0:
            colours[index] = YELLOW
            unclaimed[letter] -= 1
    return tuple(colours)


def describe(guess: str, colours: tuple[int, ...]) -> str:
    """One guess's feedback as text: ``"c grey, r yellow, ..."``."""
    return ", ".join(
        f"{letter} {COLOUR_NAMES[c]}" for letter, c in zip(guess, colours, strict=True)
    )
