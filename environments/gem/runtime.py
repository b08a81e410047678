"""Calling into GEM safely: importing it lazily, and isolating its use of the global RNGs.

GEM's games and its reasoning-gym wrapper draw from Python's global ``random`` (and its
``reset(seed)`` reseeds both ``random`` and numpy's global generator). Two GEM envs in one process
would then disturb each other, and both would disturb the caller's own random streams.
``GlobalRandomGuard`` gives each adapted env its own state of Python's global ``random``: it is
swapped in, under one module lock, around every call into GEM that can draw from it, and the
caller's state is put back afterwards (numpy's too, around a game's reset; a reasoning-gym
task's reset leaves numpy reseeded as GEM does, for speed: see ``reseeding``).

Example:
    >>> import random
    >>> guard = GlobalRandomGuard()
    >>> before = random.getstate()
    >>> with guard.reseeding():
    ...     random.seed(7)
    ...     first = random.random()
    >>> random.getstate() == before
    True
    >>> with guard.drawing():  # the env's stream goes on where its reset left it
    ...     second = random.random()
    >>> stream = random.Random(7)
    >>> (first, second) == (stream.random(), stream.random())
    True
    >>> random.getstate() == before
    True
"""

from __future__ import annotations

import importlib.util
import logging
import os
import random
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

#: held around every call into GEM that may touch the global random generators
GEM_LOCK = threading.RLock()


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
    with GEM_LOCK, _global_rng_restored():
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


@contextmanager
def _global_rng_restored() -> Iterator[None]:
    """Puts Python's and numpy's global RNG states back as they were (the caller holds the lock)."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


class GlobalRandomGuard:
    """One env's own state of Python's global ``random``, swapped in around calls into GEM.

    ``reseeding()`` wraps a call that reseeds the global generators (GEM's constructors and
    ``reset``): afterwards the env keeps the state the call left, and the caller's Python and
    numpy states are restored. ``drawing()`` wraps a call that may draw from Python's
    ``random`` (a step of a game with chance in it): the env's state is swapped in for it.
    Steps that draw nothing (checked for every registered id by the tests) need no guard, which
    keeps the adapter's cost per step near zero.
    """

    def __init__(self) -> None:
        self._state: Any = None

    @contextmanager
    def reseeding(self, *, restore_numpy: bool = True) -> Iterator[None]:
        """Runs a call that reseeds the global generators; keeps the state it leaves.

        Args:
            restore_numpy: put numpy's global state back too. Saving and restoring it costs
                about 200 us here, several times a cheap reasoning-gym question, so a task's
                reset leaves numpy reseeded as GEM's own ``reset(seed)`` does (no GEM step draws
                from numpy's global generator: tested), and keeps the rest of the isolation.
        """
        with GEM_LOCK:
            python_state = random.getstate()
            numpy_state = np.random.get_state() if restore_numpy else None
            try:
                yield
            finally:
                self._state = random.getstate()
                random.setstate(python_state)
                if numpy_state is not None:
                    np.random.set_state(numpy_state)

    @contextmanager
    def seeded(self, seed: int, *, keep_state: bool) -> Iterator[None]:
        """Runs a call with Python's ``random`` seeded with ``seed``, as GEM's ``reset(seed)``
        seeds it, but without reseeding numpy (restoring numpy's state costs ~80 us).

        Args:
            seed: the seed.
            keep_state: keep the state the call leaves, for later ``drawing()`` calls.
        """
        with GEM_LOCK:
            outside = random.getstate()
            random.seed(seed)
            try:
                yield
            finally:
                if keep_state:
                    self._state = random.getstate()
                random.setstate(outside)

    @contextmanager
    def drawing(self) -> Iterator[None]:
        with GEM_LOCK:
            outside = random.getstate()
            if self._state is not None:
                random.setstate(self._state)
            try:
                yield
            finally:
                self._state = random.getstate()
                random.setstate(outside)
