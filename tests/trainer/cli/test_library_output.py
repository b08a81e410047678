"""``quiet_library_output``: library warnings go to the run's log file, not the terminal."""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
import textwrap
import warnings

import pytest

from trainer.cli.library_output import quiet_library_output


def test_python_warnings_go_to_the_log_file(tmp_path, capsys):
    log = tmp_path / "train.log"
    with quiet_library_output(log):
        warnings.warn("an old API", DeprecationWarning, stacklevel=1)
    assert "an old API" in log.read_text()
    assert "an old API" not in capsys.readouterr().err


def test_a_logger_that_adds_its_own_terminal_handler_inside_the_block_stays_quiet(tmp_path, capsys):
    # what DeepSpeed's import does: its logger gets a stdout handler of its own, mid-run
    log = tmp_path / "train.log"
    library = logging.getLogger("DeepSpeed")
    try:
        with quiet_library_output(log):
            own = logging.StreamHandler(sys.stdout)
            library.addHandler(own)
            library.warning("Setting accelerator to CPU")
            library.info("below the log's level")
        assert "Setting accelerator to CPU" in log.read_text()
        assert "below the log's level" not in log.read_text()
        assert capsys.readouterr().out == ""
        library.warning("after the run")  # the filter is gone with the block
        assert "after the run" in capsys.readouterr().out
        assert "after the run" not in log.read_text()
    finally:
        library.removeHandler(own)


def _run_in_a_fresh_interpreter(log, body: str, before: str = "") -> str:
    """Runs ``before``, then ``body`` inside ``quiet_library_output(log)``, in a new Python
    (nothing of the libraries imported yet); returns what it printed, stdout and stderr."""
    script = "import logging, sys\nfrom trainer.cli.library_output import quiet_library_output\n"
    script += before + f"with quiet_library_output({str(log)!r}):\n" + textwrap.indent(body, "    ")
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout + ran.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None,
    reason="DeepSpeed is not installed: DS_BUILD_OPS=0 pip install 'rollenv[deepspeed]'",
)
def test_importing_deepspeed_in_a_run_prints_nothing(tmp_path):
    # DeepSpeed's import adds its handler and logs the accelerator it found
    log = tmp_path / "train.log"
    printed = _run_in_a_fresh_interpreter(
        log, 'import deepspeed\nlogging.getLogger("DeepSpeed").warning("probe")\n'
    )
    assert "WARNING" not in printed
    assert "probe" in log.read_text()


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray: the [train] extra")
def test_a_ray_cluster_started_in_a_run_prints_nothing(tmp_path):
    # `roll-agent train --ray` imports Ray in the block, and ray.init logs its start (and, in
    # Ray 2.60, a warning on token authentication)
    log = tmp_path / "train.log"
    printed = _run_in_a_fresh_interpreter(
        log,
        "import ray\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
        'logging.getLogger("ray.rollenv_probe").warning("probe")\n'
        "ray.shutdown()\n",
        before='assert "ray" not in sys.modules\n',
    )
    assert "Started a local Ray instance" not in printed
    assert "probe" not in printed
    text = log.read_text()
    assert "Started a local Ray instance" in text and "probe" in text
