"""The docker backend's own parts: its image, built locally from this machine's Python, and the
errors that say how to get a daemon or an image. (Its attacks are in ``test_security.py``.)"""

from __future__ import annotations

import secrets
import subprocess
import sys

import pytest

from sandboxes import SandboxUnavailableError, Session
from sandboxes.languages import sandbox_python


def test_no_daemon_says_how_to_start_one(tmp_path, monkeypatch):
    pytest.importorskip("docker", reason="the Docker SDK is not installed")
    from sandboxes.docker_backend import DockerBackend
    from sandboxes.docker_image import ensure_image

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    fix = r"apt-get install -y docker\.io && dockerd"
    for start in (DockerBackend, ensure_image):
        with pytest.raises(SandboxUnavailableError, match=fix):
            start()


def test_a_missing_image_names_the_command_that_builds_it(docker_backend):
    from sandboxes.docker_backend import DockerBackend

    with pytest.raises(SandboxUnavailableError, match=r"python -m sandboxes\.docker_image"):
        DockerBackend(image="rollenv/python:no-such-tag", client=docker_backend.client)


def test_the_image_is_built_once(docker_backend):
    from sandboxes.docker_image import ensure_image

    before = docker_backend.client.images.get(docker_backend.image).id
    assert ensure_image(docker_backend.image, client=docker_backend.client) == docker_backend.image
    assert docker_backend.client.images.get(docker_backend.image).id == before
    command = [sys.executable, "-m", "sandboxes.docker_image", "--tag", docker_backend.image]
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert printed.strip() == f"{docker_backend.image}: already there"


def test_an_image_builds_from_scratch_without_a_registry(docker_backend):
    from sandboxes.docker_backend import DockerBackend
    from sandboxes.docker_image import ensure_image

    tag = f"rollenv/python:test-{secrets.token_hex(4)}"
    try:
        assert ensure_image(tag, client=docker_backend.client) == tag
        fresh = DockerBackend(image=tag, client=docker_backend.client)
        result = fresh.run("import sqlite3, ssl, ctypes, decimal, json\nprint(6 * 7)")
        assert result.ok and result.stdout == "42\n", result
        shell = fresh.run("sleep 0.01 && echo $(( $(seq 1 3 | wc -l) * 14 ))", language="sh")
        assert shell.ok and shell.stdout == "42\n", shell
    finally:
        docker_backend.client.images.remove(tag, force=True)


def test_both_backends_run_the_same_python(docker_backend):
    code = "import sys\nprint(sys.version)"
    host = subprocess.run([sandbox_python(), "-c", code], capture_output=True, text=True).stdout
    assert docker_backend.run(code).stdout == host


def test_the_image_holds_no_host_configuration(docker_backend):
    code = "import os\nprint(sorted(os.listdir('/etc')), os.path.exists('/root'), os.getuid())"
    result = docker_backend.run(code)
    listed = eval(result.stdout.rsplit(" ", 2)[0])  # noqa: S307 (our own program's output)
    assert not {"passwd", "shadow", "group", "ssh", "sudoers"} & set(listed), listed
    assert result.stdout.split()[-2:] == ["False", "65534"]


def test_a_session_leaves_no_container(docker_backend):
    from sandboxes.docker_backend import LABEL

    def ours() -> list:
        label = f"{LABEL}={docker_backend.label}"
        return docker_backend.client.containers.list(all=True, filters={"label": label})

    with Session(docker_backend) as session:
        assert session.run("6 * 7").stdout == "42\n"
        assert len(ours()) == 1
    assert ours() == []
