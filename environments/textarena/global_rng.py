"""``GlobalRandomState``: one env's own state of the process-wide ``random`` (and numpy) generators.

TextArena's games draw from the global ``random`` module (``State`` seeds it on reset), a few from
numpy's global generator. Two envs in one process would then draw from one stream, and each
one's episodes would depend on the other's calls. Each env keeps its own state and swaps it in
around every call into TextArena, under one lock for the process, so that envs stepped in any
interleaving (or in threads) give what each gives alone.

Example:
    >>> import random
    >>> first, second = GlobalRandomState(seed=1), GlobalRandomState(seed=1)
    >>> with first:
    ...     a = random.random()
    >>> with second:
    ...     b = random.random()
    >>> a == b
    True
"""

from __future__ import annotations

import random
import threading
from types import TracebackType
from typing import Any

import numpy as np

_LOCK = threading.RLock()


class GlobalRandomState:
    """A private state of the global generators, active inside ``with`` (re-entrant per thread).

    Args:
        seed: seeds the private state.
        numpy: swap numpy's global generator too (costs more; only for games that use it).
    """

    def __init__(self, seed: int = 0, numpy: bool = False) -> None:
        self.numpy = numpy
        self._outer: list[tuple[Any, Any]] = []
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """Restarts the private state from ``seed``."""
        with _LOCK:
            saved = random.getstate()
            random.seed(seed)
            self._state = random.getstate()
            random.setstate(saved)
        self._numpy_state = (
            np.random.RandomState(seed % (1 << 32)).get_state() if self.numpy else None
        )

    def __enter__(self) -> GlobalRandomState:
        _LOCK.acquire()
        self._outer.append((random.getstate(), np.random.get_state() if self.numpy else None))
        random.setstate(self._state)
        if self.numpy:
            np.random.set_state(self._numpy_state)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            self._state = random.getstate()
            outer_random, outer_numpy = self._outer.pop()
            random.setstate(outer_random)
            if self.numpy:
                self._numpy_state = np.random.get_state()
                np.random.set_state(outer_numpy)
        finally:
            _LOCK.release()

    def snapshot(self) -> tuple[Any, Any]:
        """The private state, to try something and then ``restore`` it (a dry run)."""
        return self._state, self._numpy_state

    def restore(self, snapshot: tuple[Any, Any]) -> None:
        """Puts back a state taken by ``snapshot``."""
        self._state, self._numpy_state = snapshot
