"""A domain's rows drawn from a seed, loaded into an in-memory SQLite database that only reads.

``Database.run`` executes one untrusted query under SQLite's authorizer (only ``SELECT``, reads
and functions; no ``PRAGMA``, ``ATTACH`` or writes), ``PRAGMA query_only``, a cap on virtual
machine steps (a runaway recursive query stops deterministically, whatever the machine's speed),
a cap on the length of any string or blob it builds, and a cap on the rows it returns.

Example:
    >>> import random
    >>> from environments.text_to_sql.schema import DOMAINS
    >>> db = Database.generate(DOMAINS["shop"], random.Random(0))
    >>> db.run("SELECT COUNT(*) > 0 FROM orders").rows
    [(1,)]
    >>> db.run("DELETE FROM orders").error
    'not authorized'
    >>> db.run("SELECT 1; SELECT 2").error
    'You can only execute one statement at a time.'
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass

from environments.text_to_sql.schema import Column, Domain

Value = int | float | str | bytes | None
Row = tuple[Value, ...]

#: virtual machine steps one query may take (the gold queries take a few thousand)
MAX_VM_STEPS = 2_000_000
_PROGRESS_EVERY = 1000
#: rows a query may return; more is an error (no question here has more than a few dozen)
MAX_ROWS = 500
MAX_VALUE_LENGTH = 100_000
MAX_SQL_LENGTH = 20_000
# what the authorizer allows: a SELECT, reading columns, calling functions, a recursive CTE
_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}


@dataclass(frozen=True)
class QueryResult:
    """What a query gave: its column names and rows, or the error that stopped it."""

    columns: tuple[str, ...] = ()
    rows: list[Row] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Database:
    """A generated database in memory, open for reading untrusted queries.

    Args:
        domain: the tables.
        rows: every table's rows (``id`` first), by table name.
    """

    def __init__(self, domain: Domain, rows: dict[str, list[Row]]) -> None:
        self.domain = domain
        self.rows = rows
        self._connection = sqlite3.connect(":memory:", check_same_thread=False)
        for table in domain.tables:
            self._connection.execute(table.create_sql())
            marks = ", ".join("?" * (len(table.columns) + 1))
            self._connection.executemany(
                f"INSERT INTO {table.name} VALUES ({marks})", rows[table.name]
            )
        self._connection.commit()
        self._connection.execute("PRAGMA query_only = ON")
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_LENGTH)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_LENGTH)
        self._connection.set_authorizer(_authorize)
        self._steps_left = 0
        self._connection.set_progress_handler(self._count_steps, _PROGRESS_EVERY)

    @classmethod
    def generate(cls, domain: Domain, rng: random.Random) -> Database:
        """Draws every table's rows from ``rng``; labels are unique within a table."""
        rows: dict[str, list[Row]] = {}
        for table in domain.tables:
            count = rng.randint(*table.rows)
            columns = [_draw_column(column, count, rows, rng) for column in table.columns]
            records = zip(*columns, strict=True)
            rows[table.name] = [(i + 1, *values) for i, values in enumerate(records)]
        return cls(domain, rows)

    def schema_text(self, example_rows: int = 2) -> str:
        """The ``CREATE TABLE`` statements, each with its first rows as examples."""
        lines = []
        for table in self.domain.tables:
            lines.append(table.create_sql())
            for row in self.rows[table.name][:example_rows]:
                lines.append(f"  -- example row: {row!r}")
        return "\n".join(lines)

    def run(self, sql: str) -> QueryResult:
        """Runs one query read-only; never raises (errors come back in ``QueryResult.error``)."""
        self._steps_left = MAX_VM_STEPS // _PROGRESS_EVERY
        cursor = None
        try:
            cursor = self._connection.execute(sql)
            rows = cursor.fetchmany(MAX_ROWS + 1)
            columns = tuple(d[0] for d in cursor.description or ())
        except Exception as error:  # noqa: BLE001 - sqlite3, ValueError (NUL), OverflowError
            message = str(error) or type(error).__name__
            if message == "interrupted":
                message = f"interrupted: the query took more than {MAX_VM_STEPS} steps"
            return QueryResult(error=message)
        finally:
            if cursor is not None:
                cursor.close()
        if len(rows) > MAX_ROWS:
            return QueryResult(error=f"the query returned more than {MAX_ROWS} rows")
        return QueryResult(columns, [tuple(row) for row in rows])

    def close(self) -> None:
        self._connection.close()

    def _count_steps(self) -> int:
        self._steps_left -= 1
        return 1 if self._steps_left < 0 else 0


def _authorize(action: int, *_: object) -> int:
    return sqlite3.SQLITE_OK if action in _ALLOWED else sqlite3.SQLITE_DENY


def _draw_column(
    column: Column, count: int, drawn: dict[str, list[Row]], rng: random.Random
) -> list[Value]:
    if column.kind == "label":
        return rng.sample(column.choices, count)
    if column.kind == "category":
        return [rng.choice(column.choices) for _ in range(count)]
    if column.kind == "ref":
        parents = len(drawn[column.ref])
        return [rng.randint(1, parents) for _ in range(count)]
    if column.decimals:
        scale = 10**column.decimals
        # distinct values: an ordering question on this column never has ties
        cents = rng.sample(range(int(column.low * scale), int(column.high * scale)), count)
        return [c / scale for c in cents]
    return [rng.randint(int(column.low), int(column.high)) for _ in range(count)]
