"""A run is never destroyed: a folder that holds a run is refused, unless ``--resume`` continues
it or ``--overwrite`` deletes it; a run's metrics and TensorBoard files hold that run only."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from pathlib import Path

import pytest

from tests.trainer.training.test_train_end_to_end import SMALL, _run_train
from trainer.cli.main import main
from trainer.config import load_config
from trainer.training.run_folder import HeldRun, RunFolderError, check_run_folder, held_run

# the end-to-end tests' tiny run, with TensorBoard too
LOGGED = [*SMALL, "--set", "train.loggers=[jsonl,tensorboard]"]


def _train(output: Path, steps: int, *extra: str):
    arguments = ["--env", "FrozenLake-v0", "--steps", str(steps), "--output", str(output)]
    return _run_train([*arguments, *LOGGED, *extra])


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-step run with a checkpoint each step, made once; tests work on copies of it."""
    folder = tmp_path_factory.mktemp("first") / "run"
    result = _train(folder, 2)
    assert result.returncode == 0, result.stdout + result.stderr
    return folder


@pytest.fixture
def run(first_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(first_run, copy)
    return copy


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _logged_steps(folder: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (folder / "metrics.jsonl").open()]


def _event_files(folder: Path) -> set[str]:
    return {path.name for path in (folder / "tensorboard").glob("events.out.tfevents.*")}


# ------------------------------------------------------------------------------- the commands
def test_a_second_train_into_a_run_is_refused_and_leaves_it_intact(run, capsys):
    before = _hashes(run)
    assert any(name.startswith("checkpoints/step-2/") for name in before)
    assert _event_files(run)

    arguments = ["--env", "FrozenLake-v0", "--steps", "2", "--output", str(run)]
    status = main(["train", *arguments, *LOGGED])

    assert status == 2
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [
        f"roll-agent: error: {run} already holds a run (RL step 2); continue it with --resume, "
        "start a new one with --output DIR, or delete it and start over with --overwrite"
    ]
    assert "Loading model" not in out + err
    assert _hashes(run) == before  # every file byte for byte, and no new one


def test_sft_into_a_run_is_refused_too(run, capsys):
    before = _hashes(run)

    status = main(["sft", "--env", "FrozenLake-v0", "--output", str(run), *LOGGED])

    assert status == 2
    _, err = capsys.readouterr()
    assert "already holds a run (RL step 2)" in err and "--overwrite" in err
    assert _hashes(run) == before


def test_resume_and_overwrite_together_are_refused(run, capsys):
    before = _hashes(run)
    arguments = ["--env", "FrozenLake-v0", "--output", str(run), "--resume", "--overwrite"]

    assert main(["train", *arguments, *LOGGED]) == 2

    _, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "--resume and --overwrite" in lines[0]
    assert _hashes(run) == before


def test_overwrite_replaces_the_run(run):
    old_events = _event_files(run)

    result = _train(run, 1, "--overwrite")

    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(path.name for path in (run / "checkpoints").iterdir()) == ["step-1"]
    assert _logged_steps(run) == [1]
    new_events = _event_files(run)
    assert len(new_events) == 1 and not new_events & old_events
    # the commands that go on from it resume it, without deleting it again
    train_on = next(line for line in result.stdout.splitlines() if "train on:" in line)
    assert train_on.endswith("--steps 2 --resume") and "--overwrite" not in train_on


def test_resume_appends_to_its_own_metrics(run):
    result = _train(run, 3, "--resume")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "at step 2" in result.stdout
    assert _logged_steps(run) == [1, 2, 3]


def test_resume_without_a_checkpoint_starts_its_metrics_over(run):
    shutil.rmtree(run / "checkpoints")  # e.g. it crashed before its first checkpoint

    result = _train(run, 1, "--resume")

    assert result.returncode == 0, result.stdout + result.stderr
    assert _logged_steps(run) == [1]


# ------------------------------------------------------------------------ the folder inspection
def _checkpoint(folder: Path, step: int, **state: object) -> None:
    checkpoint = folder / "checkpoints" / f"step-{step}"
    checkpoint.mkdir(parents=True)
    (checkpoint / "COMPLETE").write_text(json.dumps({"step": step, "time": 0.0}))
    if state:
        (checkpoint / "sft_state.json").write_text(json.dumps({"step": step, **state}))


def test_a_missing_or_empty_folder_or_one_with_only_logs_holds_no_run(tmp_path):
    assert held_run(tmp_path / "missing") is None
    assert held_run(tmp_path) is None
    (tmp_path / "train.log").write_text("a crash before anything was written\n")
    (tmp_path / "eval.log").write_text("")
    (tmp_path / "checkpoints").mkdir()  # empty
    (tmp_path / "tensorboard").mkdir()  # no event file
    assert held_run(tmp_path) is None


def test_what_a_run_writes_makes_a_folder_hold_one(tmp_path):
    tensorboard = tmp_path / "events" / "tensorboard"
    tensorboard.mkdir(parents=True)
    (tensorboard / "events.out.tfevents.1.host.1.0").write_bytes(b"")
    assert held_run(tmp_path / "events") == HeldRun()
    assert HeldRun().describe() == "no step recorded yet"

    logged = tmp_path / "logged"
    logged.mkdir()
    (logged / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n{"step": 3')  # cut off
    assert held_run(logged) == HeldRun(logged_step=2)
    assert held_run(logged).describe() == "last logged step 2, no RL checkpoint"

    evaluated = tmp_path / "evaluated"
    evaluated.mkdir()
    (evaluated / "evaluations.jsonl").write_text("")
    assert held_run(evaluated) == HeldRun()

    stopped = tmp_path / "stopped"
    _checkpoint(stopped / "sft", 7, finished=False)
    assert held_run(stopped).describe() == "warm start stopped at step 7"

    full = tmp_path / "full"
    _checkpoint(full, 20)
    _checkpoint(full, 40)
    (full / "checkpoints" / ".step-60.tmp-1").mkdir()  # a save a crash cut short
    _checkpoint(full / "sft", 312, finished=True)
    assert held_run(full).describe() == "RL step 40; warm start finished at step 312"


def test_check_refuses_a_run_and_overwrite_deletes_only_what_the_run_wrote(tmp_path):
    config = load_config(None, [f"train.output_dir={tmp_path}"])
    _checkpoint(tmp_path, 40)
    (tmp_path / "metrics.jsonl").write_text('{"step": 40}\n')
    (tmp_path / "train.log").write_text("")
    (tmp_path / "notes.md").write_text("the user's own file")

    with pytest.raises(RunFolderError, match=r"already holds a run \(RL step 40\)"):
        check_run_folder(config, resume=False, overwrite=False)
    check_run_folder(config, resume=True, overwrite=False)  # continues it: nothing changes
    assert (tmp_path / "checkpoints" / "step-40" / "COMPLETE").is_file()
    with pytest.raises(RunFolderError, match="--resume and --overwrite"):
        check_run_folder(config, resume=True, overwrite=True)

    check_run_folder(config, resume=False, overwrite=True)

    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.md"]
    check_run_folder(config, resume=False, overwrite=False)  # now free


def test_a_run_ended_by_its_time_limit_trains_on_with_twice_the_minutes(tmp_path):
    """Twice the steps would not go on: the resumed clock starts at the time already spent."""
    folder = tmp_path / "run"
    result = _train(folder, 50, "--set", "train.max_minutes=0.001")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "train.max_minutes) have passed" in result.stdout
    train_on = next(line for line in result.stdout.splitlines() if "train on:" in line)
    command = shlex.split(train_on.split("train on: ", 1)[1])
    assert command[-3:] == ["--set", "train.max_minutes=0.002", "--resume"]
    assert "train.max_minutes=0.001" not in command
    assert command[command.index("--steps") + 1] == "50"  # the steps asked for stay
    resumed = _run_train(command[2:])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "at step 1" in resumed.stdout
    assert _logged_steps(folder)[:2] == [1, 2]
