"""Checkpoints a crash can never corrupt: ``<run>/checkpoints/step-N/``.

A checkpoint is written into a hidden temporary folder beside its final place; a ``COMPLETE``
marker is written last and the folder is then renamed into place in one ``rename``. ``--resume``
only trusts folders named ``step-N`` that hold the marker, so a crash mid-write leaves at most a
temporary folder that nothing reads (and the next save clears).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

MARKER = "COMPLETE"


def checkpoints_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def save_checkpoint(run_dir: Path, step: int, write: Callable[[Path], None]) -> Path:
    """Calls ``write(folder)`` on a temporary folder, then publishes it as ``step-{step}``."""
    root = checkpoints_dir(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(".step-*.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    temporary = root / f".step-{step}.tmp-{os.getpid()}"
    final = root / f"step-{step}"
    temporary.mkdir()
    write(temporary)
    (temporary / MARKER).write_text(json.dumps({"step": step, "time": time.time()}))
    _fsync_tree(temporary)
    if final.exists():  # a re-save of the same step: move the old one aside first
        old = root / f".step-{step}.tmp-old-{os.getpid()}"
        final.rename(old)
        shutil.rmtree(old)
    temporary.rename(final)
    _fsync_dir(root)
    return final


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete ``step-N`` folder of a run, or ``None``."""
    complete = []
    for folder in checkpoints_dir(run_dir).glob("step-*"):
        suffix = folder.name.removeprefix("step-")
        if suffix.isdigit() and (folder / MARKER).is_file():
            complete.append((int(suffix), folder))
    return max(complete)[1] if complete else None


def checkpoint_step(folder: Path) -> int:
    return int(json.loads((Path(folder) / MARKER).read_text())["step"])


def _fsync_tree(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
