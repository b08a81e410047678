"""The registry of text envs: ``register``, ``make``, ``spec``, ``registry``, ``pprint_registry``.

Ids follow Gymnasium's grammar (``[namespace/]Name-vN``). Each rollenv id is mirrored into
Gymnasium's registry as ``rollenv/<id>``, and ``rollenv.make`` builds envs through
``gymnasium.make``, so both ways give the same env with the same wrappers (time limit, order
enforcement, the passive env checker).

rollenv's own ids (``Mixture-v0`` and the families its distribution declares in the
``rollenv.envs`` entry-point group) are registered when ``rollenv`` is imported, with string entry
points, so no env module is imported before an env is made; other packages' plugins of that
group are loaded right after them, so ``gymnasium.make("rollenv/<their id>")`` works after
``import rollenv`` too. A plugin put off then (its package was being imported) loads at the
registry's next read.

Example:
    >>> import rollenv
    >>> env = rollenv.make("sokoban")          # short family names resolve to the latest version
    >>> env.spec.id
    'rollenv/Sokoban-v0'
    >>> rollenv.spec("Sokoban-v0").max_episode_steps
    10
"""

from __future__ import annotations

import difflib
import importlib.metadata
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import parse_env_id

from rollenv.plugins import ENTRY_POINT_GROUP, PluginFailure, load_plugins
from rollenv.shadowing import Shadowing, find_shadowing

GYMNASIUM_NAMESPACE = "rollenv"


class UnknownEnvError(gym.error.UnregisteredEnv):
    """``make`` or ``spec`` was given an id that no registered env has.

    Attributes:
        close_matches: the registered ids that look like it, closest first (at most 5).
    """

    def __init__(self, message: str, close_matches: list[str] | None = None) -> None:
        super().__init__(message)
        self.close_matches = close_matches or []


class EnvUnavailableError(gym.error.Error):
    """``make`` was given the id of an env that cannot run here (a missing extra or data).

    Attributes:
        env_id: the id asked for.
        reason: why it cannot run and, where there is one, the command that fixes it.
    """

    def __init__(self, env_id: str, reason: str) -> None:
        super().__init__(f"rollenv environment {env_id!r} is not available here: {reason}")
        self.env_id = env_id
        self.reason = reason


@dataclass(frozen=True)
class UnavailableEnv:
    """An id a family knows but cannot offer here, and why (``roll-agent envs --unavailable``).

    Attributes:
        id: the env id it would have.
        reason: why it cannot run (e.g. ``"needs the nltk corpus 'words' (a download)"``).
        family: the plugin that declared it.
        description: one line for listings.
    """

    id: str
    reason: str
    family: str | None = None
    description: str = ""


def _gymnasium_id(env_id: str) -> str:
    """The id under which Gymnasium knows ``env_id``: in rollenv's namespace unless it has one."""
    return env_id if parse_env_id(env_id)[0] else f"{GYMNASIUM_NAMESPACE}/{env_id}"


@dataclass(frozen=True)
class _Unavailable:
    """Gymnasium's entry point of an unavailable id: making it raises the reason."""

    env_id: str
    reason: str

    def __call__(self, **kwargs: Any) -> gym.Env:
        raise EnvUnavailableError(self.env_id, self.reason)


@dataclass(frozen=True)
class _FormatChoosingBuilder:
    """Gymnasium's entry point of a registered id: builds the env from the spec's entry point
    and takes ``action_format`` (``"text"`` or ``"tools"``) for every env, whatever its
    constructor takes."""

    env_spec: EnvSpec

    @property
    def metadata(self) -> dict[str, Any]:
        # gymnasium.make reads the render modes off its entry point
        return dict(getattr(self.env_spec.load_entry_point(), "metadata", {}))

    def __call__(self, *, action_format: str = "text", **kwargs: Any) -> gym.Env:
        from rollenv.tool_calls import ACTION_FORMATS, ToolCallEnv

        if action_format not in ACTION_FORMATS:
            raise ValueError(
                f"action_format must be one of {', '.join(map(repr, ACTION_FORMATS))}, "
                f"got {action_format!r}"
            )
        env = self.env_spec.load_entry_point()(**kwargs)
        return ToolCallEnv(env) if action_format == "tools" else env


@dataclass(frozen=True)
class EnvSpec:
    """Everything needed to build one registered env.

    Attributes:
        id: the env id, e.g. ``"Sokoban-v0"``.
        entry_point: ``"module:Class"`` or a callable returning the env.
        max_episode_steps: turns before Gymnasium's ``TimeLimit`` truncates; ``None`` for none.
        kwargs: default keyword arguments of the env (``make`` overrides them).
        family: the plugin that registered it (``"sokoban"``), or ``None`` if registered directly.
        description: one line for listings.
    """

    id: str
    entry_point: str | Callable[..., gym.Env]
    max_episode_steps: int | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    family: str | None = None
    description: str = ""

    @property
    def name(self) -> str:
        return parse_env_id(self.id)[1]

    @property
    def version(self) -> int | None:
        return parse_env_id(self.id)[2]

    def takes(self, keyword: str) -> bool:
        """Whether the env's constructor takes ``keyword`` (imports its module).

        Example:
            >>> import rollenv
            >>> rollenv.spec("InstructionFollowing-v0").takes("defer_reward")
            True
            >>> rollenv.spec("Sokoban-v0").takes("defer_reward")
            False
        """
        import inspect

        return keyword in inspect.signature(self.load_entry_point()).parameters

    def load_entry_point(self) -> Callable[..., gym.Env]:
        """The class or function that builds the env, its module imported if named by a
        ``"module:Class"`` string."""
        import importlib

        if isinstance(self.entry_point, str):
            module, _, name = self.entry_point.partition(":")
            return getattr(importlib.import_module(module), name)
        return self.entry_point

    @property
    def gymnasium_id(self) -> str:
        """The id under which Gymnasium knows this env (``rollenv/Sokoban-v0``)."""
        return _gymnasium_id(self.id)


class EnvRegistry(Mapping[str, EnvSpec]):
    """A read-only mapping from id to ``EnvSpec`` that loads the plugins on first use."""

    def __init__(self) -> None:
        self._specs: dict[str, EnvSpec] = {}
        self._unavailable: dict[str, UnavailableEnv] = {}
        self._plugins_loaded = False
        self._plugins_loading = False
        self._builtin_loaded = False
        self._loaded_entry_points: set[tuple[str, str]] = set()
        self._loading_plugin: str | None = None
        self._lock = threading.RLock()
        self.plugin_failures: list[PluginFailure] = []
        #: the hub's ``environments`` package hidden by a user's module (its families not loaded)
        self.shadowing: list[Shadowing] = []

    # Mapping interface: every read first makes sure the plugins are in.
    def __getitem__(self, env_id: str) -> EnvSpec:
        self.load_plugins()
        return self._specs[env_id]

    def __iter__(self) -> Iterator[str]:
        self.load_plugins()
        return iter(list(self._specs))

    def __len__(self) -> int:
        self.load_plugins()
        return len(self._specs)

    def load_plugins(self) -> None:
        """Runs every ``rollenv.envs`` plugin's registration function, once.

        Another thread that reads the registry meanwhile waits until every plugin is in.
        """
        if self._plugins_loaded:
            return
        with self._lock:
            # loading: a plugin of this thread reads the registry while it registers
            if self._plugins_loaded or self._plugins_loading:
                return
            self._plugins_loading = True
            deferred: list[str] = []
            try:
                self._load_builtin()
                self.plugin_failures += load_plugins(
                    self._run_plugin, skip=self._loaded_entry_points, deferred=deferred
                )
            finally:
                self._plugins_loading = False
                # a plugin whose package is half-imported is tried again at the next read
                self._plugins_loaded = not deferred

    def load_builtin(self) -> None:
        """Registers rollenv's own ids, once: ``Mixture-v0`` and its distribution's families."""
        with self._lock:
            if self._builtin_loaded:
                return
            loading, self._plugins_loading = self._plugins_loading, True
            try:
                self._load_builtin()
            finally:
                self._plugins_loading = loading

    def _load_builtin(self) -> None:
        if self._builtin_loaded:
            return
        self._builtin_loaded = True
        self.shadowing = find_shadowing(["environments"])
        if self.shadowing:
            # the hub's families would load from the user's package: none is loaded, and one
            # line says why (here and in the error of every id asked for)
            warnings.warn(self.shadowing[0].message(), RuntimeWarning, stacklevel=4)
            self._loaded_entry_points.update(_hub_family_entry_points())
        # a family put off here (its package is being imported) loads with the other plugins
        self.plugin_failures += load_plugins(
            self._run_plugin, distribution="rollenv", skip=self._loaded_entry_points
        )

    def _run_plugin(self, name: str, register_function: Callable[[], object]) -> None:
        before, before_unavailable = set(self._specs), set(self._unavailable)
        self._loading_plugin = name
        try:
            register_function()
        except BaseException:
            # a plugin that fails half-way leaves none of its ids behind
            for env_id in set(self._specs) - before:
                self._remove(env_id)
            for env_id in set(self._unavailable) - before_unavailable:
                del self._unavailable[env_id]
                gym.registry.pop(_gymnasium_id(env_id), None)
            raise
        finally:
            self._loading_plugin = None

    def add(self, spec: EnvSpec) -> None:
        if self._loading_plugin is None:
            self.load_plugins()  # so a later plugin never silently overrides a user's id
        if self._loading_plugin is not None and spec.family is None:
            spec = EnvSpec(**{**spec.__dict__, "family": self._loading_plugin})
        if spec.id in self._specs:
            warnings.warn(f"Overriding rollenv environment {spec.id!r}", UserWarning, stacklevel=3)
            self._remove(spec.id)  # so Gymnasium does not warn a second time
        self._specs[spec.id] = spec
        if self._unavailable.pop(spec.id, None) is not None:  # it runs here after all
            gym.registry.pop(spec.gymnasium_id, None)
        gym.register(
            id=spec.gymnasium_id,
            entry_point=_FormatChoosingBuilder(spec),
            max_episode_steps=spec.max_episode_steps,
            kwargs=dict(spec.kwargs),
        )

    def add_unavailable(self, entry: UnavailableEnv) -> None:
        if self._loading_plugin is None:
            self.load_plugins()
        if self._loading_plugin is not None and entry.family is None:
            entry = UnavailableEnv(**{**entry.__dict__, "family": self._loading_plugin})
        if entry.id in self._specs:
            raise ValueError(f"{entry.id!r} is registered; it cannot also be unavailable")
        self._unavailable[entry.id] = entry
        # gymnasium.make of the id then says why, rather than that no such env exists
        gym.register(id=_gymnasium_id(entry.id), entry_point=_Unavailable(entry.id, entry.reason))

    @property
    def unavailable(self) -> Mapping[str, UnavailableEnv]:
        """Ids that families know but cannot run here, with the reason (never made)."""
        self.load_plugins()
        return dict(self._unavailable)

    def _remove(self, env_id: str) -> None:
        spec = self._specs.pop(env_id)
        gym.registry.pop(spec.gymnasium_id, None)

    def resolve(self, env_id: str) -> EnvSpec:
        """Finds the spec of an exact id, a case-insensitive id, or a family's short name.

        ``"sokoban"`` resolves to the latest version of the env named ``Sokoban``.

        Raises:
            EnvUnavailableError: the id is known but cannot run here; the message says why.
            UnknownEnvError: nothing matches; the message lists the closest registered ids.
        """
        if not isinstance(env_id, str):
            raise TypeError(f"env id must be a str, got {type(env_id).__name__}")
        self.load_plugins()
        if env_id in self._specs:
            return self._specs[env_id]
        wanted = env_id.strip().lower()
        if wanted.startswith(GYMNASIUM_NAMESPACE + "/"):
            wanted = wanted[len(GYMNASIUM_NAMESPACE) + 1 :]
        by_lower = {key.lower(): spec for key, spec in self._specs.items()}
        if wanted in by_lower:
            return by_lower[wanted]
        same_name = [s for s in self._specs.values() if s.name.lower() == wanted]
        if same_name:
            # a short name means our own family before an adapted one (gem/Sokoban-v0)
            return max(same_name, key=lambda s: (parse_env_id(s.id)[0] is None, s.version or 0))
        unavailable = {key.lower(): entry for key, entry in self._unavailable.items()}
        if wanted in unavailable:
            entry = unavailable[wanted]
            raise EnvUnavailableError(entry.id, entry.reason)
        close = self._close_matches(env_id)
        raise UnknownEnvError(self._unknown_message(env_id, close), close)

    def _close_matches(self, env_id: str) -> list[str]:
        ids = sorted(self._specs)
        close = difflib.get_close_matches(env_id, ids, n=5, cutoff=0.5)
        lowered = {i.lower(): i for i in ids}
        close += [
            lowered[m]
            for m in difflib.get_close_matches(env_id.lower(), list(lowered), n=5, cutoff=0.5)
            if lowered[m] not in close
        ]
        return close[:5]

    def _unknown_message(self, env_id: str, close: list[str]) -> str:
        if self.shadowing:  # nothing else would help: the hub's families never loaded
            why = self.shadowing[0].message()
            return f"No rollenv environment with id {env_id!r}: its family did not load, as {why}"
        message = f"No rollenv environment with id {env_id!r}."
        if close:
            message += " Did you mean: " + ", ".join(repr(c) for c in close) + "?"
        else:
            message += f" Registered ids: {', '.join(sorted(self._specs)) or '(none)'}."
        if self.plugin_failures:
            names = ", ".join(f.name for f in self.plugin_failures)
            message += f" (Plugins that failed to load: {names}.)"
        return message


def _hub_family_entry_points() -> set[tuple[str, str]]:
    """``(name, value)`` of the rollenv distribution's entry points into ``environments``."""
    try:
        found = importlib.metadata.distribution("rollenv").entry_points
    except importlib.metadata.PackageNotFoundError:
        return set()
    return {
        (e.name, e.value)
        for e in found
        if e.group == ENTRY_POINT_GROUP and e.module.split(".")[0] == "environments"
    }


registry = EnvRegistry()


def register(
    id: str,  # noqa: A002 - Gymnasium's name for it
    entry_point: str | Callable[..., gym.Env],
    *,
    max_episode_steps: int | None = None,
    kwargs: dict[str, Any] | None = None,
    description: str = "",
    family: str | None = None,
) -> None:
    """Registers an env under ``id`` in rollenv's registry and Gymnasium's (as ``rollenv/<id>``).

    Args:
        id: ``Name-vN``, optionally ``namespace/Name-vN`` (Gymnasium's grammar).
        entry_point: ``"module:Class"`` (imported on first ``make``) or a callable.
        max_episode_steps: turns before Gymnasium's ``TimeLimit`` truncates the episode.
        kwargs: default keyword arguments passed to the entry point.
        description: one line shown by ``pprint_registry`` and ``roll-agent envs``.
        family: the family name; defaults to the name of the plugin being loaded.

    Example:
        >>> import rollenv
        >>> rollenv.register("MyGame-v0", "environments.sokoban.env:SokobanEnv",
        ...                  kwargs={"dim_room": (5, 5)}, max_episode_steps=5)
        >>> rollenv.make("MyGame-v0").spec.max_episode_steps
        5
    """
    parse_env_id(id)  # raises gymnasium.error.Error on a malformed id
    if not (isinstance(entry_point, str) or callable(entry_point)):
        raise TypeError(f"entry_point must be 'module:Class' or a callable, got {entry_point!r}")
    registry.add(
        EnvSpec(
            id=id,
            entry_point=entry_point,
            max_episode_steps=max_episode_steps,
            kwargs=dict(kwargs or {}),
            family=family,
            description=description,
        )
    )


def register_unavailable(
    id: str,  # noqa: A002 - as register's
    reason: str,
    *,
    description: str = "",
    family: str | None = None,
) -> None:
    """Declares an id that its family cannot run here, so it is listed with the reason, never
    registered broken (``roll-agent envs --unavailable``; ``make`` raises
    ``EnvUnavailableError`` with the reason).

    Args:
        id: the id the env would have (Gymnasium's grammar).
        reason: why it cannot run, with the command that fixes it where there is one.
        description: one line for listings.
        family: the family name; defaults to the name of the plugin being loaded.

    Example:
        >>> import rollenv
        >>> rollenv.register_unavailable("NeedsCorpus-v0", "needs the nltk corpus 'words'")
        >>> rollenv.make("NeedsCorpus-v0")
        Traceback (most recent call last):
        ...
        rollenv.registration.EnvUnavailableError: rollenv environment 'NeedsCorpus-v0' is not \
available here: needs the nltk corpus 'words'
    """
    parse_env_id(id)
    if not reason.strip():
        raise ValueError("an unavailable env needs a reason")
    registry.add_unavailable(
        UnavailableEnv(id=id, reason=reason, family=family, description=description)
    )


def spec(env_id: str) -> EnvSpec:
    """Returns the ``EnvSpec`` of ``env_id`` (exact id, any case, or family short name)."""
    return registry.resolve(env_id)


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """Builds a registered env, with Gymnasium's standard wrappers.

    Args:
        env_id: an id (``"Sokoban-v0"``), the same in any case, or a family's short name
            (``"sokoban"``).
        **kwargs: override the spec's keyword arguments; ``max_episode_steps`` and
            ``disable_env_checker`` are Gymnasium's. ``action_format="tools"`` offers the
            env's actions as OpenAI tool calls (``rollenv.tool_calls``); ``"text"`` (the
            default) reads them from the reply's text.

    Raises:
        UnknownEnvError: the id is not registered; the message lists the closest ids.
    """
    return gym.make(registry.resolve(env_id).gymnasium_id, **kwargs)


def pprint_registry(*, num_cols: int = 3, disable_print: bool = False) -> str | None:
    """Prints the registered ids grouped by family (returns the text if ``disable_print``)."""
    by_family: dict[str, list[str]] = {}
    for env_spec in registry.values():
        by_family.setdefault(env_spec.family or "(registered directly)", []).append(env_spec.id)
    lines = []
    for family in sorted(by_family):
        ids = sorted(by_family[family])
        width = max(len(i) for i in ids) + 2
        lines.append(f"===== {family} =====")
        for row in range(0, len(ids), num_cols):
            lines.append("".join(i.ljust(width) for i in ids[row : row + num_cols]).rstrip())
        lines.append("")
    text = "\n".join(lines).rstrip() + "\n"
    if disable_print:
        return text
    print(text, end="")
    return None
