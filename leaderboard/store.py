"""The results store: evaluations, their episodes' transcripts and training curves, in one
SQLite file (the default) or a PostgreSQL database (a URL, for a team sharing one board).

Whoever plays episodes (``roll-agent eval``) calls ``start_eval`` (which says what is already
stored, so an interrupted eval resumes and a finished one is not replayed), ``add_episodes``
after every few episodes, and ``finish_eval``; the page reads ``board``, ``episodes`` and
``episode``. Two processes may write into one file at once: SQLite runs in WAL mode, every
write transaction starts with ``BEGIN IMMEDIATE`` and waits up to a minute for the other
writer, and an episode already stored is skipped, never duplicated.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from leaderboard.records import EpisodeRecord, EvalIdentity, Provenance
    >>> identity = EvalIdentity(model="oracle", weights="baseline", suite="smoke",
    ...                         suite_version=1, sampling={"temperature": 0})
    >>> provenance = Provenance(model_source="oracle", suite_fingerprint="5e1f",
    ...                         env_versions={"FrozenLake-v0": "0.1.0"}, rollenv_version="0.1.0",
    ...                         git_commit="", hardware="2 CPU cores, no GPU")
    >>> episode = EpisodeRecord(env_id="FrozenLake-v0", seed=7, instruction="Reach G.",
    ...                         first_observation="P_G", turns=(), success=True,
    ...                         total_reward=1.0, finish_reason="terminated", wall_s=0.5)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     with ResultStore(Path(folder) / "leaderboard.db") as store:
    ...         start = store.start_eval(identity, provenance, ["FrozenLake-v0"])
    ...         inserted = store.add_episodes(start.eval_id, [episode, episode])
    ...         store.finish_eval(start.eval_id)
    ...         board = store.board("smoke")
    ...         again = store.start_eval(identity, provenance, ["FrozenLake-v0"])
    >>> inserted, board.env_ids, board.rows[0].overall
    (1, ('FrozenLake-v0',), 1.0)
    >>> again.complete, sorted(again.done)
    (True, [('FrozenLake-v0', 7)])
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import StaticPool

from leaderboard import schema
from leaderboard.ratings import PlayerRating, rate
from leaderboard.records import (
    Board,
    BoardRow,
    EnvResult,
    EpisodeRecord,
    EpisodeSummary,
    EvalIdentity,
    EvalSummary,
    MatchRecord,
    Provenance,
    TrainingPoint,
    _jsonable,
)
from leaderboard.schema import episodes, evals, training_points
from leaderboard.stats import wilson_interval

__all__ = ["EvalStart", "ResultStore", "StoreError", "default_db_path"]

#: how long a SQLite writer waits for another one before giving up
_BUSY_TIMEOUT_S = 60
#: PostgreSQL: seconds to wait for the server to answer a connection
_CONNECT_TIMEOUT_S = 10
#: PostgreSQL advisory lock held while migrating (an arbitrary constant: "rollenv" in ASCII)
_MIGRATION_LOCK = 0x726F6C6C656E76
#: the execution option that makes a SQLite transaction start with BEGIN IMMEDIATE
_WRITE = "rollenv_write"
_FORMS = "a file path, sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"


class StoreError(Exception):
    """A problem with the results database, in one line a user reads: what is wrong with
    which database and what to do."""


def default_db_path() -> Path:
    """The default database file: ``$ROLLENV_LEADERBOARD_DB`` if set, else
    ``$ROLLENV_CACHE/leaderboard.db``, else ``~/.cache/rollenv/leaderboard.db``.

    Example:
        >>> default_db_path().name
        'leaderboard.db'
    """
    if os.environ.get("ROLLENV_LEADERBOARD_DB"):
        return Path(os.environ["ROLLENV_LEADERBOARD_DB"]).expanduser()
    cache = os.environ.get("ROLLENV_CACHE") or "~/.cache/rollenv"
    return Path(cache).expanduser() / "leaderboard.db"


@dataclass(frozen=True)
class EvalStart:
    """What ``ResultStore.start_eval`` found.

    Attributes:
        eval_id: the evaluation's id, to pass to ``add_episodes`` and ``finish_eval``.
        done: ``(env_id, seed)`` already stored for it: the caller plays only the rest.
        complete: the identical evaluation already finished: the caller reports it and plays
            nothing.
    """

    eval_id: int
    done: frozenset[tuple[str, int]]
    complete: bool


@dataclass(frozen=True)
class _Target:
    """Where a store lives: the SQLAlchemy URL, how to print it, and the SQLite file."""

    url: URL
    shown: str
    path: Path | None  # the SQLite file; None for PostgreSQL and an in-memory database

    @property
    def is_sqlite(self) -> bool:
        return self.url.get_backend_name() == "sqlite"

    @property
    def where(self) -> str:
        """What an error names: the file, or the URL with its password hidden."""
        return str(self.path) if self.path is not None else self.shown


def _target(db: str | Path | None) -> _Target:
    """Reads ``ResultStore``'s ``db`` argument."""
    if db is None:
        return _sqlite_file(default_db_path())
    if isinstance(db, Path):
        return _sqlite_file(db)
    if db == ":memory:":
        return _Target(URL.create("sqlite"), "sqlite://", None)
    if "://" not in db:
        return _sqlite_file(Path(db))
    try:
        url = make_url(db)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        scheme = db.split("://", 1)[0]
        raise StoreError(f"cannot read the database URL {scheme}://...: give {_FORMS}") from None
    backend, _, driver = url.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "pysqlite"):
        if url.database in (None, "", ":memory:"):
            return _Target(URL.create("sqlite"), "sqlite://", None)
        return _sqlite_file(Path(url.database))
    if backend in ("postgresql", "postgres") and driver in ("", "psycopg"):
        shown = url.set(drivername="postgresql").render_as_string(hide_password=True)
        return _Target(url.set(drivername="postgresql+psycopg"), shown, None)
    shown = url.render_as_string(hide_password=True)
    raise StoreError(f"unsupported database {shown}: give {_FORMS}")


def _sqlite_file(path: Path) -> _Target:
    path = path.expanduser().absolute()
    url = URL.create("sqlite", database=str(path))
    return _Target(url, url.render_as_string(), path)


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # sqlite3 would emit a deferred BEGIN by itself before DML; we emit our own (_sqlite_begin)
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_S * 1000}")
        _use_wal(cursor)
        # in WAL mode NORMAL survives a killed process; only a power cut may lose the last commits
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _use_wal(cursor: sqlite3.Cursor) -> None:
    """Switches the file to WAL mode (a no-op once it is: the mode is stored in the file).

    The switch needs the file to itself, and SQLite can answer 'database is locked' at once,
    without calling its busy handler, while another process opens or switches the same new
    file; so this retries, with growing pauses, for as long as a writer would wait.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    pause = 0.001
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.05)


def _sqlite_begin(conn: sa.Connection) -> None:
    # A writer takes the write lock at BEGIN, waiting (busy_timeout) for the other writer; a
    # deferred transaction that later tries to write fails at once with 'database is locked'.
    immediate = conn.get_execution_options().get(_WRITE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=_jsonable)


def _first_line(err: BaseException) -> str:
    reason = str(getattr(err, "orig", None) or err).strip()
    return reason.splitlines()[0].strip() if reason else type(err).__name__


class ResultStore:
    """The leaderboard's database: SQLite by default, PostgreSQL by URL.

    Args:
        db: a file path or ``sqlite:///PATH`` (its folder is created), ``postgresql://...``
            (through psycopg 3), ``":memory:"`` for a throwaway database, or ``None`` for
            ``default_db_path()``. Opening creates the tables, or migrates an older schema.

    Raises:
        StoreError: the file is not a leaderboard database, cannot be created, was written by a
            newer rollenv, the URL is not supported, or the server cannot be reached.
    """

    url: str

    def __init__(self, db: str | Path | None = None) -> None:
        self._target = _target(db)
        self.url = self._target.shown
        self._engine = self._make_engine()
        self._insert = sqlite.insert if self._target.is_sqlite else postgresql.insert
        try:
            self._migrate()
        except BaseException:
            self._engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"ResultStore({self.url!r})"

    def close(self) -> None:
        """Closes the database's connections."""
        self._engine.dispose()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ opening
    def _make_engine(self) -> sa.Engine:
        target = self._target
        if not target.is_sqlite:
            try:
                return sa.create_engine(
                    target.url, connect_args={"connect_timeout": _CONNECT_TIMEOUT_S}
                )
            except ImportError:
                raise StoreError(
                    f"{target.shown} needs psycopg 3, which is not installed: "
                    "pip install 'rollenv[leaderboard]'"
                ) from None
        if target.path is None:
            engine = sa.create_engine(
                target.url, poolclass=StaticPool, connect_args={"check_same_thread": False}
            )
        else:
            self._make_folder(target.path)
            engine = sa.create_engine(target.url, connect_args={"timeout": _BUSY_TIMEOUT_S})
        sa.event.listen(engine, "connect", _sqlite_connect)
        sa.event.listen(engine, "begin", _sqlite_begin)
        return engine

    @staticmethod
    def _make_folder(path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            reason = f"{err.strerror}: {err.filename}" if err.filename else str(err)
            raise StoreError(
                f"cannot create the leaderboard database {path} ({reason}): give another --db"
            ) from None
        if path.is_dir():
            raise StoreError(
                f"{path} is a folder, not a leaderboard database: give a file path with --db"
            )

    def _migrate(self) -> None:
        """Creates the tables or applies the missing migrations, in one transaction."""
        with self._transaction() as conn:
            version = schema.current_version(conn)
        if version == schema.LATEST:
            return
        with self._transaction(write=True) as conn:
            if not self._target.is_sqlite:
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_MIGRATION_LOCK)))
            version = schema.current_version(conn)  # another process may have migrated meanwhile
            if version is None:
                self._check_foreign_tables(conn)
            elif version > schema.LATEST:
                raise StoreError(
                    f"{self._target.where} was written by a newer rollenv (schema {version}, "
                    f"this one knows {schema.LATEST}): upgrade rollenv"
                )
            schema.migrate(conn, version)

    def _check_foreign_tables(self, conn: sa.Connection) -> None:
        """Refuses a database that holds tables of something else (a SQLite file: any table;
        a PostgreSQL database, which other applications may share: a table with our names)."""
        tables = set(sa.inspect(conn).get_table_names())
        if not self._target.is_sqlite:
            tables &= set(schema.metadata.tables)
        if tables:
            raise StoreError(
                f"{self._target.where} is not a leaderboard database (it holds tables "
                f"{', '.join(sorted(tables))}): move it away or give another --db"
            )

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def _transaction(self, *, write: bool = False) -> Iterator[sa.Connection]:
        """One transaction; a database error in it becomes a ``StoreError``."""
        try:
            conn = self._engine.connect()
        except DBAPIError as err:
            raise self._error(err, connecting=True) from err
        try:
            if write:
                conn = conn.execution_options(**{_WRITE: True})
            with conn.begin():
                yield conn
        except DBAPIError as err:
            raise self._error(err) from err
        finally:
            conn.close()

    def _error(self, err: DBAPIError, *, connecting: bool = False) -> StoreError:
        reason = _first_line(err)
        where = self._target.where
        if not self._target.is_sqlite:
            if connecting:
                return StoreError(
                    f"cannot connect to the PostgreSQL database {where} ({reason}): check that the "
                    "server runs and that the URL is right"
                )
            return StoreError(f"the PostgreSQL database {where} failed: {reason}")
        if "file is not a database" in reason or "malformed" in reason:
            return StoreError(
                f"{where} is not a leaderboard database ({reason}): move it away or give "
                "another --db"
            )
        if "locked" in reason or "busy" in reason:
            return StoreError(
                f"the leaderboard database {where} stayed locked by another process for "
                f"{_BUSY_TIMEOUT_S} s ({reason}): wait for it to finish, or give another --db"
            )
        return StoreError(
            f"cannot use the leaderboard database {where} ({reason}): give another --db"
        )

    # ------------------------------------------------------------------ writing one evaluation
    def start_eval(
        self,
        identity: EvalIdentity,
        provenance: Provenance,
        env_ids: Sequence[str],
        *,
        force: bool = False,
    ) -> EvalStart:
        """Starts an evaluation, or finds the identical one (same ``identity.key``).

        A new identity gets a new evaluation. An unfinished one resumes: the same id, with the
        episodes it stored as ``done`` (its provenance is updated). A finished one is reported
        ``complete``, unless ``force``, which deletes its episodes and starts it afresh. Two
        processes starting the same identity at once get the same id.

        Args:
            identity: what is evaluated.
            provenance: where the result comes from.
            env_ids: the suite's envs, in the suite's order (the board's columns).
            force: replay an evaluation that already finished.

        Raises:
            StoreError: results of the same suite version were stored with another suite
                fingerprint (the suite changed without a new version).
        """
        now = time.time()
        described = {
            "provenance": _dumps(asdict(provenance)),
            "suite_fingerprint": provenance.suite_fingerprint,
            "env_ids": _dumps(list(env_ids)),
        }
        with self._transaction(write=True) as conn:
            if not self._target.is_sqlite:
                # SQLite's BEGIN IMMEDIATE already serialises writers; on PostgreSQL this lock
                # keeps two evals of one suite version from both passing the fingerprint check
                suite_key = f"rollenv:{identity.suite}:{identity.suite_version}"
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(suite_key))))
            self._check_fingerprint(conn, identity, provenance)
            insert = self._insert(evals).values(
                key=identity.key,
                model=identity.model,
                weights=identity.weights,
                suite=identity.suite,
                suite_version=identity.suite_version,
                sampling=_dumps(dict(identity.sampling)),
                started_at=now,
                finished_at=None,
                **described,
            )
            inserted = conn.execute(
                insert.on_conflict_do_nothing(index_elements=["key"]),
                execution_options={"preserve_rowcount": True},  # an INSERT's is not kept by default
            )
            row = conn.execute(
                sa.select(evals.c.id, evals.c.finished_at).where(evals.c.key == identity.key)
            ).one()
            if inserted.rowcount:
                return EvalStart(row.id, frozenset(), complete=False)
            this_eval = sa.update(evals).where(evals.c.id == row.id)
            if force:
                conn.execute(sa.delete(episodes).where(episodes.c.eval_id == row.id))
                conn.execute(this_eval.values(started_at=now, finished_at=None, **described))
                return EvalStart(row.id, frozenset(), complete=False)
            done = self._done(conn, row.id)
            if row.finished_at is not None:
                return EvalStart(row.id, done, complete=True)
            conn.execute(this_eval.values(**described))
            return EvalStart(row.id, done, complete=False)

    def _check_fingerprint(
        self, conn: sa.Connection, identity: EvalIdentity, provenance: Provenance
    ) -> None:
        other = conn.scalar(
            sa.select(evals.c.id)
            .where(
                evals.c.suite == identity.suite,
                evals.c.suite_version == identity.suite_version,
                evals.c.suite_fingerprint != provenance.suite_fingerprint,
            )
            .limit(1)
        )
        if other is not None:
            raise StoreError(
                f"suite '{identity.suite}' version {identity.suite_version} changed since "
                "results were stored for it: give the suite a new version"
            )

    @staticmethod
    def _done(conn: sa.Connection, eval_id: int) -> frozenset[tuple[str, int]]:
        rows = conn.execute(
            sa.select(episodes.c.env_id, episodes.c.seed).where(episodes.c.eval_id == eval_id)
        )
        return frozenset((env_id, seed) for env_id, seed in rows)

    def add_episodes(self, eval_id: int, records: Sequence[EpisodeRecord]) -> int:
        """Stores episodes of an evaluation, in one transaction.

        An episode whose ``(env_id, seed)`` is already stored for the evaluation is skipped.

        Returns:
            how many episodes were inserted.

        Raises:
            StoreError: the evaluation is unknown, or an episode's env is not one of its envs.
        """
        # One order for every writer, so that two PostgreSQL writers of the same evaluation
        # wait for each other instead of deadlocking over their rows.
        rows = sorted((_episode_row(eval_id, record) for record in records), key=_episode_key)
        if not rows:
            return 0
        statement = self._insert(episodes).on_conflict_do_nothing(
            index_elements=["eval_id", "env_id", "seed"]
        )
        with self._transaction(write=True) as conn:
            env_ids = self._env_ids(conn, eval_id)
            unknown = sorted({row["env_id"] for row in rows} - set(env_ids))
            if unknown:
                raise StoreError(
                    f"evaluation {eval_id} has no env {', '.join(unknown)} (its envs: "
                    f"{', '.join(env_ids)}): store only episodes of its suite's envs"
                )
            counted = {"preserve_rowcount": True}
            return sum(
                conn.execute(statement, row, execution_options=counted).rowcount for row in rows
            )

    def finish_eval(self, eval_id: int) -> None:
        """Marks an evaluation finished (an identical one is then reported ``complete``)."""
        with self._transaction(write=True) as conn:
            done = conn.execute(
                sa.update(evals).where(evals.c.id == eval_id).values(finished_at=time.time())
            )
            if not done.rowcount:
                raise self._no_eval(eval_id)

    def add_training_point(self, point: TrainingPoint) -> None:
        """Records one evaluation point of a training run; the same ``(run_id, env_id, step)``
        written again replaces the earlier one."""
        insert = self._insert(training_points).values(
            run_id=point.run_id,
            model=point.model,
            env_id=point.env_id,
            step=point.step,
            metrics=_dumps(dict(point.metrics)),
            recorded_at=point.recorded_at,
        )
        upsert = insert.on_conflict_do_update(
            index_elements=["run_id", "env_id", "step"],
            set_={
                "model": insert.excluded.model,
                "metrics": insert.excluded.metrics,
                "recorded_at": insert.excluded.recorded_at,
            },
        )
        with self._transaction(write=True) as conn:
            conn.execute(upsert)

    def add_matches(self, records: Sequence[MatchRecord]) -> list[PlayerRating]:
        """Records games between rated players, and rates again every player of their games
        from all of that game's matches (``leaderboard.ratings``).

        Returns:
            The new ratings of the games' players, best first (by ``mu - 3 sigma``).
        """
        rows = [
            {
                "game": r.game,
                "seed": r.seed,
                "players": _dumps(list(r.players)),
                "results": _dumps(list(r.results)),
                "record": r.to_json(),
                "played_at": r.played_at,
            }
            for r in records
        ]
        games = sorted({r.game for r in records})
        with self._transaction(write=True) as conn:
            if rows:
                conn.execute(sa.insert(schema.matches), rows)
            table = []
            for game in games:
                table += self._rate_game(conn, game)
        return sorted(table, key=lambda r: r.conservative, reverse=True)

    def _rate_game(self, conn: sa.Connection, game: str) -> list[PlayerRating]:
        m = schema.matches.c
        played = conn.execute(sa.select(m.record).where(m.game == game).order_by(m.id)).scalars()
        table = rate(MatchRecord.from_json(text) for text in played)
        conn.execute(sa.delete(schema.ratings).where(schema.ratings.c.game == game))
        if table:
            now = time.time()
            conn.execute(
                sa.insert(schema.ratings),
                [
                    {
                        "model": r.player,
                        "game": game,
                        "mu": r.mu,
                        "sigma": r.sigma,
                        "games": r.games,
                        "updated_at": now,
                    }
                    for r in table.values()
                ],
            )
        return list(table.values())

    # ------------------------------------------------------------------ reading
    def rated_games(self) -> list[str]:
        """The games that have rated players, sorted."""
        with self._transaction() as conn:
            game = schema.ratings.c.game
            query = sa.select(game).distinct().order_by(game)
            return list(conn.execute(query).scalars())

    def ratings(self, game: str) -> list[PlayerRating]:
        """The players of ``game``, best first (by ``mu - 3 sigma``)."""
        r = schema.ratings.c
        with self._transaction() as conn:
            rows = conn.execute(sa.select(schema.ratings).where(r.game == game)).all()
        table = [PlayerRating(row.model, row.mu, row.sigma, row.games) for row in rows]
        return sorted(table, key=lambda rating: rating.conservative, reverse=True)

    def matches(self, game: str, player: str | None = None) -> list[tuple[int, MatchRecord]]:
        """The matches of ``game`` (with ``player`` in a seat), by id, in the order played."""
        with self._transaction() as conn:
            rows = conn.execute(
                sa.select(schema.matches.c.id, schema.matches.c.record)
                .where(schema.matches.c.game == game)
                .order_by(schema.matches.c.id)
            ).all()
        found = [(row.id, MatchRecord.from_json(row.record)) for row in rows]
        return [(i, m) for i, m in found if player is None or player in m.players]

    def match(self, match_id: int) -> MatchRecord:
        """One match, by id.

        Raises:
            StoreError: no match has that id.
        """
        with self._transaction() as conn:
            m = schema.matches.c
            text = conn.scalar(sa.select(m.record).where(m.id == match_id))
        if text is None:
            raise StoreError(f"no match with id {match_id} in {self._target.where}")
        return MatchRecord.from_json(text)

    def suites(self) -> list[tuple[str, int]]:
        """The ``(suite, version)`` pairs that have evaluations, sorted."""
        with self._transaction() as conn:
            rows = conn.execute(
                sa.select(evals.c.suite, evals.c.suite_version)
                .distinct()
                .order_by(evals.c.suite, evals.c.suite_version)
            )
            return [(suite, version) for suite, version in rows]

    def evals(
        self, suite: str | None = None, suite_version: int | None = None
    ) -> list[EvalSummary]:
        """The evaluations, oldest first, optionally of one suite (and version)."""
        with self._transaction() as conn:
            return self._evals(conn, suite, suite_version)

    def evaluation(self, eval_id: int) -> EvalSummary:
        """One evaluation.

        Raises:
            StoreError: no evaluation has that id.
        """
        with self._transaction() as conn:
            found = self._evals(conn, eval_id=eval_id)
        if not found:
            raise self._no_eval(eval_id)
        return found[0]

    def board(self, suite: str, suite_version: int | None = None) -> Board:
        """The ranking of one suite version: a row per evaluation, a column per env.

        Args:
            suite: the suite's name.
            suite_version: its version; ``None`` for the newest version with evaluations.

        Returns:
            the board, rows ranked by ``overall`` (the mean success rate over every env of the
            board), rows that lack some env last, ties by model name. A row's ``results`` hold
            the envs it has episodes of.

        Raises:
            StoreError: no evaluation of that suite (version) is stored.
        """
        with self._transaction() as conn:
            if suite_version is None:
                suite_version = conn.scalar(
                    sa.select(sa.func.max(evals.c.suite_version)).where(evals.c.suite == suite)
                )
            summaries = [] if suite_version is None else self._evals(conn, suite, suite_version)
            if not summaries:
                raise self._no_suite(conn, suite, suite_version)
            results = self._results(conn, suite, suite_version)
        columns = tuple(dict.fromkeys(env for s in summaries for env in s.env_ids))
        rows = [
            BoardRow(s, results.get(s.eval_id, {}), _overall(columns, results.get(s.eval_id, {})))
            for s in summaries
        ]
        rows.sort(key=_rank)
        return Board(suite, suite_version, columns, tuple(rows))

    @staticmethod
    def _results(
        conn: sa.Connection, suite: str, suite_version: int
    ) -> dict[int, dict[str, EnvResult]]:
        """Each evaluation's result per env, aggregated by the database."""
        ep = episodes.c
        rows = conn.execute(
            sa.select(
                ep.eval_id,
                ep.env_id,
                sa.func.count().label("n"),
                sa.func.sum(sa.cast(ep.success, sa.Integer)).label("successes"),
                sa.func.avg(ep.total_reward).label("mean_return"),
                sa.func.avg(ep.turns).label("mean_turns"),
                sa.func.sum(ep.prompt_tokens).label("prompt_tokens"),
                sa.func.sum(ep.reply_tokens).label("reply_tokens"),
                sa.func.sum(ep.wall_s).label("wall_s"),
            )
            .join(evals, evals.c.id == ep.eval_id)
            .where(evals.c.suite == suite, evals.c.suite_version == suite_version)
            .group_by(ep.eval_id, ep.env_id)
        )
        results: dict[int, dict[str, EnvResult]] = {}
        for row in rows:
            n, successes = int(row.n), int(row.successes)
            low, high = wilson_interval(successes, n)
            results.setdefault(row.eval_id, {})[row.env_id] = EnvResult(
                env_id=row.env_id,
                episodes=n,
                successes=successes,
                success_rate=successes / n,
                low=low,
                high=high,
                mean_return=float(row.mean_return),
                mean_turns=float(row.mean_turns),
                prompt_tokens=int(row.prompt_tokens),
                reply_tokens=int(row.reply_tokens),
                wall_s=float(row.wall_s),
            )
        return results

    def episodes(self, eval_id: int, env_id: str | None = None) -> list[EpisodeSummary]:
        """An evaluation's episodes (of one env, or all), in the suite's env order, then by seed.

        Raises:
            StoreError: no evaluation has that id.
        """
        ep = episodes.c
        with self._transaction() as conn:
            order = {env: index for index, env in enumerate(self._env_ids(conn, eval_id))}
            query = sa.select(
                ep.id, ep.eval_id, ep.env_id, ep.seed, ep.success, ep.total_reward, ep.turns
            ).where(ep.eval_id == eval_id)
            if env_id is not None:
                query = query.where(ep.env_id == env_id)
            rows = conn.execute(query).all()
        summaries = [
            EpisodeSummary(
                episode_id=row.id,
                eval_id=row.eval_id,
                env_id=row.env_id,
                seed=row.seed,
                success=bool(row.success),
                total_reward=row.total_reward,
                turns=row.turns,
            )
            for row in rows
        ]
        summaries.sort(key=lambda s: (order.get(s.env_id, len(order)), s.env_id, s.seed))
        return summaries

    def episode(self, episode_id: int) -> EpisodeRecord:
        """One episode's full transcript.

        Raises:
            StoreError: no episode has that id.
        """
        with self._transaction() as conn:
            text = conn.scalar(sa.select(episodes.c.transcript).where(episodes.c.id == episode_id))
        if text is None:
            raise StoreError(f"no episode {episode_id} in {self._target.where}")
        return EpisodeRecord.from_json(text)

    def episode_ids(self, eval_id: int, env_id: str, seed: int) -> int:
        """The id of the stored episode of ``env_id`` and ``seed`` in an evaluation.

        Raises:
            StoreError: no such episode is stored.
        """
        with self._transaction() as conn:
            found = conn.scalar(
                sa.select(episodes.c.id).where(
                    episodes.c.eval_id == eval_id,
                    episodes.c.env_id == env_id,
                    episodes.c.seed == seed,
                )
            )
        if found is None:
            raise StoreError(
                f"evaluation {eval_id} has no episode of {env_id} with seed {seed} in "
                f"{self._target.where}"
            )
        return found

    def training_runs(self) -> dict[str, list[TrainingPoint]]:
        """Every training run's evaluation points, by run id, sorted by step."""
        tp = training_points.c
        with self._transaction() as conn:
            rows = conn.execute(
                sa.select(training_points).order_by(tp.run_id, tp.step, tp.env_id)
            ).all()
        runs: dict[str, list[TrainingPoint]] = {}
        for row in rows:
            runs.setdefault(row.run_id, []).append(
                TrainingPoint(
                    run_id=row.run_id,
                    model=row.model,
                    env_id=row.env_id,
                    step=row.step,
                    metrics=json.loads(row.metrics),
                    recorded_at=row.recorded_at,
                )
            )
        return runs

    # ------------------------------------------------------------------ helpers
    def _evals(
        self,
        conn: sa.Connection,
        suite: str | None = None,
        suite_version: int | None = None,
        eval_id: int | None = None,
    ) -> list[EvalSummary]:
        counts = (
            sa.select(episodes.c.eval_id, sa.func.count().label("n"))
            .group_by(episodes.c.eval_id)
            .subquery()
        )
        query = (
            sa.select(evals, sa.func.coalesce(counts.c.n, 0).label("episode_count"))
            .outerjoin(counts, counts.c.eval_id == evals.c.id)
            .order_by(evals.c.id)
        )
        if suite is not None:
            query = query.where(evals.c.suite == suite)
        if suite_version is not None:
            query = query.where(evals.c.suite_version == suite_version)
        if eval_id is not None:
            query = query.where(evals.c.id == eval_id)
        return [_summary(row) for row in conn.execute(query)]

    def _env_ids(self, conn: sa.Connection, eval_id: int) -> tuple[str, ...]:
        text = conn.scalar(sa.select(evals.c.env_ids).where(evals.c.id == eval_id))
        if text is None:
            raise self._no_eval(eval_id)
        return tuple(json.loads(text))

    def _no_eval(self, eval_id: int) -> StoreError:
        return StoreError(f"no evaluation {eval_id} in {self._target.where}")

    def _no_suite(self, conn: sa.Connection, suite: str, suite_version: int | None) -> StoreError:
        present = conn.execute(
            sa.select(evals.c.suite, evals.c.suite_version)
            .distinct()
            .order_by(evals.c.suite, evals.c.suite_version)
        ).all()
        held = ", ".join(f"{name} v{version}" for name, version in present) or "none yet"
        wanted = f"suite '{suite}'" + ("" if suite_version is None else f" v{suite_version}")
        return StoreError(
            f"no results for {wanted} in {self._target.where} (suites it holds: {held}): "
            "run roll-agent eval first"
        )


def _episode_row(eval_id: int, record: EpisodeRecord) -> dict[str, Any]:
    return {
        "eval_id": eval_id,
        "env_id": record.env_id,
        "seed": record.seed,
        "success": bool(record.success),
        "total_reward": float(record.total_reward),
        "turns": len(record.turns),
        "prompt_tokens": record.prompt_tokens,
        "reply_tokens": record.reply_tokens,
        "wall_s": float(record.wall_s),
        "finish_reason": record.finish_reason,
        "transcript": record.to_json(),
    }


def _episode_key(row: Mapping[str, Any]) -> tuple[str, int]:
    return row["env_id"], row["seed"]


def _summary(row: sa.Row[Any]) -> EvalSummary:
    identity = EvalIdentity(
        model=row.model,
        weights=row.weights,
        suite=row.suite,
        suite_version=row.suite_version,
        sampling=json.loads(row.sampling),
    )
    return EvalSummary(
        eval_id=row.id,
        identity=identity,
        provenance=_provenance(json.loads(row.provenance)),
        env_ids=tuple(json.loads(row.env_ids)),
        started_at=row.started_at,
        finished_at=row.finished_at,
        episodes=int(row.episode_count),
    )


def _provenance(data: Mapping[str, Any]) -> Provenance:
    # keys a newer Provenance added are dropped, so an older reader still shows the rest
    known = {f.name for f in fields(Provenance)}
    return Provenance(**{key: value for key, value in data.items() if key in known})


def _overall(columns: Iterable[str], results: Mapping[str, EnvResult]) -> float | None:
    rates = [results[env].success_rate if env in results else None for env in columns]
    if not rates or None in rates:
        return None
    return sum(rates) / len(rates)


def _rank(row: BoardRow) -> tuple[bool, float, str, int]:
    overall = row.overall
    return overall is None, -(overall or 0.0), row.evaluation.identity.model, row.evaluation.eval_id
