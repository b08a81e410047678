"""Lazy imports of WebShop's optional dependencies, with one clear error when one is missing.

``import environments`` must stay light, so the WebShop modules import bm25s, rapidfuzz,
FastAPI, uvicorn, Jinja2 and Playwright only when they need them, through ``require``.

Example:
    >>> require("json").__name__
    'json'
"""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_HINT = 'pip install "rollenv[webshop]"'


class MissingExtraError(ImportError):
    """A WebShop dependency is not installed; the message says how to install it."""


def require(module: str) -> ModuleType:
    """Imports ``module`` or raises ``MissingExtraError`` naming the install command.

    Args:
        module: the module to import, e.g. ``"bm25s"``.

    Returns:
        The imported module.

    Raises:
        MissingExtraError: the module (or one of its own dependencies) is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(
            f"WebShop needs the package {module!r}, which could not be imported ({error}). "
            f"Install the WebShop extra: {INSTALL_HINT}"
        ) from None
