"""Whether a query's result answers the question: the gold query's rows, compared as a grader would.

Column names never matter and neither does the order of the columns; the order of the rows
matters only when the question asks for one. Numbers compare after rounding to 4 decimals
(``AVG`` in another order of summation), ``3`` equals ``3.0``, text compares exactly.

Example:
    >>> same_result([("Oslo", 2), ("Lima", 1)], [(1, "Lima"), (2, "Oslo")], ordered=False)
    True
    >>> same_result([("Oslo", 2), ("Lima", 1)], [(1, "Lima"), (2, "Oslo")], ordered=True)
    False
    >>> same_result([(2.5,)], [(2.50000001,)], ordered=False)
    True
"""

from __future__ import annotations

from collections import Counter
from itertools import permutations

from environments.text_to_sql.database import Row, Value

#: beyond this many columns only the given column order is tried (5! = 120 orders at most)
MAX_PERMUTED_COLUMNS = 5


def normalise(value: Value) -> Value:
    """Rounds floats to 4 decimals; any other value is kept."""
    return round(value, 4) if isinstance(value, float) else value


def same_result(gold: list[Row], rows: list[Row], *, ordered: bool) -> bool:
    """Whether ``rows`` hold the same values as ``gold`` in some order of their columns."""
    if len(gold) != len(rows):
        return False
    if not gold:
        return True
    width = len(gold[0])
    if any(len(row) != width for row in rows):
        return False
    gold_rows = [tuple(map(normalise, row)) for row in gold]
    target = gold_rows if ordered else Counter(gold_rows)
    orders = permutations(range(width)) if width <= MAX_PERMUTED_COLUMNS else [range(width)]
    for order in orders:
        moved = [tuple(normalise(row[i]) for i in order) for row in rows]
        if (moved if ordered else Counter(moved)) == target:
            return True
    return False
