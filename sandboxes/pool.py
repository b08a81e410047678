"""``Pool``: many sandboxed runs in parallel (each is its own process tree, so threads suffice)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sandboxes.api import get_backend
from sandboxes.limits import Limits
from sandboxes.result import Result


class Pool:
    """Runs sandboxed programs on ``workers`` threads, one sandbox per run.

    Args:
        workers: runs at once; defaults to the number of CPU cores.
        backend: as for ``sandboxes.run``.
        timeout_s: default deadline of a run.
        memory_mb: default memory limit of a run.
        limits: default full ``Limits``.

    Example:
        >>> with Pool(workers=2) as pool:  # doctest: +SKIP
        ...     [r.stdout for r in pool.map([f"print({i})" for i in range(3)])]
        ['0\\n', '1\\n', '2\\n']
    """

    def __init__(
        self,
        workers: int | None = None,
        *,
        backend: Any = None,
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        limits: Limits | None = None,
    ) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.backend = get_backend(backend)
        self.limits = limits or Limits(timeout_s=timeout_s, memory_mb=memory_mb)
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="sandbox")

    def submit(self, code: str, **options: Any) -> Future[Result]:
        """Queues one run; ``options`` are ``language``, ``stdin``, ``files``, ``limits``."""
        options.setdefault("limits", self.limits)
        return self._executor.submit(self.backend.run, code, **options)

    def map(self, codes: Iterable[str], **options: Any) -> Iterator[Result]:
        """Runs every program of ``codes`` with the same options; results in input order."""
        futures = [self.submit(code, **options) for code in codes]
        return (future.result() for future in futures)

    def run_all(self, jobs: Iterable[dict[str, Any]]) -> list[Result]:
        """Runs jobs given as ``sandboxes.run`` keyword dicts (``code`` plus options)."""
        futures = []
        for job in jobs:
            job = dict(job)
            futures.append(self.submit(job.pop("code"), **job))
        return [future.result() for future in futures]

    def close(self) -> None:
        """Waits for queued runs and stops the threads."""
        self._executor.shutdown(wait=True)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
