"""Skips ``@pytest.mark.gpu`` tests, with the reason, where torch sees no CUDA GPU; gives each
test its own leaderboard database (training records its evaluations there), never the user's."""

from __future__ import annotations

import importlib.util

import pytest


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
                "needs a CUDA GPU (vLLM, SGLang) and torch sees none on this machine; "
                "run `pytest -m gpu` where one exists"
            )
    if reason is not None:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _own_leaderboard_db(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    folder = tmp_path_factory.mktemp("leaderboard")
    monkeypatch.setenv("ROLLENV_LEADERBOARD_DB", str(folder / "leaderboard.db"))
