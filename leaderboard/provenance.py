"""Where a result comes from: the versions, the commit and the machine stored beside it.

Example:
    >>> from leaderboard.provenance import env_versions, rollenv_version
    >>> env_versions(["FrozenLake-v0"])["FrozenLake-v0"].startswith("rollenv ")
    True
    >>> rollenv_version() != ""
    True
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from leaderboard.records import Provenance
from leaderboard.suites import Suite

__all__ = ["env_versions", "git_commit", "make_provenance", "rollenv_version"]


@functools.cache
def rollenv_version() -> str:
    """The installed rollenv's version (``unknown`` when it is not installed as a package)."""
    try:
        return importlib.metadata.version("rollenv")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def git_commit(folder: Path | None = None) -> str:
    """The commit checked out where rollenv is installed from (``""`` outside a git checkout;
    ``+dirty`` appended when tracked files changed)."""
    folder = folder or Path(__file__).resolve().parent
    try:

        def git(*args: str) -> str:
            return subprocess.run(
                ["git", *args],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()

        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"{commit}+dirty" if dirty else commit


def env_versions(env_ids: Iterable[str]) -> dict[str, str]:
    """Each env id and the distribution (with its version) that registered it: the id names
    the env's version (``-v0``), the package names the code that ran it."""
    import rollenv

    owners = importlib.metadata.packages_distributions()
    versions = {}
    for env_id in env_ids:
        entry = rollenv.spec(env_id).entry_point
        module = entry.split(":")[0] if isinstance(entry, str) else entry.__module__
        distribution = (owners.get(module.split(".")[0]) or ["unknown"])[0]
        try:
            version = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        versions[env_id] = f"{distribution} {version}"
    return versions


def make_provenance(suite: Suite, model_source: str, hardware: str, command: str) -> Provenance:
    """The provenance of an eval of ``suite`` on this machine, now."""
    return Provenance(
        model_source=model_source,
        suite_fingerprint=suite.fingerprint,
        env_versions=env_versions(env.id for env in suite.envs),
        rollenv_version=rollenv_version(),
        git_commit=git_commit(),
        hardware=hardware or f"{os.cpu_count()} CPU cores",
        command=command,
    )
