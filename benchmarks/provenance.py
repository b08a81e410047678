"""A benchmark's JSON report, with where and how it ran: the machine, versions and commit.

The benchmarks run as scripts (``python benchmarks/<name>.py``), so they import this module by
its bare name (through ``report``, with the flags every benchmark shares).

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
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["PROVENANCE_KEYS", "library_versions", "machine_info", "source_revision", "write_report"]

REPO_ROOT = Path(__file__).resolve().parent.parent
#: The keys :func:`write_report` adds to every report (a report of its own may not use them).
PROVENANCE_KEYS = ("timestamp", "command", "revision", "machine", "versions")


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
    """CPU count (all and usable by this process), CPU model and vector features, platform."""
    cpu_model, features = None, []
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        cpu_model = names[0].split(":", 1)[1].strip() if names else None
        flags = next(
            (line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), ""
        )
        features = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in flags]
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model,
        "cpu_features": features,  # what float32 and bfloat16 kernels can use
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def source_revision(root: Path = REPO_ROOT) -> dict[str, Any] | None:
    """The checkout's commit and whether tracked files differ from it (``None`` outside git).

    Args:
        root: a folder of the checkout (default: the one this file is in).

    Returns:
        ``{"commit": <full hash>, "changed": <bool>}``, or ``None`` where git is missing or
        ``root`` is no git checkout.
    """

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *arguments],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        changed = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "changed": changed}


def write_report(
    path: Path,
    report: Mapping[str, Any],
    libraries: Iterable[str] = (),
    *,
    announce: bool = True,
) -> dict[str, Any]:
    """Writes ``report`` as JSON to ``path``, with where and how it ran, and says where.

    The folder is made if missing. Values JSON has no type for (a ``Path``, a ``datetime``) are
    written as their ``str``.

    Args:
        path: the JSON file (a benchmark's ``--json``).
        report: the benchmark's own figures and settings.
        libraries: distributions whose versions matter to the figures (``rollenv`` and Python's
            version are always recorded).
        announce: print ``raw numbers: <path>`` (a benchmark that rewrites its report after
            every point passes ``False`` but for the last write).

    Returns:
        What was written: ``report`` and the keys of :data:`PROVENANCE_KEYS`: ``timestamp``
        (UTC), ``command`` (how the script was started), ``revision`` (see
        :func:`source_revision`), ``machine`` (see :func:`machine_info`) and ``versions``.

    Raises:
        ValueError: ``report`` has a key of its own among :data:`PROVENANCE_KEYS`.
    """
    clashing = sorted(set(report) & set(PROVENANCE_KEYS))
    if clashing:
        raise ValueError(f"write_report adds {clashing} itself; the report may not set them")
    full = {
        **report,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "revision": source_revision(),
        "machine": machine_info(),
        "versions": library_versions(dict.fromkeys(["rollenv", *libraries])),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(full, indent=2, ensure_ascii=False, default=str) + "\n")
    if announce:
        print(f"raw numbers: {path}")
    return full
