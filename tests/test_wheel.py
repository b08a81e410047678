"""A regular install (a wheel, not editable) holds everything a user runs: in a fresh venv that
reuses this machine's installed packages (``--system-site-packages``, so torch is not fetched
again), the wheel of this checkout alone makes ``roll-agent envs``, a one-step
``roll-agent train`` on tiny-random, ``roll-agent eval`` on the smoke suite and the leaderboard's
export work, from a folder outside the checkout. Its version is ``rollenv.__version__``, the one
the changelog's newest release names."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(command: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # the build needs only setuptools, already installed: no build isolation, no download
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out),
         str(REPO)],
        cwd=out,
    )  # fmt: skip
    (built,) = out.glob("rollenv-*.whl")
    return built


def test_the_wheel_holds_presets_suites_templates_and_static_files(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for folder, suffix in [
        ("trainer/presets/", ".yaml"),
        ("leaderboard/suites/", ".yaml"),
        ("leaderboard/site/templates/", ".html"),
        ("leaderboard/site/static/", ""),
        ("environments/webshop/templates/", ".html"),
    ]:
        assert any(n.startswith(folder) and n.endswith(suffix) for n in names), folder
    shipped = {n for n in names if n.startswith("trainer/presets/")}
    in_checkout = {
        f"trainer/presets/{p.name}" for p in (REPO / "trainer" / "presets").glob("*.yaml")
    }
    assert shipped == in_checkout


def test_the_version_has_one_source_that_the_changelog_names(wheel: Path) -> None:
    import rollenv

    assert wheel.name.startswith(f"rollenv-{rollenv.__version__}-")
    assert (
        "version ="
        not in (REPO / "pyproject.toml")
        .read_text()
        .split("[project]")[1]
        .split("[project.optional-dependencies]")[0]
    )
    changelog = (REPO / "docs" / "changelog.md").read_text()
    newest = re.search(r"^## \[?(\d+\.\d+\.\d+)", changelog, re.MULTILINE)
    assert newest is not None and newest.group(1) == rollenv.__version__


def test_a_fresh_venv_with_the_wheel_lists_trains_evaluates_and_exports(
    wheel: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--no-deps", "--quiet", str(wheel)], cwd=tmp_path)
    work = tmp_path / "work"  # outside the checkout: nothing is imported from it
    work.mkdir()
    where = _run(
        [str(python), "-c", "import rollenv, trainer; print(rollenv.__file__, trainer.__file__)"],
        cwd=work,
    ).stdout.split()
    assert all(path.startswith(str(venv)) for path in where), where
    agent = str(venv / "bin" / "roll-agent")

    envs = _run([agent, "envs", "--family", "sokoban"], cwd=work).stdout
    assert "Sokoban-v0" in envs

    run_dir = work / "run"
    _run(
        [agent, "train", "--env", "sokoban", "--model", "tiny-random", "--steps", "1",
         "--output", str(run_dir), "--set", "sft.before_rl=false",
         "--set", "train.max_minutes=null", "--set", "train.eval_groups=1",
         "--set", "env.groups_per_step=1",
         "--set", "env.max_turns=2", "--set", "model.trainable_layers=1"],
        cwd=work,
    )  # fmt: skip
    assert (run_dir / "metrics.jsonl").is_file()
    assert list((run_dir / "checkpoints").glob("step-*"))

    db = work / "board.db"
    _run([agent, "eval", "--model", "oracle", "--suite", "smoke", "--db", str(db)], cwd=work)
    site = work / "site"
    _run([agent, "leaderboard", "export", str(site), "--db", str(db)], cwd=work)
    assert (site / "index.html").is_file()
