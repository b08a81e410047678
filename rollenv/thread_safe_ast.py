"""``ast.parse`` that envs stepped from several threads can share.

CPython 3.11 keeps the AST constructor's recursion counter in interpreter-wide state, not per
thread (python/cpython#106905). When a garbage collection inside one thread's parse runs a
finalizer that lets another thread in, and that thread parses too, the first one fails with
``SystemError: AST constructor recursion depth mismatch``. Env managers and the tests step envs
from thread pools, so every parse of model or dataset text goes through one lock. Parsing a
reply takes microseconds, so the lock costs nothing measurable.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal

_PARSE_LOCK = threading.RLock()  # re-entrant: a finalizer run inside a parse may parse again


def parse(source: str, mode: Literal["exec", "eval"] = "exec") -> ast.AST:
    """``ast.parse(source, mode=mode)``, one thread at a time.

    Example:
        >>> type(parse("1 + 2", mode="eval").body).__name__
        'BinOp'
    """
    with _PARSE_LOCK:
        return ast.parse(source, mode=mode)
