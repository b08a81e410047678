"""The layering of DESIGN.md, checked by import-linter (contracts in ``pyproject.toml``).

The first test runs ``lint-imports`` on the project itself. The others copy the packages, add one
import that breaks a contract (a circle, a layer turned upside down, torch in the hub) and check
that ``lint-imports`` then fails naming it: the contracts are live, not decoration.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rollenv", "environments", "sandboxes", "trainer", "leaderboard")
LINT_IMPORTS = shutil.which("lint-imports")

pytestmark = pytest.mark.skipif(
    LINT_IMPORTS is None, reason="import-linter is missing: pip install -e '.[dev]'"
)


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    # the copy's packages come first on the path, before the editable install's
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_project_keeps_every_contract():
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _append_import(root: Path, module: str, statement: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n{statement}\n")


@pytest.mark.parametrize(
    ("module", "statement", "broken"),
    [
        pytest.param(
            "trainer.rollout.seeds",
            "from trainer.training.pipeline import Pipeline",
            "No import circles",
            id="circle",
        ),
        pytest.param(
            "rollenv.actions", "import trainer.config", "Layers", id="hub-imports-the-trainer"
        ),
        pytest.param(
            "sandboxes.result", "import environments", "Layers", id="sandboxes-import-envs"
        ),
        pytest.param(
            "trainer.config",
            "import environments.sokoban",
            "only through the registry",
            id="trainer-imports-a-family",
        ),
        pytest.param("rollenv.actions", "import torch", "nothing heavy", id="torch-in-the-hub"),
        pytest.param(
            "trainer.training.pipeline",
            "import trainer.cli.launch",
            "the commands over the training loop",
            id="training-imports-a-command",
        ),
        pytest.param(
            "rollenv.commands.envs_command",
            "import trainer.models",
            "The hub's commands import nothing",
            id="hub-command-imports-the-trainer",
        ),
    ],
)
def test_an_import_that_breaks_a_contract_fails(project_copy, module, statement, broken):
    assert _lint_imports(project_copy).returncode == 0  # the copy itself is clean
    _append_import(project_copy, module, statement)
    result = _lint_imports(project_copy)
    assert result.returncode != 0
    # the report lists each contract as "<name> KEPT" or "<name> BROKEN", wrapped to 80 columns
    report = " ".join(result.stdout.split("Contracts:")[0].split())
    verdict = re.search(re.escape(broken) + r".*?\b(KEPT|BROKEN)\b", report)
    assert verdict is not None and verdict.group(1) == "BROKEN", result.stdout
