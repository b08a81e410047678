"""How each supported language is started: the file the code goes in and the command line."""

from __future__ import annotations

import os
import shutil
import sys

from sandboxes.errors import SandboxError

#: language -> (file name of the program, command line that runs it, ``{python}`` filled in)
LANGUAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "python": ("main.py", ("{python}", "-E", "-s", "-B", "-u", "main.py")),
    "bash": ("main.sh", ("/bin/bash", "main.sh")),
    "sh": ("main.sh", ("/bin/sh", "main.sh")),
}


def sandbox_python() -> str:
    """The Python interpreter programs run with: the system one if there is one.

    The system interpreter lives under ``/usr``, which every backend can expose read-only; the
    caller's own interpreter may sit in a home directory the sandbox user cannot read.
    ``ROLLENV_SANDBOX_PYTHON`` overrides the choice.
    """
    chosen = os.environ.get("ROLLENV_SANDBOX_PYTHON")
    if chosen:
        return chosen
    for candidate in ("/usr/bin/python3", shutil.which("python3") or ""):
        if candidate.startswith("/usr/") and os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def program(language: str, python: str) -> tuple[str, list[str]]:
    """Returns the file name and the command line for ``language``.

    Raises:
        SandboxError: the language is not supported.
    """
    try:
        filename, argv = LANGUAGES[language]
    except KeyError:
        raise SandboxError(
            f"unsupported language {language!r}; supported: {', '.join(sorted(LANGUAGES))}"
        ) from None
    return filename, [part.format(python=python) for part in argv]
