"""Skips ``@pytest.mark.gpu`` tests, with the reason, where torch sees no CUDA GPU; gives each
test its own leaderboard database (training records its evaluations there), never the user's;
gives each pytest-xdist worker its own Ray session folder and its share of the CPU cores."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # ray.init() without an address joins the newest cluster it finds in RAY_TMPDIR: under
    # `pytest -n 2`, one worker's tests would join (and shut down) the other worker's cluster
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return
    os.environ.setdefault("RAY_TMPDIR", os.path.join(tempfile.gettempdir(), f"ray-{worker}"))
    _share_the_cores(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def _share_the_cores(workers: int) -> None:
    """Gives each of ``workers`` xdist workers, and the processes it starts, its own cores.

    By default every torch process runs one OpenMP thread per core. Two workers (and the CLI
    and Ray processes their tests start) would then run twice as many spinning threads as
    there are cores, and each waits on threads descheduled by the other: on 2 cores that made
    model-bound tests 2-4x slower than alone.
    """
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, threads)
    if "torch" in sys.modules:  # OpenMP read the variable when torch loaded
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = None
    if importlib.util.find_spec("torch") is None:
        reason = "needs torch and a CUDA GPU; torch is not installed"
    else:
        import torch

        if not torch.cuda.is_available():
            reason = (
                "needs a CUDA GPU and torch sees none on this machine; "
                "run `pytest -m gpu` where one exists"
            )
    if reason is not None:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _own_leaderboard_db(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    folder = tmp_path_factory.mktemp("leaderboard")
    monkeypatch.setenv("ROLLENV_LEADERBOARD_DB", str(folder / "leaderboard.db"))
