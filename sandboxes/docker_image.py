"""The image the ``docker`` backend runs programs in, built from this machine's own files.

No registry is needed: :func:`ensure_image` packs the host's Python interpreter, its standard
library, a shell and a few coreutils, and the shared libraries they load (found with ``ldd``)
into a tar and hands it to ``docker import``. The image holds nothing else: no ``/etc/passwd``,
no ``/tmp``, no package manager; the backend adds a tmpfs work dir at ``/sandbox``.

The interpreter is the one the ``bwrap`` backend runs (``sandboxes.languages.sandbox_python``:
the system ``/usr/bin/python3`` where there is one), so both backends run the same Python.

From a shell (as a user who may talk to the Docker daemon)::

    python -m sandboxes.docker_image            # builds rollenv/python:3.11 unless it exists
    python -m sandboxes.docker_image --rebuild  # builds it again

Example:
    >>> from sandboxes.docker_image import ensure_image
    >>> ensure_image()  # doctest: +SKIP
    'rollenv/python:3.11'
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterable
from typing import Any

from sandboxes.errors import SandboxUnavailableError
from sandboxes.languages import sandbox_python

#: the repository of the images this module builds; the tag is the Python version
REPOSITORY = "rollenv/python"
#: programs besides Python the image carries (those missing on the host are left out)
TOOLS = (
    "sh",
    "bash",
    "env",
    "sleep",
    "nohup",
    "cat",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "ls",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "tr",
    "cut",
    "seq",
    "tee",
    "yes",
    "mkdir",
    "rm",
    "cp",
    "mv",
    "touch",
    "grep",
    "sed",
    "awk",
    "expr",
    "basename",
    "dirname",
    "timeout",
    "id",
)
#: top-level folders that are symlinks on merged-/usr systems (``/bin -> usr/bin``)
_TOP_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
#: top-level folders of the standard library left out: third-party packages, Python's own
#: test suite and IDE (a pyenv build's ``test`` alone is about 200 MB)
_SKIPPED_DIRS = {"site-packages", "dist-packages", "test", "idlelib"}
NO_DAEMON_HINT = (
    "start one as root: `apt-get install -y docker.io && dockerd >/tmp/dockerd.log 2>&1 &` "
    "(then `docker info` answers)"
)


def _interpreter_facts(python: str) -> dict[str, str]:
    """The interpreter's version and the folders of its standard library, asked of itself."""
    script = (
        "import sys, sysconfig\n"
        "paths = sysconfig.get_paths()\n"
        "print(f'{sys.version_info[0]}.{sys.version_info[1]}')\n"
        "print(sys.version.split()[0])\n"
        "print(paths['stdlib'])\n"
        "print(paths['platstdlib'])\n"
    )
    try:
        lines = subprocess.run(
            [python, "-I", "-S", "-c", script],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.split("\n")
    except (OSError, subprocess.SubprocessError) as error:
        raise SandboxUnavailableError(
            f"cannot use {python} for the sandbox image ({error}); install a system Python "
            "with `apt-get install -y python3`, or set ROLLENV_SANDBOX_PYTHON"
        ) from None
    return {"minor": lines[0], "version": lines[1], "stdlib": lines[2], "platstdlib": lines[3]}


def default_tag(python: str | None = None) -> str:
    """The image name :func:`ensure_image` builds for ``python``: ``rollenv/python:<X.Y>``.

    Args:
        python: the interpreter; ``sandbox_python()`` by default.

    Returns:
        The image name with its tag, e.g. ``"rollenv/python:3.11"``.
    """
    return f"{REPOSITORY}:{_interpreter_facts(python or sandbox_python())['minor']}"


def _canonical(path: str) -> str:
    """``path`` with its folders resolved (``/lib/x/libc.so.6`` -> ``/usr/lib/x/libc.so.6``)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _shared_libraries(binaries: Iterable[str]) -> set[str]:
    """Every shared library (and the loader) that ``binaries`` load, as ``ldd`` lists them."""
    ldd = shutil.which("ldd")
    if ldd is None:
        raise SandboxUnavailableError(
            "building the sandbox image needs ldd (Debian: `apt-get install -y libc-bin`)"
        )
    found: set[str] = set()
    for binary in binaries:
        listing = subprocess.run(
            [ldd, binary], capture_output=True, text=True, check=False, timeout=60
        ).stdout
        for line in listing.splitlines():
            # "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" or "/lib64/ld-linux... (0x...)"
            match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if match:
                found.add(match.group(1))
    return found


def _is_elf(path: str) -> bool:
    with contextlib.suppress(OSError), open(path, "rb") as handle:
        return handle.read(4) == b"\x7fELF"
    return False


class _ImageTree:
    """The files of the image: host paths, added once each with their folders and symlinks."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}  # image path -> "dir" | "file" | "link"

    def add_dirs(self, path: str) -> None:
        parent = os.path.dirname(path)
        while parent not in ("/", "") and parent not in self.entries:
            self.entries[parent] = "dir"
            parent = os.path.dirname(parent)

    def add(self, path: str) -> None:
        """Adds the host file at ``path`` (following symlinks, which are kept as symlinks)."""
        path = _canonical(os.path.abspath(path))
        if path in self.entries:
            return
        if os.path.islink(path):
            self.entries[path] = "link"
            self.add_dirs(path)
            target = os.readlink(path)
            self.add(os.path.normpath(os.path.join(os.path.dirname(path), target)))
        elif os.path.isdir(path):
            self.entries[path] = "dir"
            self.add_dirs(path)
        elif os.path.isfile(path):
            self.entries[path] = "file"
            self.add_dirs(path)

    def add_tree(self, root: str) -> None:
        """Adds a folder with everything under it but third-party package folders."""
        self.add(root)
        for folder, dirs, files in os.walk(root):
            if folder == root:
                dirs[:] = [name for name in dirs if name not in _SKIPPED_DIRS]
            for name in dirs + files:
                self.add(os.path.join(folder, name))

    def write(self, archive: tarfile.TarFile) -> None:
        for top in _TOP_LINKS:
            host = os.path.join("/", top)
            if os.path.islink(host):
                info = tarfile.TarInfo(top)
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, os.readlink(host), 0o777
                archive.addfile(info)
        for path in sorted(self.entries):
            info = archive.gettarinfo(path, arcname=path.lstrip("/"))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode &= 0o755  # nothing writable or setuid in the image
            if info.isfile():
                with open(path, "rb") as handle:
                    archive.addfile(info, handle)
            else:
                archive.addfile(info)


def _host_tree(python: str, facts: dict[str, str]) -> _ImageTree:
    tree = _ImageTree()
    tree.add(python)
    for folder in dict.fromkeys((facts["stdlib"], facts["platstdlib"])):
        tree.add_tree(folder)
    # ``python3`` on PATH inside the image, wherever the interpreter lives on the host
    for tool in TOOLS:
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found:
            tree.add(found)
    binaries = [path for path, kind in tree.entries.items() if kind == "file" and _is_elf(path)]
    for library in _shared_libraries(binaries):
        tree.add(library)
    return tree


def connect(client: Any = None) -> Any:
    """A Docker client that has answered a ping: ``client`` itself, or ``docker.from_env()``.

    Raises:
        SandboxUnavailableError: the SDK is not installed, or no daemon answers; the message
            says what to install or start.
    """
    try:
        import docker
    except ImportError:
        raise SandboxUnavailableError(
            "the 'docker' sandbox backend needs the Docker SDK: pip install \"rollenv[docker]\""
        ) from None
    try:
        client = client or docker.from_env()
        client.ping()
    except Exception as error:
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise SandboxUnavailableError(
            f"no Docker daemon answers at {where}; {NO_DAEMON_HINT}, or use backend='bwrap' "
            f"(apt-get install -y bubblewrap). The Docker SDK said: {error}"
        ) from None
    return client


def image_exists(tag: str, client: Any = None) -> bool:
    """Whether the Docker daemon has an image named ``tag``."""
    client = connect(client)
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_image(
    tag: str | None = None,
    *,
    python: str | None = None,
    client: Any = None,
    rebuild: bool = False,
) -> str:
    """Builds the sandbox image from this machine's Python with ``docker import``, if missing.

    Idempotent: an image already named ``tag`` is kept as it is (unless ``rebuild``). No
    registry is contacted.

    Args:
        tag: the image name; :func:`default_tag` of ``python`` by default.
        python: the interpreter to pack (it runs as ``python3`` in the image);
            ``sandbox_python()`` by default, the system ``/usr/bin/python3`` where it exists.
        client: a ``docker.DockerClient``; ``docker.from_env()`` by default.
        rebuild: build and re-tag even if ``tag`` exists.

    Returns:
        The image name, ready for ``DockerBackend(image=...)``.

    Raises:
        SandboxUnavailableError: no Docker SDK or daemon, or the host's files cannot be packed;
            the message says what to install or start.

    Example:
        >>> from sandboxes.docker_backend import DockerBackend
        >>> DockerBackend(image=ensure_image()).run("print(6 * 7)").stdout  # doctest: +SKIP
        '42\\n'
    """
    client = connect(client)
    python = os.path.abspath(python or sandbox_python())
    facts = _interpreter_facts(python)
    tag = tag or f"{REPOSITORY}:{facts['minor']}"
    if not rebuild and image_exists(tag, client):
        return tag
    tree = _host_tree(python, facts)
    python3 = "/usr/bin/python3"
    repository, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "")
    with tempfile.TemporaryDirectory(prefix="rollenv-image-") as folder:
        path = os.path.join(folder, "rootfs.tar")
        with tarfile.open(path, "w") as archive:
            tree.write(archive)
            if _canonical(python3) not in tree.entries:
                info = tarfile.TarInfo(python3.lstrip("/"))
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, _canonical(python), 0o777
                archive.addfile(info)
        changes = [
            "ENV PATH=/usr/local/bin:/usr/bin:/bin",
            "ENV LANG=C.UTF-8",
            f"LABEL rollenv.python={_canonical(python)} rollenv.python.version={facts['version']}",
        ]
        try:
            with open(path, "rb") as handle:
                client.api.import_image(
                    src=handle, repository=repository, tag=version or None, changes=changes
                )
        except Exception as error:
            raise SandboxUnavailableError(f"docker import of {tag} failed: {error}") from None
    if not image_exists(tag, client):
        raise SandboxUnavailableError(f"docker import reported no error but {tag} is missing")
    return tag


def main(argv: list[str] | None = None) -> int:
    """``python -m sandboxes.docker_image``: builds the image unless it exists."""
    parser = argparse.ArgumentParser(
        prog="python -m sandboxes.docker_image",
        description="Build the docker sandbox backend's image from this machine's Python.",
    )
    parser.add_argument("--tag", help="image name (default: rollenv/python:<X.Y>)")
    parser.add_argument("--python", help="interpreter to pack (default: the system python3)")
    parser.add_argument("--rebuild", action="store_true", help="build even if the image exists")
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        client = connect()
        existed = not args.rebuild and image_exists(args.tag or default_tag(args.python), client)
        tag = ensure_image(args.tag, python=args.python, client=client, rebuild=args.rebuild)
    except SandboxUnavailableError as error:
        print(f"sandbox image not built: {error}")
        return 1
    took = time.monotonic() - start
    print(f"{tag}: {'already there' if existed else f'built in {took:.1f} s'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
