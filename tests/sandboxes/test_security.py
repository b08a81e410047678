"""Attacks run in each sandbox backend (bwrap, docker); each asserts from the host that it was
contained."""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import signal
import socket
import subprocess
import threading
import time

import pytest

from sandboxes import Limits
from sandboxes.bwrap import LOCK_DIR, UID_RANGE

SLACK_S = 1.5


def _processes_matching(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if marker.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def _sandbox_uid_processes(uids: range | tuple[int, ...] = UID_RANGE) -> dict[int, int]:
    """The live processes of ``uids``: pid to uid."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    state = handle.read().rsplit(b")", 1)[-1].split()[0]
                uid = os.stat(f"/proc/{entry}").st_uid
                # a zombie is dead already, waiting for the host's init to reap it
                if uid in uids and state not in b"ZX":
                    found[int(entry)] = uid
            except OSError:
                pass
    return found


def _leased_now(uid: int) -> bool:
    """Whether a run (of any process: another pytest worker's, say) holds ``uid`` now."""
    try:
        handle = os.open(f"{LOCK_DIR}/{uid}", os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(handle)  # releases the lock if we took it
    return False


def _leftovers(backend) -> list:
    """What is left of the backend's runs: live processes of its uids, and for docker, its
    containers (each is removed when its run ends). A bwrap uid whose lease is held belongs
    to a run still going, maybe another process's, not to one that ended."""
    if backend.name == "bwrap":
        found = _sandbox_uid_processes()
        held = {uid for uid in set(found.values()) if _leased_now(uid)}
        return [pid for pid, uid in found.items() if uid not in held]
    from sandboxes.docker_backend import LABEL, UID

    processes = list(_sandbox_uid_processes((UID,)))  # before the containers: see below
    containers = backend.client.containers.list(
        all=True, filters={"label": f"{LABEL}={backend.label}"}
    )
    # a process in a container that another backend (another pytest worker's) still runs is
    # that run's; one whose container is ours, or gone, is left over
    others = {c.id for c in backend.client.containers.list(all=True)} - {c.id for c in containers}
    left = [
        pid
        for pid in processes
        if _container_of(pid) not in others and os.path.exists(f"/proc/{pid}")  # not ended since
    ]
    return left + [container.name for container in containers]


def _container_of(pid: int) -> str | None:
    """The id of the docker container a process runs in (from its cgroup), if any."""
    try:
        with open(f"/proc/{pid}/cgroup") as handle:
            found = re.search(r"docker[-/]([0-9a-f]{64})", handle.read())
    except OSError:
        return None
    return found.group(1) if found else None


@pytest.fixture
def host_secrets(tmp_path):
    """Secret files in the host's /root and /tmp, readable by root only."""
    token, name = secrets.token_hex(16), secrets.token_hex(8)
    paths = [f"/root/.rollenv-test-secret-{name}", f"/tmp/rollenv-test-secret-{name}"]
    for path in paths:
        with open(path, "w") as handle:
            handle.write(token)
        os.chmod(path, 0o600)
    yield token, paths
    for path in paths:
        os.unlink(path)


READ_ATTEMPT = """
import sys
for path in sys.argv[1:] if len(sys.argv) > 1 else PATHS:
    try:
        with open(path) as handle:
            print("LEAKED", path, handle.read())
    except OSError as error:
        print("DENIED", path, type(error).__name__)
"""


def test_host_files_cannot_be_read(backend, host_secrets):
    token, paths = host_secrets
    # our own environ, through the sandbox's /proc: a different PID namespace has no such pid
    targets = ["/etc/shadow", "/etc/passwd", f"/proc/{os.getpid()}/environ", *paths]
    code = f"PATHS = {targets!r}\n" + READ_ATTEMPT
    result = backend.run(code)
    assert result.exit_code == 0, result.stderr
    assert "LEAKED" not in result.stdout
    assert token not in result.stdout + result.stderr
    assert result.stdout.count("DENIED") == len(targets)
    # the host can read them: the files were there to be stolen
    for path in paths:
        with open(path) as handle:
            assert handle.read() == token


def test_writes_outside_the_work_dir_fail(backend, tmp_path):
    host_target = tmp_path / "written-by-sandbox"
    targets = ["/usr/pwned", "/pwned", "/tmp/pwned", "/root/pwned", "/proc/pwned", str(host_target)]
    code = f"""
for path in {targets!r}:
    try:
        with open(path, "w") as handle:
            handle.write("x")
        print("WROTE", path)
    except OSError as error:
        print("DENIED", path)
with open("inside.txt", "w") as handle:
    handle.write("ok")
print("WORKDIR", open("inside.txt").read())
"""
    result = backend.run(code)
    assert "WROTE" not in result.stdout
    assert result.stdout.count("DENIED") == len(targets)
    assert "WORKDIR ok" in result.stdout
    assert not host_target.exists()
    assert not os.path.exists("/usr/pwned") and not os.path.exists("/pwned")


def test_no_network_not_even_loopback(backend):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    try:
        # control: the server is reachable from the host
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        code = f"""
import socket
for host, port in [("127.0.0.1", {port}), ("10.0.0.1", 80), ("1.1.1.1", 53)]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("CONNECTED", host)
    except OSError as error:
        print("BLOCKED", host, error)
try:
    socket.getaddrinfo("pypi.org", 443)
    print("RESOLVED")
except OSError:
    print("BLOCKED dns")
"""
        result = backend.run(code)
        assert "CONNECTED" not in result.stdout and "RESOLVED" not in result.stdout
        assert result.stdout.count("BLOCKED") == 4
        server.settimeout(0.2)
        # the one connection the server saw is the host's control, none from the sandbox
        server.accept()[0].close()
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()


PYTHON_FORK_BOMB = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""


@pytest.mark.parametrize(
    "language, bomb",
    [
        ("python", PYTHON_FORK_BOMB),
        ("bash", ":(){ :|:& };:\nwait\nsleep 30\n"),
    ],
)
def test_fork_bomb_is_capped_and_the_run_returns(backend, language, bomb):
    limits = Limits(timeout_s=2.0, max_processes=32)
    start = time.monotonic()
    result = backend.run(bomb, language=language, limits=limits)
    elapsed = time.monotonic() - start
    assert elapsed < limits.timeout_s + SLACK_S
    assert result.timed_out  # it spun at the process limit until the deadline killed it
    if language == "bash":
        assert "Resource temporarily unavailable" in result.stderr  # bash met the limit
    assert _leftovers(backend) == []
    # the host can still start processes
    assert subprocess.run(["true"]).returncode == 0


def test_fork_bomb_hits_the_process_limit(backend):
    code = """
import os, time
children = 0
while True:
    try:
        pid = os.fork()
    except OSError as error:
        print("LIMIT", children, error.errno)
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    children += 1
"""
    result = backend.run(code, limits=Limits(timeout_s=5.0, max_processes=16))
    assert result.stdout.startswith("LIMIT"), result
    assert int(result.stdout.split()[1]) < 16
    assert _leftovers(backend) == []


@pytest.mark.parametrize(
    "bomb",
    [
        "x = bytearray(4 * 1024 ** 3)",
        "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 ** 2))",
    ],
)
def test_memory_bomb_is_oom(backend, bomb):
    result = backend.run(bomb, limits=Limits(timeout_s=10.0, memory_mb=256))
    assert result.oom_killed
    assert result.exit_code != 0
    assert not result.timed_out


def test_infinite_loop_times_out_at_the_deadline(backend):
    start = time.monotonic()
    result = backend.run("while True:\n    pass", limits=Limits(timeout_s=1.0))
    elapsed = time.monotonic() - start
    assert result.timed_out
    assert 1.0 <= elapsed < 1.0 + SLACK_S
    assert _leftovers(backend) == []


def test_huge_output_is_truncated_at_the_limit(backend):
    code = "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * (1024 * 1024))\n"
    limit = 256 * 1024
    result = backend.run(code, limits=Limits(timeout_s=20.0, max_output_bytes=limit))
    assert result.output_truncated
    assert len(result.stdout) + len(result.stderr) <= limit
    assert result.stdout == "x" * len(result.stdout) and len(result.stdout) > limit // 2


@pytest.mark.parametrize("main_ends", ["exits", "loops"])
def test_sleeping_children_die_with_the_run(backend, main_ends):
    marker = f"1000.{secrets.randbelow(10**9):09d}"
    tail = "" if main_ends == "exits" else "while True:\n    pass\n"
    code = f"""
import subprocess, os
for _ in range(3):
    subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
os.system("nohup sleep {marker} >/dev/null 2>&1 &")
print("spawned")
{tail}"""
    result = backend.run(code, limits=Limits(timeout_s=1.5))
    assert "spawned" in result.stdout
    assert result.timed_out == (main_ends == "loops")
    assert _processes_matching(marker) == []


def test_signals_cannot_reach_the_host(backend):
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        code = """
import os, signal
print("parent", os.getppid())
for target in (os.getppid(), 1, -1):
    try:
        os.kill(target, signal.SIGKILL)
        print("sent", target)
    except OSError as error:
        print("refused", target, error.errno)
"""
        result = backend.run(code)
        assert result.exit_code is not None
        assert bystander.poll() is None, "a host process was killed"
        os.kill(os.getpid(), 0)  # we are alive, and so is our parent
        os.kill(os.getppid(), 0)
    finally:
        bystander.send_signal(signal.SIGKILL)
        bystander.wait()


def test_nothing_leaks_between_two_runs(backend):
    first = backend.run(
        "import os\nopen('state.txt', 'w').write('secret')\nos.environ['LEAK'] = '1'\n"
        "print(os.listdir('.'))"
    )
    assert "state.txt" in first.stdout
    second = backend.run("import os\nprint(os.listdir('.'), os.path.exists('state.txt'))")
    assert "state.txt" not in second.stdout
    assert second.stdout.strip().endswith("False")


def test_session_is_sandboxed_too(backend, host_secrets):
    from sandboxes import Session

    token, paths = host_secrets
    with Session(backend) as session:
        result = session.run(f"open({paths[0]!r}).read()")
        assert token not in result.stdout + result.stderr
        assert result.exit_code == 1 and "Error" in result.stderr
        network = session.run("import socket\nsocket.create_connection(('127.0.0.1', 22), 1)")
        assert network.exit_code == 1


def test_two_leases_never_hand_out_the_same_uid(tmp_path):
    # two processes have two leases; a lock file per uid keeps them apart (flock locks
    # conflict between two open files even within one process, so two leases here suffice)
    from sandboxes.bwrap import _UidLease

    first, second = _UidLease(str(tmp_path)), _UidLease(str(tmp_path))
    a, b = first.take(), second.take()
    assert a != b
    first.give(a)
    taken = {second.take() for _ in range(3)}
    assert b not in taken and len(taken) == 3


_RUNS = """
import sys
from sandboxes import run
codes = [run("import time; time.sleep(0.02); print('ok')", timeout_s=20).stdout for _ in range(25)]
sys.exit(sum(code != "ok\\n" for code in codes))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="uids are leased only when running as root")
def test_runs_of_two_processes_do_not_kill_each_other(bwrap):
    # each run's cleanup SIGKILLs its uid's processes: with a uid shared across processes,
    # one process's runs were killed by the other's cleanups (exit -9 within 50 ms)
    children = [subprocess.Popen([os.sys.executable, "-c", _RUNS]) for _ in range(2)]
    assert [child.wait(timeout=300) for child in children] == [0, 0]


def _credentials(pid: int) -> dict[str, list[str]]:
    with open(f"/proc/{pid}/status") as handle:
        fields = dict(line.split(":", 1) for line in handle.read().splitlines())
    return {name: fields[name].split() for name in ("Uid", "Gid", "Groups", "CapPrm", "CapEff")}


@pytest.mark.skipif(os.geteuid() != 0, reason="uids are leased only when running as root")
def test_bubblewrap_itself_runs_as_the_leased_uid_without_groups_or_capabilities(bwrap):
    # read from the host while the run is alive: bwrap's own process, our child, after its exec
    # (before it, the process that drops to the uid still has root's)
    marker = f"credentials-{secrets.token_hex(6)}"
    seen: list[dict[str, list[str]]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set() and not seen:
            for pid in _processes_matching(marker):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as handle:
                        program = handle.read().split(b"\0", 1)[0].decode()
                    with open(f"/proc/{pid}/stat") as handle:
                        parent = int(handle.read().rsplit(")", 1)[1].split()[1])
                    if parent == os.getpid() and program == bwrap.bwrap:
                        seen.append(_credentials(pid))
                except (OSError, ValueError):
                    continue
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = bwrap.run("import time; time.sleep(1)", files={f"{marker}.txt": "x"})
    finally:
        done.set()
        watcher.join()
    assert result.exit_code == 0, result
    assert seen, "never saw the run's bwrap process"
    credentials = seen[0]
    uid = int(credentials["Uid"][0])
    assert uid in UID_RANGE
    # real, effective, saved and filesystem ids: no way back to root
    assert credentials["Uid"] == [str(uid)] * 4 and credentials["Gid"] == [str(uid)] * 4
    assert credentials["Groups"] == []
    assert int(credentials["CapPrm"][0], 16) == 0 and int(credentials["CapEff"][0], 16) == 0
