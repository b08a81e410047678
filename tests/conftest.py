"""Skips ``@pytest.mark.gpu`` tests, with the reason, where torch sees no CUDA GPU; keeps the
trainer's tests, and the sandboxes', on one pytest-xdist worker each; gives each test its own
leaderboard database (training records its evaluations there), never the user's."""

from __future__ import annotations

import importlib.util

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = xdist_group(item.nodeid)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
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


#: tests that run sandboxed programs (bwrap, docker), by a part of their id: the security tests
#: assert from the host that no process of a sandbox uid is left, so no two may overlap
_SANDBOX_TESTS = (
    "tests/sandboxes/",
    "sandboxes/",
    "tests/environments/code/",
    "tests/environments/math/",
    "tests/leaderboard/",
    "tests/rollenv/test_mixture.py",
    "CodeSandbox",
    "MathTool",
    "[sandbox]",
)
#: tests that start Ray clusters, train workers and servers (a second local Ray cluster at the
#: same time would be joined instead of started)
_TRAINER_TESTS = ("tests/trainer/", "trainer/", "tests/benchmarks/")


def xdist_group(nodeid: str) -> str | None:
    """The pytest-xdist group a test runs in (``-n 2 --dist loadgroup`` in pyproject): the tests
    of one group run one after another on one worker; the others are shared out.

    Example:
        >>> xdist_group("tests/environments/test_all_envs.py::test_x[MathTool-v0]")
        'sandbox'
        >>> xdist_group("tests/environments/test_all_envs.py::test_x[Sokoban-v0]") is None
        True
    """
    if any(part in nodeid for part in _SANDBOX_TESTS) and not nodeid.startswith("trainer/"):
        return "sandbox"
    if nodeid.startswith(_TRAINER_TESTS):
        return "trainer"
    return None


@pytest.fixture(autouse=True)
def _own_leaderboard_db(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    folder = tmp_path_factory.mktemp("leaderboard")
    monkeypatch.setenv("ROLLENV_LEADERBOARD_DB", str(folder / "leaderboard.db"))
