"""``generate_task``: a database and a question about it, drawn from a seed.

A question is kept only when its gold result is unambiguous and earned by no query that ignores
it: non-empty, not ``NULL``, with distinct sort keys where the question asks for an order, and
different from what the trivial queries give (``SELECT * FROM t``, every label of a table, a
table's row count, ``SELECT 0`` and ``SELECT 1``). So a task-ignoring reply never scores.

Example:
    >>> import random
    >>> task = generate_task(random.Random(3), difficulty="hard")
    >>> task.gold.ok and len(task.gold.rows) > 0
    True
    >>> all(not same_result(task.gold.rows, rows, ordered=False)
    ...     for rows in trivial_results(task.database).values())
    True
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from environments.text_to_sql.database import Database, QueryResult, Row
from environments.text_to_sql.questions import TEMPLATES, Question
from environments.text_to_sql.results import normalise, same_result
from environments.text_to_sql.schema import DOMAINS

QUESTIONS_PER_DATABASE = 40


@dataclass
class Task:
    """A generated database, a question about it and the gold query's result."""

    database: Database
    question: Question
    gold: QueryResult


def trivial_queries(database: Database) -> list[str]:
    """Queries that ignore any question: whole tables, every label, row counts, constants."""
    queries = ["SELECT 0", "SELECT 1"]
    for table in database.domain.tables:
        queries += [f"SELECT * FROM {table.name}", f"SELECT COUNT(*) FROM {table.name}"]
        if table.label:
            queries.append(f"SELECT {table.label.name} FROM {table.name}")
    return queries


def trivial_results(database: Database) -> dict[str, list[Row]]:
    """The rows of every trivial query, by query."""
    return {sql: database.run(sql).rows or [] for sql in trivial_queries(database)}


def is_fair(question: Question, gold: QueryResult, trivial: dict[str, list[Row]]) -> bool:
    """Whether ``gold`` is a fair answer to ``question`` (see the module docstring)."""
    if not gold.ok or not gold.rows or gold.rows[0] == (None,):
        return False
    return not any(same_result(gold.rows, rows, ordered=False) for rows in trivial.values())


def generate_task(
    rng: random.Random,
    difficulty: str = "easy",
    domains: Sequence[str] = tuple(DOMAINS),
) -> Task:
    """Draws a domain's rows and a fair question about them.

    Args:
        rng: the source of every random choice.
        difficulty: ``easy`` (one table), ``hard`` (joins and group by) or ``mixed``.
        domains: the domains to draw from (``shop``, ``school``, ``library``).
    """
    templates = TEMPLATES[difficulty]
    while True:
        database = Database.generate(DOMAINS[rng.choice(list(domains))], rng)
        trivial = trivial_results(database)
        for _ in range(QUESTIONS_PER_DATABASE):
            template = rng.choice(templates)
            question = template(database, rng)
            if question is None:
                continue
            gold = database.run(question.sql)
            if is_fair(question, gold, trivial) and _order_is_unique(database, question):
                return Task(database, replace(question, template=template.__name__), gold)
        database.close()


def _order_is_unique(database: Database, question: Question) -> bool:
    if not question.ordered or question.order_keys_sql is None:
        return True
    keys = [normalise(row[0]) for row in database.run(question.order_keys_sql).rows or []]
    if question.distinct_keys:
        keys = keys[: question.distinct_keys]
    return len(set(keys)) == len(keys)
