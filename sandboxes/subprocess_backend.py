"""``SubprocessBackend``: a plain child process in a temporary folder, with NO isolation.

The program can read and write anything the caller can, and reach the network. It exists for
trusted code and for machines without bubblewrap or Docker, and is used only when asked for by
name (``backend="subprocess"``); every construction warns. Deadline, output cap and rlimits on
CPU, memory and file size still apply (the process count is not limited: it would count every
process of the caller's user).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings

from sandboxes.limits import Limits
from sandboxes.local import LocalBackend, Prepared


class SubprocessBackend(LocalBackend):
    """Runs programs as ordinary child processes (no sandbox; see the module docstring).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     backend = SubprocessBackend()
        >>> backend.run("print(6 * 7)").stdout
        '42\\n'
    """

    name = "subprocess"

    def __init__(self, python: str | None = None) -> None:
        warnings.warn(
            "sandboxes backend 'subprocess' does not isolate anything: the code can read and "
            "write your files and use the network. Use it only for trusted code.",
            UserWarning,
            stacklevel=2,
        )
        super().__init__(python)

    def _prepare(self, argv: list[str], files: dict[str, bytes], limits: Limits) -> Prepared:
        folder = tempfile.mkdtemp(prefix="rollenv-sandbox-")
        prepared = Prepared(argv=[], cwd=folder)
        prepared.cleanups.append(lambda: shutil.rmtree(folder, ignore_errors=True))
        for name, content in files.items():
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(content)
        prepared.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": folder,
            "TMPDIR": folder,
            "LANG": "C.UTF-8",
            "PYTHONIOENCODING": "utf-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        prlimit = shutil.which("prlimit")
        limit_args = (
            [
                prlimit,
                f"--cpu={limits.cpu_seconds}",
                f"--as={limits.memory_mb << 20}",
                f"--fsize={limits.max_file_mb << 20}",
                "--core=0",
                "--",
            ]
            if prlimit
            else []
        )
        prepared.argv = [*limit_args, *argv]
        return prepared
