"""The newcomer benchmark times the README's first command: that command must install and then
run the main job."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_first_command_installs_then_runs_the_main_job(load_script) -> None:
    newcomer = load_script("newcomer_path")
    command = newcomer.readme_first_command(REPO_ROOT / "README.md")
    steps = [step.strip() for step in command.split("&&")]
    assert steps[0] == "pip install torch==2.13.0"  # pinned first: no CUDA wheels
    assert steps[-1] == "roll-agent train --env sokoban"
    assert any(step.startswith("pip install -e") for step in steps[1:-1])


def test_a_readme_without_a_command_is_refused(load_script, tmp_path: Path) -> None:
    newcomer = load_script("newcomer_path")
    readme = tmp_path / "README.md"
    readme.write_text("# a project\n\n```sh\n# only a comment\n```\n")
    with pytest.raises(SystemExit, match="holds no command"):
        newcomer.readme_first_command(readme)
