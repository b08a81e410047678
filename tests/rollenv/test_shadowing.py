"""A user's own ``environments/``, ``trainer.py``, ``leaderboard.py`` and ``sandboxes/`` beside
their script: with a regular (non-editable) install of rollenv, the hub says in one line what
hides its package and what to do, instead of a list of plugins that failed to load."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rollenv.shadowing import HUB_PACKAGES, find_shadowing, import_hub_package

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rollenv installed (not editable, without its dependencies) into a folder of its own."""
    source = tmp_path_factory.mktemp("source")
    for name in ("rollenv", *HUB_PACKAGES):
        shutil.copytree(
            REPO_ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, source / name)
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["--disable-pip-version-check", "--target", str(target), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return target


def _user_project(folder: Path) -> Path:
    """A project with modules named as the hub's packages, each of its own."""
    for package in ("environments", "sandboxes"):
        (folder / package).mkdir(parents=True)
        (folder / package / "__init__.py").write_text("MINE = True\n")
    (folder / "trainer.py").write_text("def train():\n    return 'mine'\n")
    (folder / "leaderboard.py").write_text("SCORES = {}\n")
    return folder


def _python(code: str, cwd: Path, installed: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


MAKE = (
    "import rollenv\n"
    "assert rollenv.__file__.startswith({site!r}), rollenv.__file__  # the regular install\n"
    "env = rollenv.make('Sokoban-v0')\n"
    "print(env.reset(seed=0)[0].splitlines()[0])\n"
)


@pytest.mark.slow
def test_a_users_own_environments_package_gets_one_line_naming_it_and_the_fix(
    installed: Path, tmp_path: Path
) -> None:
    project = _user_project(tmp_path / "project")
    result = _python(MAKE.format(site=str(installed)), project, installed)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("rollenv.registration.UnknownEnvError: No rollenv environment")
    assert f"{project / 'environments'} hides rollenv's own package 'environments'" in last
    assert str(installed / "environments") in last
    assert "Rename your 'environments' or run from another folder." in last
    warnings = [line for line in result.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1 and "hides rollenv's own package 'environments'" in warnings[0]
    assert "failed to load" not in result.stderr  # not one line per family


@pytest.mark.slow
def test_the_same_install_runs_from_a_folder_without_such_modules(
    installed: Path, tmp_path: Path
) -> None:
    presets = (
        "from trainer.config import load_config, preset_names\n"
        "print(sorted(preset_names()), load_config('sokoban').env.id)\n"
    )
    result = _python(MAKE.format(site=str(installed)) + presets, tmp_path, installed)
    assert result.returncode == 0, result.stderr[-2000:]
    board, presets_line = result.stdout.strip().splitlines()
    assert board  # the first line of a Sokoban board
    assert "'sokoban'" in presets_line and presets_line.endswith("SimpleSokoban-v0")
    assert "hides" not in result.stderr


@pytest.mark.slow
def test_a_users_own_sandboxes_package_is_named_where_a_code_env_needs_the_hubs(
    installed: Path, tmp_path: Path
) -> None:
    project = _user_project(tmp_path / "project")
    code = "from rollenv.shadowing import import_hub_package\nimport_hub_package('sandboxes')\n"
    result = _python(code, project, installed)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("rollenv.shadowing.ShadowedPackageError: ")
    assert f"{project / 'sandboxes'} hides rollenv's own package 'sandboxes'" in last


def test_nothing_is_hidden_when_run_from_this_checkout() -> None:
    assert find_shadowing() == []
    assert import_hub_package("leaderboard").__name__ == "leaderboard"


def test_the_hub_packages_are_those_the_distribution_installs() -> None:
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    include = pyproject.split("[tool.setuptools.packages.find]")[1].split("\n\n")[0]
    assert {f'"{name}*"' for name in ("rollenv", *HUB_PACKAGES)} == {
        part.strip() for part in include.split("[")[1].split("]")[0].split(",")
    }
