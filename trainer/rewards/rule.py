"""``RuleScorer``: rule verifiers run in a child process with a deadline that always holds.

A rule verifier is a plain function ``score(response, **data) -> float``, named
``"module:function"`` (``environments.math.verify:is_correct``, or any importable function).
Some hang on pathological input: math-verify's own timeout uses ``SIGALRM``, which only a main
thread may set, so in a Ray worker's thread it silently has none (verl #3407), and one
degenerate response that hangs its scorer can freeze training (verl PR #6673). Here each call
runs in a child process (where the function runs on its main thread) and the parent waits at
most ``deadline_s``; a call past it gets its child killed and a fresh child started, and the
result is *unscored* (``None``), never a silent 0.

The deadline counts the call alone. Loading a rule (importing its module, and running the
module's ``warm_up()`` where it has one: math-verify imports sympy and builds its parsers on
first use, seconds on a busy machine) has its own, longer ``load_timeout_s``.

Example:
    >>> scorer = RuleScorer(deadline_s=5.0)
    >>> scorer.score("operator:eq", "4", {"b": "4"})  # operator.eq("4", b="4") is not allowed
    ... # doctest: +ELLIPSIS
    ScoreOutcome(score=None, reason='the rule failed: TypeError: ...')
    >>> scorer.score("environments.math.verify:is_correct", "0.5", {"reference": "1/2"})
    ScoreOutcome(score=1.0, reason='scored')
    >>> scorer.close()
"""

from __future__ import annotations

import importlib
import multiprocessing
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["RuleScorer", "ScoreOutcome", "resolve_rule", "slowed", "warm_up_rule"]


@dataclass(frozen=True)
class ScoreOutcome:
    """A score in [0, 1] (booleans become 0 or 1), or ``None`` with the reason."""

    score: float | None
    reason: str


def warm_up_rule(name: str) -> None:
    """Runs the ``warm_up()`` of the module holding rule ``name``, where it has one: the work a
    first call would otherwise do inside its deadline (lazy imports, compiled grammars)."""
    warm_up = getattr(importlib.import_module(name.partition(":")[0]), "warm_up", None)
    if callable(warm_up):
        warm_up()


def resolve_rule(name: str) -> Any:
    """The function ``"module:function"`` names; a bad name raises ``ValueError`` (one line)."""
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"a rule is named 'module:function', got {name!r}")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"rule {name!r} cannot be loaded: {error}") from None
    if not callable(function):
        raise ValueError(f"rule {name!r} is not a function")
    return function


def slowed(response: str, rule: str, delay_s: float, **data: Any) -> float:
    """``rule(response, **data)`` after ``delay_s`` seconds of sleep: a slow verifier (a sandbox,
    a judge) for benchmarks and tests, with the real rule's score.

    Example:
        >>> slowed("0.5", "environments.math.verify:is_correct", 0.01, reference="1/2")
        1.0
    """
    import time

    time.sleep(delay_s)
    return float(resolve_rule(rule)(response, **data))


def _die_with_parent() -> None:
    """Asks Linux to kill this process when its parent dies (a killed Ray worker must not leave
    a child spinning on a pathological reply); elsewhere a no-op."""
    import contextlib
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _serve(connection: Connection) -> None:
    """The child's loop: ``("load", rule)`` imports a rule, ``("call", rule, response, data)``
    runs it; each is answered with ``(score, reason)``."""
    _die_with_parent()
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message[0] == "load":
            try:
                resolve_rule(message[1])
            except ValueError as error:
                connection.send((None, str(error)))
                continue
            try:
                warm_up_rule(message[1])
            except Exception as error:  # a failing warm-up is the rule's outcome
                connection.send(
                    (None, f"the rule's warm_up failed: {type(error).__name__}: {error}"[:300])
                )
                continue
            connection.send((None, "loaded"))
            continue
        _, rule, response, data = message
        try:
            value = resolve_rule(rule)(response, **data)
            score = float(value)
            reply = (score, "scored") if 0.0 <= score <= 1.0 else (None, f"out of range: {score}")
        except Exception as error:  # the rule's failure is an outcome, not the worker's
            reply = (None, f"the rule failed: {type(error).__name__}: {error}"[:300])
        connection.send(reply)


class RuleScorer:
    """Runs rule verifiers one at a time in a child process, each within ``deadline_s``.

    Args:
        deadline_s: the most seconds one call may take.
        load_timeout_s: the most seconds importing a rule's module may take.
    """

    def __init__(self, deadline_s: float = 10.0, load_timeout_s: float = 120.0) -> None:
        if deadline_s <= 0 or load_timeout_s <= 0:
            raise ValueError(
                f"deadline_s and load_timeout_s must be > 0, got {deadline_s}, {load_timeout_s}"
            )
        self.deadline_s, self.load_timeout_s = deadline_s, load_timeout_s
        self._loaded: set[str] = set()  # rules the current child has imported
        self._context = multiprocessing.get_context("spawn")  # no fork of a threaded parent
        self._child: Any = None
        self._connection: Connection | None = None
        self.restarts = 0

    def _start(self) -> Connection:
        parent, child = self._context.Pipe()
        self._child = self._context.Process(target=_serve, args=(child,), daemon=True)
        self._child.start()
        child.close()
        self._connection = parent
        return parent

    def score(self, rule: str, response: str, data: dict[str, Any]) -> ScoreOutcome:
        """``rule(response, **data)`` as a score, or ``None`` past the deadline or on error.

        The deadline counts the call only: a fresh child first imports the rule's module and
        runs its ``warm_up()`` (math-verify and sympy take seconds), within ``load_timeout_s``.
        """
        connection = self._connection or self._start()
        if rule not in self._loaded:
            connection.send(("load", rule))
            if not connection.poll(self.load_timeout_s):
                self._kill()
                return ScoreOutcome(None, f"the rule did not load within {self.load_timeout_s:g} s")
            _, reason = connection.recv()
            if reason != "loaded":
                return ScoreOutcome(None, reason)
            self._loaded.add(rule)
        connection.send(("call", rule, response, data))
        if connection.poll(self.deadline_s):
            try:
                score, reason = connection.recv()
                return ScoreOutcome(score, reason)
            except EOFError:
                reason = "the rule's process died"
        else:
            reason = f"the rule did not finish within {self.deadline_s:g} s"
        self._kill()
        self.restarts += 1
        return ScoreOutcome(None, reason)

    def _kill(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.join(5)
        if self._connection is not None:
            self._connection.close()
        self._child, self._connection = None, None
        self._loaded.clear()

    def close(self) -> None:
        """Stops the child process."""
        self._kill()
