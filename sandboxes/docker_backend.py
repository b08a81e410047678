"""``DockerBackend``: one container per run or session, through the Docker SDK (``docker``).

Containers run with no network (``network_mode="none"``), a read-only root filesystem, a tmpfs
work dir, memory and process limits, all capabilities dropped and ``no-new-privileges``; a
container is killed at the deadline and always removed. The SDK is imported only when this
backend is built, and an engine must answer (``docker.from_env()``).
"""

from __future__ import annotations

import contextlib
import io
import shlex
import socket
import struct
import tarfile
import threading
import time
from collections.abc import Mapping
from typing import Any

from sandboxes.errors import SandboxUnavailableError
from sandboxes.languages import program
from sandboxes.limits import Limits
from sandboxes.local import as_bytes, checked_files
from sandboxes.result import Result

DEFAULT_IMAGE = "python:3.11-slim"
WORK_DIR = "/sandbox"


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


class DockerBackend:
    """Runs programs in Docker containers.

    Args:
        image: the image programs run in; it must have ``python3`` for Python programs.
        client: a ``docker.DockerClient``; ``docker.from_env()`` by default.

    Raises:
        SandboxUnavailableError: the SDK is not installed or no engine answers.

    Example:
        >>> backend = DockerBackend()  # doctest: +SKIP
        >>> backend.run("print(6 * 7)").stdout  # doctest: +SKIP
        '42\\n'
    """

    name = "docker"

    def __init__(self, image: str = DEFAULT_IMAGE, client: Any = None) -> None:
        try:
            import docker
        except ImportError:
            raise SandboxUnavailableError(
                "the 'docker' sandbox backend needs the Docker SDK: pip install \"rollenv[docker]\""
            ) from None
        try:
            self.client = client or docker.from_env()
            self.client.ping()
        except Exception as error:
            raise SandboxUnavailableError(
                f"the 'docker' sandbox backend found no Docker engine ({error}); start one, "
                "or use backend='bwrap' (apt-get install -y bubblewrap)"
            ) from None
        self.image = image
        self.python = "python3"

    def _container(self, command: list[str], limits: Limits, stdin_open: bool) -> Any:
        memory = f"{limits.memory_mb}m"
        return self.client.containers.create(
            self.image,
            command=command,
            working_dir=WORK_DIR,
            network_mode="none",
            network_disabled=True,
            mem_limit=memory,
            memswap_limit=memory,
            pids_limit=limits.max_processes,
            nano_cpus=1_000_000_000,
            read_only=True,
            tmpfs={WORK_DIR: f"rw,exec,size={limits.memory_mb}m", "/tmp": "rw,size=16m"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            user="65534:65534",
            ulimits=[
                {
                    "Name": "fsize",
                    "Soft": limits.max_file_mb << 20,
                    "Hard": limits.max_file_mb << 20,
                },
                {"Name": "core", "Soft": 0, "Hard": 0},
            ],
            environment={
                "HOME": WORK_DIR,
                "PYTHONIOENCODING": "utf-8",
                "PYTHONDONTWRITEBYTECODE": "1",
            },
            stdin_open=stdin_open,
            detach=True,
        )

    def _command(self, argv: list[str], files: dict[str, bytes]) -> list[str]:
        # a tmpfs is empty at start and put_archive cannot write into one before it exists,
        # so the files travel as a tar in the container's own writable tmpfs via a shell step
        return ["/bin/sh", "-c", f"cd {WORK_DIR} && exec {shlex.join(argv)}"]

    def run(
        self,
        code: str,
        *,
        language: str = "python",
        stdin: str | bytes = "",
        files: Mapping[str, str | bytes] | None = None,
        limits: Limits | None = None,
    ) -> Result:
        """Runs ``code`` once in a new container; see ``sandboxes.run``."""
        limits = limits or Limits()
        filename, argv = program(language, self.python)
        all_files = checked_files(files)
        all_files[filename] = as_bytes(code)
        start = time.monotonic()
        container = self._container(self._command(argv, all_files), limits, stdin_open=True)
        try:
            container.put_archive(WORK_DIR, _tar(all_files))
            sock = container.attach_socket(
                params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            raw = getattr(sock, "_sock", sock)
            container.start()
            feeder = threading.Thread(target=_send, args=(raw, as_bytes(stdin)), daemon=True)
            feeder.start()
            out, err, timed_out, truncated = _demux(
                raw, start + limits.timeout_s, limits.max_output_bytes
            )
            if timed_out or truncated:
                with contextlib.suppress(Exception):
                    container.kill()
            state = container.wait(timeout=max(start + limits.timeout_s - time.monotonic(), 1))
            container.reload()
            oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
            exit_code = state.get("StatusCode")
        finally:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        return Result(
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            exit_code=exit_code,
            timed_out=timed_out,
            oom_killed=oom or b"MemoryError" in err[-4096:],
            duration_s=time.monotonic() - start,
            output_truncated=truncated,
        )

    def open_session(self, files: Mapping[str, str | bytes], limits: Limits, driver: str) -> Any:
        """Starts a container running the REPL driver; returns its byte channel."""
        all_files = checked_files(files)
        argv = [self.python, "-E", "-s", "-B", "-u", driver]
        container = self._container(self._command(argv, all_files), limits, stdin_open=True)
        container.put_archive(WORK_DIR, _tar(all_files))
        sock = container.attach_socket(params={"stdin": 1, "stdout": 1, "stream": 1})
        container.start()
        return _DockerChannel(container, getattr(sock, "_sock", sock))


def _send(raw: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):
        if data:
            raw.sendall(data)
        raw.shutdown(socket.SHUT_WR)


def _demux(raw: socket.socket, deadline: float, cap: int) -> tuple[bytes, bytes, bool, bool]:
    """Reads Docker's multiplexed stream (8-byte frame headers) up to the deadline or cap."""
    streams = {1: bytearray(), 2: bytearray()}
    pending = b""
    kept = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return bytes(streams[1]), bytes(streams[2]), True, False
        raw.settimeout(remaining)
        try:
            chunk = raw.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            return bytes(streams[1]), bytes(streams[2]), False, False
        pending += chunk
        while len(pending) >= 8:
            kind, size = struct.unpack(">BxxxL", pending[:8])
            if len(pending) < 8 + size:
                break
            body, pending = pending[8 : 8 + size], pending[8 + size :]
            room = cap - kept
            streams.get(kind, streams[2]).extend(body[:room])
            kept += min(size, room)
            if size > room:
                return bytes(streams[1]), bytes(streams[2]), False, True


class _DockerChannel:
    """The byte channel a ``Session`` talks to the REPL driver through, for a container."""

    def __init__(self, container: Any, raw: socket.socket) -> None:
        self.container = container
        self.raw = raw
        self._pending = b""

    def write(self, data: bytes) -> None:
        self.raw.sendall(data)

    def read(self, timeout: float) -> bytes | None:
        self.raw.settimeout(timeout)
        try:
            chunk = self.raw.recv(65536)
        except TimeoutError:
            return None
        self._pending += chunk
        body = bytearray()
        while len(self._pending) >= 8:
            kind, size = struct.unpack(">BxxxL", self._pending[:8])
            if len(self._pending) < 8 + size:
                break
            if kind == 1:
                body += self._pending[8 : 8 + size]
            self._pending = self._pending[8 + size :]
        return bytes(body) if chunk else b""

    def alive(self) -> bool:
        with contextlib.suppress(Exception):
            self.container.reload()
            return self.container.status == "running"
        return False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.raw.close()
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
