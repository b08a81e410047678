"""A newcomer's path, timed: a fresh clone and virtual environment, the README's first command
on a pseudo-terminal, and the minutes to each thing a newcomer waits for.

The clone is of this checkout's committed ``HEAD`` (uncommitted changes are not in it). The
README's first command runs as written, in a new virtual environment, with an empty rollenv
cache (so the default model is converted from its PyPI package, as on a first run) and, unless
``--pip-cache`` is given, no pip cache (every wheel comes from the package registry).

The marks, in minutes from the start of the command:

* ``plan shown``: ``roll-agent train`` printed its plan (the install is over and the model is
  loaded);
* ``first success figure``: the panel shows a greedy success rate (the first evaluation is done);
* ``end of run``: the command exited.

The table compares the run's own minutes (from the plan to the end) with the minutes its plan
states. ``--quick`` skips the clone and install and runs only the train part, on the tiny test
model with the budget cut to about a minute, to show the script works.

Run:
    python benchmarks/newcomer_path.py                # about 70 minutes on two cores
    python benchmarks/newcomer_path.py --quick        # about a minute
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import shlex
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

REPO_ROOT = Path(__file__).resolve().parent.parent
COLUMNS, ROWS = 100, 40
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\r")
PLAN = re.compile(r"Plan: about (\d+(?:\.\d+)?) min")
SUCCESS = re.compile(r"success: \d+% at")
QUICK_SETTINGS = [
    "--model tiny-random",
    "--set model.trainable_layers=1",
    "--set sft.max_minutes=0.2",
    "--set train.max_minutes=1",
    "--set train.eval_every_minutes=0.25",
    "--set train.eval_groups=4",
    "--set env.groups_per_step=2",
    "--set env.max_turns=4",
]


def readme_first_command(readme: Path) -> str:
    """The first command line of the README's first ``sh`` block (comments skipped)."""
    block = re.search(r"```sh\n(.*?)```", readme.read_text(), re.DOTALL)
    if block is None:
        raise SystemExit(f"{readme} has no ```sh block")
    for line in block.group(1).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    raise SystemExit(f"{readme}'s first ```sh block holds no command")


def run_on_terminal(
    command: str, cwd: Path, environment: dict[str, str], log: Path, timeout_s: float
) -> tuple[int | None, dict[str, float], str]:
    """Runs ``command`` under bash on a pseudo-terminal; returns its exit status (``None`` on
    timeout), the seconds to each mark and the plan's stated minutes (``""`` when none)."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    start = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=environment,
        close_fds=True,
        start_new_session=True,
    )
    os.close(terminal)
    marks: dict[str, float] = {}
    stated = ""
    text = ""
    with log.open("wb") as raw:
        while time.monotonic() - start < timeout_s:
            ready, _, _ = select.select([controller], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                data = os.read(controller, 65536)
            except OSError:  # the terminal closed: the command has exited
                break
            if not data:
                break
            raw.write(data)
            # the marks are searched in the last few kilobytes of plain text
            text = (text + ANSI.sub(b"", data).decode("utf-8", "replace"))[-8192:]
            now = time.monotonic() - start
            plan = PLAN.search(text)
            if plan and "plan shown" not in marks:
                marks["plan shown"] = now
                stated = plan.group(1)
            if SUCCESS.search(text) and "first success figure" not in marks:
                marks["first success figure"] = now
    try:
        status = process.wait(timeout=max(1.0, timeout_s - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 2)  # Ctrl-C: the run saves and stops
        status = None
    os.close(controller)
    marks["end of run"] = time.monotonic() - start
    return status, marks, stated


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="where the clone, venv and cache go")
    parser.add_argument("--pip-cache", action="store_true", help="let pip use its cache")
    parser.add_argument("--timeout-minutes", type=float, default=150.0)
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "newcomer_path.json",
        quick="this interpreter, the train part only, tiny model, a one-minute budget",
    )
    args = parse_arguments(parser, argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="rollenv-newcomer-"))
    workdir.mkdir(parents=True, exist_ok=True)
    command = readme_first_command(REPO_ROOT / "README.md")
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environment.update(TERM="xterm-256color", ROLLENV_CACHE=str(workdir / "cache"))
    if args.quick:
        checkout = REPO_ROOT
        train = command.split("&&")[-1].strip()
        command = f"{shlex.quote(sys.executable)} -m trainer.cli " + " ".join(
            [train.removeprefix("roll-agent "), *QUICK_SETTINGS, f"--output {workdir / 'run'}"]
        )
    else:
        checkout = workdir / "rollenv"
        print(f"cloning {REPO_ROOT} into {checkout} and making a virtual environment")
        subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(checkout)], check=True)
        subprocess.run([sys.executable, "-m", "venv", str(workdir / "venv")], check=True)
        venv_bin = workdir / "venv" / "bin"
        environment.update(
            PATH=f"{venv_bin}:{environment.get('PATH', '')}", VIRTUAL_ENV=str(workdir / "venv")
        )
        environment.pop("PYTHONPATH", None)
        if not args.pip_cache:
            environment["PIP_NO_CACHE_DIR"] = "1"
    log = workdir / "terminal.log"
    print(f"running: {command}\n(the terminal's bytes go to {log})")
    status, marks, stated = run_on_terminal(
        command, checkout, environment, log, args.timeout_minutes * 60
    )
    minutes = {name: seconds / 60 for name, seconds in marks.items()}
    run_minutes = minutes["end of run"] - minutes.get("plan shown", 0.0)
    rows = [[name, f"{value:.1f}"] for name, value in minutes.items()]
    print_table(["mark", "minutes from the start"], rows, "A newcomer's path: " + command)
    if stated:
        print(
            f"the run took {run_minutes:.1f} min from its plan to its end; the plan said about "
            f"{stated} min: ratio {run_minutes / float(stated):.2f}"
        )
    print(f"exit status: {status}")
    write_report(
        args.json,
        {
            "ran": command,
            "quick": args.quick,
            "pip_cache": args.pip_cache,
            "exit_status": status,
            "minutes": minutes,
            "stated_minutes": float(stated) if stated else None,
            "run_minutes": run_minutes,
        },
    )


if __name__ == "__main__":
    main()
