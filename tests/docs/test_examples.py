"""Every Python example of the README and the docs runs, page by page; runnable shell blocks run
their commands. A broken example fails here, naming its page and line."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from tests.docs.doc_pages import REPO, code_blocks, pages, python_blocks, run_python_blocks

PAGES_WITH_PYTHON = [page for page in pages() if python_blocks(page)]
RUNNABLE_SHELL = [
    block
    for page in pages()
    for block in code_blocks(page)
    if block.language in ("sh", "bash", "console") and block.marker == "runnable"
]


def _id(page: Path) -> str:
    return str(page.relative_to(REPO))


def test_the_docs_hold_python_examples_and_say_why_any_is_skipped() -> None:
    count = sum(len(python_blocks(page)) for page in pages())
    print(f"{count} Python blocks run, on {len(PAGES_WITH_PYTHON)} pages")
    assert count >= 10
    skipped = [
        block
        for page in pages()
        for block in code_blocks(page)
        if block.language in ("python", "py") and block.marker == "skip"
    ]
    assert all(block.reason for block in skipped), [(b.page, b.line) for b in skipped]


@pytest.mark.parametrize("page", PAGES_WITH_PYTHON, ids=_id)
def test_the_python_examples_of_a_page_run(page: Path, tmp_path) -> None:
    # a process of its own: a page registers envs, algorithms and strategies, as a reader would
    run = (
        "from pathlib import Path\n"
        "from tests.docs.doc_pages import python_blocks, run_python_blocks\n"
        f"run_python_blocks(python_blocks(Path({str(page)!r})))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "ROLLENV_CACHE": str(tmp_path / "cache"),
    }
    result = subprocess.run(
        [sys.executable, "-c", run],
        cwd=tmp_path,  # an example that writes files writes them here
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]


def test_a_broken_example_fails_naming_its_page_and_line(tmp_path) -> None:
    page = REPO / "docs" / "broken-example.md"  # read from text, never written
    text = (
        "# A page\n\n```python\nimport rollenv\nenv = rollenv.make('Sokoban-v0')\n```\n\n"
        "Then:\n\n```python\nobservation, info = env.reset(seed=0)\nenv.stepp('Up')\n```\n"
    )
    with pytest.raises(AttributeError) as raised:
        run_python_blocks(python_blocks(page, text))
    frames = traceback.extract_tb(raised.value.__traceback__)
    assert (frames[-1].filename, frames[-1].lineno) == ("docs/broken-example.md", 12)


def test_a_skipped_block_needs_its_marker_on_the_line_before() -> None:
    text = "<!-- skip: needs a GPU -->\n```python\nraise SystemExit\n```\n\n```python\nx = 1\n```\n"
    blocks = code_blocks(Path("docs/page.md"), text)
    assert [(b.marker, b.reason, b.code) for b in blocks] == [
        ("skip", "needs a GPU", "raise SystemExit\n"),
        (None, "", "x = 1\n"),
    ]


@pytest.mark.parametrize(
    "block", RUNNABLE_SHELL, ids=[f"{_id(b.page)}:{b.line}" for b in RUNNABLE_SHELL]
)
def test_a_runnable_shell_block_runs(block, tmp_path) -> None:
    for line in block.code.splitlines():
        command = line.strip().removeprefix("$ ")
        if not command or command.startswith("#"):
            continue
        words = shlex.split(command, comments=True)
        if words[0] == "python":
            words[0] = sys.executable
        result = subprocess.run(
            words, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
        )
        assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
