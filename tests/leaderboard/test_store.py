"""The results store on real SQLite files: transcripts round trip, the board's numbers against
figures worked out by hand, resuming, the errors a user can cause, schema migrations, and two
OS processes writing into one file at once.

This file is also the writer those processes run (``python test_store.py JOB``, see
``_writer``), and ``test_store_postgres.py`` runs it against PostgreSQL.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leaderboard import schema
from leaderboard.records import EpisodeRecord, EvalIdentity, Provenance, TrainingPoint, TurnRecord
from leaderboard.store import EvalStart, ResultStore, StoreError, default_db_path

A, B, C = "SimpleSokoban-v0", "FrozenLake-v0", "MathVerify-v0"
REPO = Path(__file__).resolve().parents[2]


def identity(model: str = "oracle", suite: str = "smoke", version: int = 1) -> EvalIdentity:
    return EvalIdentity(
        model=model,
        weights="baseline",
        suite=suite,
        suite_version=version,
        sampling={"temperature": 0.0, "seed": 0},
    )


def provenance(fingerprint: str = "fp-1", command: str = "roll-agent eval") -> Provenance:
    return Provenance(
        model_source="oracle",
        suite_fingerprint=fingerprint,
        env_versions={A: "0.1.0", B: "0.1.0"},
        rollenv_version="0.1.0",
        git_commit="c953489",
        hardware="2 CPU cores, no GPU",
        command=command,
    )


def episode(
    env_id: str,
    seed: int,
    success: bool = True,
    reward: float = 1.0,
    turns: int = 1,
    prompt_tokens: int = 10,
    reply_tokens: int = 2,
    wall_s: float = 0.5,
) -> EpisodeRecord:
    """An episode of ``turns`` turns, each of ``prompt_tokens`` and ``reply_tokens``; the last
    turn earns ``reward``."""
    steps = tuple(
        TurnRecord(
            reply=f"<answer>move {i}</answer>",
            observation=f"board after move {i}",
            reward=reward if i == turns - 1 else 0.0,
            metrics={"success": success and i == turns - 1, "action_is_valid": True},
            prompt_tokens=prompt_tokens,
            reply_tokens=reply_tokens,
        )
        for i in range(turns)
    )
    return EpisodeRecord(
        env_id=env_id,
        seed=seed,
        instruction="Push every box onto a target.",
        first_observation="#P_O_X#",
        turns=steps,
        success=success,
        total_reward=reward,
        finish_reason="terminated" if success else "max_turns",
        wall_s=wall_s,
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "board" / "leaderboard.db"


@pytest.fixture
def store(db: Path):
    with ResultStore(db) as opened:
        yield opened


def add_eval(
    store: ResultStore,
    model: str,
    records: list[EpisodeRecord],
    env_ids: tuple[str, ...] = (A, B),
    finish: bool = True,
) -> int:
    start = store.start_eval(identity(model), provenance(), env_ids)
    store.add_episodes(start.eval_id, records)
    if finish:
        store.finish_eval(start.eval_id)
    return start.eval_id


# --------------------------------------------------------------------------- writing, reading
def test_a_transcript_comes_back_as_it_was_stored(store: ResultStore) -> None:
    record = episode(A, seed=12, turns=3, reward=0.75)
    record = EpisodeRecord(
        **{**record.__dict__, "first_observation": "#P_O_X#\n« unicode » ✓", "wall_s": 1.25}
    )
    eval_id = add_eval(store, "oracle", [record], env_ids=(A,))

    episode_id = store.episode_ids(eval_id, A, 12)
    assert store.episode(episode_id) == record
    [summary] = store.episodes(eval_id)
    assert (summary.episode_id, summary.env_id, summary.seed, summary.turns) == (
        episode_id,
        A,
        12,
        3,
    )
    assert (summary.success, summary.total_reward) == (True, 0.75)


def test_the_evaluation_keeps_its_identity_and_provenance(store: ResultStore) -> None:
    eval_id = add_eval(store, "oracle", [episode(A, 0), episode(B, 0)])

    summary = store.evaluation(eval_id)
    assert summary.identity == identity("oracle")
    assert summary.identity.key == identity("oracle").key
    assert summary.provenance == provenance()
    assert summary.env_ids == (A, B)
    assert summary.episodes == 2
    assert summary.complete and summary.finished_at >= summary.started_at
    assert store.evals() == [summary]
    assert store.evals("smoke", 1) == [summary]
    assert store.evals("core") == []
    assert store.suites() == [("smoke", 1)]


def test_episodes_are_listed_in_suite_order_then_by_seed(store: ResultStore) -> None:
    records = [episode(B, 3), episode(A, 2), episode(B, 1), episode(A, 10)]
    eval_id = add_eval(store, "oracle", records)

    listed = [(e.env_id, e.seed) for e in store.episodes(eval_id)]
    assert listed == [(A, 2), (A, 10), (B, 1), (B, 3)]
    assert [e.seed for e in store.episodes(eval_id, B)] == [1, 3]


def test_unknown_ids_are_one_line_errors(store: ResultStore, db: Path) -> None:
    eval_id = add_eval(store, "oracle", [episode(A, 0)])

    with pytest.raises(StoreError, match=f"no evaluation 99 in {db}"):
        store.evaluation(99)
    with pytest.raises(StoreError, match="no evaluation 99"):
        store.episodes(99)
    with pytest.raises(StoreError, match="no evaluation 99"):
        store.add_episodes(99, [episode(A, 0)])
    with pytest.raises(StoreError, match="no evaluation 99"):
        store.finish_eval(99)
    with pytest.raises(StoreError, match="no episode 99"):
        store.episode(99)
    with pytest.raises(StoreError, match=f"evaluation {eval_id} has no episode of {B} with seed 0"):
        store.episode_ids(eval_id, B, 0)
    with pytest.raises(StoreError, match=f"has no env {C} \\(its envs: {A}, {B}\\)"):
        store.add_episodes(eval_id, [episode(C, 0)])


def test_a_training_point_written_twice_is_replaced(store: ResultStore) -> None:
    def point(run: str, step: int, success: float, env_id: str = A) -> TrainingPoint:
        return TrainingPoint(run, "smollm2-135m", env_id, step, {"success": success}, 1.0 + step)

    store.add_training_point(point("run-b", 20, 0.5))
    store.add_training_point(point("run-a", 10, 0.1))
    store.add_training_point(point("run-a", 0, 0.0))
    store.add_training_point(point("run-a", 10, 0.3))  # the same point again: replaces
    store.add_training_point(point("run-a", 10, 0.2, env_id=B))  # another env: its own point

    runs = store.training_runs()
    assert list(runs) == ["run-a", "run-b"]
    assert [(p.step, p.env_id, p.metrics["success"]) for p in runs["run-a"]] == [
        (0, A, 0.0),
        (10, B, 0.2),
        (10, A, 0.3),
    ]
    assert runs["run-b"] == [point("run-b", 20, 0.5)]


def test_the_ratings_table_for_two_player_games_exists(store: ResultStore, db: Path) -> None:
    with sqlite3.connect(db) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(ratings)")]
        conn.execute(
            "INSERT INTO ratings (model, game, mu, sigma, games, updated_at) "
            "VALUES ('oracle', 'TicTacToe-v0', 25.0, 8.3, 0, 0)"
        )
        with pytest.raises(sqlite3.IntegrityError):  # one rating per model and game
            conn.execute(
                "INSERT INTO ratings (model, game, mu, sigma, games, updated_at) "
                "VALUES ('oracle', 'TicTacToe-v0', 20.0, 5.0, 3, 1)"
            )
    assert columns == ["id", "model", "game", "mu", "sigma", "games", "updated_at"]


def test_a_database_in_memory_works(tmp_path: Path) -> None:
    with ResultStore(":memory:") as store:
        eval_id = add_eval(store, "oracle", [episode(A, 0), episode(B, 0)])
        assert store.board("smoke").rows[0].overall == 1.0
        assert store.url == "sqlite://"
        assert store.evaluation(eval_id).episodes == 2


# --------------------------------------------------------------------------- the board
def test_the_board_numbers_match_hand_computed_ones(store: ResultStore) -> None:
    # oracle and alpha: A 3 of 4 solved, B 2 of 2 -> overall (0.75 + 1) / 2 = 0.875
    strong = [
        episode(A, 0, True, 1.0, turns=2),
        episode(A, 1, True, 1.0, turns=2),
        episode(A, 2, True, 1.0, turns=4),
        episode(A, 3, False, 0.0, turns=4),
        episode(B, 0, True, 1.0, turns=1, wall_s=0.25),
        episode(B, 1, True, 0.5, turns=3, wall_s=0.25),
    ]
    # random: A 1 of 4, B 0 of 2 -> overall (0.25 + 0) / 2 = 0.125
    weak = [episode(A, s, s == 0, float(s == 0)) for s in range(4)]
    weak += [episode(B, s, False, 0.0) for s in range(2)]
    oracle = add_eval(store, "oracle", strong)
    tiny = add_eval(store, "tiny-random", [episode(A, 0)], finish=False)  # no B yet
    random = add_eval(store, "random", weak)
    zero = add_eval(store, "zero", [episode(A, 0, False, 0.0), episode(B, 0, False, 0.0)])
    alpha = add_eval(store, "alpha", strong)

    board = store.board("smoke", 1)

    assert (board.suite, board.suite_version, board.env_ids) == ("smoke", 1, (A, B))
    # best first; a tie (0.875) by model name; 0.0 above a row that lacks an env (None)
    assert [row.evaluation.eval_id for row in board.rows] == [alpha, oracle, random, zero, tiny]
    assert [row.overall for row in board.rows] == [0.875, 0.875, 0.125, 0.0, None]
    assert set(board.rows[-1].results) == {A} and not board.rows[-1].evaluation.complete

    a, b = board.rows[1].results[A], board.rows[1].results[B]
    assert (a.episodes, a.successes, a.success_rate) == (4, 3, 0.75)
    # Wilson, z = 1.96, n = 4, p = 0.75: d = 1 + z²/4 = 1.9604, centre = (0.75 + z²/8) / d
    # = 0.6275, half = z/d * sqrt(0.75*0.25/4 + z²/64) = 0.3269 -> [0.3006, 0.9544]
    assert (a.low, a.high) == (pytest.approx(0.3006, abs=1e-4), pytest.approx(0.9544, abs=1e-4))
    assert a.mean_return == 0.75 and a.mean_turns == 3.0  # (2 + 2 + 4 + 4) / 4
    assert (a.prompt_tokens, a.reply_tokens) == (120, 24)  # 12 turns of 10 and 2 tokens
    assert a.wall_s == 2.0
    # n = 2, p = 1: d = 1 + z²/2 = 2.9207, centre = (1 + z²/4) / d = 0.6712,
    # half = z/d * sqrt(z²/16) = 0.3288 -> [0.3424, 1]
    assert (b.episodes, b.successes, b.success_rate) == (2, 2, 1.0)
    assert (b.low, b.high) == (pytest.approx(0.3424, abs=1e-4), 1.0)
    assert (b.mean_return, b.mean_turns, b.prompt_tokens, b.wall_s) == (0.75, 2.0, 40, 0.5)

    r = board.rows[2].results
    # the mirror images: 1 of 4 -> [1 - 0.9544, 1 - 0.3006]; 0 of 2 -> [0, 1 - 0.3424]
    assert (r[A].low, r[A].high) == (pytest.approx(0.0456, abs=1e-4), pytest.approx(0.6994, 1e-4))
    assert (r[B].low, r[B].high) == (0.0, pytest.approx(0.6576, abs=1e-4))
    assert r[A].mean_return == 0.25


def test_board_columns_are_the_union_of_the_evals_envs_in_first_seen_order(
    store: ResultStore,
) -> None:
    add_eval(store, "first", [episode(A, 0), episode(B, 0)], env_ids=(A, B))
    add_eval(store, "second", [episode(B, 0), episode(C, 0)], env_ids=(B, C))

    board = store.board("smoke")
    assert board.env_ids == (A, B, C)
    assert [row.overall for row in board.rows] == [None, None]  # each lacks one column


def test_the_board_defaults_to_the_newest_version(store: ResultStore, db: Path) -> None:
    for version, model in [(2, "new"), (1, "old")]:
        start = store.start_eval(identity(model, version=version), provenance(), (A,))
        store.add_episodes(start.eval_id, [episode(A, 0)])

    assert store.suites() == [("smoke", 1), ("smoke", 2)]
    assert [r.evaluation.identity.model for r in store.board("smoke").rows] == ["new"]
    assert store.board("smoke").suite_version == 2
    assert [r.evaluation.identity.model for r in store.board("smoke", 1).rows] == ["old"]
    with pytest.raises(StoreError) as caught:
        store.board("core")
    assert str(caught.value) == (
        f"no results for suite 'core' in {db} (suites it holds: smoke v1, smoke v2): "
        "run roll-agent eval first"
    )
    with pytest.raises(StoreError, match="no results for suite 'smoke' v3"):
        store.board("smoke", 3)


# --------------------------------------------------------------------------- resuming
def test_an_interrupted_eval_resumes_and_a_finished_one_is_reported(store: ResultStore) -> None:
    first = store.start_eval(identity(), provenance(), (A, B))
    assert first == EvalStart(first.eval_id, frozenset(), complete=False)
    assert store.add_episodes(first.eval_id, [episode(A, 0), episode(A, 1)]) == 2

    resumed = store.start_eval(identity(), provenance(command="again"), (A, B))
    assert resumed == EvalStart(first.eval_id, frozenset({(A, 0), (A, 1)}), complete=False)
    assert store.evaluation(first.eval_id).provenance.command == "again"
    # an episode already stored is skipped, the others inserted
    assert store.add_episodes(first.eval_id, [episode(A, 1), episode(B, 0), episode(B, 0)]) == 1
    store.finish_eval(first.eval_id)

    finished = store.start_eval(identity(), provenance(), (A, B))
    assert finished == EvalStart(first.eval_id, frozenset({(A, 0), (A, 1), (B, 0)}), True)
    assert len(store.evals()) == 1
    assert store.evaluation(first.eval_id).episodes == 3


def test_force_replays_a_finished_eval_from_nothing(store: ResultStore) -> None:
    eval_id = add_eval(store, "oracle", [episode(A, 0), episode(B, 0)])
    before = store.evaluation(eval_id)

    forced = store.start_eval(identity(), provenance(), (A, B), force=True)

    assert forced == EvalStart(eval_id, frozenset(), complete=False)
    after = store.evaluation(eval_id)
    assert (after.episodes, after.finished_at) == (0, None)
    assert after.started_at >= before.started_at
    assert store.episodes(eval_id) == []
    assert store.add_episodes(eval_id, [episode(A, 0)]) == 1


def test_another_identity_is_another_eval(store: ResultStore) -> None:
    ids = {store.start_eval(identity(m), provenance(), (A,)).eval_id for m in ("a", "b", "a")}
    sampled = EvalIdentity("a", "baseline", "smoke", 1, sampling={"temperature": 0.7})
    ids.add(store.start_eval(sampled, provenance(), (A,)).eval_id)
    assert len(ids) == 3


def test_a_changed_suite_without_a_new_version_is_refused(store: ResultStore) -> None:
    add_eval(store, "oracle", [episode(A, 0)])

    with pytest.raises(StoreError) as caught:
        store.start_eval(identity("random"), provenance(fingerprint="fp-2"), (A, B))
    assert str(caught.value) == (
        "suite 'smoke' version 1 changed since results were stored for it: "
        "give the suite a new version"
    )
    # a new version of it is fine
    store.start_eval(identity("random", version=2), provenance(fingerprint="fp-2"), (A, B))


# --------------------------------------------------------------------------- files and errors
def test_the_default_path_honours_rollenv_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROLLENV_LEADERBOARD_DB", raising=False)  # tests/conftest.py sets it
    monkeypatch.setenv("ROLLENV_CACHE", str(tmp_path / "cache"))
    assert default_db_path() == tmp_path / "cache" / "leaderboard.db"
    with ResultStore() as store:
        assert store.url == f"sqlite:///{tmp_path / 'cache' / 'leaderboard.db'}"
    assert (tmp_path / "cache" / "leaderboard.db").is_file()

    monkeypatch.delenv("ROLLENV_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / ".cache" / "rollenv" / "leaderboard.db"
    monkeypatch.setenv("ROLLENV_LEADERBOARD_DB", str(tmp_path / "board.db"))
    assert default_db_path() == tmp_path / "board.db"


def test_paths_and_sqlite_urls_name_the_same_file(db: Path) -> None:
    with ResultStore(str(db)) as store:
        add_eval(store, "oracle", [episode(A, 0)])
    with ResultStore(f"sqlite:///{db}") as store:
        assert [e.identity.model for e in store.evals()] == ["oracle"]


def test_the_file_is_in_wal_mode(store: ResultStore, db: Path) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_file_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "leaderboard.db"
    path.write_bytes(b"\x00not a database\xff" * 512)

    with pytest.raises(StoreError) as caught:
        ResultStore(path)
    assert str(caught.value) == (
        f"{path} is not a leaderboard database (file is not a database): "
        "move it away or give another --db"
    )


def test_a_sqlite_file_of_something_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")

    with pytest.raises(StoreError, match=r"other.db is not a leaderboard database \(it holds "):
        ResultStore(path)


def test_a_path_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "results").write_text("a regular file")
    path = tmp_path / "results" / "sub" / "leaderboard.db"

    with pytest.raises(StoreError) as caught:
        ResultStore(path)
    assert str(caught.value) == (
        f"cannot create the leaderboard database {path} "
        f"(Not a directory: {tmp_path / 'results' / 'sub'}): give another --db"
    )

    with pytest.raises(StoreError, match=f"{tmp_path} is a folder, not a leaderboard database"):
        ResultStore(tmp_path)


def test_unsupported_urls_name_the_forms_allowed() -> None:
    with pytest.raises(StoreError) as caught:
        ResultStore("mysql://admin:hunter2@db.example/board")
    message = str(caught.value)
    assert message.startswith("unsupported database mysql://admin:***@db.example/board: give ")
    assert "sqlite:///PATH" in message and "postgresql://" in message
    assert "hunter2" not in message
    with pytest.raises(
        StoreError, match=r"^cannot read the database URL postgresql://\.\.\.: give "
    ):
        ResultStore("postgresql://admin:hunter2@db.example:port/board")


def test_a_newer_schema_is_refused(db: Path) -> None:
    ResultStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO schema_version (version, description, applied_at) "
            f"VALUES ({schema.LATEST + 1}, 'from the future', 0)"
        )

    with pytest.raises(StoreError) as caught:
        ResultStore(db)
    assert str(caught.value) == (
        f"{db} was written by a newer rollenv (schema {schema.LATEST + 1}, this one knows "
        f"{schema.LATEST}): upgrade rollenv"
    )


def test_missing_migrations_are_applied_once_in_one_transaction(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ResultStore(db) as store:
        add_eval(store, "oracle", [episode(A, 0)])

    def add_note(conn: Any) -> None:
        conn.exec_driver_sql("ALTER TABLE ratings ADD COLUMN note TEXT")

    def add_note_then_fail(conn: Any) -> None:
        add_note(conn)
        raise RuntimeError("the step failed half way")

    known = schema.LATEST
    failing = schema.Migration(known + 1, "ratings.note", add_note_then_fail)
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, failing))
    monkeypatch.setattr(schema, "LATEST", known + 1)
    with pytest.raises(RuntimeError, match="half way"):
        ResultStore(db)
    assert _columns(db, "ratings")[-1] == "updated_at"  # the ALTER was rolled back
    assert _versions(db) == list(range(1, known + 1))

    monkeypatch.setattr(
        schema,
        "MIGRATIONS",
        (*schema.MIGRATIONS[:known], schema.Migration(known + 1, "ratings.note", add_note)),
    )
    for _ in range(2):  # the second open finds the new version and applies nothing
        with ResultStore(db) as store:
            assert [e.identity.model for e in store.evals()] == ["oracle"]
    assert _columns(db, "ratings")[-1] == "note"
    assert _versions(db) == list(range(1, known + 2))


def _columns(db: Path, table: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _versions(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT version FROM schema_version ORDER BY 1")]


# --------------------------------------------------------------------------- two processes
def run_writers(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs one writer process per job, releases them together, and returns their reports."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, json.dumps(job)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )
        for job in jobs
    ]
    try:
        for proc in procs:  # every writer has imported everything and waits
            line = proc.stdout.readline()
            assert line == "ready\n", (line, proc.stderr.read())
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [proc.returncode for proc in procs] == [0] * len(procs), outputs
    return [json.loads(out) for out, _ in outputs]


def writer_job(db: str, model: str, first: int, stop: int) -> dict[str, Any]:
    return {"db": db, "model": model, "seeds": [first, stop], "batch": 5}


def _writer(job: dict[str, Any]) -> None:
    """One writer process: opens the store (perhaps creating it) once the parent says go,
    starts the eval of ``job["model"]`` and stores episodes of env A, seeds
    ``range(*job["seeds"])``, in batches of ``job["batch"]``."""
    print("ready", flush=True)
    assert sys.stdin.readline() == "go\n"
    seeds = range(*job["seeds"])
    batch = job["batch"]
    inserted = 0
    with ResultStore(job["db"]) as store:
        start = store.start_eval(identity(job["model"]), provenance(), (A,))
        for at in range(0, len(seeds), batch):
            records = [episode(A, seed, seed % 3 == 0) for seed in seeds[at : at + batch]]
            inserted += store.add_episodes(start.eval_id, records)
        store.finish_eval(start.eval_id)
    print(json.dumps({"eval_id": start.eval_id, "inserted": inserted}))


def stored(db: Path) -> list[tuple[int, str, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT eval_id, env_id, seed FROM episodes").fetchall()


def test_two_processes_writing_two_evals_lose_nothing(db: Path) -> None:
    reports = run_writers(
        [writer_job(str(db), "first", 0, 300), writer_job(str(db), "second", 0, 300)]
    )

    assert [r["inserted"] for r in reports] == [300, 300]
    first, second = (r["eval_id"] for r in reports)
    assert first != second
    rows = stored(db)
    assert len(rows) == len(set(rows)) == 600
    assert sorted(rows) == sorted((e, A, s) for e in (first, second) for s in range(300))
    with ResultStore(db) as store:
        assert [(e.episodes, e.complete) for e in store.evals()] == [(300, True), (300, True)]
        assert [row.results[A].successes for row in store.board("smoke").rows] == [100, 100]


def test_two_processes_writing_the_same_eval_store_each_episode_once(db: Path) -> None:
    reports = run_writers(
        [writer_job(str(db), "oracle", 0, 200), writer_job(str(db), "oracle", 100, 300)]
    )

    assert reports[0]["eval_id"] == reports[1]["eval_id"]
    assert reports[0]["inserted"] + reports[1]["inserted"] == 300
    rows = stored(db)
    assert len(rows) == len(set(rows)) == 300
    assert sorted(rows) == [(reports[0]["eval_id"], A, s) for s in range(300)]


if __name__ == "__main__":
    _writer(json.loads(sys.argv[1]))
