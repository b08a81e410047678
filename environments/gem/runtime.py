"""Calling into GEM: importing it lazily, and finding the data its games need.

GEM's games and its reasoning-gym wrapper draw from Python's global ``random`` (and its
``reset(seed)`` reseeds both ``random`` and numpy's global generator): each adapted env keeps its
own state of them with ``rollenv.global_random.GlobalRandomState``, as TextArena's adapter does.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from rollenv.global_random import global_state_restored


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
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with global_state_restored():
        registration = importlib.import_module("gem.envs.registration")
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return registration


def nltk_data_dirs() -> list[Path]:
    """The folders nltk searches for its data on this platform (``nltk.data.path``'s defaults).

    Computed without importing nltk, which takes a second and is only needed when a game
    using a corpus is played.
    """
    dirs = [Path(p) for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    dirs.append(Path.home() / "nltk_data")
    for prefix in {sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix)}:
        dirs += [Path(prefix) / "nltk_data", Path(prefix) / "share" / "nltk_data"]
        dirs.append(Path(prefix) / "lib" / "nltk_data")
    for base in ("/usr/share", "/usr/local/share", "/usr/lib", "/usr/local/lib"):
        dirs.append(Path(base) / "nltk_data")
    return dirs


def nltk_corpus_installed(name: str) -> bool:
    """Whether the nltk corpus ``name`` (e.g. ``"words"``) is on disk, without importing nltk.

    Example:
        >>> nltk_corpus_installed("no-such-corpus")
        False
    """
    for folder in nltk_data_dirs():
        corpus = folder / "corpora" / name
        if corpus.is_dir() or corpus.with_suffix(".zip").is_file():
            return True
    return False
