"""``GlobalRandomState``: one env's own generator behind the process-wide ``random`` functions.

Games adapted from other libraries (TextArena, GEM) draw from the global ``random`` module and
reseed it on reset, a few numpy's global generator too. Two envs in one process would then draw
from one stream, and each one's episodes would depend on the other's calls. Each env keeps its
own ``random.Random`` and, around every call into the library, points the ``random`` module's
functions (``random.choice``, ``random.seed``...) at it, under one lock for the process, so that
envs stepped in any interleaving (or in threads) give what each gives alone. Rebinding some 20
module attributes costs about a microsecond, where ``getstate``/``setstate`` of the shared
generator cost ten; numpy's global state, which has no such functions to rebind, is swapped with
its ``get_state``/``set_state`` for the games that use it.

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
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import numpy as np

#: held by every ``GlobalRandomState`` inside ``with``, and by ``global_state_restored``: one
#: lock for the process, so no two adapters ever swap the global generators at once
LOCK = threading.RLock()
#: the ``random`` module's functions that are methods of its hidden shared generator
_FUNCTIONS = tuple(
    name
    for name in dir(random)
    if not name.startswith("_") and getattr(getattr(random, name), "__self__", None) is random._inst
)
_MODULE = vars(random)
_ORIGINAL = {name: _MODULE[name] for name in _FUNCTIONS}


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
        if hasattr(self, "_generator"):  # reseeded in place: the bound functions stay valid
            self._generator.seed(seed)
        else:
            self._generator = random.Random(seed)
            self._functions = {name: getattr(self._generator, name) for name in _FUNCTIONS}
        self._numpy_state = (
            np.random.RandomState(seed % (1 << 32)).get_state() if self.numpy else None
        )

    def __enter__(self) -> GlobalRandomState:
        LOCK.acquire()
        outer_numpy = np.random.get_state() if self.numpy else None
        # the module's own functions, unless another env (or anyone) has rebound them
        unbound = _MODULE["random"] is _ORIGINAL["random"]
        outer = _ORIGINAL if unbound else {name: _MODULE[name] for name in _FUNCTIONS}
        self._outer.append((outer, outer_numpy))
        _MODULE.update(self._functions)
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
            outer_functions, outer_numpy = self._outer.pop()
            _MODULE.update(outer_functions)
            if self.numpy:
                self._numpy_state = np.random.get_state()
                np.random.set_state(outer_numpy)
        finally:
            LOCK.release()

    def snapshot(self) -> tuple[Any, Any]:
        """The private state, to try something and then ``restore`` it (a dry run)."""
        return self._generator.getstate(), self._numpy_state

    def restore(self, snapshot: tuple[Any, Any]) -> None:
        """Puts back a state taken by ``snapshot``."""
        state, self._numpy_state = snapshot
        self._generator.setstate(state)


@contextmanager
def global_state_restored() -> Iterator[None]:
    """Runs a call that may draw from or reseed the global generators (Python's and numpy's),
    and puts both back as they were afterwards, under ``LOCK``.

    Example:
        >>> before = random.getstate()
        >>> with global_state_restored():
        ...     random.seed(7)
        >>> random.getstate() == before
        True
    """
    with LOCK:
        python_state, numpy_state = random.getstate(), np.random.get_state()
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)
