"""The results store against a real PostgreSQL server, which this module starts.

The server is Debian's (``apt-get install -y postgresql``): ``initdb`` and ``pg_ctl`` run a
throwaway cluster on a free port of 127.0.0.1 with trust authentication, as the ``postgres``
user when the tests run as root (PostgreSQL refuses to run as root). Each test gets a database
of its own. Where the binaries are absent, or the server cannot start, the tests skip and say
why. The episode factory and the writer processes are those of ``test_store.py``.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import psycopg
import pytest

from leaderboard import schema
from leaderboard.records import TrainingPoint
from leaderboard.store import EvalStart, ResultStore, StoreError


def _sibling(name: str) -> ModuleType:
    """Loads ``name.py`` beside this file (test files are not importable packages here)."""
    spec = importlib.util.spec_from_file_location(
        f"_sqlite_{name}", Path(__file__).with_name(f"{name}.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shared = _sibling("test_store")
A, B = shared.A, shared.B
episode, identity, provenance = shared.episode, shared.identity, shared.provenance


def _postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian's layout), else ``initdb`` on PATH."""
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    for folder in reversed(versions):
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A running PostgreSQL cluster; yields its URL without a database name."""
    bin_dir = _postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (no initdb/pg_ctl): apt-get install -y postgresql")
    run_as: list[str] = []
    owner = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip(
                "running as root, and PostgreSQL refuses root: no 'postgres' user to run it"
            )
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser to start PostgreSQL as 'postgres'")
        run_as = ["runuser", "-u", "postgres", "--"]
    # not pytest's tmp_path: root's pytest folders are closed to the postgres user
    folder = Path(tempfile.mkdtemp(prefix="rollenv-pg-"))
    data, log, port = folder / "data", folder / "server.log", _free_port()
    if owner is not None:
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    started = False
    try:
        initdb = subprocess.run(
            [*run_as, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
            + ["-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
            capture_output=True,
            text=True,
        )
        if initdb.returncode:
            pytest.skip(f"initdb failed, so no PostgreSQL to test: {_tail(initdb.stderr)}")
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        start = subprocess.run(
            [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options]
            + ["-w", "-t", "60", "start"],
            capture_output=True,
            text=True,
        )
        if start.returncode:
            reason = _tail(log.read_text()) if log.exists() else _tail(start.stderr)
            pytest.skip(f"PostgreSQL did not start: {reason}")
        started = True
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        if started:
            subprocess.run(
                [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True,
            )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def url(server: str) -> str:
    """A new, empty database on the server."""
    name = f"board_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"


@pytest.fixture
def store(url: str) -> Iterator[ResultStore]:
    with ResultStore(url) as opened:
        yield opened


def test_a_transcript_and_its_provenance_come_back(store: ResultStore, url: str) -> None:
    record = episode(A, seed=2**40, turns=3, reward=0.5)  # a seed beyond 32 bits
    start = store.start_eval(identity(), provenance(), (A, B))
    assert store.add_episodes(start.eval_id, [record]) == 1
    store.finish_eval(start.eval_id)

    assert store.url == url
    assert store.episode(store.episode_ids(start.eval_id, A, 2**40)) == record
    summary = store.evaluation(start.eval_id)
    assert (summary.identity, summary.provenance) == (identity(), provenance())
    assert (summary.env_ids, summary.episodes, summary.complete) == ((A, B), 1, True)
    assert store.suites() == [("smoke", 1)]


def test_the_board_numbers(store: ResultStore) -> None:
    def add(model: str, records: list, finish: bool = True) -> int:
        start = store.start_eval(identity(model), provenance(), (A, B))
        store.add_episodes(start.eval_id, records)
        if finish:
            store.finish_eval(start.eval_id)
        return start.eval_id

    # oracle: A 3 of 4 (turns 2, 2, 4, 4), B 2 of 2 -> overall 0.875
    oracle = add(
        "oracle",
        [episode(A, s, s < 3, float(s < 3), turns=2 + 2 * (s >= 2)) for s in range(4)]
        + [episode(B, s) for s in range(2)],
    )
    partial = add("partial", [episode(A, 0)], finish=False)
    random = add("random", [episode(A, 0, False, 0.0), episode(B, 0, True, 1.0)])  # 0.5

    board = store.board("smoke")

    assert [row.evaluation.eval_id for row in board.rows] == [oracle, random, partial]
    assert [row.overall for row in board.rows] == [0.875, 0.5, None]
    a = board.rows[0].results[A]
    assert (a.episodes, a.successes, a.success_rate, a.mean_return) == (4, 3, 0.75, 0.75)
    assert (a.low, a.high) == (pytest.approx(0.3006, abs=1e-4), pytest.approx(0.9544, abs=1e-4))
    assert (a.mean_turns, a.prompt_tokens, a.reply_tokens, a.wall_s) == (3.0, 120, 24, 2.0)
    # PostgreSQL's AVG and SUM give Decimal and bigint: the board holds plain floats and ints
    assert [type(v) for v in (a.mean_turns, a.mean_return, a.prompt_tokens)] == [float, float, int]


def test_resume_complete_force_and_duplicates(store: ResultStore) -> None:
    first = store.start_eval(identity(), provenance(), (A,))
    assert store.add_episodes(first.eval_id, [episode(A, 0), episode(A, 1)]) == 2
    assert store.add_episodes(first.eval_id, [episode(A, 1), episode(A, 2), episode(A, 2)]) == 1

    resumed = store.start_eval(identity(), provenance(), (A,))
    assert resumed == EvalStart(first.eval_id, frozenset({(A, 0), (A, 1), (A, 2)}), False)
    store.finish_eval(first.eval_id)
    assert store.start_eval(identity(), provenance(), (A,)).complete

    forced = store.start_eval(identity(), provenance(), (A,), force=True)
    assert forced == EvalStart(first.eval_id, frozenset(), complete=False)
    assert store.episodes(first.eval_id) == []
    assert len(store.evals()) == 1


def test_a_changed_suite_and_a_newer_schema_are_refused(store: ResultStore, url: str) -> None:
    store.start_eval(identity(), provenance(), (A,))
    with pytest.raises(StoreError, match="suite 'smoke' version 1 changed since results"):
        store.start_eval(identity("random"), provenance(fingerprint="fp-2"), (A,))

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schema_version (version, description, applied_at) VALUES (%s, '', 0)",
            (schema.LATEST + 1,),
        )
    with pytest.raises(StoreError) as caught:
        ResultStore(url)
    assert str(caught.value) == (
        f"{url} was written by a newer rollenv (schema {schema.LATEST + 1}, this one knows "
        f"{schema.LATEST}): upgrade rollenv"
    )


def test_training_points(store: ResultStore) -> None:
    point = TrainingPoint("run", "smollm2-135m", A, 10, {"success": 0.1}, 1.0)
    store.add_training_point(point)
    store.add_training_point(TrainingPoint("run", "smollm2-135m", A, 10, {"success": 0.4}, 2.0))
    assert [p.metrics for p in store.training_runs()["run"]] == [{"success": 0.4}]


def test_two_processes_writing_two_evals(url: str) -> None:
    reports = shared.run_writers(
        [shared.writer_job(url, "first", 0, 300), shared.writer_job(url, "second", 0, 300)]
    )

    assert [r["inserted"] for r in reports] == [300, 300]
    with ResultStore(url) as store:
        assert sorted(e.episodes for e in store.evals()) == [300, 300]
        for report in reports:
            assert [e.seed for e in store.episodes(report["eval_id"])] == list(range(300))


def test_two_processes_writing_the_same_eval(url: str) -> None:
    reports = shared.run_writers(
        [shared.writer_job(url, "oracle", 0, 200), shared.writer_job(url, "oracle", 100, 300)]
    )

    assert reports[0]["eval_id"] == reports[1]["eval_id"]
    assert reports[0]["inserted"] + reports[1]["inserted"] == 300
    with ResultStore(url) as store:
        assert [e.seed for e in store.episodes(reports[0]["eval_id"])] == list(range(300))
        assert len(store.evals()) == 1


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    url = f"postgresql://board:s3cret@127.0.0.1:{_free_port()}/leaderboard"

    with pytest.raises(StoreError) as caught:
        ResultStore(url)
    message = str(caught.value)
    assert message.startswith(
        "cannot connect to the PostgreSQL database postgresql://board:***@127.0.0.1:"
    )
    assert message.endswith("check that the server runs and that the URL is right")
    assert "s3cret" not in message and "\n" not in message
