"""Loading env families from the ``rollenv.envs`` entry-point group.

A package adds envs to rollenv by declaring, in its ``pyproject.toml``::

    [project.entry-points."rollenv.envs"]
    mygame = "mygame.envs:register"

where ``mygame.envs.register()`` calls ``rollenv.register(...)`` for each of its ids. rollenv's own
families are declared the same way. A plugin that fails to import or to register is reported in
a ``RuntimeWarning`` naming it, and never stops the others from loading.
"""

from __future__ import annotations

import importlib.metadata
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
) -> list[PluginFailure]:
    """Calls every registration function of ``group``, each through ``run(name, function)``.

    ``run`` lets the registry attribute the ids a plugin registers to it (and undo them if the
    plugin fails half-way). Each failure is warned about and returned; nothing is raised.
    """
    failures = []
    seen: set[tuple[str, str]] = set()
    for entry_point in importlib.metadata.entry_points(group=group):
        # the same distribution can be visible twice (e.g. an editable install plus sys.path)
        if (entry_point.name, entry_point.value) in seen:
            continue
        seen.add((entry_point.name, entry_point.value))
        try:
            register_function = entry_point.load()
            if not callable(register_function):
                raise TypeError(
                    f"{entry_point.value} is a {type(register_function).__name__}, not a function"
                )
            run(entry_point.name, register_function)
        except Exception as error:  # noqa: BLE001 - a plugin may fail in any way
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
