"""``train.allocator``: the C allocator of the train workers, glibc's ``malloc`` or jemalloc.

glibc keeps the pages of freed CPU tensors resident and fragmented, so the next update's peak
lands on top of the last one's leftovers (:mod:`trainer.strategies.host_memory`). jemalloc
returns more of them. On SmolLM2-135M, one update of 8 x 256 tokens on a 2-core machine
(``benchmarks/train_scale.py``), FSDP2 x2's per-worker peak memory against torch x1's under
the same allocator: 0.65x with glibc, 0.56x with jemalloc (x1's own peak 6,437 -> 5,861 MB),
at 0.95x and 0.86x of x1's tokens/s.

An allocator is chosen when a process starts, through ``LD_PRELOAD``: train workers are Ray
actors, so :func:`allocator_env_vars` goes into their ``runtime_env`` and each worker checks
in :func:`check_loaded` that it took. The ``torch`` strategy trains in the process that is
already running; it gets jemalloc only if that process was started with it.

Example:
    >>> allocator_env_vars("default")
    {}
    >>> loaded_allocator() in ALLOCATORS
    True
"""

from __future__ import annotations

import functools
import glob
import os
import sys
from pathlib import Path

#: What ``train.allocator`` accepts: the process's own (glibc on Linux) or jemalloc.
ALLOCATORS = ("default", "jemalloc")
INSTALL_JEMALLOC = "apt-get install libjemalloc2 (Debian, Ubuntu) or conda install jemalloc"
_LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    f"{sys.prefix}/lib",  # conda's jemalloc
)


class AllocatorError(RuntimeError):
    """The allocator asked for cannot be had in this process (one line, with the fix)."""


@functools.cache
def jemalloc_library() -> str | None:
    """The path of this machine's ``libjemalloc.so``, or ``None`` where none is installed."""
    for directory in _LIBRARY_DIRS:
        found = sorted(glob.glob(f"{directory}/libjemalloc.so*"))
        if found:
            return found[-1]  # libjemalloc.so.2 over the development symlink libjemalloc.so
    return None


def allocator_env_vars(allocator: str) -> dict[str, str]:
    """The environment a process must start with to allocate with ``allocator``.

    Raises:
        AllocatorError: ``allocator`` is unknown, or jemalloc is not installed here.
    """
    if allocator not in ALLOCATORS:
        raise AllocatorError(f"train.allocator: {allocator!r} is not one of {ALLOCATORS}")
    if allocator == "default":
        return {}
    library = jemalloc_library()
    if library is None:
        raise AllocatorError(
            f"train.allocator=jemalloc: libjemalloc is not installed here: {INSTALL_JEMALLOC}"
        )
    preload = " ".join(part for part in (library, os.environ.get("LD_PRELOAD", "")) if part)
    return {"LD_PRELOAD": preload}


def loaded_allocator() -> str:
    """``"jemalloc"`` where jemalloc is mapped into this process, else ``"default"``."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux
        return "default"
    return "jemalloc" if "libjemalloc" in maps else "default"


def check_loaded(allocator: str, where: str = "this process") -> None:
    """Raises :class:`AllocatorError` unless ``allocator`` is what this process allocates with
    (``default`` always holds: a process not asked for jemalloc may still have it).

    Example:
        >>> check_loaded("default")
    """
    if allocator == "jemalloc" and loaded_allocator() != "jemalloc":
        library = os.environ.get("LD_PRELOAD") or "libjemalloc.so.2"
        raise AllocatorError(
            f"train.allocator=jemalloc, but {where} runs without it: {library} did not load "
            f"there ({INSTALL_JEMALLOC})"
        )
