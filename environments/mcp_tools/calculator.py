"""``calculate``: the arithmetic tool, safe to run on any text an agent writes.

Only numbers, ``+ - * / // % **`` and brackets are read (Python's syntax, parsed with ``ast``,
never ``eval``); powers are capped so ``9**9**9`` is an error, not a frozen server.

Example:
    >>> calculate("3 * (2.5 + 1)")
    '10.5'
    >>> calculate("12 * 4.25 + 7")
    '58'
    >>> calculate("__import__('os')")
    Traceback (most recent call last):
    ...
    ValueError: only numbers, + - * / // % ** and brackets are allowed
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

from rollenv import thread_safe_ast

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 100
MAX_MAGNITUDE = 1e100

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_NOT_ALLOWED = "only numbers, + - * / // % ** and brackets are allowed"


def calculate(expression: str) -> str:
    """Evaluates an arithmetic expression; the result is rounded to 10 decimals.

    Raises:
        ValueError: the expression is not arithmetic, divides by zero or is too large.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = thread_safe_ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"not an expression: {expression!r}") from None
    value = _evaluate(tree.body)
    rounded = round(value, 10)
    return str(int(rounded)) if rounded == int(rounded) else str(rounded)


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponents above {MAX_EXPONENT} are not allowed")
        try:
            value = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ValueError("division by zero") from None
        except OverflowError:
            raise ValueError("the result is too large") from None
        if isinstance(value, complex) or abs(value) > MAX_MAGNITUDE:
            raise ValueError("the result is too large or not a real number")
        return value
    raise ValueError(_NOT_ALLOWED)
