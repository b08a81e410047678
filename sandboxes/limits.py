"""``Limits``: the resources one sandboxed run (or session) may use."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Resource limits of a run.

    Args:
        timeout_s: wall-clock deadline; the whole process tree is killed when it passes.
        memory_mb: address space of each process (``RLIMIT_AS``), and the work dir's tmpfs size.
        max_processes: processes the sandbox user may have at once (``RLIMIT_NPROC``).
        max_file_mb: largest file the program may write (``RLIMIT_FSIZE``).
        max_output_bytes: stdout plus stderr kept; a run writing more is stopped and reported
            as ``output_truncated``.

    Example:
        >>> Limits(timeout_s=2.5).cpu_seconds
        4
    """

    timeout_s: float = 5.0
    memory_mb: int = 512
    max_processes: int = 64
    max_file_mb: int = 64
    max_output_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.memory_mb < 16:
            raise ValueError(f"memory_mb must be >= 16, got {self.memory_mb}")
        if self.max_processes < 1 or self.max_file_mb < 1 or self.max_output_bytes < 1:
            raise ValueError("max_processes, max_file_mb and max_output_bytes must be >= 1")

    @property
    def cpu_seconds(self) -> int:
        """``RLIMIT_CPU``: a backstop one second past the wall-clock deadline."""
        return math.ceil(self.timeout_s) + 1
