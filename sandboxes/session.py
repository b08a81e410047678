"""``Session``: one sandboxed Python process kept alive across calls (a REPL for tool use).

Variables, imports and files in the work dir persist from one ``run`` to the next, as in a
notebook. Each call has its own deadline; a call that passes it (or crashes the interpreter)
kills the whole sandbox, its result says so, and the next call starts a fresh one (its state is
gone: ``restarts`` counts how often that happened).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import time
from importlib import resources
from typing import Any

from sandboxes.errors import SandboxError
from sandboxes.limits import Limits
from sandboxes.local import LocalBackend
from sandboxes.process import kill_tree
from sandboxes.repl_driver import MARK
from sandboxes.result import Result

_DRIVER_NAME = ".repl_driver.py"
#: how long a new sandbox may take to start its interpreter; a call's own deadline starts after
#: (under load a Docker or bwrap start took over a second, and ate a 1 s call's whole deadline)
STARTUP_TIMEOUT_S = 60.0
_MARK = MARK.encode()


def _unanswered(
    why: str,
    *,
    exit_code: int | None = None,
    timed_out: bool = False,
    duration_s: float = 0.0,
    truncated: bool = False,
) -> Result:
    """The result of a call the driver never answered (its sandbox is gone), ``why`` as stderr."""
    return Result(
        stdout="",
        stderr=why,
        exit_code=exit_code,
        timed_out=timed_out,
        oom_killed=False,
        duration_s=duration_s,
        output_truncated=truncated,
    )


def driver_source() -> str:
    """The REPL driver's source, written into the sandbox's work dir."""
    return resources.files("sandboxes").joinpath("repl_driver.py").read_text()


class Session:
    """A Python process in a sandbox that keeps its state across ``run`` calls.

    Args:
        backend: a backend name (``"bwrap"``, ``"docker"``, ``"subprocess"``), an instance, or
            ``None`` for the default.
        timeout_s: default deadline of one call.
        memory_mb: address-space limit of the session's processes.
        files: files to place in the work dir when the session starts.
        limits: full ``Limits``, overriding ``timeout_s`` and ``memory_mb``.

    Example:
        >>> with Session() as session:  # doctest: +SKIP
        ...     _ = session.run("x = 20")
        ...     session.run("x + 22").stdout
        '42\\n'
    """

    def __init__(
        self,
        backend: Any = None,
        *,
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        files: dict[str, str | bytes] | None = None,
        limits: Limits | None = None,
    ) -> None:
        from sandboxes.api import get_backend

        self.backend = get_backend(backend)
        self.limits = limits or Limits(timeout_s=timeout_s, memory_mb=memory_mb)
        self.files = dict(files or {})
        self.restarts = 0
        self._started = False
        self._proc = None
        self._prepared = None
        self._channel = None
        self._buffer = b""

    # ------------------------------------------------------------------ lifecycle
    def _start(self) -> Result | None:
        """Starts the sandbox and waits for its driver; a failed ``Result`` if it did not start."""
        files = {**self.files, _DRIVER_NAME: driver_source()}
        # the CPU limit covers the whole session, so it gets no per-call backstop
        session_limits = Limits(
            timeout_s=max(self.limits.timeout_s, 3600.0),
            memory_mb=self.limits.memory_mb,
            max_processes=self.limits.max_processes,
            max_file_mb=self.limits.max_file_mb,
            max_output_bytes=self.limits.max_output_bytes,
        )
        if isinstance(self.backend, LocalBackend):
            argv = [self.backend.python, "-E", "-s", "-B", "-u", _DRIVER_NAME]
            self._proc, self._prepared = self.backend.spawn(argv, files, session_limits)
        else:
            self._channel = self.backend.open_session(files, session_limits, _DRIVER_NAME)
        self._buffer = b""
        try:
            ready, timed_out, _ = self._read_reply(time.monotonic() + STARTUP_TIMEOUT_S)
        except (OSError, SandboxError):
            ready, timed_out = None, False
        if ready is None or ready.get("ready") is not True:
            self.close()
            return _unanswered(
                f"the session's sandbox did not start within {STARTUP_TIMEOUT_S:.0f} s"
                if timed_out
                else "the session's sandbox exited while starting",
                timed_out=timed_out,
            )
        if self._started:
            self.restarts += 1
        self._started = True
        return None

    def close(self) -> None:
        """Kills the sandbox and frees what it held; a later ``run`` starts a new one."""
        if self._proc is not None:
            kill_tree(self._proc)
            with contextlib.suppress(Exception):
                self._proc.wait(timeout=5)
            for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                with contextlib.suppress(Exception):
                    stream.close()
            self._proc = None
        if self._prepared is not None:
            self._prepared.release()
            self._prepared = None
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    @property
    def alive(self) -> bool:
        """Whether a sandbox process is running now."""
        if self._proc is not None:
            return self._proc.poll() is None
        return self._channel is not None and self._channel.alive()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # ------------------------------------------------------------------ calls
    def run(self, code: str, *, timeout_s: float | None = None) -> Result:
        """Runs ``code`` in the session; a final expression's ``repr`` is printed.

        Args:
            code: Python source.
            timeout_s: this call's deadline (defaults to the session's).

        Returns:
            The call's ``Result``; ``exit_code`` is 0, or 1 after an uncaught exception (its
            traceback is in ``stderr``).

            A sandbox that has to start first gets up to ``STARTUP_TIMEOUT_S`` to do so, and the
            call's own deadline counts from once it is up; one that exits while starting, or
            takes longer, gives a failed ``Result`` saying so (``exit_code`` None).
        """
        if not self.alive:
            self.close()
            failure = self._start()
            if failure is not None:
                return failure
        timeout = self.limits.timeout_s if timeout_s is None else timeout_s
        start = time.monotonic()
        request = json.dumps({"code": code, "max_output": self.limits.max_output_bytes}) + "\n"
        reply, timed_out, overflow = None, False, False
        try:
            self._write(request.encode())
            reply, timed_out, overflow = self._read_reply(start + timeout)
        except (BrokenPipeError, OSError, SandboxError):
            reply = None
        duration = time.monotonic() - start
        if reply is None:
            # timed out, crashed, or answered garbage: this sandbox is done for
            exit_code = self._exit_code_after_kill()
            self.close()
            return _unanswered(
                "session killed at its deadline; its state is lost"
                if timed_out
                else "the session's process died; its state is lost",
                exit_code=exit_code,
                timed_out=timed_out,
                duration_s=duration,
                truncated=overflow,
            )
        stderr = str(reply.get("stderr", ""))
        return Result(
            stdout=str(reply.get("stdout", "")),
            stderr=stderr,
            exit_code=int(reply.get("exit_code", 1)),
            timed_out=False,
            oom_killed="MemoryError" in stderr[-4096:],
            duration_s=duration,
            output_truncated=bool(reply.get("truncated", False)),
        )

    def _exit_code_after_kill(self) -> int | None:
        if self._proc is not None:
            kill_tree(self._proc)
            with contextlib.suppress(Exception):
                return self._proc.wait(timeout=5)
        return None

    def _write(self, data: bytes) -> None:
        if self._proc is not None:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        else:
            self._channel.write(data)

    def _read_reply(self, deadline: float) -> tuple[dict | None, bool, bool]:
        """Reads up to the driver's reply line; returns (reply, timed_out, overflow)."""
        cap = 8 * self.limits.max_output_bytes + 65536
        while True:
            mark = self._buffer.find(_MARK)
            if mark >= 0:
                end = self._buffer.find(b"\n", mark)
                if end >= 0:
                    line = self._buffer[mark + len(_MARK) : end]
                    self._buffer = self._buffer[end + 1 :]
                    try:
                        reply = json.loads(line)
                    except ValueError:
                        return None, False, False
                    return (reply if isinstance(reply, dict) else None), False, False
            if len(self._buffer) > cap:
                return None, False, True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, True, False
            chunk = self._read_some(remaining)
            if chunk is None:
                continue
            if not chunk:
                return None, False, False
            self._buffer += chunk

    def _read_some(self, timeout: float) -> bytes | None:
        """Bytes from the driver, ``b""`` at end of stream, ``None`` if none came in time."""
        if self._proc is None:
            return self._channel.read(timeout)
        with selectors.DefaultSelector() as selector:
            selector.register(self._proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                return None
        return os.read(self._proc.stdout.fileno(), 65536)
