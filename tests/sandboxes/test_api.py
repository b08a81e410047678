"""The public API: run, Session, Pool, backend choice and its errors."""

from __future__ import annotations

import pytest

import sandboxes
from sandboxes import Limits, Pool, SandboxUnavailableError, Session


def test_run_feeds_stdin_and_files(backend):
    result = sandboxes.run(
        "import sys\nprint(open('data/in.txt').read() + sys.stdin.read())",
        stdin="world",
        files={"data/in.txt": "hello "},
        backend=backend,
    )
    assert result.ok and result.stdout == "hello world\n"


def test_run_reports_failures_instead_of_raising(backend):
    result = sandboxes.run("raise SystemExit(3)", backend=backend)
    assert result.exit_code == 3 and not result.ok
    shell = sandboxes.run("echo $((6 * 7)); exit 2", language="bash", backend=backend)
    assert shell.stdout == "42\n" and shell.exit_code == 2


def test_file_names_must_stay_in_the_work_dir(backend):
    with pytest.raises(ValueError, match="inside the work dir"):
        sandboxes.run("pass", files={"../escape": "x"}, backend=backend)


def test_session_keeps_state_and_restarts_after_a_timeout(backend):
    with Session(backend, timeout_s=1.0) as session:
        assert session.run("x = 20").ok
        assert session.run("x + 22").stdout == "42\n"
        error = session.run("undefined_name")
        assert error.exit_code == 1 and "NameError" in error.stderr
        assert "Traceback" in error.stderr and ".repl_driver" not in error.stderr
        stuck = session.run("while True: pass")
        assert stuck.timed_out and not session.alive
        after = session.run("'x' in globals()")
        assert after.stdout == "False\n" and session.restarts == 1


def test_pool_runs_in_parallel_and_keeps_order(backend):
    # each program prints its index and when its sleep began and ended (the sandboxes read the
    # host's clock): run side by side, every sleep begins before any ends. A bound on the total
    # time failed under CI's load (1.65 s against 1.5), and so did half-second sleeps: the last
    # of four Docker sandboxes began its sleep 0.62 s after the first (CI, 2026-11-29), so each
    # sleeps 2 s, longer than the sandboxes take to start one after another
    codes = [
        f"import time\nt = time.time()\ntime.sleep(2.0)\nprint({i}, t, time.time())"
        for i in range(4)
    ]
    with Pool(workers=4, backend=backend) as pool:
        results = list(pool.map(codes))
    printed = [r.stdout.split() for r in results]
    assert [int(p[0]) for p in printed] == list(range(4))
    begins, ends = [float(p[1]) for p in printed], [float(p[2]) for p in printed]
    assert max(begins) < min(ends)


def test_missing_bwrap_says_how_to_install_it(monkeypatch):
    from sandboxes.bwrap import BwrapBackend

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailableError, match="apt-get install -y bubblewrap"):
        BwrapBackend()


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(SandboxUnavailableError, match="bwrap, docker, subprocess"):
        sandboxes.run("pass", backend="firejail")


def test_subprocess_backend_warns_and_runs():
    from sandboxes.subprocess_backend import SubprocessBackend

    with pytest.warns(UserWarning, match="does not isolate"):
        backend = SubprocessBackend()
    result = backend.run("print(input())", stdin="hi", limits=Limits(timeout_s=5))
    assert result.stdout == "hi\n"
    slow = backend.run("while True: pass", limits=Limits(timeout_s=0.5))
    assert slow.timed_out


def test_docker_backend_runs_without_network(docker_backend):
    result = docker_backend.run(
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), 2)\n"
        "    print('CONNECTED')\nexcept OSError:\n    print('BLOCKED')"
    )
    assert result.stdout == "BLOCKED\n"
    big = docker_backend.run("x = bytearray(2 * 1024**3)", limits=Limits(memory_mb=128))
    assert big.oom_killed


def test_a_calls_deadline_starts_once_the_sandbox_is_up(bwrap):
    # a sandbox that takes a second to boot (as bwrap and Docker did under CI's load): the first
    # call's half-second deadline is the code's, so it answers, and nothing restarts
    class SlowToStart(type(bwrap)):
        def spawn(self, argv, files, limits):
            slow = ["/bin/sh", "-c", 'sleep 1; exec "$@"', "sh", *argv]
            return super().spawn(slow, files, limits)

    with Session(SlowToStart(), timeout_s=0.5) as session:
        result = session.run("6 * 7")
        assert (result.stdout, result.timed_out, session.restarts) == ("42\n", False, 0)
        assert result.duration_s < 0.5


def test_a_sandbox_that_dies_while_starting_gives_a_failed_result_not_an_exception(bwrap):
    # what an env's tool call gets back (an env never raises on a reply)
    class DiesAtStart(type(bwrap)):
        def spawn(self, argv, files, limits):
            return super().spawn(["/bin/sh", "-c", "exit 3"], files, limits)

    with Session(DiesAtStart()) as session:
        result = session.run("1")
        assert not result.ok and result.exit_code is None and not result.timed_out
        assert result.stderr == "the session's sandbox exited while starting"
