"""The calculator tool, the generated data and the answer check, without a server."""

from __future__ import annotations

import random

import pytest

from environments.mcp_tools.calculator import calculate
from environments.mcp_tools.world import DIFFICULTIES, generate, is_correct, numbers_in


@pytest.mark.parametrize(
    ("expression", "result"),
    [("1 + 2 * 3", "7"), ("(1 + 2) * 3", "9"), ("7 / 2", "3.5"), ("-2 ** 2", "-4"), ("7 % 3", "1")],
)
def test_calculate_follows_python_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "x + 1",
        "abs(-1)",
        "[1, 2]",
        "1 / 0",
        "9 ** 9 ** 9",
        "1 +",
    ],
)
def test_calculate_rejects_anything_but_bounded_arithmetic(expression):
    with pytest.raises(ValueError):
        calculate(expression)


def test_is_correct_reads_one_number_or_the_exact_text():
    assert is_correct("$1,234.50", 1234.5)
    assert is_correct("1234.5 EUR", 1234.5)
    assert not is_correct("1234.5 or 12", 1234.5)
    assert not is_correct("1234.6", 1234.5)
    assert is_correct(" B.Costa@acme.test. ", "b.costa@acme.test")
    assert not is_correct("b.costa@acme.test and more", "b.costa@acme.test")


def _order_lines(world, path):
    return [line.split(",") for line in world.files[path].splitlines()[1:]]


def test_each_task_answer_follows_from_the_data():
    for seed in range(200):
        world, task = generate(random.Random(seed))
        arguments = [call.arguments for call in task.plan]
        if task.kind == "unit_price":
            assert task.answer == float(world.tables["prices"][arguments[0]["key"]])
        elif task.kind in ("item_quantity", "order_cost"):
            item = task.question.split("'")[1]
            lines = _order_lines(world, arguments[0]["path"])
            quantity = sum(int(q) for name, q in lines if name == item)
            price = float(world.tables["prices"][item]) if task.kind == "order_cost" else 1.0
            assert task.answer == pytest.approx(quantity * price)
        else:
            owner = world.files[arguments[0]["path"]].split("Owner: ")[1].splitlines()[0]
            assert task.answer == world.tables["emails"][owner]
        assert not any(is_correct(n, task.answer) for n in numbers_in(task.question))


def test_difficulties_draw_their_kinds_of_task():
    for difficulty, kinds in DIFFICULTIES.items():
        drawn = {generate(random.Random(seed), difficulty)[1].kind for seed in range(60)}
        assert drawn == set(kinds)
    for seed in range(60):
        assert len(generate(random.Random(seed), "hard")[1].plan) >= 2
