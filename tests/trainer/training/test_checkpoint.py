from __future__ import annotations

import pytest

from trainer.training.checkpoint import checkpoint_step, latest_checkpoint, save_checkpoint


def _write(text: str):
    def write(folder):
        (folder / "weights.bin").write_text(text)

    return write


def test_latest_complete_checkpoint_is_found(tmp_path):
    assert latest_checkpoint(tmp_path) is None
    save_checkpoint(tmp_path, 2, _write("two"))
    save_checkpoint(tmp_path, 10, _write("ten"))
    latest = latest_checkpoint(tmp_path)
    assert latest.name == "step-10" and checkpoint_step(latest) == 10
    assert (latest / "weights.bin").read_text() == "ten"


def test_a_crash_mid_write_leaves_nothing_resume_would_trust(tmp_path):
    save_checkpoint(tmp_path, 1, _write("one"))

    def crash(folder):
        (folder / "weights.bin").write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path, 2, crash)
    assert latest_checkpoint(tmp_path).name == "step-1"
    assert not (tmp_path / "checkpoints" / "step-2").exists()
    # the next save clears the debris
    save_checkpoint(tmp_path, 3, _write("three"))
    leftovers = [p.name for p in (tmp_path / "checkpoints").iterdir()]
    assert sorted(leftovers) == ["step-1", "step-3"]


def test_a_folder_without_the_marker_is_ignored(tmp_path):
    save_checkpoint(tmp_path, 1, _write("one"))
    (tmp_path / "checkpoints" / "step-5").mkdir()
    (tmp_path / "checkpoints" / "step-5" / "weights.bin").write_text("torn")
    assert latest_checkpoint(tmp_path).name == "step-1"


def test_saving_a_step_again_replaces_it(tmp_path):
    save_checkpoint(tmp_path, 4, _write("old"))
    save_checkpoint(tmp_path, 4, _write("new"))
    assert (latest_checkpoint(tmp_path) / "weights.bin").read_text() == "new"
