"""sandboxes: run untrusted code (model output) under isolation and limits. Stdlib only.

One call runs a program once, a ``Session`` keeps a Python REPL alive across calls, and a
``Pool`` runs many programs in parallel. Backends: ``bwrap`` (bubblewrap, default on Linux),
``docker`` (one container per run or session; needs an engine), ``subprocess`` (no isolation,
only when named, with a warning).

Example:
    >>> import sandboxes
    >>> result = sandboxes.run("print(input()[::-1])", stdin="olleh")  # doctest: +SKIP
    >>> result.stdout, result.exit_code  # doctest: +SKIP
    ('hello\\n', 0)
"""

from __future__ import annotations

from sandboxes.api import BACKENDS, get_backend, run
from sandboxes.errors import SandboxError, SandboxUnavailableError
from sandboxes.limits import Limits
from sandboxes.pool import Pool
from sandboxes.result import Result
from sandboxes.session import Session

__all__ = [
    "BACKENDS",
    "Limits",
    "Pool",
    "Result",
    "SandboxError",
    "SandboxUnavailableError",
    "Session",
    "get_backend",
    "run",
]
