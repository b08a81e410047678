"""Finding a user's module that hides one of the hub's top-level packages.

The distribution installs, beside ``rollenv``, the top-level packages ``environments``,
``trainer``, ``leaderboard`` and ``sandboxes``. Python imports the first module of a name on
``sys.path``, and the folder a script runs from comes first: a project with its own
``environments/`` package (a common name in ML projects) hides the hub's, and the hub's families
would load from the user's folder. The hub looks before it imports one of its own packages, and
says in one line which path hides which package, and what to do.

Example:
    >>> from rollenv.shadowing import find_shadowing
    >>> find_shadowing(["environments"])  # run from this checkout: nothing hides it
    []
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

#: the distribution's top-level packages other than ``rollenv`` (pyproject's packages.find)
HUB_PACKAGES = ("environments", "trainer", "leaderboard", "sandboxes")
#: where they are installed: beside the ``rollenv`` package
_INSTALL_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Shadowing:
    """The module ``found`` is what ``import <name>`` gives, where the hub's is ``expected``."""

    name: str
    found: Path
    expected: Path

    def message(self) -> str:
        """One line: what hides what, and the fix."""
        return (
            f"{self.found} hides rollenv's own package {self.name!r} (installed at "
            f"{self.expected}): Python imports the first {self.name!r} on sys.path, and the "
            f"folder you run from comes first. Rename your {self.name!r} or run from another "
            "folder."
        )


class ShadowedPackageError(ImportError):
    """One of the hub's packages is hidden by a user's module of the same name."""


def _location(name: str) -> Path | None:
    """Where ``import name`` finds (or found) the module: its package folder or its file."""
    loaded = sys.modules.get(name)
    try:
        spec = getattr(loaded, "__spec__", None) if loaded is not None else None
        spec = spec or importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return Path(spec.origin).resolve() if spec.origin else None


def find_shadowing(names: Iterable[str] = HUB_PACKAGES) -> list[Shadowing]:
    """The hub's packages among ``names`` that ``import`` would take from somewhere else."""
    found = []
    for name in names:
        location = _location(name)
        expected = _INSTALL_ROOT / name
        if location is not None and location != expected and expected.is_dir():
            found.append(Shadowing(name, location, expected))
    return found


def import_hub_package(name: str) -> ModuleType:
    """Imports the hub's package ``name``, or raises ``ShadowedPackageError`` saying what hides
    it (instead of an ``AttributeError`` from the user's module of that name).

    Example:
        >>> import_hub_package("sandboxes").__name__
        'sandboxes'
    """
    shadowing = find_shadowing([name])
    if shadowing:
        raise ShadowedPackageError(shadowing[0].message())
    return importlib.import_module(name)
