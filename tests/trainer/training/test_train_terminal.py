"""``roll-agent train`` on a terminal: the screen a user reads, through a pseudo-terminal of 80
columns and a terminal emulator (pyte), at the end of a short run with the main preset's plan
(warm start, then RL, a whole-run budget, evaluations by time)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

pyte = pytest.importorskip("pyte")

COLUMNS, ROWS = 80, 400  # rows enough to keep every line the run prints on the screen

# a sokoban preset on the tiny model, its hour shrunk to about 50 seconds, an evaluation of 4
# boards at the start and every 6 s: the main job (the warm start for the whole run), and the
# preset with RL after 10 s of warm start
TINY = [
    "--model",
    "tiny-random",
    "--set",
    "model.trainable_layers=1",
    "--set",
    "train.max_minutes=0.8",
    "--set",
    "train.eval_every_minutes=0.1",
    "--set",
    "train.eval_groups=4",
    "--set",
    "env.groups_per_step=2",
    "--set",
    "env.max_turns=4",
    "--set",
    "train.loggers=[jsonl]",
]


def _screen_of_run(arguments: list[str], timeout_s: float = 300.0) -> tuple[int, list[str]]:
    """Runs ``roll-agent train`` with ``arguments`` on a pseudo-terminal of ``COLUMNS`` columns
    and returns its exit status and the emulated screen's lines at the end."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environment["TERM"] = "xterm-256color"
    process = subprocess.Popen(
        [sys.executable, "-m", "trainer.cli", "train", *arguments],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=environment,
        close_fds=True,
    )
    os.close(terminal)
    screen = pyte.Screen(COLUMNS, ROWS)
    stream = pyte.ByteStream(screen)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                data = os.read(controller, 65536)
            except OSError:  # the terminal closed: the process has exited
                break
            if not data:
                break
            stream.feed(data)
        status = process.wait(timeout=max(deadline - time.monotonic(), 1.0))
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    return status, [line.rstrip() for line in screen.display]


PRESETS = {
    "sokoban": ["--env", "sokoban"],
    "sokoban-warm-start-rl": ["--env", "sokoban-warm-start-rl", "--set", "sft.max_minutes=0.17"],
}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_screen_holds_one_panel_a_success_figure_and_the_whole_run_eta(
    tmp_path: Path, preset: str
):
    arguments = [*PRESETS[preset], *TINY, "--output", str(tmp_path / "run")]
    status, lines = _screen_of_run(arguments)
    text = "\n".join(line for line in lines if line)
    assert status == 0, text
    # the plan comes first, then the cost of an evaluation
    assert any(line.startswith("Plan: about 0.8 min: a warm start") for line in lines), text
    # one panel: one top border (its title) and one bottom border, none left over by redraws
    tops = [line for line in lines if line.startswith("╭")]
    bottoms = [line for line in lines if line.startswith("╰")]
    assert len(tops) == 1 and len(bottoms) == 1, text
    assert "roll-agent train" in tops[0]
    panel = lines[lines.index(tops[0]) : lines.index(bottoms[0]) + 1]
    assert all(len(line) <= COLUMNS for line in panel)
    # its phases, the latest evaluation's success with its trend, and the whole run's time
    body = "\n".join(panel)
    assert "warm start" in body and ("RL" in body) == (preset == "sokoban-warm-start-rl")
    success = next(line for line in panel if "success: " in line and "at " in line)
    assert "%" in success.split("success: ", 1)[1], success
    run = next(line for line in panel if "run: elapsed" in line)
    assert " of 48s, eta " in run, run
    # the summary follows the panel: the curve drawn, the start beside the end
    summary = "\n".join(lines[lines.index(bottoms[0]) + 1 :])
    assert "(the starting policy: " in summary, summary
    unwrapped = "".join(summary.split())  # a long path wraps at the terminal's edge
    assert f"learningcurve:{tmp_path / 'run' / 'learning_curve.png'}" in unwrapped, summary
    assert (tmp_path / "run" / "learning_curve.png").stat().st_size > 0
