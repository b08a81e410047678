"""Countdown's expression reader, generator and solver."""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction

import pytest

from environments.countdown.expression import parse_expression
from environments.countdown.generator import generate_puzzle
from environments.countdown.solver import solve


@pytest.mark.parametrize(
    ("text", "numbers", "value"),
    [
        ("1 + 2 * 3", (1, 2, 3), Fraction(7)),
        ("(1 + 2) * 3", (1, 2, 3), Fraction(9)),
        ("8 / (3 - 8 / 3)", (8, 3, 8, 3), Fraction(24)),
        ("7 / 2", (7, 2), Fraction(7, 2)),
        ("6 × 4 ÷ 3", (6, 4, 3), Fraction(8)),
        ("(25 - 5) * 3 = 60", (25, 5, 3), Fraction(60)),
        ("2 - 5", (2, 5), Fraction(-3)),
        ("5 / (2 - 2)", (5, 2, 2), None),
    ],
)
def test_well_formed_expressions_are_computed_exactly(text, numbers, value):
    expression = parse_expression(text)
    assert expression is not None
    assert (expression.numbers, expression.value) == (numbers, value)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "-3 + 5",  # a unary minus is not one of the four operations
        "2 ** 10",
        "2 ^ 3",
        "1.5 * 2",
        "007 + 1",
        "1_000 + 1",
        "abs(3)",
        "__import__('os')",
        "3 + ",
        "(1 + 2",
        "1 + 2 = x",
        "1,2,3",
        "1 + 2\x00",
        "(" * 500 + "1" + ")" * 500,
        " + ".join(["1"] * 200),
    ],
)
def test_anything_else_is_not_an_expression(text):
    assert parse_expression(text) is None


def test_the_result_after_an_equals_sign_is_ignored():
    assert parse_expression("2 + 2 = 5").value == 4


@pytest.mark.parametrize(("count", "max_number", "max_target"), [(3, 99, 100), (6, 100, 1000)])
def test_generated_puzzles_are_solved_by_their_own_expression(count, max_number, max_target):
    rng = random.Random(7)
    for _ in range(200):
        puzzle = generate_puzzle(rng, count, max_number, max_target)
        expression = parse_expression(puzzle.solution)
        assert Counter(expression.numbers) == Counter(puzzle.numbers)
        assert expression.value == puzzle.target
        assert 1 <= puzzle.target <= max_target
        assert all(1 <= n <= max_number for n in puzzle.numbers)
        assert puzzle.target not in (sum(puzzle.numbers), math.prod(puzzle.numbers))


def test_generation_is_deterministic_per_seed():
    first = [generate_puzzle(random.Random(s), 4, 99, 100) for s in range(20)]
    again = [generate_puzzle(random.Random(s), 4, 99, 100) for s in range(20)]
    assert first == again
    assert len({(p.numbers, p.target) for p in first}) == 20


@pytest.mark.parametrize(
    ("numbers", "target"),
    [((1, 2, 3, 4), 24), ((3, 3, 8, 8), 24), ((5, 5, 7), 7), ((1, 5, 5, 5), 24), ((100, 4), 25)],
)
def test_the_solver_finds_an_expression_using_each_number_once(numbers, target):
    found = solve(numbers, target)
    expression = parse_expression(found)
    assert Counter(expression.numbers) == Counter(numbers)
    assert expression.value == target


@pytest.mark.parametrize(("numbers", "target"), [((2, 2), 5), ((1, 1, 1), 10), ((), 1)])
def test_the_solver_reports_an_unsolvable_puzzle(numbers, target):
    assert solve(numbers, target) is None


def test_the_solver_solves_generated_six_number_puzzles():
    rng = random.Random(3)
    for _ in range(30):
        puzzle = generate_puzzle(rng, 6, 100, 1000)
        expression = parse_expression(solve(puzzle.numbers, puzzle.target))
        assert Counter(expression.numbers) == Counter(puzzle.numbers)
        assert expression.value == puzzle.target


@pytest.mark.parametrize(
    ("kwargs", "field"), [({"count": 1}, "at least 2"), ({"max_number": 0}, "max_number")]
)
def test_bad_generator_settings_name_the_field(kwargs, field):
    settings = {"count": 3, "max_number": 10, "max_target": 10, **kwargs}
    with pytest.raises(ValueError, match=field):
        generate_puzzle(random.Random(0), **settings)
