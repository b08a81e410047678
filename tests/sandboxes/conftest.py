"""Shared fixtures: each backend, or a skip that says why there is none here."""

from __future__ import annotations

import shutil

import pytest

#: the backends the security suite attacks; each test that takes ``backend`` runs on each
BACKENDS = ("bwrap", "docker")


@pytest.fixture(scope="session")
def bwrap():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install -y bubblewrap)")
    from sandboxes.bwrap import BwrapBackend

    return BwrapBackend()


@pytest.fixture(scope="session")
def docker_backend():
    """The docker backend on the image built from this machine's Python (built if missing)."""
    try:
        import docker  # noqa: F401
    except ImportError:
        pytest.skip('no docker sandbox: the Docker SDK is missing (pip install "rollenv[docker]")')
    from sandboxes import SandboxUnavailableError
    from sandboxes.docker_backend import DockerBackend
    from sandboxes.docker_image import ensure_image

    try:
        return DockerBackend(image=ensure_image())
    except SandboxUnavailableError as error:
        pytest.skip(f"no docker sandbox: {error}")


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each sandbox backend in turn (a test using it runs once per backend)."""
    return request.getfixturevalue("docker_backend" if request.param == "docker" else "bwrap")
