"""``DockerBackend``: one container per run or session, through the Docker SDK (``docker``).

Each container starts from a local image built from this machine's own Python
(:mod:`sandboxes.docker_image`; no registry is involved) and runs with:

* no network (``network_mode="none"``: only a loopback of its own, no route to the host);
* a read-only root that holds only Python, a shell, a few coreutils and their libraries, and a
  tmpfs work dir ``/sandbox`` (``memory_mb`` in size), the only writable place;
* uid 65534, every capability dropped, ``no-new-privileges``;
* cgroup limits on memory (swap included), processes and CPU (one core), and rlimits on CPU
  time, data segment (``memory_mb``, so a large allocation is a ``MemoryError`` as under
  bwrap), file size, open files and core dumps;
* Docker's init (tini) as PID 1, so the container, and every process in it, ends with the
  program; it is killed at the deadline or at the output cap, and always removed; its output
  goes to the caller only (logging driver ``none``).

The Docker API cannot copy files into a tmpfs or a read-only root, so the files travel on
standard input: a short Python bootstrap writes them into the work dir, arms an alarm a little
past the deadline (a backstop should the caller die), and execs the program, which reads the
rest of stdin. Containers carry the label ``rollenv.sandbox``; if a caller was killed mid-run,
``docker container prune --filter label=rollenv.sandbox`` removes what it left.

The SDK is imported only when this backend is built; a daemon must answer and the image exist
(the errors say which command fixes each).
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import struct
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

from sandboxes.docker_image import connect, default_tag, image_exists
from sandboxes.errors import SandboxError, SandboxUnavailableError
from sandboxes.languages import program
from sandboxes.limits import Limits
from sandboxes.local import as_bytes, checked_files
from sandboxes.process import Captured
from sandboxes.result import Result

WORK_DIR = "/sandbox"
#: the uid (and gid) programs run as (``nobody``)
UID = 65534
#: the label every container of this backend carries; its value names the backend instance
LABEL = "rollenv.sandbox"
#: a program killed by signal N is reported by Docker as exit status 128 + N
_SIGNAL_BASE = 128
_SIGXCPU = 24

# Reads the files from stdin (a 12-digit header length, a JSON header, the contents), writes
# them into the work dir, arms the backstop alarm and execs the program. alarm() survives exec.
_BOOTSTRAP = """\
import json, os, signal
def take(size):
    data = bytearray()
    while len(data) < size:
        chunk = os.read(0, size - len(data))
        if not chunk:
            raise SystemExit("sandbox bootstrap: stdin ended before the files did")
        data += chunk
    return bytes(data)
head = json.loads(take(int(take(12))))
for name, size in head["files"]:
    if "/" in name:
        os.makedirs(os.path.dirname(name), exist_ok=True)
    with open(name, "wb") as handle:
        handle.write(take(size))
if head["alarm"]:
    signal.alarm(head["alarm"])
os.execvp(head["argv"][0], head["argv"])
"""


def _payload(argv: list[str], files: dict[str, bytes], alarm_s: int) -> bytes:
    """What the bootstrap reads from stdin before the program's own input."""
    sizes = [[name, len(data)] for name, data in files.items()]
    head = json.dumps({"argv": argv, "files": sizes, "alarm": alarm_s}).encode()
    return f"{len(head):012d}".encode() + head + b"".join(files.values())


class DockerBackend:
    """Runs programs in Docker containers.

    Args:
        image: the image programs run in; it must have ``python3`` on ``PATH`` (and
            ``/bin/bash``, ``/bin/sh`` for those languages). Default: the image
            ``python -m sandboxes.docker_image`` builds, ``rollenv/python:<X.Y>``.
        client: a ``docker.DockerClient``; ``docker.from_env()`` by default.
        init: run Docker's init (tini) as PID 1; it ends the container with the program.

    Raises:
        SandboxUnavailableError: the SDK is not installed, no daemon answers or the image is
            missing; the message names the command that fixes it.

    Example:
        >>> backend = DockerBackend()  # doctest: +SKIP
        >>> backend.run("print(6 * 7)").stdout  # doctest: +SKIP
        '42\\n'
    """

    name = "docker"

    def __init__(self, image: str | None = None, client: Any = None, *, init: bool = True) -> None:
        self.client = connect(client)
        self.image = image or default_tag()
        if not image_exists(self.image, self.client):
            raise SandboxUnavailableError(
                f"the 'docker' sandbox backend's image {self.image} is missing; build it from "
                "this machine's Python (no registry needed): python -m sandboxes.docker_image"
                + ("" if image is None else f" --tag {self.image}")
            )
        self.python = "python3"
        self.init = init
        #: the value of the ``rollenv.sandbox`` label on this backend's containers
        self.label = uuid.uuid4().hex

    def _container(self, limits: Limits) -> Any:
        from docker.types import LogConfig, Ulimit

        memory = f"{limits.memory_mb}m"
        rlimits = {
            "cpu": limits.cpu_seconds,
            "data": limits.memory_mb << 20,
            "fsize": limits.max_file_mb << 20,
            "nofile": 256,
            "core": 0,
        }
        return self.client.containers.create(
            self.image,
            command=[self.python, "-I", "-S", "-B", "-c", _BOOTSTRAP],
            working_dir=WORK_DIR,
            user=f"{UID}:{UID}",
            init=self.init,
            hostname="sandbox",
            network_mode="none",
            read_only=True,
            tmpfs={WORK_DIR: f"rw,exec,nosuid,nodev,size={memory},uid={UID},gid={UID},mode=0700"},
            mem_limit=memory,
            memswap_limit=memory,
            # the init process is the backend's, not the program's
            pids_limit=limits.max_processes + int(self.init),
            nano_cpus=1_000_000_000,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            ulimits=[Ulimit(name=name, soft=value, hard=value) for name, value in rlimits.items()],
            environment={
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "HOME": WORK_DIR,
                "TMPDIR": WORK_DIR,
                "LANG": "C.UTF-8",
                "PYTHONIOENCODING": "utf-8",
                "PYTHONDONTWRITEBYTECODE": "1",
            },
            log_config=LogConfig(type="none"),
            labels={LABEL: self.label},
            # attached (detach=False) with stdin open sets StdinOnce: closing our side of the
            # attach stream then ends the program's stdin, not the stream itself
            stdin_open=True,
            detach=False,
        )

    def _attach(self, container: Any, stderr: bool) -> tuple[Any, socket.socket]:
        params = {"stdin": 1, "stdout": 1, "stderr": int(stderr), "stream": 1}
        sock = container.attach_socket(params=params)
        return sock, getattr(sock, "_sock", sock)

    def run(
        self,
        code: str,
        *,
        language: str = "python",
        stdin: str | bytes = "",
        files: Mapping[str, str | bytes] | None = None,
        limits: Limits | None = None,
    ) -> Result:
        """Runs ``code`` once in a new container; see ``sandboxes.run``.

        ``duration_s`` covers the container's whole life, creation and removal included; the
        deadline counts from its start. A signal's death is reported as in ``subprocess``
        (``-9``), which Docker cannot tell from an ``exit(128 + N)`` of the program itself.
        """
        limits = limits or Limits()
        filename, argv = program(language, self.python)
        all_files = checked_files(files)
        all_files[filename] = as_bytes(code)
        alarm = math.ceil(limits.timeout_s) + 2
        payload = _payload(argv, all_files, alarm) + as_bytes(stdin)
        begin = time.monotonic()
        try:
            container = self._container(limits)
        except Exception as error:
            raise SandboxError(f"docker could not create a container: {error}") from None
        sock = None
        out = err = b""
        timed_out = truncated = killed = False
        status: int | None = None
        try:
            sock, raw = self._attach(container, stderr=True)
            container.start()
            deadline = time.monotonic() + limits.timeout_s
            threading.Thread(target=_send, args=(raw, payload), daemon=True).start()
            out, err, timed_out, truncated = _demux(raw, deadline, limits.max_output_bytes)
            if timed_out or truncated:
                # stop reading first: the daemon holds a container's exit until its output
                # is written out, and a program still writing would block the kill for minutes
                _close(sock, raw)
                with contextlib.suppress(Exception):
                    container.kill()
                killed = True
            with contextlib.suppress(Exception):
                status = container.wait(timeout=30).get("StatusCode")
            oom = False
            if status == _SIGNAL_BASE + 9 and not killed:
                # a SIGKILL we did not send: the kernel's OOM killer, at the cgroup's limit
                with contextlib.suppress(Exception):
                    container.reload()
                    oom = bool(container.attrs["State"].get("OOMKilled"))
        finally:
            if sock is not None:
                _close(sock, raw)
            with contextlib.suppress(Exception):
                container.remove(force=True)
        exit_code = status
        if status is not None and _SIGNAL_BASE < status <= _SIGNAL_BASE + 64:
            exit_code = _SIGNAL_BASE - status
        duration = time.monotonic() - begin
        captured = Captured(out, err, exit_code, timed_out, truncated, duration)
        return Result(
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            exit_code=exit_code,
            timed_out=timed_out or exit_code == -_SIGXCPU,
            oom_killed=oom or captured.out_of_memory,
            duration_s=duration,
            output_truncated=truncated,
        )

    def open_session(self, files: Mapping[str, str | bytes], limits: Limits, driver: str) -> Any:
        """Starts a container running the REPL driver; returns its byte channel."""
        all_files = checked_files(files)
        argv = [self.python, "-E", "-s", "-B", "-u", driver]
        container = self._container(limits)
        try:
            sock, raw = self._attach(container, stderr=False)
            container.start()
            channel = _DockerChannel(container, sock, raw)
            channel.write(_payload(argv, all_files, 0))
        except BaseException:
            with contextlib.suppress(Exception):
                container.remove(force=True)
            raise
        return channel


def _close(sock: Any, raw: socket.socket) -> None:
    """Ends an attach stream now (a shutdown acts even while other references keep it open)."""
    with contextlib.suppress(Exception):
        raw.shutdown(socket.SHUT_RDWR)
    for closable in (sock, raw):
        with contextlib.suppress(Exception):
            closable.close()


def _send(raw: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):
        if data:
            raw.sendall(data)
        raw.shutdown(socket.SHUT_WR)


def _demux(raw: socket.socket, deadline: float, cap: int) -> tuple[bytes, bytes, bool, bool]:
    """Reads Docker's multiplexed stream (8-byte frame headers) up to the deadline or cap.

    Returns:
        stdout, stderr, whether the deadline passed, whether the output passed ``cap`` bytes
        (stdout and stderr together; what is kept never passes it).
    """
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

    def __init__(self, container: Any, sock: Any, raw: socket.socket) -> None:
        self.container = container
        self.sock = sock
        self.raw = raw
        self._pending = b""

    def write(self, data: bytes) -> None:
        self.raw.sendall(data)

    def read(self, timeout: float) -> bytes | None:
        """The driver's stdout bytes, ``b""`` at the end, ``None`` if none came in time."""
        self.raw.settimeout(timeout)
        try:
            chunk = self.raw.recv(65536)
        except TimeoutError:
            return None
        except OSError:
            chunk = b""
        self._pending += chunk
        body = bytearray()
        while len(self._pending) >= 8:
            kind, size = struct.unpack(">BxxxL", self._pending[:8])
            if len(self._pending) < 8 + size:
                break
            if kind == 1:
                body += self._pending[8 : 8 + size]
            self._pending = self._pending[8 + size :]
        if not chunk:
            return b""
        return bytes(body) if body else None

    def alive(self) -> bool:
        with contextlib.suppress(Exception):
            self.container.reload()
            return self.container.status == "running"
        return False

    def close(self) -> None:
        _close(self.sock, self.raw)
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
