"""A Countdown solver: search over pairs of the remaining values, exact arithmetic.

Every expression that uses each number once is reached by repeatedly replacing two of the
remaining values with their sum, difference, product or quotient, until one value is left.
The search tries those combinations depth first and remembers the multisets of values it has
already exhausted (two orders of the same combinations reach the same multiset).

It first searches whole-number steps only (no negative value, no fraction: the classic game's
rule, and the generator's guarantee), which is complete for such solutions and several times
faster; only where that fails does it search every rational step.

Example:
    >>> solve((1, 2, 3, 4), 24)
    '(3 + (2 + 1)) * 4'
    >>> solve((3, 3, 8, 8), 24)  # only a fraction gets there: 8 / (3 - 8 / 3)
    '8 / (3 - (8 / 3))'
    >>> solve((2, 2), 5) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

Value = int | Fraction
# an item is a value and its expression
_Item = tuple[Value, str]
_Combine = Callable[[_Item, _Item], list[_Item]]


def solve(numbers: Sequence[int], target: int) -> str | None:
    """An expression using every number exactly once that equals ``target``, or ``None``."""
    if not numbers:
        return None
    for combine, convert in ((_whole_steps, int), (_rational_steps, Fraction)):
        items = [(convert(n), str(n)) for n in numbers]
        found = _search(items, convert(target), combine, set())
        if found is not None:
            return strip_outer_parentheses(found)
    return None


def _search(
    items: list[_Item], target: Value, combine: _Combine, exhausted: set[tuple[Value, ...]]
) -> str | None:
    count = len(items)
    if count == 1:
        return items[0][1] if items[0][0] == target else None
    key = tuple(sorted(value for value, _ in items))
    if key in exhausted:
        return None
    for i in range(count):
        for j in range(i + 1, count):
            rest = items[:i] + items[i + 1 : j] + items[j + 1 :]
            for combined in combine(items[i], items[j]):
                if count == 2:
                    if combined[0] == target:
                        return combined[1]
                elif (found := _search([*rest, combined], target, combine, exhausted)) is not None:
                    return found
    exhausted.add(key)
    return None


def _whole_steps(a: _Item, b: _Item) -> list[_Item]:
    """Combinations with a whole, non-negative result (``x / 1`` is left out: it is ``x * 1``)."""
    (x, ex), (y, ey) = (a, b) if a[0] >= b[0] else (b, a)
    results = [(x + y, f"({ex} + {ey})"), (x * y, f"({ex} * {ey})"), (x - y, f"({ex} - {ey})")]
    if y > 1 and x % y == 0:
        results.append((x // y, f"({ex} / {ey})"))
    return results


def _rational_steps(a: _Item, b: _Item) -> list[_Item]:
    """Every combination; a negative difference is written the other way round."""
    (x, ex), (y, ey) = (a, b) if a[0] >= b[0] else (b, a)
    results = [(x + y, f"({ex} + {ey})"), (x * y, f"({ex} * {ey})"), (x - y, f"({ex} - {ey})")]
    if y != 0:
        results.append((x / y, f"({ex} / {ey})"))
    if x != 0 and x != y:
        results.append((y / x, f"({ey} / {ex})"))
    return results


def strip_outer_parentheses(text: str) -> str:
    """Drops the outermost pair of parentheses when it encloses the whole expression."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for index, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and index < len(text) - 1:
            return text
    return text[1:-1]
