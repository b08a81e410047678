"""Question templates: each turns a generated database into a question and its gold SQL.

Easy templates ask about one table (filters, counts, aggregates, order by and limit); hard ones
join tables and group rows. A template draws its table, columns and constants from the rows
actually present, so a filter matches something; ``generator.generate_task`` then rejects a
question whose answer is empty, trivial or ambiguous.

Example:
    >>> import random
    >>> from environments.text_to_sql.database import Database
    >>> from environments.text_to_sql.schema import DOMAINS
    >>> db = Database.generate(DOMAINS["school"], random.Random(1))
    >>> question = group_count(db, random.Random(2))
    >>> question.sql
    'SELECT house, COUNT(*) FROM students GROUP BY house'
    >>> question.text
    'For each house, how many students are there? Give the house and the count.'
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from environments.text_to_sql.database import Database, Value
from environments.text_to_sql.schema import Column, Table


@dataclass(frozen=True)
class Question:
    """A question with its gold query.

    Attributes:
        text: the question in English.
        sql: the gold query.
        ordered: whether the question asks for the rows in an order.
        order_keys_sql: for an ordered question, a query giving its sort keys in order; the
            first ``distinct_keys`` of them must differ, or the order (or the cut of a
            ``LIMIT``) would be ambiguous.
        distinct_keys: how many leading sort keys must be distinct (``0``: all of them).
        template: the template's name.
    """

    text: str
    sql: str
    ordered: bool = False
    order_keys_sql: str | None = None
    distinct_keys: int = 0
    template: str = ""


Template = Callable[[Database, random.Random], "Question | None"]

_AGGREGATES = {"average": "AVG", "highest": "MAX", "lowest": "MIN", "total": "SUM"}


# ---------------------------------------------------------------------------------- helpers
def _pick_table(db: Database, rng: random.Random, *kinds: str) -> Table | None:
    tables = [t for t in db.domain.tables if all(t.of_kind(k) for k in kinds)]  # type: ignore[arg-type]
    return rng.choice(tables) if tables else None


def _values(db: Database, table: Table, column: Column) -> list[Value]:
    index = table.columns.index(column) + 1
    return [row[index] for row in db.rows[table.name]]


def _literal(value: Value) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def _category_value(db: Database, table: Table, rng: random.Random) -> tuple[Column, Value]:
    column = rng.choice(table.of_kind("category"))
    return column, rng.choice(sorted(set(_values(db, table, column))))


def _threshold(db: Database, table: Table, rng: random.Random) -> tuple[Column, Value]:
    column = rng.choice(table.of_kind("number"))
    return column, rng.choice(sorted(set(_values(db, table, column))))


def _links(db: Database, *, parent_kinds: tuple[str, ...], child_kinds: tuple[str, ...]):
    """Every (child, its ref column, parent) whose tables have the given kinds of columns."""
    found = []
    for child in db.domain.tables:
        if not all(child.of_kind(k) for k in child_kinds):  # type: ignore[arg-type]
            continue
        for ref in child.of_kind("ref"):
            parent = db.domain.table(ref.ref)
            if all(parent.of_kind(k) for k in parent_kinds):  # type: ignore[arg-type]
                found.append((child, ref, parent))
    return found


def _a(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


# ---------------------------------------------------------------------------------- easy
def category_filter(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "label", "category")
    if table is None:
        return None
    label = table.label
    column, value = _category_value(db, table, rng)
    return Question(
        f"List the {label.noun} of every {table.singular} whose {column.noun} is "
        f"{_literal(value)}.",
        f"SELECT {label.name} FROM {table.name} WHERE {column.name} = {_literal(value)}",
    )


def number_filter(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "label", "number")
    if table is None:
        return None
    label = table.label
    column, value = _threshold(db, table, rng)
    word, operator = rng.choice([("above", ">"), ("below", "<")])
    return Question(
        f"List the {label.noun} of every {table.singular} whose {column.noun} is {word} {value}.",
        f"SELECT {label.name} FROM {table.name} WHERE {column.name} {operator} {value}",
    )


def count_filter(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "category")
    column, value = _category_value(db, table, rng)
    return Question(
        f"How many {table.plural} have the {column.noun} {_literal(value)}?",
        f"SELECT COUNT(*) FROM {table.name} WHERE {column.name} = {_literal(value)}",
    )


def count_threshold(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "number")
    column, value = _threshold(db, table, rng)
    return Question(
        f"How many {table.plural} have {_a(column.noun)} of at least {value}?",
        f"SELECT COUNT(*) FROM {table.name} WHERE {column.name} >= {value}",
    )


def filtered_aggregate(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "number", "category")
    number = rng.choice(table.of_kind("number"))
    column, value = _category_value(db, table, rng)
    word, function = rng.choice(sorted(_AGGREGATES.items()))
    return Question(
        f"What is the {word} {number.noun} of the {table.plural} whose {column.noun} is "
        f"{_literal(value)}?",
        f"SELECT {function}({number.name}) FROM {table.name} "
        f"WHERE {column.name} = {_literal(value)}",
    )


def top_k(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "label", "number")
    if table is None:
        return None
    label, number = table.label, rng.choice(table.of_kind("number"))
    k = rng.randint(2, 4)
    word, direction = rng.choice([("highest", "DESC"), ("lowest", "ASC")])
    order = f"FROM {table.name} ORDER BY {number.name} {direction} LIMIT {k + 1}"
    return Question(
        f"List the {label.noun} of the {k} {table.plural} with the {word} {number.noun}, "
        f"{word} first.",
        f"SELECT {label.name} FROM {table.name} ORDER BY {number.name} {direction} LIMIT {k}",
        ordered=True,
        order_keys_sql=f"SELECT {number.name} {order}",
        distinct_keys=k + 1,
    )


def two_conditions(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "label", "category", "number")
    if table is None:
        return None
    label = table.label
    column, value = _category_value(db, table, rng)
    number, threshold = _threshold(db, table, rng)
    return Question(
        f"List the {label.noun} of every {table.singular} whose {column.noun} is "
        f"{_literal(value)} and whose {number.noun} is below {threshold}.",
        f"SELECT {label.name} FROM {table.name} "
        f"WHERE {column.name} = {_literal(value)} AND {number.name} < {threshold}",
    )


def distinct_values(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "category", "number")
    column = rng.choice(table.of_kind("category"))
    number, threshold = _threshold(db, table, rng)
    return Question(
        f"Which {column.noun} values occur among the {table.plural} whose {number.noun} is "
        f"above {threshold}? List each value once.",
        f"SELECT DISTINCT {column.name} FROM {table.name} WHERE {number.name} > {threshold}",
    )


def sorted_filter(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "label", "category", "number")
    if table is None:
        return None
    label, number = table.label, rng.choice(table.of_kind("number"))
    column, value = _category_value(db, table, rng)
    where = f"FROM {table.name} WHERE {column.name} = {_literal(value)} ORDER BY {number.name}"
    return Question(
        f"List the {label.noun} and the {number.noun} of every {table.singular} whose "
        f"{column.noun} is {_literal(value)}, from the lowest {number.noun} to the highest.",
        f"SELECT {label.name}, {number.name} {where}",
        ordered=True,
        order_keys_sql=f"SELECT {number.name} {where}",
    )


# ---------------------------------------------------------------------------------- hard
def group_count(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "category")
    column = rng.choice(table.of_kind("category"))
    return Question(
        f"For each {column.noun}, how many {table.plural} are there? "
        f"Give the {column.noun} and the count.",
        f"SELECT {column.name}, COUNT(*) FROM {table.name} GROUP BY {column.name}",
    )


def group_aggregate(db: Database, rng: random.Random) -> Question | None:
    table = _pick_table(db, rng, "category", "number")
    column = rng.choice(table.of_kind("category"))
    number = rng.choice(table.of_kind("number"))
    word, function = rng.choice(sorted(_AGGREGATES.items()))
    return Question(
        f"For each {column.noun}, what is the {word} {number.noun} of the {table.plural}? "
        f"Give the {column.noun} and that value.",
        f"SELECT {column.name}, {function}({number.name}) FROM {table.name} GROUP BY {column.name}",
    )


def parent_with_child(db: Database, rng: random.Random) -> Question | None:
    links = _links(db, parent_kinds=("label",), child_kinds=("category",))
    if not links:
        return None
    child, ref, parent = rng.choice(links)
    column, value = _category_value(db, child, rng)
    label = parent.label
    return Question(
        f"List the {label.noun} of every {parent.singular} that has at least one "
        f"{child.singular} whose {column.noun} is {_literal(value)}. "
        f"List each {parent.singular} once.",
        f"SELECT DISTINCT {parent.name}.{label.name} FROM {parent.name} "
        f"JOIN {child.name} ON {child.name}.{ref.name} = {parent.name}.id "
        f"WHERE {child.name}.{column.name} = {_literal(value)}",
    )


def child_of_parent(db: Database, rng: random.Random) -> Question | None:
    links = _links(db, parent_kinds=("category",), child_kinds=("label",))
    if not links:
        return None
    child, ref, parent = rng.choice(links)
    column, value = _category_value(db, parent, rng)
    label = child.label
    return Question(
        f"List the {label.noun} of every {child.singular} whose {parent.singular}'s "
        f"{column.noun} is {_literal(value)}.",
        f"SELECT {child.name}.{label.name} FROM {child.name} "
        f"JOIN {parent.name} ON {child.name}.{ref.name} = {parent.name}.id "
        f"WHERE {parent.name}.{column.name} = {_literal(value)}",
    )


def count_per_parent(db: Database, rng: random.Random) -> Question | None:
    links = _links(db, parent_kinds=("label",), child_kinds=())
    child, ref, parent = rng.choice(links)
    label = parent.label
    return Question(
        f"For each {parent.singular} that has {_a(child.singular)}, give its {label.noun} and "
        f"its number of {child.plural}.",
        f"SELECT {parent.name}.{label.name}, COUNT(*) FROM {parent.name} "
        f"JOIN {child.name} ON {child.name}.{ref.name} = {parent.name}.id "
        f"GROUP BY {parent.name}.id",
    )


def total_over_join(db: Database, rng: random.Random) -> Question | None:
    links = _links(db, parent_kinds=("category",), child_kinds=("number",))
    if not links:
        return None
    child, ref, parent = rng.choice(links)
    number = rng.choice(child.of_kind("number"))
    column, value = _category_value(db, parent, rng)
    return Question(
        f"What is the total {number.noun} of the {child.plural} of the {parent.plural} whose "
        f"{column.noun} is {_literal(value)}?",
        f"SELECT SUM({child.name}.{number.name}) FROM {child.name} "
        f"JOIN {parent.name} ON {child.name}.{ref.name} = {parent.name}.id "
        f"WHERE {parent.name}.{column.name} = {_literal(value)}",
    )


def more_than_k(db: Database, rng: random.Random) -> Question | None:
    links = _links(db, parent_kinds=("label",), child_kinds=())
    child, ref, parent = rng.choice(links)
    label = parent.label
    k = rng.randint(1, 3)
    return Question(
        f"Give the {label.noun} of every {parent.singular} with more than {k} {child.plural}.",
        f"SELECT {parent.name}.{label.name} FROM {parent.name} "
        f"JOIN {child.name} ON {child.name}.{ref.name} = {parent.name}.id "
        f"GROUP BY {parent.name}.id HAVING COUNT(*) > {k}",
    )


def most_children(db: Database, rng: random.Random) -> Question | None:
    links = _links(db, parent_kinds=("label",), child_kinds=())
    child, ref, parent = rng.choice(links)
    label = parent.label
    joined = (
        f"FROM {parent.name} JOIN {child.name} ON {child.name}.{ref.name} = {parent.name}.id "
        f"GROUP BY {parent.name}.id ORDER BY COUNT(*) DESC"
    )
    return Question(
        f"Which {parent.singular} has the most {child.plural}? Give its {label.noun}.",
        f"SELECT {parent.name}.{label.name} {joined} LIMIT 1",
        ordered=True,
        order_keys_sql=f"SELECT COUNT(*) {joined} LIMIT 2",
        distinct_keys=2,
    )


def linked_through(db: Database, rng: random.Random) -> Question | None:
    pairs = [
        (child, first, second)
        for child in db.domain.tables
        for first in child.of_kind("ref")
        for second in child.of_kind("ref")
        if first != second
        and db.domain.table(first.ref).label
        and db.domain.table(second.ref).label
    ]
    if not pairs:
        return None
    child, first, second = rng.choice(pairs)
    given, wanted = db.domain.table(first.ref), db.domain.table(second.ref)
    # a row of the child table names the given row, so the answer is not empty
    given_id = rng.choice(_values(db, child, first))
    name = _values(db, given, given.label)[int(given_id) - 1]
    return Question(
        f"List the {wanted.label.noun} of every {wanted.singular} that appears in "
        f"{_a(child.singular)} of the {given.singular} {_literal(name)}. "
        f"List each {wanted.singular} once.",
        f"SELECT DISTINCT {wanted.name}.{wanted.label.name} FROM {child.name} "
        f"JOIN {given.name} ON {child.name}.{first.name} = {given.name}.id "
        f"JOIN {wanted.name} ON {child.name}.{second.name} = {wanted.name}.id "
        f"WHERE {given.name}.{given.label.name} = {_literal(name)}",
    )


def total_per_parent_category(db: Database, rng: random.Random) -> Question | None:
    links = _links(db, parent_kinds=("category",), child_kinds=("number",))
    if not links:
        return None
    child, ref, parent = rng.choice(links)
    number = rng.choice(child.of_kind("number"))
    column = rng.choice(parent.of_kind("category"))
    return Question(
        f"For each {column.noun} of the {parent.plural}, what is the total {number.noun} of "
        f"their {child.plural}? Give the {column.noun} and the total.",
        f"SELECT {parent.name}.{column.name}, SUM({child.name}.{number.name}) "
        f"FROM {child.name} JOIN {parent.name} ON {child.name}.{ref.name} = {parent.name}.id "
        f"GROUP BY {parent.name}.{column.name}",
    )


EASY_TEMPLATES: tuple[Template, ...] = (
    category_filter,
    number_filter,
    count_filter,
    count_threshold,
    filtered_aggregate,
    top_k,
    two_conditions,
    distinct_values,
    sorted_filter,
)
HARD_TEMPLATES: tuple[Template, ...] = (
    group_count,
    group_aggregate,
    parent_with_child,
    child_of_parent,
    count_per_parent,
    total_over_join,
    more_than_k,
    most_children,
    linked_through,
    total_per_parent_category,
)
TEMPLATES: dict[str, tuple[Template, ...]] = {
    "easy": EASY_TEMPLATES,
    "hard": HARD_TEMPLATES,
    "mixed": EASY_TEMPLATES + HARD_TEMPLATES,
}
