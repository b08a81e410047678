"""``"package.module:name"`` references, imported on first use.

The registries of algorithms and strategies name their built-in functions this way, so that
reading a registry (the CLI's choices, the config's checks) imports neither torch nor Ray.

Example:
    >>> load_reference("json:dumps")([1, 2])
    '[1, 2]'
"""

from __future__ import annotations

import importlib
from typing import Any


def load_reference(reference: str) -> Any:
    """The object a ``"package.module:qualified.name"`` reference names, importing its module.

    Args:
        reference: the module's import path and the object's name in it, joined by ``:``.

    Returns:
        The object.

    Raises:
        ValueError: the reference has no ``:``.
    """
    module_name, sep, qualified_name = reference.partition(":")
    if not sep or not module_name or not qualified_name:
        raise ValueError(f"expected 'package.module:name', got {reference!r}")
    target: Any = importlib.import_module(module_name)
    for part in qualified_name.split("."):
        target = getattr(target, part)
    return target
