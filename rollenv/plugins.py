"""Loading env families from the ``rollenv.envs`` entry-point group.

A package adds envs to rollenv by declaring, in its ``pyproject.toml``::

    [project.entry-points."rollenv.envs"]
    mygame = "mygame.envs:register"

where ``mygame.envs.register()`` calls ``rollenv.register(...)`` for each of its ids. rollenv's own
families are declared the same way. Every plugin, rollenv's and the others', loads when
``rollenv`` is imported (so ``gymnasium.make("rollenv/Sokoban-v0")`` and
``gymnasium.make("rollenv/MyGame-v0")`` work right after ``import rollenv``): a registration
function should only call ``rollenv.register`` with string entry points and import nothing heavy.
A plugin that fails to import or to register is reported in a ``RuntimeWarning`` naming it, and
never stops the others from loading.

A family whose own modules import ``rollenv`` (``from rollenv.text_env import TextEnv``) may be
imported before it: ``from environments.gem.env import GemEnv`` first runs ``rollenv``'s import,
which runs that family's registration while ``environments.gem.env`` is still half-imported.
That is fine as long as ``register()`` does not need the half-imported module, and then
``gymnasium.make("gem/...")`` works right away. A plugin whose ``register`` is not defined yet
(its own module is the one being imported) or fails because it reads a module of its package
that is, is put off (``deferred``) and loaded at the registry's next read, once the import is
done; a family keeps its package's ``__init__`` free of ``rollenv`` imports so that this never
happens to it.
"""

from __future__ import annotations

import importlib.metadata
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

ENTRY_POINT_GROUP = "rollenv.envs"


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded, and why."""

    name: str
    target: str
    distribution: str | None
    error: str


def _distribution_name(entry_point: importlib.metadata.EntryPoint) -> str | None:
    dist = getattr(entry_point, "dist", None)
    return dist.metadata["Name"] if dist is not None else None


def load_plugins(
    run: Callable[[str, Callable[[], object]], None],
    group: str = ENTRY_POINT_GROUP,
    *,
    distribution: str | None = None,
    skip: set[tuple[str, str]] | None = None,
    deferred: list[str] | None = None,
) -> list[PluginFailure]:
    """Calls every registration function of ``group``, each through ``run(name, function)``.

    ``run`` lets the registry attribute the ids a plugin registers to it (and undo them if the
    plugin fails half-way). Each failure is warned about and returned; nothing is raised.

    Args:
        run: calls one plugin's registration function.
        group: the entry-point group.
        distribution: only the entry points of this distribution (``"rollenv"``: the built-in
            families); ``None`` for every installed one.
        skip: ``(name, value)`` of entry points already loaded; those loaded now are added.
        deferred: gets the names of the plugins whose package is being imported right now
            (neither loaded nor added to ``skip``: the caller loads them later).
    """
    failures = []
    seen = skip if skip is not None else set()
    if distribution is None:
        entry_points = importlib.metadata.entry_points(group=group)
    else:
        try:
            found = importlib.metadata.distribution(distribution).entry_points
        except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
            return []
        entry_points = [e for e in found if e.group == group]
    for entry_point in entry_points:
        # the same distribution can be visible twice (e.g. an editable install plus sys.path)
        if (entry_point.name, entry_point.value) in seen:
            continue
        if _being_imported(entry_point.module, submodules=False):
            # its register() is not defined yet
            if deferred is not None:
                deferred.append(entry_point.name)
            continue
        try:
            register_function = entry_point.load()
            if not callable(register_function):
                raise TypeError(
                    f"{entry_point.value} is a {type(register_function).__name__}, not a function"
                )
            run(entry_point.name, register_function)
            seen.add((entry_point.name, entry_point.value))
        except Exception as error:  # noqa: BLE001 - a plugin may fail in any way
            if _being_imported(entry_point.module, submodules=True):
                # register() read a module of its package that is still half-imported (its
                # ids were undone by ``run``): try again once that import is done
                if deferred is not None:
                    deferred.append(entry_point.name)
                continue
            seen.add((entry_point.name, entry_point.value))
            failure = PluginFailure(
                name=entry_point.name,
                target=entry_point.value,
                distribution=_distribution_name(entry_point),
                error=f"{type(error).__name__}: {error}",
            )
            failures.append(failure)
            source = (
                f" (from distribution {failure.distribution!r})" if failure.distribution else ""
            )
            warnings.warn(
                f"rollenv plugin {failure.name!r} = {failure.target!r}{source} failed to load "
                f"and its envs are not registered: {failure.error}",
                RuntimeWarning,
                stacklevel=3,
            )
    return failures


def _being_imported(module: str, *, submodules: bool) -> bool:
    """Whether ``module`` (or, with ``submodules``, a module under it) is half-way through its
    import right now."""
    prefix = module + "."
    # importlib marks a module's spec while the module's code runs
    return any(
        getattr(getattr(loaded, "__spec__", None), "_initializing", False)
        for name, loaded in list(sys.modules.items())
        if name == module or (submodules and name.startswith(prefix))
    )
