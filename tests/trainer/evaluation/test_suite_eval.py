"""``roll-agent eval --suite`` end to end: baselines and models into a real SQLite store, a served
model through ``openai:``, and what an interrupted, concurrent or mistaken eval does."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from leaderboard.store import ResultStore
from tests.served_tiny_random import free_port, served_tiny_random
from trainer.cli.main import main

pytestmark = pytest.mark.slow


def _eval(db: Path, *arguments: str) -> None:
    assert main(["eval", "--db", str(db), *arguments]) == 0


def _cli(*arguments: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "trainer.cli", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stored(db: Path) -> list[tuple[str, str, int]]:
    """(model, env, seed) of every stored episode, read with sqlite3 itself, not our store."""
    with sqlite3.connect(db) as connection:
        return connection.execute(
            "SELECT evals.model, episodes.env_id, episodes.seed FROM episodes "
            "JOIN evals ON evals.id = episodes.eval_id"
        ).fetchall()


def _suite(tmp_path: Path, name: str, seeds: int) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"name: {name}\nversion: 0\nenvs:\n"
        f"  - id: FrozenLake-v0\n    seeds: {{start: 0, count: {seeds}}}\n"
        f"  - id: SimpleSokoban-v0\n    seeds: {{start: 0, count: {seeds}}}\n"
    )
    return path


def test_the_oracle_ranks_above_random_and_the_board_exports(tmp_path, capsys):
    db = tmp_path / "board.db"
    _eval(db, "--model", "random", "--suite", "smoke")
    _eval(db, "--model", "oracle", "--suite", "smoke")
    printed = capsys.readouterr().out
    assert "oracle on smoke-v0" in printed and "overall" in printed
    with ResultStore(db) as store:
        board = store.board("smoke")
    assert [row.evaluation.identity.model for row in board.rows] == ["oracle", "random"]
    oracle, random_ = board.rows
    assert oracle.overall == 1.0 > random_.overall
    assert all(result.episodes == 4 for result in oracle.results.values())
    assert main(["leaderboard", "export", str(tmp_path / "site"), "--db", str(db)]) == 0
    assert "oracle" in (tmp_path / "site" / "index.html").read_text()


def test_an_identical_eval_is_reported_not_replayed_unless_forced(tmp_path, capsys):
    db = tmp_path / "board.db"
    _eval(db, "--model", "random", "--suite", "smoke")
    first = _stored(db)
    _eval(db, "--model", "random", "--suite", "smoke")
    assert "already evaluated" in capsys.readouterr().out
    assert _stored(db) == first
    _eval(db, "--model", "random", "--suite", "smoke", "--force")
    assert "played 12 episodes" in capsys.readouterr().out
    assert sorted(_stored(db)) == sorted(first)


def test_a_served_model_matches_the_same_model_in_process(tmp_path):
    """tiny-random greedy through ``roll-agent serve`` and ``openai:`` plays the same episodes
    as in this process: the same replies, turn by turn."""
    db = tmp_path / "board.db"
    with served_tiny_random(free_port()) as endpoint:
        _eval(db, "--model", "tiny-random", "--suite", "smoke")
        _eval(db, "--model", endpoint, "--suite", "smoke")
    with ResultStore(db) as store:
        board = store.board("smoke")
        assert [row.evaluation.identity.model for row in board.rows] == ["tiny-random"] * 2
        assert all(row.overall is not None for row in board.rows)
        evals = {e.identity.weights.startswith("http"): e.eval_id for e in store.evals("smoke")}
        local, served = (
            {(s.env_id, s.seed): store.episode(s.episode_id) for s in store.episodes(evals[k])}
            for k in (False, True)
        )
    assert len(local) == len(served) == 12
    for key, episode in local.items():
        assert [t.reply for t in served[key].turns] == [t.reply for t in episode.turns], key
        assert served[key].total_reward == episode.total_reward
    assert sum(turn.reply_tokens for e in local.values() for turn in e.turns) > 0


def test_a_model_keeps_its_batch_full_and_plays_what_the_reference_engine_plays(tmp_path):
    """tiny-random greedy, 2 episodes at a time on the continuous engine (each next turn joins
    the running batch, a new episode starts as one ends), stored 3 at a time: every episode
    once, with the replies HF generate gives playing 2 episodes turn by turn; bfloat16 weights
    are a separate eval, recorded as such."""
    db, reference_db = tmp_path / "board.db", tmp_path / "reference.db"
    suite = _suite(tmp_path, "batch", 5)
    # 16-token replies: tiny-random never ends one early, and every turn still joins the batch
    common = ["--model", "tiny-random", "--suite", str(suite), "--batch-size", "2"]
    common += ["--max-new-tokens", "16"]
    _eval(db, *common, "--chunk", "3")
    _eval(db, *common, "--dtype", "bfloat16")
    # the backend is not part of an eval's identity (the same model and sampling): its own file
    _eval(reference_db, *common, "--backend", "hf")
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT eval_id, env_id, seed FROM episodes").fetchall()
    assert len(rows) == len(set(rows)) == 2 * 2 * 5
    with ResultStore(db) as store, ResultStore(reference_db) as reference:
        float32, bfloat16 = store.evals("batch")
        assert "dtype" not in float32.identity.sampling
        assert bfloat16.identity.sampling["dtype"] == "bfloat16"
        [hf] = reference.evals("batch")
        continuous, expected = (
            {(s.env_id, s.seed): source.episode(s.episode_id) for s in source.episodes(e.eval_id)}
            for source, e in ((store, float32), (reference, hf))
        )
    assert continuous.keys() == expected.keys() and len(continuous) == 10
    for key, episode in continuous.items():
        assert [t.reply for t in episode.turns] == [t.reply for t in expected[key].turns], key


def test_two_evals_at_once_lose_and_duplicate_nothing(tmp_path):
    db = tmp_path / "board.db"
    suite = _suite(tmp_path, "pair", 150)
    writers = [
        _cli("eval", "--model", model, "--suite", str(suite), "--db", str(db), "--chunk", "3")
        for model in ("random", "oracle")
    ]
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    stored = _stored(db)
    assert len(stored) == len(set(stored)) == 2 * 2 * 150
    assert Counter(model for model, _, _ in stored) == {"random": 300, "oracle": 300}


def test_kill_9_mid_eval_then_the_same_command_stores_every_episode_once(tmp_path):
    db = tmp_path / "board.db"
    suite = _suite(tmp_path, "long", 400)
    command = ["eval", "--model", "random", "--suite", str(suite), "--db", str(db), "--chunk", "1"]
    victim = _cli(*command)
    assert victim.stderr is not None
    for line in victim.stderr:
        if "episodes stored" in line:  # the first chunk is in the store: kill it now
            os.kill(victim.pid, signal.SIGKILL)
            break
    victim.wait(timeout=60)
    assert victim.returncode == -signal.SIGKILL
    interrupted = _stored(db)
    assert 0 < len(interrupted) < 800
    resumed = _cli(*command)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert f"played {800 - len(interrupted)} episodes" in out
    stored = _stored(db)
    assert len(stored) == len(set(stored)) == 800
    assert set(interrupted) <= set(stored)


def _one_line_error(*arguments: str) -> str:
    ran = subprocess.run(
        [sys.executable, "-m", "trainer.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 2, ran.stdout + ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roll-agent: error: "), ran.stderr
    return lines[0]


def test_mistakes_get_one_line_and_exit_2(tmp_path):
    corrupted = tmp_path / "corrupted.db"
    corrupted.write_bytes(b"this is not a database" * 200)
    assert "not a leaderboard database" in _one_line_error(
        "eval", "--model", "random", "--suite", "smoke", "--db", str(corrupted)
    )
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert str(blocker) in _one_line_error(
        "eval", "--model", "random", "--suite", "smoke", "--db", str(blocker / "board.db")
    )
    assert "did you mean smoke" in _one_line_error("eval", "--model", "random", "--suite", "smok")
    assert "tiny-random" in _one_line_error(
        "eval", "--model", "tiny-randm", "--suite", "smoke", "--db", str(tmp_path / "b.db")
    )
    bad_env = tmp_path / "bad.yaml"
    bad_env.write_text("name: bad\nversion: 0\nenvs:\n  - id: FrozenLak-v0\n    seeds: [0]\n")
    assert "FrozenLake-v0" in _one_line_error(
        "eval", "--model", "random", "--suite", str(bad_env), "--db", str(tmp_path / "b.db")
    )
    assert "FrozenLake-v0" in _one_line_error("eval", "--env", "FrozenLak-v0")
    assert "openai:http://HOST:PORT/v1#MODEL_ID" in _one_line_error(
        "eval", "--model", "openai:localhost:8000", "--suite", "smoke"
    )
    assert "local model on the continuous backend" in _one_line_error(
        "eval", "--model", "random", "--suite", "smoke", "--dtype", "bfloat16"
    )
    assert not (tmp_path / "b.db").exists() or _stored(tmp_path / "b.db") == []


def test_training_records_its_evaluations_and_enters_its_final_checkpoint(tmp_path, capsys):
    """``roll-agent train --db --leaderboard``: each evaluation point is stored under the run's
    id, and the final checkpoint is played on the suite as ``<run>@step-N``."""
    db, run = tmp_path / "board.db", tmp_path / "lake-run"
    status = main(
        ["train", "--env", "FrozenLake-v0", "--model", "tiny-random", "--steps", "2"]
        + ["--output", str(run), "--db", str(db), "--leaderboard", "smoke"]
        + ["--set", "env.group_size=2", "--set", "env.groups_per_step=2"]
        + ["--set", "env.max_turns=3", "--set", "sampling.max_new_tokens=8"]
        + ["--set", "train.eval_every=1", "--set", "train.eval_groups=2"]
        + ["--set", "train.loggers=[jsonl]", "--set", "model.lora=null"]
    )
    assert status == 0
    assert "lake-run@step-2 on smoke-v0" in capsys.readouterr().out
    with ResultStore(db) as store:
        points = store.training_runs()["lake-run"]
        assert [p.step for p in points] == [1, 2]
        assert {p.env_id for p in points} == {"FrozenLake-v0"}
        assert all(0.0 <= p.metrics["success"] <= 1.0 for p in points)
        (row,) = store.board("smoke").rows
    assert row.evaluation.identity.model == "lake-run@step-2"
    assert row.evaluation.provenance.model_source == str(run / "checkpoints/step-2/model")
    assert row.evaluation.complete and sum(r.episodes for r in row.results.values()) == 12
