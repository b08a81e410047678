"""Calling into GEM: importing it lazily, and finding the data its games need.

GEM's games and its reasoning-gym wrapper draw from Python's global ``random`` (and its
``reset(seed)`` reseeds both ``random`` and numpy's global generator): each adapted env keeps its
own state of them with ``rollenv.global_random.GlobalRandomState``, as TextArena's adapter does.
"""

from __future__ import annotations

import importlib.util
import logging
from functools import cache
from types import ModuleType


def gem_installed() -> bool:
    """Whether the ``gem`` package (``gem-llm``) can be imported, without importing it."""
    return importlib.util.find_spec("gem") is not None


@cache
def import_gem() -> ModuleType:
    """Imports GEM's registry module, undoing the logging setup that ``import gem`` does.

    ``gem/__init__.py`` calls ``logging.basicConfig(level=INFO)``: importing an adapter should
    not change how the caller's program logs, so the root logger's handlers and level are put
    back as they were.
    """
    # imported here, so that importing this module never imports rollenv: rollenv's import
    # registers the family, whose register() reads this module (see rollenv.plugins)
    from rollenv.global_random import global_state_restored

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with global_state_restored():
        registration = importlib.import_module("gem.envs.registration")
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return registration
