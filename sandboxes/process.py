"""Running one local process tree to a deadline with capped output (bwrap and subprocess share it).

The process starts in a session of its own, so the whole group can be killed at once; under
bwrap the group leader is bubblewrap, whose PID namespace takes every descendant down with it.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

_MEMORY_MARKERS = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc", b"out of memory")


@dataclass
class Captured:
    """The raw outcome of ``run_to_deadline``."""

    stdout: bytes
    stderr: bytes
    exit_code: int | None
    timed_out: bool
    truncated: bool
    duration_s: float

    @property
    def out_of_memory(self) -> bool:
        """Whether the program died of its memory limit (judged from its last words)."""
        if self.timed_out:
            return False
        tail = self.stderr[-4096:] + self.stdout[-1024:]
        return any(marker in tail for marker in _MEMORY_MARKERS)


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILLs the process group of ``proc`` (it was started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, ValueError, OSError):
        pass


def run_to_deadline(
    argv: list[str],
    *,
    stdin: bytes,
    timeout_s: float,
    max_output_bytes: int,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    user: int | None = None,
) -> Captured:
    """Runs ``argv``, feeding ``stdin``, until it ends, passes the deadline or the output cap.

    Args:
        argv: the command line.
        stdin: bytes written to the program's standard input, which is then closed.
        timeout_s: wall-clock seconds before the process group is killed.
        max_output_bytes: stdout plus stderr kept; passing it kills the process group.
        cwd: working directory of the process.
        env: its environment (``None`` inherits ours).
        pass_fds: file descriptors the process inherits.
        user: uid (and gid) to run as; ``None`` keeps ours.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    ids = {} if user is None else {"user": user, "group": user, "extra_groups": []}
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        pass_fds=pass_fds,
        start_new_session=True,
        close_fds=True,
        **ids,
    )
    feeder = threading.Thread(target=_feed, args=(proc, stdin), daemon=True)
    feeder.start()
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    kept = 0
    timed_out = truncated = False
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        selector.register(proc.stderr, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in selector.select(remaining):
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                room = max_output_bytes - kept
                chunks[key.fd].append(data[:room])
                kept += min(len(data), room)
                if len(data) > room:
                    truncated = True
            if truncated:
                break
    if timed_out or truncated:
        kill_tree(proc)
    try:
        exit_code = proc.wait(timeout=max(deadline - time.monotonic(), 0) + 1.0)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        exit_code = proc.wait()
        timed_out = True
    # a process that exits on its own still leaves its group (subprocess backend) behind
    kill_tree(proc)
    for stream in (proc.stdout, proc.stderr, proc.stdin):
        with contextlib.suppress(OSError, ValueError):
            stream.close()
    feeder.join(timeout=1.0)
    return Captured(
        stdout=b"".join(chunks[out_fd]),
        stderr=b"".join(chunks[err_fd]),
        exit_code=exit_code,
        timed_out=timed_out,
        truncated=truncated,
        duration_s=time.monotonic() - start,
    )
