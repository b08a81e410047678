"""The shared half of the two backends that run a local process (bwrap and subprocess).

A local backend turns "run this program with these files under these limits" into a command
line (``_prepare``); this module runs it to a deadline (``run``) or starts it as a long-lived
process for a ``Session`` (``spawn``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

from sandboxes.languages import program, sandbox_python
from sandboxes.limits import Limits
from sandboxes.process import run_to_deadline
from sandboxes.result import Result

Files = Mapping[str, str | bytes]
#: exit statuses that mean "killed for CPU time": SIGXCPU as a signal, or as a shell reports it
_CPU_LIMIT_EXITS = (-24, 128 + 24)


@dataclass
class Prepared:
    """A command line ready to start, and what to release once it has ended."""

    argv: list[str]
    env: dict[str, str] | None = None
    cwd: str | None = None
    pass_fds: tuple[int, ...] = ()
    user: int | None = None
    cleanups: list = field(default_factory=list)

    def release(self) -> None:
        """Closes passed descriptors and runs every cleanup, once."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()
        while self.cleanups:
            self.cleanups.pop()()


def as_bytes(content: str | bytes) -> bytes:
    """Files may be given as text (UTF-8) or bytes."""
    return content.encode() if isinstance(content, str) else bytes(content)


def check_name(name: str) -> str:
    """A file name must stay inside the work dir: relative, no ``..``."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"file names must be relative paths inside the work dir, got {name!r}")
    return name


def checked_files(files: Mapping[str, str | bytes] | None) -> dict[str, bytes]:
    """``files`` with every name checked (:func:`check_name`) and every content as bytes."""
    return {check_name(name): as_bytes(content) for name, content in (files or {}).items()}


class LocalBackend(ABC):
    """A backend whose programs are local processes; subclasses build the command line.

    Args:
        python: interpreter for ``language="python"``; defaults to ``sandbox_python()``.
    """

    name = "local"

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sandbox_python()

    @abstractmethod
    def _prepare(self, argv: list[str], files: dict[str, bytes], limits: Limits) -> Prepared:
        """Wraps ``argv`` (run in the work dir holding ``files``) in the backend's isolation."""

    def run(
        self,
        code: str,
        *,
        language: str = "python",
        stdin: str | bytes = "",
        files: Files | None = None,
        limits: Limits | None = None,
    ) -> Result:
        """Runs ``code`` once; see ``sandboxes.run``."""
        limits = limits or Limits()
        filename, argv = program(language, self.python)
        all_files = checked_files(files)
        all_files[filename] = as_bytes(code)
        prepared = self._prepare(argv, all_files, limits)
        try:
            captured = run_to_deadline(
                prepared.argv,
                stdin=as_bytes(stdin),
                timeout_s=limits.timeout_s,
                max_output_bytes=limits.max_output_bytes,
                cwd=prepared.cwd,
                env=prepared.env,
                pass_fds=prepared.pass_fds,
                user=prepared.user,
            )
        finally:
            prepared.release()
        cpu_killed = captured.exit_code in _CPU_LIMIT_EXITS
        return Result(
            stdout=captured.stdout.decode("utf-8", "replace"),
            stderr=captured.stderr.decode("utf-8", "replace"),
            exit_code=captured.exit_code,
            timed_out=captured.timed_out or cpu_killed,
            oom_killed=captured.out_of_memory,
            duration_s=captured.duration_s,
            output_truncated=captured.truncated,
        )

    def spawn(
        self, argv: list[str], files: Files, limits: Limits
    ) -> tuple[subprocess.Popen, Prepared]:
        """Starts a long-lived program with piped stdin/stdout/stderr (used by ``Session``).

        The caller kills its process group and calls ``Prepared.release`` when done.
        """
        prepared = self._prepare(argv, checked_files(files), limits)
        ids = (
            {}
            if prepared.user is None
            else {"user": prepared.user, "group": prepared.user, "extra_groups": []}
        )
        try:
            proc = subprocess.Popen(
                prepared.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=prepared.cwd,
                env=prepared.env,
                pass_fds=prepared.pass_fds,
                start_new_session=True,
                **ids,
            )
        except BaseException:
            prepared.release()
            raise
        # the child has its copies of the descriptors now
        for fd in prepared.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        prepared.pass_fds = ()
        return proc, prepared
