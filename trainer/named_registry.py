"""``NamedRegistry``: specs by name for an extension point (algorithms, strategies), with the
add, remove and look-up rules they share.

Standard library only: the CLI and the config read the registries before torch is imported.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Colour:
    ...     name: str
    >>> colours = NamedRegistry[Colour]("colour", LookupError)
    >>> colours.add(Colour("red")).name
    'red'
    >>> list(colours.view)
    ['red']
    >>> colours.get("rde")
    Traceback (most recent call last):
    ...
    LookupError: Input should be 'red' (got 'rde'; did you mean 'red'?)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Generic, Protocol, TypeVar

from trainer.name_choices import unknown_name_message


class _Named(Protocol):
    @property
    def name(self) -> str: ...


SpecT = TypeVar("SpecT", bound=_Named)


class NamedRegistry(Generic[SpecT]):
    """Specs of one kind by their ``name``, in registration order.

    Args:
        kind: what a spec is, for messages (``"algorithm"``).
        unknown: the error :meth:`get` raises for a name nobody registered.
    """

    def __init__(self, kind: str, unknown: type[Exception]) -> None:
        self.kind = kind
        self._unknown = unknown
        self._specs: dict[str, SpecT] = {}
        #: every registered spec by name (a read-only view)
        self.view: Mapping[str, SpecT] = MappingProxyType(self._specs)

    def add(self, spec: SpecT, *, replace: bool = False) -> SpecT:
        """Registers ``spec``; ``replace`` puts it in place of one of the same name.

        Raises:
            ValueError: the name is empty or has surrounding spaces, or is taken and
                ``replace`` is false.
        """
        if not spec.name or spec.name != spec.name.strip():
            raise ValueError(
                f"a {self.kind}'s name is not empty and has no surrounding spaces, "
                f"got {spec.name!r}"
            )
        if spec.name in self._specs and not replace:
            raise ValueError(
                f"{self.kind} {spec.name!r} is already registered; pass replace=True to replace it"
            )
        self._specs[spec.name] = spec
        return spec

    def remove(self, name: str) -> SpecT:
        """Unregisters the spec called ``name`` and returns it."""
        return self._specs.pop(self.get(name).name)

    def get(self, name: str) -> SpecT:
        """The spec called ``name``; raises ``unknown`` listing the names and the closest."""
        spec = self._specs.get(name)
        if spec is None:
            raise self._unknown(unknown_name_message(name, list(self._specs)))
        return spec
