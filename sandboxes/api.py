"""``run``: the one call that runs untrusted code, and ``get_backend``, which picks the backend."""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import Any

from sandboxes.errors import SandboxUnavailableError
from sandboxes.limits import Limits
from sandboxes.result import Result

BACKENDS = ("bwrap", "docker", "subprocess")
_DEFAULTS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _build(name: str) -> Any:
    if name == "bwrap":
        from sandboxes.bwrap import BwrapBackend

        return BwrapBackend()
    if name == "docker":
        from sandboxes.docker_backend import DockerBackend

        return DockerBackend()
    if name == "subprocess":
        from sandboxes.subprocess_backend import SubprocessBackend

        return SubprocessBackend()
    raise SandboxUnavailableError(
        f"unknown sandbox backend {name!r}; choose one of {', '.join(BACKENDS)}"
    )


def get_backend(backend: Any = None) -> Any:
    """Returns a backend instance: ``backend`` itself if it is one, else the named one.

    ``None`` means the default: ``bwrap`` on Linux, ``docker`` elsewhere. The unisolated
    ``subprocess`` backend is never a default. Named backends are built once and shared.

    Raises:
        SandboxUnavailableError: the backend cannot run here; the message says how to fix it.

    Example:
        >>> get_backend("bwrap").name  # doctest: +SKIP
        'bwrap'
    """
    if backend is not None and not isinstance(backend, str):
        return backend
    name = backend or ("bwrap" if sys.platform.startswith("linux") else "docker")
    with _LOCK:
        if name not in _DEFAULTS:
            _DEFAULTS[name] = _build(name)
        return _DEFAULTS[name]


def run(
    code: str,
    *,
    language: str = "python",
    stdin: str | bytes = "",
    files: Mapping[str, str | bytes] | None = None,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    backend: Any = None,
    limits: Limits | None = None,
) -> Result:
    """Runs ``code`` once in a fresh sandbox and returns what happened.

    The program's own failures (an exception, a non-zero exit, a timeout, running out of
    memory) are reported in the ``Result``, never raised.

    Args:
        code: the program's source.
        language: ``"python"``, ``"bash"`` or ``"sh"``.
        stdin: fed to the program's standard input.
        files: extra files for the work dir, name (relative path) to content.
        timeout_s: wall-clock deadline; the whole process tree is killed when it passes.
        memory_mb: address-space limit of each process.
        backend: ``"bwrap"`` (default on Linux), ``"docker"``, ``"subprocess"`` (no isolation),
            or a backend instance.
        limits: full ``Limits`` (process count, file size, output cap), overriding
            ``timeout_s`` and ``memory_mb``.

    Raises:
        SandboxUnavailableError: the backend is not installed; the message says how to get it.

    Example:
        >>> import sandboxes
        >>> sandboxes.run("print(sum(range(10)))").stdout  # doctest: +SKIP
        '45\\n'
    """
    limits = limits or Limits(timeout_s=timeout_s, memory_mb=memory_mb)
    return get_backend(backend).run(
        code, language=language, stdin=stdin, files=files, limits=limits
    )
