"""Countdown puzzles that always have a solution: the target is built from the numbers.

The generator draws the numbers, then a random expression that uses each of them once (a random
binary tree over a random order, with random operators), and keeps its value as the target
when it is a whole number in ``1..max_target`` and every step of it is a whole, non-negative
number (the classic game's rule: such a solution is the one the solver finds fastest; replies
may still use fractions). Targets that are the plain sum or product of all
the numbers are refused: those would reward a reply that ignores the arithmetic.

Example:
    >>> import random
    >>> puzzle = generate_puzzle(random.Random(0), count=4, max_number=20, max_target=100)
    >>> len(puzzle.numbers), 1 <= puzzle.target <= 100
    (4, True)
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from environments.countdown.solver import strip_outer_parentheses as _strip_outer

#: expressions tried on one draw of numbers before drawing new numbers
_TRIES_PER_DRAW = 50
_MAX_DRAWS = 200


@dataclass(frozen=True)
class CountdownPuzzle:
    """A puzzle and the expression it was built from.

    Attributes:
        numbers: the numbers to use, each exactly once.
        target: the value to reach.
        solution: an expression over ``numbers`` whose value is ``target``.
    """

    numbers: tuple[int, ...]
    target: int
    solution: str


def generate_puzzle(
    rng: random.Random, count: int, max_number: int, max_target: int
) -> CountdownPuzzle:
    """Draws ``count`` numbers in ``1..max_number`` and a reachable target in ``1..max_target``."""
    if count < 2:
        raise ValueError(f"a Countdown puzzle needs at least 2 numbers, got {count}")
    if max_number < 1 or max_target < 1:
        raise ValueError(f"max_number and max_target must be >= 1, got {max_number}, {max_target}")
    numbers: list[int] = []
    for _ in range(_MAX_DRAWS):
        numbers = [rng.randint(1, max_number) for _ in range(count)]
        trivial = {sum(numbers), math.prod(numbers)}
        for _ in range(_TRIES_PER_DRAW):
            order = numbers[:]
            rng.shuffle(order)
            built = _random_expression(rng, order)
            if built is not None and 1 <= built[0] <= max_target and built[0] not in trivial:
                return CountdownPuzzle(tuple(numbers), built[0], _strip_outer(built[1]))
    # reached only where no other target exists (two 1s, say): the plain sum keeps reset working
    return CountdownPuzzle(tuple(numbers), sum(numbers), " + ".join(map(str, numbers)))


def _random_expression(rng: random.Random, numbers: list[int]) -> tuple[int, str] | None:
    """A random expression over ``numbers`` in order, or ``None`` if a step is not whole."""
    if len(numbers) == 1:
        return numbers[0], str(numbers[0])
    split = rng.randint(1, len(numbers) - 1)
    left = _random_expression(rng, numbers[:split])
    right = _random_expression(rng, numbers[split:])
    if left is None or right is None:
        return None
    (x, ex), (y, ey) = left, right
    operator = rng.choice("+-*/")
    if operator == "+":
        value = x + y
    elif operator == "*":
        value = x * y
    elif operator == "-":
        value = x - y
    else:
        if y == 0 or x % y:
            return None
        value = x // y
    return (value, f"({ex} {operator} {ey})") if value >= 0 else None
