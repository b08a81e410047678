"""The results store's tables, and the ordered migrations that build them.

A database records the migrations applied to it in ``schema_version`` (one row per step).
Opening a store applies the missing steps in one transaction (``leaderboard.store``); a
database with a step this code does not know was written by a newer rollenv and is refused.

To change the schema, append a step that alters a database of the previous version
(``ALTER TABLE ...``) and change the ``Table`` objects below, which the queries use, to the new
shape. Step 1 creates its tables from those objects, so once a later step changes a table,
step 1 must go on creating the version-1 shape (give it its own copy of that table then).

Example:
    >>> import sqlalchemy as sa
    >>> engine = sa.create_engine("sqlite://")
    >>> with engine.begin() as conn:
    ...     migrate(conn, current_version(conn))
    ...     current_version(conn) == LATEST
    (0, 2)
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

__all__ = [
    "LATEST",
    "MIGRATIONS",
    "Migration",
    "current_version",
    "episodes",
    "evals",
    "matches",
    "metadata",
    "migrate",
    "ratings",
    "schema_version",
    "training_points",
]

# Constraint names are spelled out so that a later ALTER step can name them on both backends.
metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("applied_at", sa.Float, nullable=False),
)

#: One evaluation: an ``EvalIdentity`` (its ``key`` unique), its ``Provenance`` and suite envs.
evals = sa.Table(
    "evals",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("key", sa.String(64), nullable=False, unique=True),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("weights", sa.Text, nullable=False),
    sa.Column("suite", sa.Text, nullable=False),
    sa.Column("suite_version", sa.Integer, nullable=False),
    sa.Column("sampling", sa.Text, nullable=False),  # JSON object
    sa.Column("suite_fingerprint", sa.Text, nullable=False),  # also in provenance; queried
    sa.Column("provenance", sa.Text, nullable=False),  # JSON object
    sa.Column("env_ids", sa.Text, nullable=False),  # JSON list, the suite's order
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("finished_at", sa.Float, nullable=True),
    sa.Index(None, "suite", "suite_version"),
)

#: One played episode; ``transcript`` is ``EpisodeRecord.to_json()``.
episodes = sa.Table(
    "episodes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("eval_id", sa.Integer, sa.ForeignKey("evals.id", ondelete="CASCADE"), nullable=False),
    sa.Column("env_id", sa.Text, nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("total_reward", sa.Float, nullable=False),
    sa.Column("turns", sa.Integer, nullable=False),
    sa.Column("prompt_tokens", sa.Integer, nullable=False),
    sa.Column("reply_tokens", sa.Integer, nullable=False),
    sa.Column("wall_s", sa.Float, nullable=False),
    sa.Column("finish_reason", sa.Text, nullable=False),
    sa.Column("transcript", sa.Text, nullable=False),
    sa.UniqueConstraint("eval_id", "env_id", "seed"),
)

#: One evaluation point of a training run (its learning curve).
training_points = sa.Table(
    "training_points",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("env_id", sa.Text, nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("metrics", sa.Text, nullable=False),  # JSON object
    sa.Column("recorded_at", sa.Float, nullable=False),
    sa.UniqueConstraint("run_id", "env_id", "step"),
)

#: A model's skill rating in a two-player game (TrueSkill / OpenSkill ``mu`` and ``sigma``).
ratings = sa.Table(
    "ratings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("game", sa.Text, nullable=False),
    sa.Column("mu", sa.Float, nullable=False),
    sa.Column("sigma", sa.Float, nullable=False),
    sa.Column("games", sa.Integer, nullable=False, default=0),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.UniqueConstraint("model", "game"),
)


#: One game between rated players; ``record`` is ``MatchRecord.to_json()``.
matches = sa.Table(
    "matches",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("game", sa.Text, nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("players", sa.Text, nullable=False),  # JSON list, by seat
    sa.Column("results", sa.Text, nullable=False),  # JSON list, by seat
    sa.Column("record", sa.Text, nullable=False),
    sa.Column("played_at", sa.Float, nullable=False),
    sa.Index(None, "game"),
)


@dataclass(frozen=True)
class Migration:
    """One step of the schema.

    Attributes:
        version: the schema version the step leads to (1, 2, ...).
        description: what it does, recorded in ``schema_version``.
        apply: runs the step's DDL on a connection inside the migration's transaction.
    """

    version: int
    description: str
    apply: Callable[[sa.Connection], None]


def _create_version_1(conn: sa.Connection) -> None:
    metadata.create_all(conn, tables=[evals, episodes, training_points, ratings])


def _create_version_2(conn: sa.Connection) -> None:
    metadata.create_all(conn, tables=[matches])


#: Every step, in order; a database at version N has had the first N applied.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "evals, episodes, training points and ratings", _create_version_1),
    Migration(2, "matches between rated players", _create_version_2),
)

#: The newest schema version this code knows.
LATEST = MIGRATIONS[-1].version


def current_version(conn: sa.Connection) -> int | None:
    """The database's schema version: ``None`` without a ``schema_version`` table, 0 when empty."""
    if not sa.inspect(conn).has_table(schema_version.name):
        return None
    return conn.scalar(sa.select(sa.func.coalesce(sa.func.max(schema_version.c.version), 0)))


def migrate(conn: sa.Connection, version: int | None) -> tuple[int, int]:
    """Applies the steps after ``version`` (``None``: a database without our tables).

    The caller holds the transaction (and, on PostgreSQL, the lock that keeps two processes
    from migrating at once) and has checked that ``version`` is not newer than ``LATEST``.

    Returns:
        the versions before and after.
    """
    if version is None:
        metadata.create_all(conn, tables=[schema_version])
        version = 0
    for step in MIGRATIONS[version:]:
        step.apply(conn)
        conn.execute(
            sa.insert(schema_version).values(
                version=step.version, description=step.description, applied_at=time.time()
            )
        )
    return version, LATEST
