"""``BwrapBackend``: Debian's bubblewrap, the default backend on Linux.

Each run gets every namespace unshared (user, PID, network, IPC, UTS, mount, cgroup: no network
at all, not even loopback to the host), a root that holds only ``/usr`` (read-only), a fresh
``/proc`` and ``/dev``, and a private tmpfs work dir ``/sandbox`` that is the only writable
place. Nothing of the host's ``/etc``, ``/tmp``, ``/root`` or ``/home`` is visible. Inside,
``prlimit`` caps CPU time, address space, processes and file size before the program starts.

Run as root, bubblewrap keeps root's power over bind-mounted host files even with
``--uid 65534`` (the new user namespace maps that uid back to root), so this backend first
drops the real uid of bubblewrap itself to an unused one from ``UID_RANGE``, a different one
for each concurrent run of any process on the machine (a lock file per uid), which also makes
the process limit count that run alone. util-linux's ``setpriv`` makes that drop (all four
uids and gids, no supplementary groups) in the child, so that Python can start it with
``vfork``; without ``setpriv`` the child is forked and drops them itself.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import shutil
import signal
import sys
import threading
import time

from sandboxes.errors import SandboxUnavailableError
from sandboxes.limits import Limits
from sandboxes.local import LocalBackend, Prepared

#: uids handed to concurrent runs when we are root; none of them should own any file
UID_RANGE = range(61000, 61256)
#: where the uid locks live (shared by every process of the machine that runs as root)
LOCK_DIR = "/tmp/rollenv-bwrap-uids"
WORK_DIR = "/sandbox"
INSTALL_HINT = (
    "the 'bwrap' sandbox backend needs bubblewrap: install it with "
    "`apt-get install -y bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap` (Fedora), "
    "or choose another backend: backend='docker' (needs a Docker engine and "
    '`pip install "rollenv[docker]"`)'
)


class _UidLease:
    """Hands out distinct uids from ``UID_RANGE`` to runs that overlap in time, in any process.

    Each run's cleanup SIGKILLs every process of its uid, so two runs must never share one,
    not even from two processes (two trainings, Ray actors). A uid is held by an exclusive
    ``flock`` on its file in ``LOCK_DIR``, which the kernel also releases if a process dies.
    """

    def __init__(self, lock_dir: str = "") -> None:
        self._lock = threading.Lock()
        self._lock_dir = lock_dir or LOCK_DIR
        # first in, first out: a uid comes back into use as late as possible, after the
        # host's init has reaped the last zombies of its previous run
        self._free = collections.deque(UID_RANGE)
        self._held: dict[int, int] = {}

    def take(self) -> int:
        with self._lock:
            os.makedirs(self._lock_dir, mode=0o700, exist_ok=True)
            for _ in range(len(self._free)):
                uid = self._free.popleft()
                handle = os.open(f"{self._lock_dir}/{uid}", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:  # another process's run holds it
                    os.close(handle)
                    self._free.append(uid)
                    continue
                self._held[uid] = handle
                return uid
            raise SandboxUnavailableError(
                f"more than {len(UID_RANGE)} bwrap sandboxes at once on this machine; "
                "use fewer workers"
            )

    def give(self, uid: int) -> None:
        with self._lock:
            handle = self._held.pop(uid, None)
            if handle is not None:
                os.close(handle)  # closing the file releases its lock
            self._free.append(uid)


_LEASE = _UidLease()


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


def _is_zombie(pid: str) -> bool:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[-1].split()[0] in (b"Z", b"X")


def kill_uid(uid: int, wait_s: float = 10.0) -> None:
    """SIGKILLs every process of ``uid`` and waits (up to ``wait_s``) until they are gone.

    The PID namespace dies with bubblewrap, but the kernel tears it down asynchronously; the
    uid goes back to the lease only once nothing of the run is left.
    """
    deadline = time.monotonic() + wait_s
    while True:
        pids = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if entry.stat().st_uid == uid and not _is_zombie(entry.name):
                        pids.append(int(entry.name))
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


class BwrapBackend(LocalBackend):
    """Runs programs in bubblewrap sandboxes.

    Args:
        python: interpreter for Python programs; it must live under ``/usr`` or a folder the
            sandbox user can read (defaults to the system ``python3``).
        bwrap: path of the bubblewrap binary; found on ``PATH`` by default.

    Raises:
        SandboxUnavailableError: bubblewrap is not installed (the message says how to install it).

    Example:
        >>> backend = BwrapBackend()  # doctest: +SKIP
        >>> backend.run("print(6 * 7)").stdout  # doctest: +SKIP
        '42\\n'
    """

    name = "bwrap"

    def __init__(self, python: str | None = None, bwrap: str | None = None) -> None:
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailableError(
                "the 'bwrap' backend needs Linux; use backend='docker' on this system"
            )
        found = bwrap or shutil.which("bwrap")
        if found is None:
            raise SandboxUnavailableError(INSTALL_HINT)
        self.bwrap = found
        self.prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
        self.setpriv = shutil.which("setpriv")  # util-linux, as prlimit
        super().__init__(python)

    def _prepare(self, argv: list[str], files: dict[str, bytes], limits: Limits) -> Prepared:
        uid = _LEASE.take() if os.geteuid() == 0 else None
        # setpriv drops to the leased uid in the child, where Popen(user=...) would: Python
        # may then start the child with vfork instead of fork, which copies no page tables
        # (benchmarks/sandbox_start.py: several times faster from a process holding gigabytes)
        drop = uid is not None and self.setpriv is not None
        prepared = Prepared(
            argv=[], env={"PATH": "/usr/bin:/bin"}, cwd="/", user=None if drop else uid
        )
        if uid is not None:
            prepared.cleanups.append(lambda: _LEASE.give(uid))
            # every process of the leased uid belongs to this run: none outlives it
            prepared.cleanups.append(lambda: kill_uid(uid))
            nproc = limits.max_processes
        else:
            nproc = _processes_of(os.getuid()) + limits.max_processes
        try:
            prepared.argv = self._command(argv, files, limits, nproc, prepared)
            if drop:
                ids = [f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
                prepared.argv = [self.setpriv, *ids, *prepared.argv]
        except BaseException:
            prepared.release()
            raise
        return prepared

    def _command(
        self,
        argv: list[str],
        files: dict[str, bytes],
        limits: Limits,
        nproc: int,
        prepared: Prepared,
    ) -> list[str]:
        cmd = [
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "sandbox",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for link in ("bin", "lib", "lib64", "sbin"):
            target = os.path.join("/", link)
            if os.path.islink(target):
                cmd += ["--symlink", os.readlink(target), target]
            elif os.path.isdir(target):
                cmd += ["--ro-bind", target, target]
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(self.python)))
        if not prefix.startswith("/usr"):
            cmd += ["--ro-bind", prefix, prefix]
        cmd += ["--proc", "/proc", "--dev", "/dev"]
        cmd += ["--size", str(limits.memory_mb << 20), "--tmpfs", WORK_DIR]
        made = {WORK_DIR}
        fds = []
        for name, content in files.items():
            parent = WORK_DIR
            for part in name.split("/")[:-1]:
                parent = f"{parent}/{part}"
                if parent not in made:
                    made.add(parent)
                    cmd += ["--dir", parent]
            fd = os.memfd_create(f"sandbox-{os.path.basename(name)}", os.MFD_CLOEXEC)
            fds.append(fd)
            prepared.pass_fds = tuple(fds)
            os.write(fd, content)
            os.lseek(fd, 0, os.SEEK_SET)
            cmd += ["--file", str(fd), f"{WORK_DIR}/{name}"]
        cmd += ["--remount-ro", "/", "--chdir", WORK_DIR, "--clearenv"]
        for key, value in {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": WORK_DIR,
            "TMPDIR": WORK_DIR,
            "LANG": "C.UTF-8",
            "PYTHONIOENCODING": "utf-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }.items():
            cmd += ["--setenv", key, value]
        cmd += [
            self.prlimit,
            f"--cpu={limits.cpu_seconds}",
            f"--as={limits.memory_mb << 20}",
            f"--nproc={nproc}",
            f"--fsize={limits.max_file_mb << 20}",
            "--core=0",
            "--nofile=256",
            "--",
            *argv,
        ]
        return cmd
