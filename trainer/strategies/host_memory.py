"""Freed CPU tensors go back to the operating system: glibc's mmap threshold, fixed.

glibc's ``malloc`` gives an allocation of at least ``M_MMAP_THRESHOLD`` bytes a memory mapping
of its own and unmaps it on ``free``. By default that threshold moves: each time such a
mapping is freed, it rises to the freed size (up to 32 MiB). After a training step has freed
its activations, most tensors of the next step come from the heap instead, whose freed pages
stay resident and fragment: the process keeps gigabytes it no longer uses, and the next step's
peak lands on top of them. Setting the threshold with ``mallopt`` fixes it (glibc then stops
moving it), so a freed tensor of at least that size is returned at once.

It costs speed: each large tensor then gets a fresh mapping and its page faults. On
SmolLM2-135M, one update of 8 sequences of 256 tokens (``benchmarks/host_memory.py``): peak
memory 0.95x in one process and 0.83x in each of two FSDP2 workers, the memory kept between
updates about half, at 0.78x and 0.73x the speed. A threshold of 8 MiB kept most of the waste,
so 1 MiB it is. ``train.return_freed_memory`` turns it on; it is off by default.
"""

from __future__ import annotations

import ctypes
import functools
import platform

#: ``mallopt``'s parameter number for the mmap threshold (glibc's malloc.h).
_M_MMAP_THRESHOLD = -3
#: Allocations of at least this many bytes get their own mapping.
DEFAULT_THRESHOLD_BYTES = 1 << 20


@functools.cache  # platform.libc_ver() scans the interpreter's binary
def glibc_malloc() -> bool:
    """Whether this process allocates with glibc's ``malloc`` (Linux with glibc), the only
    allocator :func:`return_freed_tensors_to_os` can set."""
    return platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def return_freed_tensors_to_os(threshold_bytes: int = DEFAULT_THRESHOLD_BYTES) -> bool:
    """Fixes glibc's mmap threshold at ``threshold_bytes`` for this process.

    Call it once, early, in a process that trains: it holds for every later allocation.
    Allocations below the threshold still come from the heap, so small ones stay fast.

    Returns:
        Whether it took effect: ``False`` where the C library is not glibc (musl, macOS).

    Example:
        >>> return_freed_tensors_to_os()  # doctest: +SKIP
        True
    """
    if not glibc_malloc():
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, int(threshold_bytes)))
