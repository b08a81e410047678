"""What a benchmark's JSON records about where it ran: the machine and the library versions.

The benchmarks run as scripts (``python benchmarks/<name>.py``), so they import this module by
its bare name.

Example:
    >>> from provenance import library_versions, machine_info
    >>> sorted(machine_info())[:2]
    ['cpu_count', 'cpu_model']
    >>> library_versions(["not-a-package"])["not-a-package"] is None
    True
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["library_versions", "machine_info", "write_report"]


def library_versions(distributions: Iterable[str]) -> dict[str, str | None]:
    """Python's version and each installed distribution's (``None`` when not installed)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for distribution in distributions:
        try:
            versions[distribution] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            versions[distribution] = None
    return versions


def machine_info() -> dict[str, Any]:
    """CPU count (all and usable by this process), CPU model and platform."""
    cpu_model = None
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        cpu_model = names[0].split(":", 1)[1].strip() if names else None
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def write_report(path: Path, report: dict[str, Any], libraries: Iterable[str]) -> None:
    """Writes ``report`` as JSON to ``path`` with the machine and ``libraries``' versions."""
    full = {**report, "machine": machine_info(), "versions": library_versions(libraries)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(full, indent=2) + "\n")
    print(f"raw numbers: {path}")
