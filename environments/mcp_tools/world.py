"""The data behind the MCP server's tools, and the tasks asked about it, drawn from a seed.

A ``World`` is a small office: order files (``orders/2024-03.csv``: item and quantity lines),
project notes (``projects/falcon.md``: owner, budget) and lookup tables (``prices``: an item's
unit price; ``emails``: a person's address). A ``Task`` asks for one fact that takes 1 to 3
tool calls to find, and carries the calls that find it (what the oracle plays) and its answer.

Example:
    >>> import random
    >>> world, task = generate(random.Random(0), difficulty="hard")
    >>> [call.tool for call in task.plan][0]
    'read_file'
    >>> is_correct(str(task.answer), task.answer)
    True
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field

_PEOPLE = [
    f"{first} {last}"
    for first in ("Ana", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas")
    for last in ("Alves", "Brandt", "Costa", "Diaz", "Eze", "Fischer", "Garcia", "Ito")
]
_ITEMS = [
    "desk lamp",
    "kettle",
    "backpack",
    "office chair",
    "blender",
    "water bottle",
    "speaker",
    "tent",
    "coffee mug",
    "wall clock",
    "notebook",
    "stapler",
]
_PROJECTS = ["falcon", "orchid", "granite", "harbor", "juniper", "meteor", "quartz", "tundra"]
_DOMAINS = ["example.org", "acme.test", "northwind.test"]
_MONTHS = [f"2024-{m:02d}" for m in range(1, 13)]

DIFFICULTIES = {
    "easy": ("unit_price", "item_quantity"),
    "hard": ("owner_email", "order_cost"),
    "mixed": ("unit_price", "item_quantity", "owner_email", "order_cost"),
}


@dataclass(frozen=True)
class World:
    """What the tools serve: files by path and lookup tables by name."""

    files: dict[str, str]
    tables: dict[str, dict[str, str]]

    def to_json(self) -> str:
        return json.dumps({"files": self.files, "tables": self.tables}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> World:
        data = json.loads(text)
        return cls(dict(data["files"]), {k: dict(v) for k, v in data["tables"].items()})


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool with its arguments."""

    tool: str
    arguments: dict[str, str] = field(default_factory=dict)

    def action(self) -> str:
        """The call as the env's action text: ``call[tool]{json arguments}``."""
        return f"call[{self.tool}]{json.dumps(self.arguments)}"


@dataclass(frozen=True)
class Task:
    """A question, the calls that answer it and the answer (a number or a text)."""

    question: str
    plan: tuple[ToolCall, ...]
    answer: float | str
    kind: str


def generate(rng: random.Random, difficulty: str = "mixed") -> tuple[World, Task]:
    """Draws a world and a task of one of the ``difficulty``'s kinds."""
    world = _generate_world(rng)
    kind = rng.choice(DIFFICULTIES[difficulty])
    while True:
        task = _TASKS[kind](world, rng)
        if not _answer_in_question(task):
            return world, task


def _generate_world(rng: random.Random) -> World:
    items = rng.sample(_ITEMS, 8)
    prices = {item: f"{rng.randint(150, 9999) / 100:.2f}" for item in items}
    files: dict[str, str] = {}
    for month in sorted(rng.sample(_MONTHS, 3)):
        lines = ["item,quantity"]
        for _ in range(rng.randint(4, 7)):
            lines.append(f"{rng.choice(items)},{rng.randint(2, 40)}")
        files[f"orders/{month}.csv"] = "\n".join(lines) + "\n"
    people = rng.sample(_PEOPLE, 6)
    domain = rng.choice(_DOMAINS)
    emails = {p: f"{p.split()[0][0].lower()}.{p.split()[1].lower()}@{domain}" for p in people}
    for project in rng.sample(_PROJECTS, 4):
        files[f"projects/{project}.md"] = (
            f"# Project {project.title()}\n"
            f"Owner: {rng.choice(people)}\n"
            f"Budget: {rng.randint(5, 90) * 1000} EUR\n"
            f"Status: {rng.choice(['planning', 'active', 'on hold'])}\n"
        )
    files["notes/readme.txt"] = (
        "Orders are in orders/, one CSV per month. Project notes are in projects/.\n"
        "Unit prices are in the 'prices' table; email addresses in the 'emails' table.\n"
    )
    return World(files, {"prices": prices, "emails": emails})


# ---------------------------------------------------------------------------------- tasks
def _order_file(world: World, rng: random.Random) -> tuple[str, str, int]:
    """An order file, one of its items and that item's total quantity in the file."""
    path = rng.choice(sorted(p for p in world.files if p.startswith("orders/")))
    rows = [line.split(",") for line in world.files[path].splitlines()[1:]]
    item = rng.choice(sorted({name for name, _ in rows}))
    return path, item, sum(int(quantity) for name, quantity in rows if name == item)


def _unit_price(world: World, rng: random.Random) -> Task:
    item = rng.choice(sorted(world.tables["prices"]))
    return Task(
        f"What is the unit price of the item '{item}' in the 'prices' table? "
        "Answer with the number only.",
        (ToolCall("lookup", {"table": "prices", "key": item}),),
        float(world.tables["prices"][item]),
        "unit_price",
    )


def _item_quantity(world: World, rng: random.Random) -> Task:
    path, item, quantity = _order_file(world, rng)
    return Task(
        f"How many units of '{item}' were ordered in total in the file {path}? "
        "Answer with the number only.",
        (ToolCall("read_file", {"path": path}),),
        float(quantity),
        "item_quantity",
    )


def _order_cost(world: World, rng: random.Random) -> Task:
    path, item, quantity = _order_file(world, rng)
    price = world.tables["prices"][item]
    return Task(
        f"What do all the '{item}' units ordered in the file {path} cost together, at the "
        "unit price in the 'prices' table? Answer with the number only.",
        (
            ToolCall("read_file", {"path": path}),
            ToolCall("lookup", {"table": "prices", "key": item}),
            ToolCall("calculate", {"expression": f"{quantity} * {price}"}),
        ),
        round(quantity * float(price), 2),
        "order_cost",
    )


def _owner_email(world: World, rng: random.Random) -> Task:
    path = rng.choice(sorted(p for p in world.files if p.startswith("projects/")))
    owner = re.search(r"Owner: (.+)", world.files[path]).group(1)
    project = path.removeprefix("projects/").removesuffix(".md")
    return Task(
        f"What is the email address of the owner of project {project.title()}? Its notes "
        "are in the projects folder. Answer with the address only.",
        (
            ToolCall("read_file", {"path": path}),
            ToolCall("lookup", {"table": "emails", "key": owner}),
        ),
        world.tables["emails"][owner],
        "owner_email",
    )


_TASKS = {
    "unit_price": _unit_price,
    "item_quantity": _item_quantity,
    "order_cost": _order_cost,
    "owner_email": _owner_email,
}

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def numbers_in(text: str) -> list[str]:
    """The numbers written in ``text`` (a question's dates and counts)."""
    return _NUMBER.findall(text)


def _answer_in_question(task: Task) -> bool:
    return any(is_correct(number, task.answer) for number in numbers_in(task.question))


# ---------------------------------------------------------------------------------- checking
_CURRENCY = re.compile(r"^(?:[$€£]|eur|usd)\s*|\s*(?:[$€£]|eur|usd|units?)$", re.IGNORECASE)


def is_correct(reply: str, answer: float | str) -> bool:
    """Whether the answer text ``reply`` gives ``answer``.

    A number is read from the whole reply (a currency sign, a unit word and thousands commas
    allowed) and must equal the answer to within a millionth; a text answer compares without
    case, surrounding space or a final full stop.

    Example:
        >>> is_correct("$1,234.50", 1234.5), is_correct("1234.5 or 12", 1234.5)
        (True, False)
        >>> is_correct("A.Diaz@example.org.", "a.diaz@example.org")
        True
    """
    text = reply.strip().rstrip(".").strip()
    if isinstance(answer, str):
        return text.casefold() == answer.casefold()
    text = _CURRENCY.sub("", text).replace(",", "").strip()
    try:
        value = float(text)
    except ValueError:
        return False
    return abs(value - answer) <= 1e-6 * max(1.0, abs(answer))
