"""Reading a Countdown answer: an arithmetic expression parsed with ``ast``, never ``eval``.

An expression is non-negative integer literals joined by ``+ - * /`` and parentheses (``×`` and
``÷`` are read as ``*`` and ``/``), optionally followed by ``= <number>``, which is ignored: only
the left side counts. Values are exact ``Fraction``s, so ``6 / 4 * 2`` is exactly 3.

Example:
    >>> expression = parse_expression("(25 - 5) * 3 / 4 = 15")
    >>> expression.value, expression.numbers
    (Fraction(15, 1), (25, 5, 3, 4))
    >>> parse_expression("2 ** 10") is None
    True
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction

from rollenv import thread_safe_ast

#: longer answers are not expressions over a handful of numbers; the cap also keeps the
#: parser's and the evaluator's recursion shallow
MAX_EXPRESSION_CHARS = 300
MAX_LITERALS = 12
_CHARACTERS = re.compile(r"[0-9+\-*/() \t\n]*")
_RESULT_SUFFIX = re.compile(r"=\s*[0-9]+\s*$")
_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


@dataclass(frozen=True)
class Expression:
    """A parsed expression.

    Attributes:
        numbers: the integer literals in the order they appear.
        value: the exact value, or ``None`` where it divides by zero.
    """

    numbers: tuple[int, ...]
    value: Fraction | None


def parse_expression(text: str) -> Expression | None:
    """Parses ``text`` as a Countdown expression, or returns ``None`` if it is not one."""
    text = text.replace("×", "*").replace("÷", "/")
    text = _RESULT_SUFFIX.sub("", text).strip()
    if not text or len(text) > MAX_EXPRESSION_CHARS or not _CHARACTERS.fullmatch(text):
        return None
    try:
        tree = thread_safe_ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    numbers: list[int] = []
    try:
        value = _evaluate(tree.body, numbers)
    except _NotAnExpression:
        return None
    if len(numbers) > MAX_LITERALS:
        return None
    return Expression(tuple(numbers), value)


class _NotAnExpression(Exception):
    """A node outside the grammar (a unary minus, a power, a leading-zero literal...)."""


def _evaluate(node: ast.AST, numbers: list[int]) -> Fraction | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        numbers.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left = _evaluate(node.left, numbers)
        right = _evaluate(node.right, numbers)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        return None if right == 0 else left / right
    raise _NotAnExpression


def format_value(value: Fraction | None) -> str:
    """The value as a person writes it: ``7``, ``7/2``, or ``undefined`` (division by zero).

    Example:
        >>> format_value(Fraction(7, 2)), format_value(None)
        ('7/2', 'undefined')
    """
    if value is None:
        return "undefined"
    return str(value.numerator) if value.denominator == 1 else str(value)
